/*
 * Private to the CPU backend (nn_cpu.c) and its tests: the training
 * objective without a step, so that tests can check the backend's
 * gradients against finite differences of the very function it descends.
 */
#ifndef RV_NN_CPU_H
#define RV_NN_CPU_H

#include "nn/nn.h"

/*
 * The objective (1/n) sum_i w_i loss_i of batch b under a train-mode
 * forward pass (batch statistics, dropout keyed by b->step as train()
 * keys it) with label smoothing ls, on a backend made by rv_nn_cpu.create.
 * Changes no state: running statistics, parameters and momentum stay as
 * they are.  NAN with rv_errmsg() set on a bad batch.
 */
double rv_nn_cpu_objective(void *be, const struct rv_nn_batch *b, float ls);

#endif
