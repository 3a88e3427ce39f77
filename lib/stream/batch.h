/*
 * The collator: turns u8 samples into BATCH records of N samples, never
 * across an epoch boundary, optionally through a reservoir shuffle buffer
 * of K samples (as in tf.data and WebDataset).  rv-batch wires it between
 * a reader and a writer; a trainer that reads samples can use it directly.
 */
#ifndef RV_BATCH_H
#define RV_BATCH_H

#include <stdint.h>

#include "stream/record.h"

/*
 * The project's one default batch size: rv-batch -b, rv-train-gpu -b and
 * rv-refurbish --batch (the group its cache-aware shuffle deals misses
 * over, which should be the batch size downstream) all start from it, so
 * a pipeline that gives none batches as the refurbisher planned.  128:
 * the trainer's defaults (--lr 0.05, momentum 0.9) were tuned at it, and
 * every shipped pipeline and benchmark trains at it.
 */
#define RV_BATCH_DEFAULT	128
/* The same number as text, for usage messages. */
#define RV_BATCH_DEFAULT_STR	RV_BATCH_STR_(RV_BATCH_DEFAULT)
#define RV_BATCH_STR_(n)	RV_BATCH_STR__(n)
#define RV_BATCH_STR__(n)	#n

struct rv_batch_conf {
	uint32_t size;		/* N, samples per batch, >= 1 */
	uint32_t shuffle;	/* K, shuffle buffer samples; 0 = off */
	uint64_t seed;		/* keys the shuffle (RV_STAGE_BATCH_SHUFFLE) */
	int drop_last;		/* drop an epoch's final short batch */
	uint64_t max_payload;	/* largest batch payload allowed; 0: the
				 * stream's (rv_stream_max_payload()) */
};

/* size RV_BATCH_DEFAULT, everything else 0. */
void rv_batch_conf_init(struct rv_batch_conf *c);

struct rv_batch_stats {
	uint64_t samples;	/* samples added (batch members counted) */
	uint64_t batches;	/* batches emitted, short ones included */
	uint64_t short_out;	/* short (final) batches emitted */
	uint64_t short_dropped;	/* short batches dropped by drop_last */
	uint64_t samples_dropped; /* samples in those */
	uint64_t epochs;	/* epoch segments that held samples */
};

/*
 * Called with every finished batch.  The record and its payload are
 * borrowed: valid only during the call (they live in the batcher's one
 * reused buffer).  Return 0, or -1 with rv_errmsg() set to stop: the
 * batcher call that emitted returns -1 and leaves the message alone.
 */
typedef int (*rv_batch_emit_fn)(void *ctx, const struct rv_rec *batch);

struct rv_batcher;

/*
 * A batcher with a copy of conf.  Nothing is allocated for pixels until the
 * first sample fixes the shape; then one batch buffer (16 N + N H W C bytes)
 * and the shuffle buffer (K H W C bytes) are made once and reused.
 */
struct rv_batcher *rv_batcher_new(const struct rv_batch_conf *conf,
    rv_batch_emit_fn emit, void *ctx);
/* NULL is a no-op.  Samples still held are discarded, not emitted. */
void rv_batcher_free(struct rv_batcher *b);

/*
 * Add a SAMPLE record, or every member of a BATCH record (re-batching: the
 * members take the batch's epoch and flags).  Emits the batches this
 * completes.  The first sample fixes the shape H x W x C for the batcher's
 * life; a sample of another shape, an encoded (JPEG/PNG) sample, a weight
 * rv_batch_check_weight() refuses, or a batch too large for a record is an
 * error "sample ID ...".  A sample whose
 * epoch differs from the samples held ends their epoch first, as
 * rv_batcher_end_epoch() does.  Returns 0, or -1 with rv_errmsg() set;
 * after -1 every call fails.
 */
int rv_batcher_add(struct rv_batcher *b, const struct rv_rec *rec);

/*
 * End the current epoch: drain the shuffle buffer in random order, then
 * emit the short final batch (or drop it under drop_last).  Call it for an
 * EPOCH_END record and at the end of input.  Nothing held: a no-op.
 * Returns 0 or -1 (from emit).
 */
int rv_batcher_end_epoch(struct rv_batcher *b);

/*
 * A sample's loss weight must be finite and not negative (0 is allowed:
 * the sample then adds nothing to the loss).  Check that of a SAMPLE
 * record, or every member's of a BATCH record (layout checked by the
 * reader); other kinds pass.  0, or -1 with "sample ID has weight W: ...".
 * rv_batcher_add() checks every record it takes.
 */
int rv_batch_check_weights(const struct rv_rec *r);

/*
 * An epoch-end record (as the reader returns it: its epoch's parts
 * joined) against the `seen` samples of its epoch read before it.  Its
 * count may exceed them, for stages may drop samples after one that
 * counted them (rv-batch --drop-last passes the count on), but never
 * fall short of them: 0, or -1 with "epoch-end of epoch E counts C
 * samples, but S came before it".
 */
int rv_batch_check_epoch_end(const struct rv_rec *end, uint64_t seen);

/* Samples held now (shuffle buffer plus the batch being filled). */
uint64_t rv_batcher_held(const struct rv_batcher *b);
/* Counters so far.  Borrowed. */
const struct rv_batch_stats *rv_batcher_stats(const struct rv_batcher *b);

#endif
