/*
 * Data refurbishing (Revamper, USENIX ATC 2021): the epoch loop of
 * rv-refurbish.  It serves epochs of a dataset (refsrc.h) in the order of
 * the schedule (sched.h), computing each partial augmentation when the
 * schedule calls for it, or when the cache (cache.h) could not keep it,
 * and running the final augmentation on every use.  Work runs in chunks on
 * -j threads (par.h): the main thread looks the chunk's hits up in the
 * cache and reads its misses' input frames in one batch (refsrc.h) before
 * the chunk runs; the workers decode, run the partial, pack it for the
 * cache, run the final and frame the record; the main thread then writes
 * the frames and puts the new partials into the cache, in order.
 *
 * Determinism: a partial draws from (seed, RV_STAGE_PARTIAL, its refresh
 * epoch, id) and a final from (seed, RV_STAGE_FINAL, epoch, id); flags and
 * uses come from the schedule.  The bytes written depend on neither the
 * thread count, nor the cache's budget or disk tier, nor file or pipe
 * input, nor which epochs a run produces: epoch e is the same whether a
 * run starts there or not.
 */
#ifndef RV_REFURB_H
#define RV_REFURB_H

#include <stdint.h>

#include "aug/aug.h"
#include "refurb/cache.h"
#include "refurb/refsrc.h"
#include "stream/stream.h"

/* "No epoch": the `next` of the last epoch a run produces. */
#define RV_REFURB_NONE	UINT32_MAX

struct rv_progress;

struct rv_refurb_conf {
	const struct rv_spec *partial;	/* borrowed; ops numbered from 0 */
	const struct rv_spec *final;	/* borrowed; may have no ops */
	uint64_t seed;
	uint32_t reuse;		/* r >= 1, <= N */
	uint32_t batch;		/* B >= 1, the cache-aware shuffle's group:
				 * the batch size downstream (rv-refurbish:
				 * RV_BATCH_DEFAULT unless told) */
	uint32_t epochs;	/* E, for the metadata */
	uint64_t mem;		/* the cache's memory budget, bytes */
	const char *cache_dir;	/* its disk tier, or NULL */
	int jobs;		/* threads, the caller's included */
	int level;		/* zstd level of the output frames (resolved) */
	struct rv_progress *prog;	/* borrowed, may be NULL */
};

/* One epoch's counts. */
struct rv_refurb_stats {
	uint64_t samples;	/* N */
	uint64_t misses, hits;	/* planned by the schedule */
	uint64_t partials;	/* partials computed: misses, plus hits the
				 * cache did not hold */
	uint64_t preads;	/* reads of the input (grouped) */
	double cpu;		/* process CPU seconds */
	double wall;		/* seconds */
};

struct rv_refurb;

/*
 * Plan the run over src (borrowed, must outlive the result): schedule,
 * cache, -j workers.  NULL with rv_errmsg() set (reuse > N, an empty
 * input, an unusable cache directory).
 */
struct rv_refurb *rv_refurb_new(const struct rv_refurb_conf *conf,
    const struct rv_refsrc *src);
/* NULL is a no-op. */
void rv_refurb_free(struct rv_refurb *rf);

/*
 * Write epoch e (< RV_REFURB_NONE - 1) to w: a metadata record (the
 * input's metadata and the refurbish.* keys), the N samples in the
 * schedule's order, an epoch-end record.  next is the epoch the caller
 * will ask for after this one, or RV_REFURB_NONE: only partials that
 * epoch serves again are put into the cache.  Epochs may be asked for in
 * any increasing order; a partial not in the cache, whatever the reason,
 * is computed again.  Fills *st.  Returns 0, or -1 with rv_errmsg() set
 * (a corrupt input sample: "'in': record N (id I): reason"; I/O); the
 * rv_refurb must not be used after a failure.
 */
int rv_refurb_epoch(struct rv_refurb *rf, uint32_t e, uint32_t next,
    struct rv_writer *w, struct rv_refurb_stats *st);

/* The cache's counters (dropped > 0: some partials are recomputed). */
const struct rv_cache_stats *rv_refurb_cache_stats(const struct rv_refurb *rf);
/*
 * The first failure to write to the cache's disk tier, once, or NULL.  The
 * run goes on without the disk tier: what does not fit the memory budget
 * is recomputed.  Borrowed until the next call.
 */
const char *rv_refurb_cache_error(struct rv_refurb *rf);

#endif
