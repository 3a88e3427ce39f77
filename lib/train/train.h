/*
 * The training loop of rv-train-gpu: input thread -> backend steps ->
 * feedback lines, metrics, evaluation, checkpoints, stopping rules.  The
 * program (cmd/rv-train-gpu.c) only parses options into a struct
 * rv_train_conf and prints the struct rv_train_result.
 */
#ifndef RV_TRAIN_H
#define RV_TRAIN_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "nn/nn.h"

/*
 * The largest batch the trainer trains: the top of -b's range, and the
 * most samples a batch record may hold.  The largest batch sizes the
 * model's buffers (activations, gradients, per-sample outputs: about
 * 14 KB a sample for mlp on 1x1x1 input), so its count must not be the
 * stream's to choose freely: a 333-byte stream of one batch of 200000
 * samples made the trainer take 2.8 GB.  The bound cannot be -b itself:
 * batch records are trained as they come, larger than -b too (train.bats
 * trains rv-batch -b 32's batches with -b 7; bench/gpu.sh feeds batches
 * of 256 to a trainer without -b).  So it is the most -b may ask for: a
 * batch record costs no more than the user could have asked with -b.
 */
#define RV_TRAIN_BATCH_MAX	65536

/*
 * The schedules, at the position t of a step: its epoch position (the
 * epoch ends seen plus the part of this epoch done), or with a step
 * budget (rv_train_conf.steps > 0) the step itself, counted from 0.
 */
enum rv_sched {
	RV_SCHED_CONST = 0,
	RV_SCHED_STEP,		/* lr * gamma^floor(t / step_size) */
	RV_SCHED_COSINE,	/* lr * (1 + cos(pi * min(t / len, 1))) / 2,
				 * len: epochs, or steps */
	RV_SCHED_LINEAR,	/* lr * max(1 - t / len, 0): to 0 at the
				 * end of the budget (Li et al., "Budgeted
				 * Training", ICLR 2020) */
};

struct rv_train_conf {
	const char *model;		/* preset or spec */
	const struct rv_nn_ops *backend;
	int device;			/* CUDA device ordinal */
	enum rv_precision precision;	/* CUDA only */
	int autotune;			/* CUDA only: rv_nn_config's tune */
	int threads;
	uint64_t seed;
	uint32_t batch;			/* collate samples; eval batch
					 * (rv-train-gpu: RV_BATCH_DEFAULT) */
	struct rv_nn_hyper hyper;	/* lr is the base rate */
	enum rv_sched sched;
	double step_size, gamma;	/* RV_SCHED_STEP, in epochs (in
					 * steps with a step budget; 0
					 * there: a third of it) */
	double epochs;			/* cosine's and linear's length */
	uint64_t steps;			/* the step budget, 0 none: the
					 * schedule counted in steps, its
					 * length (cosine) and the run's;
					 * not with epochs */
	uint64_t warmup;		/* linear warm-up steps, 0 none */
	float mean[4], std[4];
	int nmean, nstd;		/* values given, 0: stream or 0.5; 1:
					 * every channel; else one per channel,
					 * or rv_train_run fails at the first
					 * batch */
	int classes;			/* 0: from the stream's metadata */
	char *const *inputs;		/* NULL/0: stdin */
	int ninputs;
	const char *eval_path;
	uint64_t eval_every;		/* steps; 0: epoch ends only */
	int no_epoch_eval;		/* with eval_every: not at epoch
					 * ends too */
	double target_acc;		/* < 0: none */
	const char *feedback_path;
	size_t feedback_queue;
	const char *log_path;
	uint64_t log_every;		/* steps */
	const char *save_path;
	uint64_t save_every;		/* steps; 0: epoch ends and the end */
	const char *resume_path;
	uint64_t max_steps;		/* 0: no limit */
	int quiet, verbose;
	volatile sig_atomic_t *stop;	/* set by a signal: save and end */
};

struct rv_train_result {
	char model[64];			/* preset name or "custom" */
	char device[64];		/* "cpu (2 threads)" */
	uint64_t params;
	uint64_t steps, samples, grads, batches;
	uint32_t epochs;		/* epoch ends seen */
	double wall, wait;		/* seconds */
	double eval_s;			/* of wall, evaluating (this process) */
	double train_loss, train_acc;	/* last epoch (or since start) */
	int evaluated;
	double eval_loss, eval_acc;	/* last evaluation */
	uint32_t eval_epoch;
	uint64_t eval_step;
	int reached;			/* target_acc met */
	double reached_wall;
	uint64_t reached_step, reached_grads, reached_samples;
	uint32_t reached_epoch;
	uint64_t fb_written, fb_dropped;
	int interrupted;		/* stopped by *stop */
	uint64_t resumed_from;		/* step of the checkpoint, 0 none */
};

/*
 * Train.  Returns 0 (input ended, target or step limit reached, or
 * stopped by *stop after saving), or -1 with rv_errmsg() set.
 */
int rv_train_run(const struct rv_train_conf *conf,
    struct rv_train_result *res);

/* The learning rate at a step (from 0) and fractional epoch (for tests
 * too); with a step budget the epoch is not read. */
double rv_train_lr(const struct rv_train_conf *conf, uint64_t step,
    double epoch_pos);

/* Write res as "key  value" lines. */
void rv_train_summary(FILE *f, const struct rv_train_conf *conf,
    const struct rv_train_result *res);

#endif
