/*
 * Ordered parallel runs over chunks of items: the engine shared by the
 * programs that turn items into frames on -j threads (rv-decode,
 * rv-augment, rv-refurbish).  The main thread adds items one by one; when
 * a chunk is full it runs on a pool (pool.h), each item filling its slot
 * (frame bytes, a status, a message), and the main thread then consumes
 * the slots in the order the items were added: hooks see them and frames
 * go to a writer.
 *
 * Determinism: items are consumed in the order they were added, whatever
 * the thread count, the chunk sizes or which worker ran what, so output
 * made by the consuming side (writer, hooks) does not depend on -j.
 *
 * Memory: a chunk takes at most max_items items and aims to hold about
 * budget bytes (the frames, estimated from the last chunk's mean frame,
 * plus what the caller declares it holds per item), but never fewer than
 * 4 items per thread, so every worker stays busy between two waits.  Slots
 * and their buffers are made once and reused: no allocation per item in
 * steady state.
 *
 * Thread safety: a struct rv_par belongs to the thread that made it (the
 * main thread); rv_par_add, rv_par_flush and every hook but the item
 * function run there.  Item functions run concurrently on the workers.
 */
#ifndef RV_PAR_H
#define RV_PAR_H

#include <stddef.h>
#include <stdint.h>

#include "base/pool.h"
#include "stream/stream.h"

/* What an item function returns, and the slot's status. */
enum {
	RV_PAR_FATAL = -1,	/* stops the run (rv_par_add/_flush fail) */
	RV_PAR_OK = 0,
	RV_PAR_SKIP = 1,	/* consumed without its frame; each() decides */
};

/* The default byte budget of a chunk. */
#define RV_PAR_BUDGET	((size_t)64 << 20)

#define RV_PAR_MSGLEN	1024

/*
 * One item's result.  Slots belong to the rv_par and are reused: hooks
 * borrow them for the duration of the call.
 */
struct rv_par_slot {
	uint64_t seq;		/* items added before this one */
	struct rv_buf frame;	/* the item's frame (rv_enc_frame) or empty */
	int status;		/* RV_PAR_OK, _SKIP or _FATAL */
	char msg[RV_PAR_MSGLEN];	/* why, for _SKIP and _FATAL */
};

/*
 * Worker side: make the result of item i of the chunk in slot s.  i is
 * the slot index, in [0, max_items): callers keep their per-item inputs
 * in arrays of max_items indexed by it (rv_par_add returns it).  s->frame
 * is empty on entry (its capacity kept): append at most one frame.
 * Return RV_PAR_OK, or RV_PAR_SKIP / RV_PAR_FATAL (any negative value is
 * fatal) after rv_seterr: rv_errmsg() is then copied into s->msg.
 *
 * Runs on any worker thread, concurrently with other items: state is this
 * worker's own (made by start), slot i and the caller's element i are this
 * call's alone, and ctx is shared, so read it only (the main thread does
 * not touch it while a chunk runs).
 */
typedef int (*rv_par_item_fn)(void *state, size_t i, struct rv_par_slot *s,
    void *ctx);
/*
 * Main thread, in item order: slot i of the chunk (s) after it ran.
 * Then a _FATAL slot stops the run with its message, a _SKIP one is
 * counted, and an OK one's frame goes to out.  Return 0, or -1 after
 * rv_seterr to stop the run (e.g. to make a skip fatal).
 */
typedef int (*rv_par_each_fn)(void *ctx, size_t i,
    const struct rv_par_slot *s);
/*
 * Main thread, once per chunk: slots[0..n) in item order.  Return 0, or
 * -1 after rv_seterr to stop the run.
 */
typedef int (*rv_par_chunk_fn)(void *ctx, const struct rv_par_slot *slots,
    size_t n);

struct rv_progress;

struct rv_par_conf {
	int nthreads;		/* >= 1, the caller included (pool.h) */
	size_t max_items;	/* most items per chunk; 0: 256 per thread */
	size_t budget;		/* chunk bytes aimed at; 0: RV_PAR_BUDGET */
	/*
	 * Per-worker state (rv_pool_new): start(arg) once per worker, on the
	 * caller's thread, returning the state or NULL after rv_seterr (then
	 * rv_par_new fails); stop(state) once per state at rv_par_free, and
	 * also stop(NULL) after a failed start.  start NULL: states are NULL.
	 */
	rv_pool_start_fn start;
	rv_pool_stop_fn stop;
	void *arg;
	rv_par_item_fn item;	/* required */
	/*
	 * Main-thread hooks, each optional, called with ctx: before(slots,
	 * n) when the chunk is complete, before it runs (only seq is set:
	 * the place to prefetch, e.g. a batch of cache reads); each(i, slot)
	 * per item in order after it ran, before its frame is written;
	 * after(slots, n) once the chunk's items are consumed (e.g. cache
	 * puts).
	 */
	rv_par_chunk_fn before;
	rv_par_each_fn each;
	rv_par_chunk_fn after;
	void *ctx;
	/*
	 * Borrowed, optional.  out: after each(), the frame of an OK slot
	 * (if not empty) is written to it as one record.  prog: ticked after
	 * every chunk with the frames count.
	 */
	struct rv_writer *out;
	struct rv_progress *prog;
};

/* Counts since rv_par_new. */
struct rv_par_stats {
	uint64_t added;		/* items added */
	uint64_t consumed;	/* items consumed (each() done, frame out) */
	uint64_t frames;	/* OK items with a frame (written to out) */
	uint64_t skipped;	/* items that returned RV_PAR_SKIP */
	uint64_t chunks;	/* chunks run */
};

struct rv_par;

/*
 * Make the pool (its start hooks run now, on this thread) and the slots.
 * conf is copied; what it points to is borrowed and must outlive the
 * rv_par.  The rv_par is then used by this thread only.  NULL with
 * rv_errmsg() set when a start hook fails or conf->item is NULL.
 */
struct rv_par *rv_par_new(const struct rv_par_conf *conf);
/*
 * Reserve the next item's slot and store its index in *slot; hold is the
 * bytes the caller keeps for the item until it is consumed (its input),
 * counted against the budget.  When the pending chunk is full it is run
 * and consumed first (hooks, writer and progress run inside this call),
 * so the caller fills its element *slot after this returns; the element
 * is then the item function's to read until the item is consumed.
 * Returns 0, or -1 with rv_errmsg() set (a fatal item's message, a
 * hook's, the writer's): the rv_par is then spent and every later call
 * returns -1 with the same message.  Owning thread only.
 */
int rv_par_add(struct rv_par *p, size_t hold, size_t *slot);
/*
 * Run and consume the items added so far (call it at the end of the
 * input, and before anything that must follow them: a record written by
 * hand, a change to what ctx holds).  Returns 0 or -1 as rv_par_add.
 * Owning thread only.
 */
int rv_par_flush(struct rv_par *p);
/* Items per chunk at most: the size of the caller's per-item arrays. */
size_t rv_par_max(const struct rv_par *p);
/* The worker threads, the caller included (fewer than asked if the
 * system would not make more). */
int rv_par_threads(const struct rv_par *p);
/* Borrowed, valid until rv_par_free; changed by _add and _flush. */
const struct rv_par_stats *rv_par_stats(const struct rv_par *p);
/*
 * Stop the workers (stop hooks, on this thread) and free the slots.
 * Items added but not flushed are dropped, never run.  NULL is a no-op.
 */
void rv_par_free(struct rv_par *p);

#endif
