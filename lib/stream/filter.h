/*
 * A filter of samples on -j threads: the skeleton rv-augment and
 * rv-encode share.  It reads its inputs as one stream (rv_reader_open_list),
 * hands each sample to a worker (par.h: chunks, in order), passes every
 * other record on in its place, gives the program each metadata record
 * (and one NULL before a first sample that none came before), and refuses
 * a batch record ("record N is a batch; VERB before rv-batch").  What the
 * program does to a sample, and what it writes for a metadata record,
 * are its own.
 */
#ifndef RV_FILTER_H
#define RV_FILTER_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "stream/par.h"
#include "stream/stream.h"

/* One record of a chunk, the worker's to read while it runs. */
struct rv_filter_item {
	struct rv_rec rec;	/* header; payload in `in` (rec.payload NULL) */
	struct rv_buf in;
	const char *input;	/* the reader's name, valid while it runs */
	uint64_t recno;		/* its record number in the input, from 0 */
	int pass;		/* not a sample: written as it came */
	int mark;		/* the program's own, for a sample */
	size_t n;		/* likewise */
};

struct rv_filter_conf {
	const char *verb;	/* "augment": a batch's message */
	int strict;		/* a skipped sample stops the run */
	int nthreads;		/* >= 1 */
	size_t per_thread;	/* samples a chunk, a thread (par.h) */
	/* per-worker state, as par.h's */
	rv_pool_start_fn start;
	rv_pool_stop_fn stop;
	void *arg;
	/*
	 * Worker side: make the frame of sample it in slot s (par.h's item
	 * function, with the item).  RV_PAR_OK (an empty frame: nothing
	 * written, done() may write), RV_PAR_SKIP (a sample that cannot be
	 * made, its reason in rv_errmsg(): warned of as skipped, or under
	 * strict fatal) or RV_PAR_FATAL.
	 */
	int (*sample)(void *state, struct rv_filter_item *it,
	    struct rv_par_slot *s, void *ctx);
	/* Main thread, in order, after a sample ran and was not skipped
	 * (par.h's each()). */
	int (*done)(void *ctx, struct rv_filter_item *it,
	    const struct rv_par_slot *s);
	/*
	 * Main thread, every sample before it written: a metadata record
	 * (rec), or NULL before a first sample that none came before.  Write
	 * what the program passes on; 0, or -1 with rv_errmsg() (prefixed
	 * with the input and record here).
	 */
	int (*meta)(void *ctx, const struct rv_rec *rec);
	void *ctx;
	struct rv_writer *out;	/* borrowed */
	struct rv_progress *prog;	/* borrowed, may be NULL */
};

struct rv_filter;

/* NULL with rv_errmsg() set when a worker does not start. */
struct rv_filter *rv_filter_new(const struct rv_filter_conf *conf);
/* Filter the inputs (none: stdin) as one stream to the end, every item
 * consumed.  0, or -1 with rv_errmsg() set. */
int rv_filter_run(struct rv_filter *f, char *const *paths, int npaths);
/* Borrowed, valid until rv_filter_free. */
const struct rv_par_stats *rv_filter_stats(const struct rv_filter *f);
/* NULL is a no-op. */
void rv_filter_free(struct rv_filter *f);

#endif
