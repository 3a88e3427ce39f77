/*
 * Convolution plans for the CPU backend: one plan per convolution layer,
 * running it on oneDNN (its own blocked layouts, reordered from and to
 * our CNHW tensors inside the plan) or, where oneDNN loses, on the
 * im2col + OpenBLAS kernels of nn_kern.h.  Same semantics and layouts as
 * rv_k_conv_fwd / rv_k_conv_bwd; the plan only adds state that lives
 * across calls (primitives, reorders, scratch), so a step allocates
 * nothing once its batch size has been seen.
 */
#ifndef RV_NN_CONV_H
#define RV_NN_CONV_H

#include "nn/nn_kern.h"

struct rv_conv_plan;

/*
 * A plan for geometry g; g->n is the largest batch it will be called
 * with.  Primitives are made on the first call for a batch size and kept
 * for the last few sizes seen (a short last batch or an eval batch of
 * another size rebuilds nothing once seen), so the first call for a size
 * is slower.  NULL with rv_errmsg() set on a bad geometry or no memory.
 * A plan is used by one thread at a time; its calls parallelise inside
 * (OpenMP, the threads rv_k_threads() set).
 */
struct rv_conv_plan *rv_conv_plan_new(const struct rv_conv_geom *g);
/* Frees everything; NULL is a no-op. */
void rv_conv_plan_free(struct rv_conv_plan *p);

/*
 * y = conv(x, w) + b for n samples, 1 <= n <= g->n: x CNHW
 * [ci][n][h][w], w [co][ci][k][k], y CNHW [co][n][oh][ow]; b may be NULL.
 * Borrowed pointers, used only during the call.  Returns 0, or -1 with
 * rv_errmsg() set (a bad n, a oneDNN failure).
 */
int rv_conv_fwd(struct rv_conv_plan *p, int n, const float *x,
    const float *w, const float *b, float *y);
/*
 * From dy (CNHW [co][n][oh][ow]): dw always, dx and db when not NULL;
 * every output overwritten.  Returns 0 or -1 as rv_conv_fwd.  Results are
 * the same bits run to run at a given thread count.
 */
int rv_conv_bwd(struct rv_conv_plan *p, int n, const float *x,
    const float *w, const float *dy, float *dx, float *dw, float *db);

#endif
