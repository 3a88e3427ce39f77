/*
 * The scoring side of a program: the shrinker (shrink.h) made at the
 * first sample, the trainer's feedback FIFO polled without blocking, and
 * what the assistant sees of each sample (its pixels, or an encoded
 * sample's thumbnail, thumb.h).  rv-score runs it on the stream it reads;
 * rv-refurbish --score runs it inside the refurbishing loop, before any
 * partial augmentation (refurb.h).
 */
#ifndef RV_SCORER_H
#define RV_SCORER_H

#include <stddef.h>
#include <stdint.h>

#include "shrink/score_opt.h"
#include "shrink/shrink.h"
#include "stream/meta.h"
#include "stream/record.h"

struct rv_scorer;

/*
 * For options o (borrowed: o->feedback must outlive the scorer; o->conf
 * is copied).  Opens the feedback FIFO or file when given: NULL with
 * rv_errmsg() set when it cannot.
 */
struct rv_scorer *rv_scorer_new(const struct rv_score_opts *o);
/* NULL is a no-op. */
void rv_scorer_free(struct rv_scorer *sc);

/* The configuration, which the caller may change until the first sample
 * (rv-score: --budget's window from the input's refurbish.batch). */
struct rv_shrink_conf *rv_scorer_conf(struct rv_scorer *sc);
/*
 * What the scorer takes from the input's metadata (classes, and for the
 * autoassist assistant mean and std); call it for each metadata record
 * before the first sample.  -1 with rv_errmsg() for a bad value.
 */
int rv_scorer_meta(struct rv_scorer *sc, const struct rv_meta *m);
/*
 * Make the shrinker from the first sample's shape (no-op after the
 * first call).  -1 with rv_errmsg() for a configuration that does not fit
 * it.
 */
int rv_scorer_start(struct rv_scorer *sc, const struct rv_rec *first);
/* The shrinker, NULL before rv_scorer_start. */
struct rv_shrink *rv_scorer_shrink(const struct rv_scorer *sc);

/* 1 if the scorer looks at rec's pixels: the assistant policy does. */
int rv_scorer_wants_pixels(const struct rv_scorer *sc);
/*
 * What the assistant sees of rec into *px (borrowed until the next call
 * or rec's end), h, w and c: rec's own pixels when decoded, else the
 * thumbnail of its reduced decode.  0; 1 when an encoded sample does not
 * decode (rv_errmsg() says why; the caller skips it or stops); -1 for a
 * stream it cannot score at all (the autoassist assistant on encoded
 * samples).
 */
int rv_scorer_view(struct rv_scorer *sc, const struct rv_rec *rec,
    const uint8_t **px, uint32_t *h, uint32_t *w, uint32_t *c);
/* An encoded sample's thumbnail when already made, else NULL; h = w =
 * RV_FEAT_GRID and c as rv_scorer_view gives them. */
const uint8_t *rv_scorer_view_cached(struct rv_scorer *sc,
    const struct rv_rec *shape, uint64_t id, uint32_t *h, uint32_t *w,
    uint32_t *c);

/*
 * Learn from every feedback line there is now, never blocking.  A
 * malformed line is reported (the first 10) and skipped.
 */
void rv_scorer_poll(struct rv_scorer *sc);
/*
 * At the end of a run: if the trainer closed the feedback FIFO and did
 * not come back before the last sample, say so once.
 */
void rv_scorer_report_left(struct rv_scorer *sc);
/* "; N encoded samples decoded reduced for the assistant, M from its
 * cache" when there were any, else "", into buf. */
const char *rv_scorer_thumbs_line(const struct rv_scorer *sc, char *buf,
    size_t len);

#endif
