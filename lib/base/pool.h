/*
 * A fixed pool of worker threads for data-parallel loops.  rv_pool_run()
 * calls fn(state, i, ctx) for every i in [0, n) and returns when all are
 * done; the calling thread works too, so a pool of 1 starts no thread.
 * Each worker has its own state, made once by start() and freed by stop()
 * (per-thread scratch buffers, codec handles: never allocate per item).
 * Callers get deterministic output by writing results into slot i and
 * emitting slots in order after rv_pool_run() returns.
 */
#ifndef RV_POOL_H
#define RV_POOL_H

#include <stddef.h>

struct rv_pool;

/*
 * start(arg) makes one worker's state, or returns NULL when it cannot
 * (with rv_errmsg() set, by convention); stop(state) frees one, and is
 * given NULL too.  fn(state, i, ctx) does item i with that worker's state.
 */
typedef void *(*rv_pool_start_fn)(void *arg);
typedef void (*rv_pool_stop_fn)(void *state);
typedef void (*rv_pool_fn)(void *state, size_t i, void *ctx);

/*
 * A pool of nthreads workers, the caller included: nthreads - 1 threads
 * are started.  nthreads below 1 is taken as 1.  start (may be NULL: every
 * state is NULL) is called nthreads times on the calling thread, before
 * any thread exists, for workers 0 .. nthreads - 1 in that order; a start
 * that fails leaves that worker's state NULL, and the pool does not stop
 * there: the caller checks rv_pool_state() for each worker (rv_par_new()
 * does) and frees the pool.  When a thread cannot be created the pool
 * runs with the workers it has (rv_pool_size() says how many) and stops
 * the states of the others at once.  Never fails: allocation failure
 * exits, as xmalloc() does.
 */
struct rv_pool *rv_pool_new(int nthreads, rv_pool_start_fn start,
    rv_pool_stop_fn stop, void *arg);
/*
 * fn(state, i, ctx) for every i in [0, n), each exactly once, then
 * return.  Items go to whichever worker asks next (an atomic counter, one
 * item a grab), so their order across workers is not fixed, but one state
 * is only ever used by one thread at a time.  The calling thread is worker
 * 0; with one worker, or n <= 1, nothing runs on another thread.  One run
 * at a time, from the thread that made the pool; fn must not call it.
 */
void rv_pool_run(struct rv_pool *p, size_t n, rv_pool_fn fn, void *ctx);
/* The workers the pool has: nthreads, or fewer when pthread_create
 * failed (at least 1). */
int rv_pool_size(const struct rv_pool *p);
/* The state of worker k < rv_pool_size() (0 is the caller's); NULL when
 * its start failed or there is no start. */
void *rv_pool_state(const struct rv_pool *p, int k);
/* Join the threads and stop() every state, worker 0 first.  NULL is a
 * no-op. */
void rv_pool_free(struct rv_pool *p);

#endif
