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
 *
 * Scored (conf.scorer, rv-refurbish --score): the trainer's assistant
 * decides which samples an epoch trains before any partial is made, so a
 * dropped sample costs neither partial nor final.  The schedule then
 * counts uses of the samples kept, not epochs: a partial is made again
 * once it has been served `r` times (its first `chunk + 1` times, the
 * schedule's chunk, so the first cycle is staggered as above), and a
 * dropped sample keeps its partial and its count.  An epoch deals its N
 * samples as candidates, the due ones (no partial, or one served its r
 * times) spread evenly (rv_sched_deal), and offers them to the scorer in
 * windows, each of which keeps one batch of B (budget mode, exactly
 * round(F N) an epoch): the due ones kept of window j are
 * floor((j+1) B m / N) - floor(j B m / N), m the epoch's due candidates,
 * so every trained batch holds the same misses +-1 and an epoch costs
 * about (F N) / r partials.  Each batch is shuffled inside.  The
 * decisions depend on the feedback and its timing; given the decisions
 * (no feedback, or the same lines at the same samples), the bytes do not
 * depend on the thread count or the cache, as above.  A run's first epoch
 * computes every partial it serves.
 */
#ifndef RV_REFURB_H
#define RV_REFURB_H

#include <stdint.h>

#include "aug/aug.h"
#include "refurb/cache.h"
#include "refurb/refsrc.h"
#include "shrink/scorer.h"
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
	uint32_t written;	/* the epochs the output holds, for its
				 * "epochs" key (0: not known, one file an
				 * epoch that may be joined to others) */
	uint64_t total;		/* the samples of the run's E epochs, for
				 * the metadata's total (0: not known: a
				 * scorer drops some) */
	uint64_t mem;		/* the cache's memory budget, bytes */
	const char *cache_dir;	/* its disk tier, or NULL */
	int jobs;		/* threads, the caller's included */
	int level;		/* zstd level of the output frames (resolved) */
	struct rv_progress *prog;	/* borrowed, may be NULL */
	struct rv_scorer *scorer;	/* borrowed, NULL: keep every sample;
					 * else its budget must be set */
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
	/* scored: samples offered (N) and kept; misses and hits are then
	 * those of the kept samples; the scorer's epoch report */
	uint64_t kept;
	struct rv_shrink_stats score;
	/* --from-partials: stored partials that did not decode, skipped */
	uint64_t skipped;
};

struct rv_refurb;

/*
 * Plan the run over src (borrowed, must outlive the result): schedule,
 * cache, -j workers, and with a scorer its window (set in its
 * configuration) and its metadata.  NULL with rv_errmsg() set (reuse > N,
 * an empty input, an unusable cache directory, a scorer without a budget
 * or whose window would exceed RV_SHRINK_MAX_WINDOW).
 */
struct rv_refurb *rv_refurb_new(const struct rv_refurb_conf *conf,
    const struct rv_refsrc *src);
/* NULL is a no-op. */
void rv_refurb_free(struct rv_refurb *rf);

/*
 * Write epoch e (< RV_REFURB_NONE - 1) to w: a metadata record (the
 * input's metadata and the refurbish.* keys), the N samples in the
 * schedule's order, an epoch-end record.  Scored: the samples kept, a
 * metadata record of the epoch's counts (refurbish.misses, .hits and the
 * score.* report) and an epoch-end record counting them.  next is the epoch the caller
 * will ask for after this one, or RV_REFURB_NONE: only partials that
 * epoch serves again are put into the cache.  Epochs may be asked for in
 * any increasing order; a partial not in the cache, whatever the reason,
 * is computed again.  Fills *st.  Returns 0, or -1 with rv_errmsg() set
 * (a corrupt input sample: "'in': record N (id I): reason"; I/O); the
 * rv_refurb must not be used after a failure.
 */
int rv_refurb_epoch(struct rv_refurb *rf, uint32_t e, uint32_t next,
    struct rv_writer *w, struct rv_refurb_stats *st);

/*
 * The keys of a refurbished epoch's metadata record that say what made
 * it (rv-refurbish(1), rv-stream(5)): producer, refurbish.partial
 * (partial, the spec's text), .final, .reuse, .batch, .seed, .epochs,
 * .epoch (e); samples (n), epochs (c->written, empty when 0) and total
 * (c->total, empty when 0).  Set into m; a pair over the caps marks m
 * (rv_meta_put refuses it).
 */
struct rv_meta;
void rv_refurb_meta_set(struct rv_meta *m, const struct rv_refurb_conf *c,
    const char *partial, uint32_t e, uint64_t n);

/* The cache's counters (dropped > 0: some partials are recomputed). */
const struct rv_cache_stats *rv_refurb_cache_stats(const struct rv_refurb *rf);
/*
 * The first failure to write to the cache's disk tier, once, or NULL.  The
 * run goes on without the disk tier: what does not fit the memory budget
 * is recomputed.  Borrowed until the next call.
 */
const char *rv_refurb_cache_error(struct rv_refurb *rf);

#endif
