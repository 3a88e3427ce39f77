/*
 * Training checkpoints: the model (spec, shapes, parameters, momentum,
 * batch-norm statistics) and where training stood (steps, epochs, the
 * input consumed), in one little-endian file with an XXH64 checksum at
 * the end.  Written whole to a temp file and renamed (never a torn
 * checkpoint); read back with every length checked before allocation.
 * Layout (all integers little-endian, floats IEEE-754 binary32):
 *
 *   "RVCK" u32 version(1) u32 header_len(=RV_CKPT_HDR)
 *   u32 in_c in_h in_w classes   u64 nparams nbufs
 *   u64 step batches samples grads   u32 epoch epochs_done
 *   u64 ids_hash epoch_samples prev_epoch_samples
 *   f64 wall last_acc wait   f32 mean[4] std[4]   u32 spec_len
 *   spec bytes, params[nparams], momentum[nparams], bufs[nbufs]
 *   u64 XXH64(seed 0) of everything before
 */
#ifndef RV_CKPT_H
#define RV_CKPT_H

#include <stddef.h>
#include <stdint.h>

#define RV_CKPT_MAGIC	0x4b435652u	/* "RVCK" */
#define RV_CKPT_VERSION	1
#define RV_CKPT_HDR	168		/* bytes before the spec */

/* Where training stood. */
struct rv_ckpt_pos {
	uint64_t step;		/* SGD steps taken */
	uint64_t batches;	/* batches of input consumed */
	uint64_t samples;	/* samples consumed */
	uint64_t grads;		/* samples backpropagated */
	uint32_t epoch;		/* stream epoch of the last batch */
	uint32_t epochs_done;	/* epoch ends seen */
	uint64_t ids_hash;	/* running hash of every id consumed */
	uint64_t epoch_samples;	/* samples so far in the current epoch */
	uint64_t prev_epoch_samples; /* samples in the last whole epoch */
	double wall;		/* training seconds so far */
	double last_acc;	/* the last evaluation's accuracy, -1 none */
	double wait;		/* of wall, seconds waiting for input */
};

struct rv_ckpt {
	uint32_t in_c, in_h, in_w, classes;
	float mean[4], std[4];
	char *spec;		/* normalised model spec, NUL-terminated */
	size_t nparams, nbufs;
	float *params, *momentum, *bufs;
	struct rv_ckpt_pos pos;
};

/* Write c to path atomically.  0, or -1 with rv_errmsg() set. */
int rv_ckpt_save(const char *path, const struct rv_ckpt *c);
/* Parse a checkpoint held in memory into c (which owns what it gets). */
int rv_ckpt_parse(struct rv_ckpt *c, const unsigned char *p, size_t len);
/* Read path and parse it.  0, or -1 with "'path': reason". */
int rv_ckpt_load(const char *path, struct rv_ckpt *c);
void rv_ckpt_release(struct rv_ckpt *c);

#endif
