/*
 * The trainer's input: one thread reads records (batches, or samples it
 * collates with lib/stream/batch.c) from the input files into a small ring of
 * reusable slots, so parsing and zstd never stall a training step.  The
 * time the trainer spends waiting on the ring is its data-wait time, the
 * measure of whether the pipeline upstream keeps up.
 */
#ifndef RV_TRAIN_IN_H
#define RV_TRAIN_IN_H

#include <signal.h>
#include <stdint.h>

#include "stream/meta.h"

enum rv_tin_kind {
	RV_TIN_BATCH = 1,
	RV_TIN_EPOCH_END,
	RV_TIN_META,
	RV_TIN_END,		/* every input read to its end */
	RV_TIN_ERROR,		/* msg says what; nothing follows */
};

struct rv_tin_item {
	enum rv_tin_kind kind;
	/* BATCH */
	uint32_t n, h, w, c;
	uint32_t epoch;
	uint64_t *ids;
	int32_t *labels;
	float *weights;
	uint8_t *pixels;	/* n x h x w x c */
	/* META: its pairs, classes and samples checked */
	struct rv_meta meta;
	/* ERROR: the message; META: where the record lies, "'file': record
	 * N at byte B", for messages about its values */
	char msg[512];
	/* slot storage, owned by the ring */
	size_t cap_n, cap_px;
};

struct rv_tin;

/*
 * Start reading paths (NULL or "-" is stdin; npaths 0 means stdin) in
 * order.  SAMPLE records are collated into batches of `batch`; BATCH
 * records pass as they are.  depth >= 2 slots.  NULL with rv_errmsg() if
 * the thread cannot start.
 */
struct rv_tin *rv_tin_start(char *const *paths, int npaths, uint32_t batch,
    int depth);
/*
 * The next item, waiting for it if need be; the time waited is added to
 * *waited.  Returns NULL without waiting more (and with nothing taken)
 * once *stop becomes non-zero (checked every 50 ms).  The item stays the
 * caller's until rv_tin_done(); the caller may hold several (fewer than
 * depth) and hands them back in the order it took them.
 */
struct rv_tin_item *rv_tin_next(struct rv_tin *t, double *waited,
    volatile sig_atomic_t *stop);
void rv_tin_done(struct rv_tin *t, struct rv_tin_item *it);
/* Stop the thread (even in the middle of a blocking read) and free all. */
void rv_tin_stop(struct rv_tin *t);

#endif
