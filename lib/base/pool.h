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

typedef void *(*rv_pool_start_fn)(void *arg);
typedef void (*rv_pool_stop_fn)(void *state);
typedef void (*rv_pool_fn)(void *state, size_t i, void *ctx);

/* nthreads >= 1, including the caller.  start may be NULL (state NULL). */
struct rv_pool *rv_pool_new(int nthreads, rv_pool_start_fn start,
    rv_pool_stop_fn stop, void *arg);
void rv_pool_run(struct rv_pool *p, size_t n, rv_pool_fn fn, void *ctx);
int rv_pool_size(const struct rv_pool *p);
/* The state of worker k (0 is the caller's). */
void *rv_pool_state(const struct rv_pool *p, int k);
/* Join the threads and stop() every state.  NULL is a no-op. */
void rv_pool_free(struct rv_pool *p);

#endif
