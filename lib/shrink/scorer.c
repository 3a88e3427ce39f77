/*
 * The scoring side of rv-score and rv-refurbish --score (scorer.h).
 */
#include "shrink/scorer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/xmem.h"
#include "shrink/score_io.h"
#include "shrink/thumb.h"
#include "stream/feedback.h"

#define FB_LINES	256	/* feedback lines taken per poll */
#define FB_WARN_MAX	10	/* malformed lines reported */
#define FB_ERR_ROUND	256	/* errors a round: a read error repeats */

struct rv_scorer {
	struct rv_shrink_conf conf;
	const char *feedback;	/* its name, borrowed */
	struct rv_shrink *s;	/* made at the first sample */
	struct rv_fb_reader *fb;
	uint64_t fb_left;	/* the trainer's leavings seen */
	uint64_t fb_left_kept;	/* 1 + samples kept when it last left and
				 * did not come back; 0: it is there */
	struct rv_thumbs *thumbs;	/* encoded samples, for the assistant */
	uint64_t bad_lines;
	uint32_t classes;	/* from the metadata, for the assistant */
	float mean[4], std[4];	/* from the metadata, for autoassist */
	int nmean, nstd;
	struct rv_fb_line lines[FB_LINES];
};

struct rv_scorer *
rv_scorer_new(const struct rv_score_opts *o)
{
	struct rv_scorer *sc = xcalloc(1, sizeof(*sc));

	sc->conf = o->conf;
	sc->feedback = o->feedback;
	if (o->feedback != NULL &&
	    (sc->fb = rv_fb_reader_open(o->feedback)) == NULL) {
		free(sc);
		return NULL;
	}
	return sc;
}

void
rv_scorer_free(struct rv_scorer *sc)
{
	if (sc == NULL)
		return;
	rv_shrink_free(sc->s);
	rv_thumbs_free(sc->thumbs);
	rv_fb_reader_close(sc->fb);
	free(sc);
}

struct rv_shrink_conf *
rv_scorer_conf(struct rv_scorer *sc)
{
	return &sc->conf;
}

int
rv_scorer_meta(struct rv_scorer *sc, const struct rv_meta *m)
{
	if (rv_score_classes(m, &sc->classes) < 0)
		return -1;
	return rv_score_norm(m, sc->mean, &sc->nmean, sc->std, &sc->nstd);
}

/* The channels the assistant's features have: an encoded sample's
 * thumbnail has 1 or 3 (rv_scorer_view). */
static uint32_t
view_channels(const struct rv_rec *rec)
{
	return rec->dtype == RV_DT_U8 || rec->channels == 1 ?
	    rec->channels : 3;
}

/*
 * The autoassist assistant takes the first sample's shape, and the
 * stream's mean and std (or the published constants).
 */
int
rv_scorer_start(struct rv_scorer *sc, const struct rv_rec *first)
{
	struct rv_shrink_conf cf = sc->conf;
	uint32_t ch = 1;

	if (sc->s != NULL)
		return 0;
	if (cf.policy == RV_POLICY_ASSISTANT)
		ch = view_channels(first);
	if (cf.policy == RV_POLICY_ASSISTANT &&
	    cf.assist.kind == RV_ASSIST_AUTOASSIST) {
		cf.height = first->height;
		cf.width = first->width;
		if (rv_score_aa_norm(sc->mean, sc->nmean, sc->std, sc->nstd,
		    ch, &cf.assist) < 0)
			return -1;
	}
	sc->s = rv_shrink_new(&cf, ch, sc->classes);
	return sc->s == NULL ? -1 : 0;
}

struct rv_shrink *
rv_scorer_shrink(const struct rv_scorer *sc)
{
	return sc->s;
}

int
rv_scorer_wants_pixels(const struct rv_scorer *sc)
{
	return sc->conf.policy == RV_POLICY_ASSISTANT;
}

/* The thumbnail cache, made at the first encoded sample. */
static int
thumbs_for(struct rv_scorer *sc, const struct rv_rec *rec)
{
	if (sc->conf.assist.kind == RV_ASSIST_AUTOASSIST)
		return rv_seterr("sample %llu is an encoded %s: the "
		    "autoassist assistant's features are the whole decoded "
		    "image; decode it first (rv-decode without --encoded), or "
		    "score with --assistant rv", (unsigned long long)rec->id,
		    rv_dtype_name(rec->dtype));
	if (sc->thumbs == NULL && (sc->thumbs = rv_thumbs_new(
	    view_channels(rec), sc->conf.max_ids)) == NULL)
		return -1;
	return 0;
}

