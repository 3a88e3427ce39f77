/*
 * Partials stored once (rv-refurbish --partials-out, --from-partials):
 * offline refurbishing that writes each partial augmentation to disk the
 * one time the schedule (sched.h) makes it, and a training-time reader
 * that serves epoch e from the stored partials with a fresh final
 * augmentation.
 *
 * The store is one file an epoch, e: the partials fresh in epoch e (every
 * sample for e = 0, chunk (e-1) mod r after; rv_sched_fresh), in input
 * position order, each a sample record of epoch e with the RV_F_PARTIAL
 * flag, raw (u8 pixels, zstd) or encoded (JPEG or PNG, encode.h), after a
 * metadata record that names the run: the store.* keys below.  E epochs
 * take N + (E-1) N / r partials, against the N E samples of epoch files.
 *
 * Epoch e reads the files of the partials it serves: e, and the r-1
 * before it (file 0 until every chunk was made again once).  Position p
 * of chunk c is record rank(p) of its file: rank counts the positions of
 * the file before p.  Records carry the id, label and weight, so the
 * reader needs neither the input nor file 0 past the first cycle.  The
 * order and the flags are the schedule's and the final draws from (seed,
 * RV_STAGE_FINAL, e, id), so from a raw or PNG store epoch e's samples are
 * the bytes an online rv-refurbish of the same seed, reuse and specs
 * serves (the metadata record differs).
 *
 * Metadata of a store file (rv-stream(5)): store.kind=partials,
 * store.epoch (e), store.samples (N), store.seed, store.reuse,
 * store.epochs (E of the run that wrote it), store.partial (the spec),
 * store.format (raw, jpeg, png), store.quality and store.subsample
 * (jpeg), store.run (16 hex
 * digits: XXH64 of N, seed, r, the spec, --exact and every input sample's
 * id and label, so two files of one run agree and files of another
 * dataset, spec, seed or reuse do not).
 */
#ifndef RV_STORE_H
#define RV_STORE_H

#include <stdint.h>

#include "aug/aug.h"
#include "codec/encode.h"
#include "refurb/refsrc.h"
#include "refurb/refurb.h"
#include "stream/stream.h"

struct rv_progress;

/*
 * The run's configuration, as rv-refurbish's (refurb.h): the writer uses
 * its partial, seed, reuse, epochs, jobs, level and prog; the reader its
 * final, seed, reuse, batch, epochs, written, total (0: N E), jobs, level
 * and prog.  Neither has a cache or a scorer.
 */
struct rv_store_conf {
	struct rv_refurb_conf run;
	int dtype;		/* writer: RV_DT_U8 (raw), _JPEG or _PNG */
	int quality;		/* writer: JPEG quality 1..100 */
	int subsample;		/* writer: JPEG chroma, 420 or 444 */
	int strict;		/* reader: a stored partial that does not
				 * decode stops the run (else: skipped,
				 * with a warning, and counted) */
};

/* What a store file says of the run that wrote it. */
struct rv_store_info {
	uint64_t samples;	/* N */
	uint64_t seed;
	uint32_t reuse;
	uint32_t epochs;
	uint32_t epoch;		/* the file's */
	char run[17];		/* the run key, hex */
};

/* "raw", "jpeg" ("jpg") or "png" to RV_DT_U8, _JPEG or _PNG.  0, or -1
 * with rv_errmsg() set. */
int rv_store_format(const char *s, int *dtype);

/* ---------------------------------------------------------------- write */

struct rv_store_writer;

/*
 * Plan the partials of src (borrowed, must outlive the result): the
 * schedule of (seed, N, r) and -j workers that decode, run the partial
 * and encode.  NULL with rv_errmsg() set (reuse > N, an empty input).
 */
struct rv_store_writer *rv_store_writer_new(const struct rv_store_conf *conf,
    const struct rv_refsrc *src);
void rv_store_writer_free(struct rv_store_writer *sw);
/* The partials epoch e's file holds: N for e = 0, its chunk's after. */
uint64_t rv_store_writer_count(const struct rv_store_writer *sw, uint32_t e);

/*
 * Write epoch e's file to w: the metadata record, the partials fresh in
 * e in position order, an epoch-end record counting them.  Any epoch, in
 * any order, alone.  st gets samples (the partials written), partials,
 * cpu, wall.  0, or -1 with rv_errmsg() set ("'in': record N (id I):
 * reason" for a sample whose partial cannot be made or stored).
 */
int rv_store_write(struct rv_store_writer *sw, uint32_t e, struct rv_writer *w,
    struct rv_refurb_stats *st);

/* ---------------------------------------------------------------- read */

struct rv_store;

/* The path of epoch e's file of pattern (one %d conversion).  Owned by
 * the caller. */
char *rv_store_path(const char *pattern, uint32_t e);

/*
 * Read the metadata of epoch e's file of pattern into *info.  0, or -1
 * with rv_errmsg() set: "'parts/003.rvs': ..." for a missing file, one
 * that is not a store file of partials ("not partials of
 * rv-refurbish --partials-out"), or holds another epoch's.
 */
int rv_store_peek(const char *pattern, uint32_t e, struct rv_store_info *info);

/*
 * The files an epoch e of a store of reuse r reads: *lo..e, and file 0
 * too when *zero is set.
 */
void rv_store_needs(uint32_t reuse, uint32_t e, uint32_t *lo, int *zero);

/*
 * A reader of the store pattern for the epochs epochs[0..n) (increasing),
 * serving them with conf's final, seed, reuse and batch.  info is what a
 * peek of one of its files said (the run every file must be of).  Every
 * file those epochs read must exist (stat): else NULL naming the first
 * missing one and the epoch that needs it.  Files are opened and checked
 * when an epoch first needs them.
 */
struct rv_store *rv_store_open(const char *pattern,
    const struct rv_store_conf *conf, const struct rv_store_info *info,
    const uint32_t *epochs, size_t n);
void rv_store_free(struct rv_store *s);

/*
 * Write epoch e (< RV_REFURB_NONE - 1) to w as rv_refurb_epoch does
 * without a scorer: a metadata record, the N samples in the schedule's
 * order, each the stored partial of its refresh epoch with a fresh final,
 * an epoch-end record (counting the samples written: a stored partial
 * that does not decode is skipped with a warning, "'parts/004.rvs':
 * record 7 (id 19): reason (skipped)", and counted in st->skipped, unless
 * conf.strict).  Epochs are asked for in increasing order, so the files
 * e no longer reads are closed.  Fills *st.  0,
 * or -1 with rv_errmsg() set: a file of another run, seed, reuse or
 * dataset ("'parts/004.rvs': partials of another run than
 * 'parts/002.rvs'"), cut short ("holds 12 partials; epoch 4 made 33"), a
 * record that is not the partial expected, or a partial that does not
 * decode ("'parts/004.rvs': record 7 (id 19): reason"); the store must
 * not be used after a failure.
 */
int rv_store_epoch(struct rv_store *s, uint32_t e, struct rv_writer *w,
    struct rv_refurb_stats *st);

#endif