int
rv_scorer_view(struct rv_scorer *sc, const struct rv_rec *rec,
    const uint8_t **px, uint32_t *h, uint32_t *w, uint32_t *c)
{
	if (rec->dtype == RV_DT_U8 || !rv_scorer_wants_pixels(sc)) {
		*px = rec->payload;
		*h = rec->height;
		*w = rec->width;
		*c = rec->channels;
		return 0;
	}
	if (thumbs_for(sc, rec) < 0)
		return -1;
	if ((*px = rv_thumbs_get(sc->thumbs, rec->id, rec->payload,
	    (size_t)rec->payload_len)) == NULL)
		return 1;
	*h = *w = RV_FEAT_GRID;
	*c = view_channels(rec);
	return 0;
}

const uint8_t *
rv_scorer_view_cached(struct rv_scorer *sc, const struct rv_rec *shape,
    uint64_t id, uint32_t *h, uint32_t *w, uint32_t *c)
{
	const uint8_t *px;

	if (sc->thumbs == NULL || shape->dtype == RV_DT_U8 ||
	    (px = rv_thumbs_peek(sc->thumbs, id)) == NULL)
		return NULL;
	*h = *w = RV_FEAT_GRID;
	*c = view_channels(shape);
	return px;
}

void
rv_scorer_poll(struct rv_scorer *sc)
{
	int n, i, errs = 0;

	if (sc->fb == NULL || sc->s == NULL)
		return;
	while ((n = rv_fb_poll(sc->fb, sc->lines, FB_LINES)) != 0) {
		if (n < 0) {
			if (++sc->bad_lines <= FB_WARN_MAX)
				rv_warn("%s", rv_errmsg());
			else if (sc->bad_lines == FB_WARN_MAX + 1)
				rv_warn("'%s': further bad lines not shown",
				    sc->feedback);
			if (++errs >= FB_ERR_ROUND)
				break;
			continue;
		}
		for (i = 0; i < n; i++)
			rv_shrink_feedback(sc->s, &sc->lines[i]);
	}
	if (rv_fb_reader_connected(sc->fb)) {
		/* it came back: nothing to say */
		sc->fb_left = rv_fb_reader_left(sc->fb);
		sc->fb_left_kept = 0;
	} else if (rv_fb_reader_left(sc->fb) > sc->fb_left) {
		/* it left (again): what is kept from now on is unlearned */
		struct rv_shrink_stats st;

		rv_shrink_stats(sc->s, &st);
		sc->fb_left = rv_fb_reader_left(sc->fb);
		sc->fb_left_kept = st.total_kept + 1;
	}
}

/*
 * Said once, at the end of the run (a trainer that stops at its target
 * closes the FIFO too, but then its producer dies of SIGPIPE before its
 * end; one that comes and goes between epochs is no news).
 */
void
rv_scorer_report_left(struct rv_scorer *sc)
{
	struct rv_shrink_stats st;

	if (sc->fb == NULL || sc->fb_left_kept == 0 ||
	    rv_fb_reader_connected(sc->fb))
		return;
	rv_shrink_stats(sc->s, &st);
	if (st.total_kept < sc->fb_left_kept)
		return;		/* it left with the last sample */
	rv_warn("'%s': the trainer closed the feedback FIFO after %llu "
	    "lines: nothing learned since (%llu samples kept), scoring goes "
	    "on as it stands", sc->feedback,
	    (unsigned long long)rv_fb_lines(sc->fb),
	    (unsigned long long)(st.total_kept - (sc->fb_left_kept - 1)));
	sc->fb_left_kept = 0;
}

const char *
rv_scorer_thumbs_line(const struct rv_scorer *sc, char *buf, size_t len)
{
	struct rv_thumb_stats ts;

	buf[0] = '\0';
	if (sc->thumbs != NULL) {
		rv_thumbs_stats(sc->thumbs, &ts);
		snprintf(buf, len, "; %llu encoded samples decoded reduced "
		    "for the assistant, %llu from its cache",
		    (unsigned long long)ts.decoded,
		    (unsigned long long)ts.hits);
	}
	return buf;
}
