/*
 * Instance shrinking (rv-score): the keep decision of each sample under
 * the assistant, history or uniform policy, and the bounded per-id state
 * that feedback lines are matched against, and budget mode's windows.
 * All memory is allocated by rv_shrink_new; deciding and learning
 * allocate nothing.
 */
#include "shrink/shrink.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/rng.h"
#include "base/xmem.h"
#include "shrink/idmap.h"

#define NIL		RV_IDMAP_NIL
#define MAX_TABLE	((size_t)1 << 30)	/* entries in one id map */
#define RECENT		4096	/* recent gradnorms for percentiles */
#define RESORT		256	/* pushes between sorts of the copy */

/* A value and its weight. */
struct vw {
	float v, w;
};

/*
 * The last RECENT values of a kind, and a sorted copy to rank against;
 * each value with a weight (1 but for the noise cut's losses), and the
 * weighted median of the sorted copy.
 */
struct ring {
	struct vw v[RECENT], sorted[RECENT];
	size_t n, pos, sorted_n;
	uint64_t pushes;
	double median;
};

struct rv_shrink {
	struct rv_shrink_conf conf;
	uint32_t channels;
	size_t nfeat;		/* image features, then RV_HIST_FEAT if on */
	size_t nimg;		/* image features: rv_feat_len(channels) */
	struct rv_assist *a;
	int aa;			/* the assistant is the published one */
	float *phi;		/* features of the sample being decided */
	const unsigned char *cur;	/* what is kept of it: phi, or under
				 * autoassist its pixels */
	size_t st_len;		/* bytes of that a sample */

	/* kept samples awaiting feedback: when each was decided (a count
	 * of samples decided), and for the assistant its features
	 * (autoassist: pixels) and label */
	struct rv_idmap fly;
	uint64_t *fly_seq;
	float *fly_p;		/* the probability it was kept with */
	unsigned char *fly_st;
	int32_t *fly_label;
	/* the feedback lag, in samples decided: this epoch's, the run's */
	uint64_t lag_n, lag_sum, lag_max;
	uint64_t tlag_n, tlag_sum, tlag_max;

	/* history, and the assistant's history features: the last value
	 * (gradnorm; the assistant's target value) of each id */
	struct rv_idmap hist;
	float *hist_gn;
	unsigned char *hist_sus;	/* the noise cut: the id's streak of
					 * suspect losses, up to 255 */
	uint64_t suspects;		/* this epoch's */
	struct ring gn;			/* history: recent gradnorms */
	struct ring loss;		/* the noise cut: recent losses */

	int have_first, warm;
	uint32_t first_epoch;
	uint64_t seen, kept, total_seen, total_kept, feedback, unmatched;
	/* drops decided before any feedback had come, by a policy that
	 * learns from it: this epoch's, the run's */
	uint64_t blind, total_blind;

	/* budget mode: the window's samples, in the order offered */
	size_t win_n;
	uint32_t win_epoch;
	int win_warm;
	uint64_t *win_id;
	int32_t *win_label;
	unsigned char *win_stratum;	/* 0 or 1 (rv_shrink_offer) */
	unsigned char *win_sus;		/* a suspect of the noise cut */
	double *win_p, *win_pi;
	/* a stratum's part of the window, gathered to be decided */
	uint32_t *st_idx;
	double *st_p, *st_pi;
	unsigned char *st_keep;
	float *win_score;
	unsigned char *win_st;	/* assistant: st_len bytes per sample */
	unsigned char *win_keep;
};

/* rv_rng ops of the score stage: never renumber, outputs depend on them */
#define OP_KEEP		0	/* a sample's keep draw */
#define OP_WINDOW	1	/* a budget window's systematic draw */
#define OP_RS2		3	/* rs2: an id's place in a cycle (op 2 is
				 * assist.c's initial weights) */

void
rv_shrink_conf_init(struct rv_shrink_conf *c)
{
	c->policy = RV_POLICY_ASSISTANT;
	c->floor = 0.3;
	c->beta = 1;
	c->keep = 0.5;
	c->reweight = 0;
	c->seed = 0;
	c->min_feedback = 1000;
	c->max_inflight = (size_t)1 << 16;
	c->max_ids = (size_t)1 << 20;
	c->hist_feat = 1;
	rv_assist_conf_init(&c->assist);
	c->budget = 0;
	c->window = RV_SHRINK_WINDOW;
	c->height = c->width = 0;
	c->noise_cut = 0;
	c->noise_keep = 0.05;
	c->noise_streak = 2;
}

void
rv_shrink_conf_autoassist(struct rv_shrink_conf *c)
{
	c->assist.kind = RV_ASSIST_AUTOASSIST;
	c->assist.lr = RV_AA_LR;
	c->assist.l2 = RV_AA_L2;
	c->assist.target = RV_TARGET_LOSS;
	c->hist_feat = 0;
	c->min_feedback = 0;
}

static int
check_conf(const struct rv_shrink_conf *c, uint32_t channels)
{
	if (c->policy != RV_POLICY_ASSISTANT &&
	    c->policy != RV_POLICY_HISTORY && c->policy != RV_POLICY_UNIFORM &&
	    c->policy != RV_POLICY_RS2)
		return rv_seterr("shrink: policy %d: unknown", (int)c->policy);
	if (c->policy == RV_POLICY_RS2 && c->budget > 0)
		return rv_seterr("shrink: rs2 chooses its own share of each "
		    "epoch: not with a budget");
	if (!(c->floor >= 0 && c->floor <= 1))
		return rv_seterr("shrink: floor %g: must be in [0, 1]",
		    c->floor);
	if (!(c->keep > 0 && c->keep <= 1))
		return rv_seterr("shrink: keep %g: must be in (0, 1]", c->keep);
	if (!(c->beta > 0) || !isfinite(c->beta))
		return rv_seterr("shrink: beta %g: must be positive", c->beta);
	if (c->max_inflight < 1)
		return rv_seterr("shrink: max_inflight 0: must be at least 1");
	if (c->max_inflight > MAX_TABLE)
		return rv_seterr("shrink: max_inflight %zu: more than %zu",
		    c->max_inflight, MAX_TABLE);
	if (c->max_ids < 1)
		return rv_seterr("shrink: max_ids 0: must be at least 1");
	if (c->max_ids > MAX_TABLE)
		return rv_seterr("shrink: max_ids %zu: more than %zu",
		    c->max_ids, MAX_TABLE);
	if (!isfinite(c->noise_cut))
		return rv_seterr("shrink: noise cut %g: must be a loss, 0 for "
		    "none or below 0 for log(classes)", c->noise_cut);
	if (c->noise_streak < 1 || c->noise_streak > 255)
		return rv_seterr("shrink: noise streak %u: must be 1 to 255",
		    c->noise_streak);
	if (!(c->noise_keep >= 0 && c->noise_keep <= 1))
		return rv_seterr("shrink: noise keep %g: must be in [0, 1]",
		    c->noise_keep);
	if (c->noise_cut != 0 && c->policy != RV_POLICY_ASSISTANT &&
	    c->policy != RV_POLICY_HISTORY)
		return rv_seterr("shrink: the noise cut is for the assistant "
		    "and history policies");
	if (!(c->budget >= 0 && c->budget <= 1))
		return rv_seterr("shrink: budget %g: must be in (0, 1], or 0 "
		    "for none", c->budget);
	if (c->budget > 0 &&
	    (c->window < 1 || c->window > RV_SHRINK_MAX_WINDOW))
		return rv_seterr("shrink: window %u: must be 1 to %u",
		    c->window, RV_SHRINK_MAX_WINDOW);
	if (channels < 1 || channels > 4)
		return rv_seterr("shrink: %u channels: must be 1 to 4",
		    channels);
	if (c->policy == RV_POLICY_ASSISTANT &&
	    c->assist.kind == RV_ASSIST_AUTOASSIST) {
		if (c->hist_feat)
			return rv_seterr("shrink: the autoassist assistant "
			    "has no history features");
		if (c->assist.target != RV_TARGET_LOSS)
			return rv_seterr("shrink: the autoassist assistant "
			    "learns the loss");
		if (c->height < 1 || c->width < 1 ||
		    (uint64_t)c->height * c->width * channels > UINT32_MAX)
			return rv_seterr("shrink: autoassist: %ux%ux%u "
			    "images: want 1 to %u values", c->width,
			    c->height, channels, UINT32_MAX);
	}
	return 0;
}

/* Does this configuration keep each id's last value? */
static int
uses_hist(const struct rv_shrink_conf *c)
{
	return c->policy == RV_POLICY_HISTORY ||
	    (c->policy == RV_POLICY_ASSISTANT && c->hist_feat) ||
	    c->noise_cut != 0;
}

/*
 * The assistant's history features of an id: the log of its last value
 * over the running mean of values, clamped to [-4, 4], and 1; both 0 for
 * an id never heard of (or before there is a mean).  The ratio is what
 * the label compares (value > mean), in a scale that does not drift as
 * the gradient norms shrink over training.
 */
static void
hist_features(const struct rv_shrink *s, uint64_t id, float *f)
{
	uint32_t slot = rv_idmap_find(&s->hist, id);
	double m = rv_assist_mean(s->a), r;

	f[0] = f[1] = 0;
	if (slot == NIL || !(m > 0))
		return;
	r = log(fmax(s->hist_gn[slot], 1e-30) / m);
	f[0] = (float)fmin(fmax(r, -4), 4);
	f[1] = 1;
}

/*
 * id's slot in the history, touched as the most recent; a new one (the
 * least recently updated forgotten for it) starts with value 0 and no
 * streak of suspect losses.
 */
static uint32_t
hist_slot(struct rv_shrink *s, uint64_t id)
{
	uint32_t slot = rv_idmap_find(&s->hist, id);

	if (slot != NIL) {
		rv_idmap_touch(&s->hist, slot);
		return slot;
	}
	slot = rv_idmap_insert(&s->hist, id);
	s->hist_gn[slot] = 0;
	s->hist_sus[slot] = 0;
	return slot;
}

/* Remember v as id's last value. */
static void
hist_put(struct rv_shrink *s, uint64_t id, float v)
{
	s->hist_gn[hist_slot(s, id)] = v;
}

static void push_recent(struct ring *g, float v, float w);

/*
 * The noise cut: is this loss of id suspect, against the median of the
 * last RECENT before it?  Then the ring takes it, and the id's streak
 * grows or ends.  A loss counts 1/p, p the probability its sample was
 * kept with (1 when not known): the losses that come back are those of
 * the samples kept, and a policy that keeps high-loss samples more
 * often would raise their plain median to where the mislabelled ones'
 * losses sit (the median the samples seen would have had).
 */
static void
noise_put(struct rv_shrink *s, uint64_t id, double loss, double p)
{
	uint32_t slot;
	int sus;

	if (!isfinite(loss))
		return;
	/* against the median of the losses before it */
	sus = s->loss.sorted_n > 0 && loss > s->conf.noise_cut &&
	    loss > RV_NOISE_RATIO * s->loss.median;
	push_recent(&s->loss, (float)loss, p > 0 && p < 1 ? (float)(1 / p) :
	    1.0f);
	slot = hist_slot(s, id);
	/* a streak of suspect losses; one that is not ends it */
	if (!sus)
		s->hist_sus[slot] = 0;
	else if (s->hist_sus[slot] < 255)
		s->hist_sus[slot]++;
}

/*
 * The noise cut over the policy's keep probability *p of id, once the
 * rule applies (warm): a suspect's becomes noise_keep, counted, and 1 is
 * returned; one on probation (a streak begun and not yet long enough) is
 * kept, so that its next loss comes soon to confirm or clear it.
 */
static int
noise_over(struct rv_shrink *s, uint64_t id, int warm, double *p)
{
	uint32_t slot;

	if (!warm || !(s->conf.noise_cut > 0))
		return 0;
	slot = rv_idmap_find(&s->hist, id);
	if (slot == NIL || s->hist_sus[slot] == 0)
		return 0;
	if (s->hist_sus[slot] < s->conf.noise_streak) {
		*p = 1;
		return 0;
	}
	*p = s->conf.noise_keep;
	s->suspects++;
	return 1;
}

struct rv_shrink *
rv_shrink_new(const struct rv_shrink_conf *c, uint32_t channels,
    uint32_t classes)
{
	struct rv_shrink *s;
	struct rv_assist_conf ac;
	struct rv_assist *a = NULL;

	if (check_conf(c, channels) < 0)
		return NULL;
	if (c->noise_cut < 0 && classes < 2) {
		rv_seterr("shrink: the noise cut auto is log(classes): the "
		    "stream says no classes (give --noise-cut a loss)");
		return NULL;
	}
	if (c->policy == RV_POLICY_ASSISTANT) {
		ac = c->assist;
		if (ac.kind == RV_ASSIST_AUTOASSIST)
			ac.nfeat = c->height * c->width * channels;
		else
			ac.nfeat = (uint32_t)(rv_feat_len(channels) +
			    (c->hist_feat ? RV_HIST_FEAT : 0));
		ac.classes = classes;
		ac.channels = channels;
		ac.seed = c->seed;
		if ((a = rv_assist_new(&ac)) == NULL) {
			rv_preferr("shrink");
			return NULL;
		}
	}
	s = xcalloc(1, sizeof(*s));
	s->conf = *c;
	if (c->noise_cut < 0)
		s->conf.noise_cut = log((double)classes);
	s->channels = channels;
	s->nimg = rv_feat_len(channels);
	s->nfeat = s->nimg;
	s->a = a;
	if (a != NULL) {
		s->conf.assist = ac;
		s->aa = ac.kind == RV_ASSIST_AUTOASSIST;
		s->nfeat = ac.nfeat;
		s->st_len = s->aa ? s->nfeat : s->nfeat * sizeof(float);
		if (!s->aa)
			s->phi = xcalloc(s->nfeat, sizeof(*s->phi));
		s->fly_st = xcalloc(c->max_inflight, s->st_len);
		s->fly_label = xcalloc(c->max_inflight,
		    sizeof(*s->fly_label));
	}
	/* every policy: the lag is measured on kept samples */
	rv_idmap_init(&s->fly, c->max_inflight);
	s->fly_seq = xcalloc(c->max_inflight, sizeof(*s->fly_seq));
	s->fly_p = xcalloc(c->max_inflight, sizeof(*s->fly_p));
	if (uses_hist(c)) {
		rv_idmap_init(&s->hist, c->max_ids);
		s->hist_gn = xcalloc(c->max_ids, sizeof(*s->hist_gn));
		s->hist_sus = xcalloc(c->max_ids, sizeof(*s->hist_sus));
	}
	if (c->budget > 0) {
		s->win_id = xcalloc(c->window, sizeof(*s->win_id));
		s->win_label = xcalloc(c->window, sizeof(*s->win_label));
		s->win_p = xcalloc(c->window, sizeof(*s->win_p));
		s->win_pi = xcalloc(c->window, sizeof(*s->win_pi));
		s->win_score = xcalloc(c->window, sizeof(*s->win_score));
		s->win_keep = xcalloc(c->window, sizeof(*s->win_keep));
		s->win_stratum = xcalloc(c->window,
		    sizeof(*s->win_stratum));
		s->win_sus = xcalloc(c->window, sizeof(*s->win_sus));
		s->st_idx = xcalloc(c->window, sizeof(*s->st_idx));
		s->st_p = xcalloc(c->window, sizeof(*s->st_p));
		s->st_pi = xcalloc(c->window, sizeof(*s->st_pi));
		s->st_keep = xcalloc(c->window, sizeof(*s->st_keep));
		if (a != NULL)
			s->win_st = xcalloc(c->window, s->st_len);
	}
	return s;
}

void
rv_shrink_free(struct rv_shrink *s)
{
	if (s == NULL)
		return;
	rv_assist_free(s->a);
	free(s->phi);
	rv_idmap_release(&s->fly);
	free(s->fly_seq);
	free(s->fly_p);
	free(s->fly_st);
	free(s->fly_label);
	if (uses_hist(&s->conf))
		rv_idmap_release(&s->hist);
	free(s->hist_gn);
	free(s->hist_sus);
	free(s->win_id);
	free(s->win_label);
	free(s->win_p);
	free(s->win_pi);
	free(s->win_score);
	free(s->win_keep);
	free(s->win_stratum);
	free(s->win_sus);
	free(s->st_idx);
	free(s->st_p);
	free(s->st_pi);
	free(s->st_keep);
	free(s->win_st);
	free(s);
}

/* Share of the ring's sorted values <= v; 1 while it has none. */
static double
percentile(const struct ring *g, float v)
{
	size_t lo = 0, hi = g->sorted_n, mid;

	if (g->sorted_n == 0)
		return 1;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (g->sorted[mid].v <= v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (double)lo / (double)g->sorted_n;
}

static int
cmp_vw(const void *x, const void *y)
{
	float a = ((const struct vw *)x)->v, b = ((const struct vw *)y)->v;

	return (a > b) - (a < b);
}

/*
 * The weighted median of n values: the smallest value at which the
 * weights of the values up to it pass half the total (sorted in place;
 * with equal weights sorted[n / 2], the upper median).
 */
static double
weighted_median(struct vw *a, size_t n)
{
	double total = 0, acc = 0;
	size_t i;

	if (n == 0)
		return 0;
	qsort(a, n, sizeof(*a), cmp_vw);
	for (i = 0; i < n; i++)
		total += a[i].w;
	for (i = 0; i < n; i++) {
		acc += a[i].w;
		if (acc > total / 2)
			return a[i].v;
	}
	return a[n - 1].v;
}

double
rv_shrink_weighted_median(const float *v, const float *w, size_t n)
{
	struct vw *a = xcalloc(n > 0 ? n : 1, sizeof(*a));
	double m;

	for (size_t i = 0; i < n; i++) {
		a[i].v = v[i];
		a[i].w = w != NULL ? w[i] : 1.0f;
	}
	m = weighted_median(a, n);
	free(a);
	return m;
}

/*
 * The sorted copy and the weighted median are refreshed every RESORT
 * pushes, and at every push while there are fewer than RESORT values, so
 * a small data set is ranked as soon as its first feedback comes.
 */
static void
push_recent(struct ring *g, float v, float w)
{
	g->v[g->pos].v = v;
	g->v[g->pos].w = w;
	g->pos = (g->pos + 1) % RECENT;
	if (g->n < RECENT)
		g->n++;
	g->pushes++;
	if (g->pushes < RESORT || g->pushes % RESORT == 0) {
		memcpy(g->sorted, g->v, g->n * sizeof(*g->v));
		g->median = weighted_median(g->sorted, g->n);
		g->sorted_n = g->n;
	}
}

/* Under the assistant, does the image fit the features? */
static int
check_shape(const struct rv_shrink *s, uint32_t h, uint32_t w, uint32_t c)
{
	if (s->a == NULL)
		return 0;
	if (h == 0 || w == 0)
		return rv_seterr("shrink: empty %ux%u image", w, h);
	if (c != s->channels)
		return rv_seterr("shrink: image has %u channels, not %u", c,
		    s->channels);
	if (s->aa && (h != s->conf.height || w != s->conf.width))
		return rv_seterr("shrink: image is %ux%u, not %ux%u: the "
		    "autoassist assistant's features are the whole image", w,
		    h, s->conf.width, s->conf.height);
	return 0;
}

static void
note_epoch(struct rv_shrink *s, uint32_t epoch)
{
	if (!s->have_first) {
		s->have_first = 1;
		s->first_epoch = epoch;
	}
}

/*
 * rs2: is id in epoch e's subset?  The cycles (passes over the data) laid
 * end to end on a line, cycle c on [c, c + 1), epoch e on [e k, (e + 1)
 * k); the id's turn in cycle c is at c + r_c, r_c its place, and it is
 * kept in the epoch that holds the point.  An epoch that straddles the
 * boundary j between cycles j - 1 and j holds the tail [lo, 1) of cycle
 * j - 1 and the head [0, h) of cycle j; an id whose turn fell in that tail
 * must not have its next turn in that head, or the epoch would hold it
 * twice.  So r_j is drawn, from u uniform, as:
 *   an id of the tail:  r = h + u (1 - h), past the head;
 *   any other id:       with probability q = h / lo, r = u lo in the head,
 *                       else r = h + (u - q) / (1 - q) (1 - h);
 * the head gets its share h of the ids and the rest of the cycle a uniform
 * density, so every r_j is uniform on [0, 1): each epoch keeps k of the
 * samples up to the binomial spread, each id once per cycle, never twice
 * in an epoch.  The place depends on the last, so it is found by going
 * through the id's cycles from the first: about e k draws.  Every bound is
 * the same expression, e * k - c, in the draw and in the test, so they
 * agree to the bit.
 */
static double
rs2_draw(uint64_t seed, uint64_t id, uint64_t j)
{
	struct rv_rng g;

	rv_rng_init(&g, seed, RV_STAGE_SCORE, OP_RS2, j, id);
	return rv_rng_uniform(&g);
}

/* The place in cycle j >= 1 of an id whose place in cycle j - 1 was r. */
static double
rs2_next(uint64_t seed, double k, uint64_t id, uint64_t j, double r)
{
	double u = rs2_draw(seed, id, j), lo, h, q;
	/* the epoch that holds the point j */
	uint64_t e = (uint64_t)floor((double)j / k);

	while (e > 0 && (double)e * k > (double)j)
		e--;
	while (((double)e + 1) * k <= (double)j)
		e++;
	if ((double)e * k == (double)j)
		return u;		/* an epoch starts at the boundary */
	lo = (double)e * k - (double)(j - 1);
	h = ((double)e + 1) * k - (double)j;
	if (r >= lo) {
		r = h + u * (1 - h);
	} else {
		q = h / lo;
		r = u < q ? u * lo : h + (u - q) / (1 - q) * (1 - h);
	}
	return r < 1 ? r : nextafter(1, 0);	/* rounding, u near 1 */
}

int
rv_shrink_rs2_member(uint64_t seed, double k, uint64_t id, uint32_t epoch)
{
	double a = (double)epoch * k, b = ((double)epoch + 1) * k, r;
	uint64_t c = (uint64_t)floor(a), j;

	if (k >= 1)
		return 1;
	/* the cycles the epoch covers: the one holding a, maybe the next */
	while (c > 0 && (double)c > a)
		c--;
	while ((double)c + 1 <= a)
		c++;
	r = rs2_draw(seed, id, 0);
	for (j = 1; j <= c; j++)
		r = rs2_next(seed, k, id, j, r);
	if (r >= a - (double)c && r < b - (double)c)
		return 1;
	if ((double)c + 1 >= b)
		return 0;
	return rs2_next(seed, k, id, c + 1, r) < b - (double)(c + 1);
}

/*
 * The policy's keep probability of a sample, before warm-up (which the
 * callers apply); the assistant's p in *score (NaN under the others), and
 * its features in s->phi.
 */
static double
keep_prob(struct rv_shrink *s, uint64_t id, int32_t label,
    const uint8_t *px, uint32_t h, uint32_t w, uint32_t c, float *score)
{
	const struct rv_shrink_conf *cf = &s->conf;
	uint32_t slot;
	double p;

	*score = NAN;
	switch (cf->policy) {
	case RV_POLICY_ASSISTANT:
		if (s->aa) {
			p = rv_assist_predict_px(s->a, px, label);
			s->cur = px;
			*score = (float)p;
			return cf->floor + (1 - cf->floor) * p;
		}
		rv_feat(px, h, w, c, s->phi);
		s->cur = (const unsigned char *)s->phi;
		if (cf->hist_feat)
			hist_features(s, id, s->phi + s->nimg);
		p = rv_assist_predict(s->a, s->phi, label);
		*score = (float)p;
		return cf->floor + (1 - cf->floor) * p;
	case RV_POLICY_HISTORY:
		slot = rv_idmap_find(&s->hist, id);
		if (slot == NIL)
			return 1;
		return fmax(cf->floor, pow(percentile(&s->gn, s->hist_gn[slot]),
		    cf->beta));
	default:
		return cf->keep;
	}
}

static float
weight_of(const struct rv_shrink *s, double pk)
{
	if (!s->conf.reweight || !(pk > 0))
		return 1.0f;
	return 1 / pk > FLT_MAX ? FLT_MAX : (float)(1 / pk);
}

/*
 * A sample was kept, the total_seen-th decided: its feedback is awaited,
 * for the lag and, by the assistant, to learn from (st: what it keeps of
 * the sample, st_len bytes).
 */
static void
fly_put(struct rv_shrink *s, uint64_t id, int32_t label, double p,
    const unsigned char *st)
{
	uint32_t slot = rv_idmap_find(&s->fly, id);

	if (slot == NIL)
		slot = rv_idmap_insert(&s->fly, id);
	else
		rv_idmap_touch(&s->fly, slot);
	s->fly_seq[slot] = s->total_seen;
	s->fly_p[slot] = (float)p;
	if (s->a == NULL)
		return;
	memcpy(s->fly_st + (size_t)slot * s->st_len, st, s->st_len);
	s->fly_label[slot] = label;
}

/* Does the policy choose from the trainer's feedback?  Then a drop made
 * before it had any (the assistant: before its --min-feedback lines,
 * while it ranks nothing) is uninformed: chance and the floor chose it. */
static int
learns(const struct rv_shrink_conf *c)
{
	return c->policy == RV_POLICY_ASSISTANT ||
	    c->policy == RV_POLICY_HISTORY;
}

/*
 * Count a decision; a dropped sample gets no feedback, so only a kept one
 * waits for it (st as for fly_put).
 */
static void
tally(struct rv_shrink *s, uint64_t id, int32_t label, int keep, double p,
    const unsigned char *st)
{
	s->seen++;
	s->total_seen++;
	if (!keep) {
		if (learns(&s->conf) && s->feedback <
		    (s->a != NULL && s->conf.min_feedback > 0 ?
		    s->conf.min_feedback : 1)) {
			s->blind++;
			s->total_blind++;
		}
		return;
	}
	s->kept++;
	s->total_kept++;
	fly_put(s, id, label, p, st);
}

/* The feedback of the sample in slot came: samples decided since. */
static void
note_lag(struct rv_shrink *s, uint32_t slot)
{
	uint64_t lag = s->total_seen - s->fly_seq[slot];

	s->lag_n++;
	s->lag_sum += lag;
	if (lag > s->lag_max)
		s->lag_max = lag;
	s->tlag_n++;
	s->tlag_sum += lag;
	if (lag > s->tlag_max)
		s->tlag_max = lag;
}

int
rv_shrink_decide(struct rv_shrink *s, uint64_t id, uint32_t epoch,
    int32_t label, const uint8_t *px, uint32_t h, uint32_t w, uint32_t c,
    struct rv_keep *out)
{
	const struct rv_shrink_conf *cf = &s->conf;
	double pk;
	struct rv_rng r;
	int sus;

	if (check_shape(s, h, w, c) < 0)
		return -1;
	note_epoch(s, epoch);
	if (cf->policy == RV_POLICY_RS2) {
		/* no warm-up: every epoch its subset, from the first */
		s->warm = 1;
		out->keep = rv_shrink_rs2_member(cf->seed, cf->keep, id,
		    epoch);
		out->p_keep = 1;
		out->weight = 1;
		out->score = NAN;
		tally(s, id, label, out->keep, 1, s->cur);
		return 0;
	}
	/* the published assistant has no first-epoch warm-up */
	if (!s->warm && (epoch != s->first_epoch || s->aa) &&
	    (s->a == NULL || s->feedback >= cf->min_feedback))
		s->warm = 1;

	pk = keep_prob(s, id, label, px, h, w, c, &out->score);
	sus = noise_over(s, id, s->warm, &pk);
	if (!s->warm || pk > 1)
		pk = 1;
	if (pk >= 1) {
		out->keep = 1;
	} else {
		rv_rng_init(&r, cf->seed, RV_STAGE_SCORE, OP_KEEP, epoch, id);
		out->keep = rv_rng_uniform(&r) < pk;
	}
	out->p_keep = pk;
	out->weight = sus ? 1.0f : weight_of(s, pk);
	tally(s, id, label, out->keep, pk, s->cur);
	return 0;
}

int
rv_shrink_offer(struct rv_shrink *s, uint64_t id, uint32_t epoch,
    int32_t label, unsigned stratum, const uint8_t *px, uint32_t h,
    uint32_t w, uint32_t c)
{
	size_t n = s->win_n;

	if (!(s->conf.budget > 0))
		return rv_seterr("shrink: no budget: decide samples one by "
		    "one");
	if (n == s->conf.window)
		return rv_seterr("shrink: window of %zu samples full", n);
	if (n > 0 && epoch != s->win_epoch)
		return rv_seterr("shrink: sample of epoch %u offered to a "
		    "window of epoch %u", epoch, s->win_epoch);
	if (stratum >= RV_SHRINK_STRATA)
		return rv_seterr("shrink: stratum %u: want 0 to %d", stratum,
		    RV_SHRINK_STRATA - 1);
	if (check_shape(s, h, w, c) < 0)
		return -1;
	note_epoch(s, epoch);
	if (n == 0) {
		s->win_epoch = epoch;
		/* warm-up by the epoch alone, never by the feedback */
		s->win_warm = epoch != s->first_epoch || s->aa;
		if (s->win_warm)
			s->warm = 1;
	}
	s->win_p[n] = keep_prob(s, id, label, px, h, w, c, &s->win_score[n]);
	s->win_sus[n] = (unsigned char)noise_over(s, id, s->win_warm,
	    &s->win_p[n]);
	s->win_id[n] = id;
	s->win_label[n] = label;
	s->win_stratum[n] = (unsigned char)stratum;
	if (s->win_st != NULL)
		memcpy(s->win_st + n * s->st_len, s->cur, s->st_len);
	s->win_n = n + 1;
	return 0;
}

size_t
rv_shrink_pending(const struct rv_shrink *s)
{
	return s->win_n;
}

/*
 * Decide stratum t of the window: keep exactly k of its samples, by
 * systematic sampling with probability proportional to their p, with
 * draw u; pi and keep go to the window's slots.
 */
static void
decide_stratum(struct rv_shrink *s, unsigned char t, size_t k, double u)
{
	size_t i, m = 0;

	for (i = 0; i < s->win_n; i++)
		if (s->win_stratum[i] == t) {
			s->st_idx[m] = (uint32_t)i;
			s->st_p[m++] = s->win_p[i];
		}
	if (m == 0)
		return;
	rv_shrink_budget_pi(s->st_p, m, k, s->st_pi);
	rv_shrink_budget_draw(s->st_pi, m, k, u, s->st_keep);
	for (i = 0; i < m; i++) {
		s->win_pi[s->st_idx[i]] = s->st_pi[i];
		s->win_keep[s->st_idx[i]] = s->st_keep[i];
	}
}

void
rv_shrink_budget_strata(const size_t *n, size_t k, size_t *ks)
{
	size_t total = n[0] + n[1];

	if (total == 0) {
		ks[0] = ks[1] = 0;
		return;
	}
	if (k > total)
		k = total;
	/*
	 * k n_0 / total rounded half up, in integers; stratum 1 the rest.
	 * Both fit: k n_0 / total <= n_0 rounds to at most n_0, and
	 * k - ks_0 <= k n_1 / total + 1/2, under n_1 + 1/2 when k < total.
	 */
	ks[0] = (2 * k * n[0] + total) / (2 * total);
	ks[1] = k - ks[0];
}

int
rv_shrink_conf_warms(const struct rv_shrink_conf *c)
{
	return !(c->policy == RV_POLICY_ASSISTANT &&
	    c->assist.kind == RV_ASSIST_AUTOASSIST);
}

int
rv_shrink_keeps_all(const struct rv_shrink *s, uint32_t epoch)
{
	return !s->aa && (!s->have_first || epoch == s->first_epoch);
}

/*
 * Decide the window: keep all during warm-up, else kst[t] of stratum t
 * (kst NULL: rv_shrink_budget_k of the window, shared by
 * rv_shrink_budget_strata).
 */
static size_t
decide_window(struct rv_shrink *s, const size_t *given, struct rv_keep *out)
{
	const struct rv_shrink_conf *cf = &s->conf;
	size_t i, k, n = s->win_n, nst[RV_SHRINK_STRATA], kst[RV_SHRINK_STRATA];
	unsigned t;
	struct rv_rng r;
	double u;

	if (n == 0)
		return 0;
	if (!s->win_warm) {
		for (i = 0; i < n; i++) {
			s->win_pi[i] = 1;
			s->win_keep[i] = 1;
		}
	} else {
		/* an assistant still learning ranks nothing: a uniform k */
		if (s->a != NULL && s->feedback < cf->min_feedback)
			for (i = 0; i < n; i++)
				s->win_p[i] = 1;
		rv_rng_init(&r, cf->seed, RV_STAGE_SCORE, OP_WINDOW,
		    s->win_epoch, s->win_id[0]);
		for (t = 0; t < RV_SHRINK_STRATA; t++)
			nst[t] = 0;
		for (i = 0; i < n; i++)
			nst[s->win_stratum[i]]++;
		if (given == NULL) {
			k = rv_shrink_budget_k(cf->budget, n);
			rv_shrink_budget_strata(nst, k, kst);
		} else {
			for (t = 0; t < RV_SHRINK_STRATA; t++)
				kst[t] = given[t] < nst[t] ? given[t] : nst[t];
		}
		/* one draw per stratum, in stratum order: a window of one
		 * stratum 0 decides as it did before strata */
		for (t = 0; t < RV_SHRINK_STRATA; t++) {
			u = rv_rng_uniform(&r);
			decide_stratum(s, (unsigned char)t, kst[t], u);
		}
	}
	for (i = 0; i < n; i++) {
		out[i].keep = s->win_keep[i];
		out[i].p_keep = s->win_pi[i];
		out[i].weight = s->win_sus[i] ? 1.0f :
		    weight_of(s, s->win_pi[i]);
		out[i].score = s->win_score[i];
		tally(s, s->win_id[i], s->win_label[i], out[i].keep,
		    s->win_pi[i], s->win_st == NULL ? NULL :
		    s->win_st + i * s->st_len);
	}
	s->win_n = 0;
	return n;
}

size_t
rv_shrink_decide_window(struct rv_shrink *s, struct rv_keep *out)
{
	return decide_window(s, NULL, out);
}

size_t
rv_shrink_decide_window_ks(struct rv_shrink *s, const size_t *ks,
    struct rv_keep *out)
{
	return decide_window(s, ks, out);
}

size_t
rv_shrink_budget_k(double f, size_t w)
{
	double k;

	if (w == 0)
		return 0;
	/* half up, and a decimal F that lands a hair under .5 rounds up */
	k = floor(f * (double)w + 0.5 + 1e-9);
	if (!(k >= 1))
		return 1;
	return k >= (double)w ? w : (size_t)k;
}

uint64_t
rv_shrink_budget_count(double f, size_t w, uint64_t n)
{
	if (n == UINT64_MAX || w == 0)
		return UINT64_MAX;
	return n / w * rv_shrink_budget_k(f, w) +
	    rv_shrink_budget_k(f, (size_t)(n % w));
}

/* A keep probability as a size: what is not a positive number counts 0. */
static double
size_of(double p)
{
	return p > 0 && isfinite(p) ? p : 0;
}

void
rv_shrink_budget_pi(const double *p, size_t w, size_t k, double *pi)
{
	size_t i, ncap = 0, nzero;
	double c = 0, sum, rest;
	int changed;

	if (k >= w) {
		for (i = 0; i < w; i++)
			pi[i] = 1;
		return;
	}
	for (i = 0; i < w; i++)
		pi[i] = 0;
	/*
	 * Cap every item whose c p_i reaches 1 and solve c again for the
	 * rest, until none does.  c only grows, so an item once capped
	 * stays capped; at most k items are (the uncapped c p_i sum to the
	 * k - ncap left), so this ends within k + 1 rounds.
	 */
	do {
		sum = 0;
		for (i = 0; i < w; i++)
			if (pi[i] < 1)
				sum += size_of(p[i]);
		if (!(sum > 0) || ncap >= k)
			break;
		c = (double)(k - ncap) / sum;
		changed = 0;
		for (i = 0; i < w; i++)
			if (pi[i] < 1 && size_of(p[i]) > 0 &&
			    c * p[i] >= 1) {
				pi[i] = 1;
				ncap++;
				changed = 1;
			}
	} while (changed);
	if (ncap < k && sum > 0) {
		for (i = 0; i < w; i++)
			if (pi[i] < 1)
				pi[i] = c * size_of(p[i]);
		return;
	}
	if (ncap >= k)
		return;
	/* no weight left to share by: the rest evenly over the p_i 0 */
	nzero = 0;
	for (i = 0; i < w; i++)
		nzero += pi[i] < 1;
	rest = (double)(k - ncap) / (double)nzero;
	for (i = 0; i < w; i++)
		if (pi[i] < 1)
			pi[i] = rest;
}

size_t
rv_shrink_budget_draw(const double *pi, size_t w, size_t k, double u,
    unsigned char *keep)
{
	size_t i, m, got = 0, rem;
	double total = 0, cum = 0, step, x;

	for (i = 0; i < w; i++) {
		keep[i] = pi[i] >= 1;
		got += keep[i];
		if (pi[i] > 0 && pi[i] < 1)
			total += pi[i];
	}
	if (got >= k || !(total > 0))
		return got;
	rem = k - got;
	/*
	 * The points u, u + 1, ... scaled by total / rem, so that the last
	 * one falls inside the items' span however the sum rounded; an item
	 * takes at most one point (its pi < 1), and a point a rounding puts
	 * in an item already taken goes to the next one.
	 */
	step = total / (double)rem;
	m = 0;
	x = u * step;
	for (i = 0; i < w && m < rem; i++) {
		if (!(pi[i] > 0 && pi[i] < 1))
			continue;
		cum += pi[i];
		if (x < cum) {
			keep[i] = 1;
			m++;
			x = ((double)m + u) * step;
		}
	}
	/* the last point can round onto the very end: the last items take
	 * what is left (never for more than a rounding) */
	for (i = w; i > 0 && m < rem; i--)
		if (!keep[i - 1] && pi[i - 1] > 0) {
			keep[i - 1] = 1;
			m++;
		}
	return got + m;
}

void
rv_shrink_feedback(struct rv_shrink *s, const struct rv_fb_line *l)
{
	uint32_t slot = rv_idmap_find(&s->fly, l->id);
	/* the probability it was kept with, 1 when unmatched */
	double v, p = slot != NIL ? s->fly_p[slot] : 1;

	if (slot != NIL) {
		note_lag(s, slot);
		/* the assistant learns from it first */
		if (s->a == NULL)
			rv_idmap_remove(&s->fly, slot);
	}
	switch (s->conf.policy) {
	case RV_POLICY_ASSISTANT:
		v = s->conf.assist.target == RV_TARGET_LOSS ? l->loss :
		    l->gradnorm;
		/* what the line says of its id holds even when unmatched */
		if (s->conf.hist_feat && isfinite(v))
			hist_put(s, l->id, (float)v);
		if (s->conf.noise_cut > 0)
			noise_put(s, l->id, l->loss, p);
		if (slot == NIL) {
			s->unmatched++;
			return;
		}
		if (s->aa)
			rv_assist_add_px(s->a, s->fly_st +
			    (size_t)slot * s->st_len, s->fly_label[slot], v,
			    l->step);
		else
			rv_assist_learn(s->a, (const float *)(const void *)
			    (s->fly_st + (size_t)slot * s->st_len),
			    s->fly_label[slot], v);
		rv_idmap_remove(&s->fly, slot);
		break;
	case RV_POLICY_HISTORY:
		/* NaN would break the sort order; parsed lines are finite */
		if (!isfinite(l->gradnorm))
			return;
		hist_put(s, l->id, l->gradnorm);
		push_recent(&s->gn, l->gradnorm, 1.0f);
		if (s->conf.noise_cut > 0)
			noise_put(s, l->id, l->loss, p);
		break;
	default:
		break;
	}
	s->feedback++;
}

void
rv_shrink_epoch_end(struct rv_shrink *s)
{
	s->seen = s->kept = s->suspects = s->blind = 0;
	s->lag_n = s->lag_sum = s->lag_max = 0;
}

static double
mean_of(uint64_t sum, uint64_t n)
{
	return n > 0 ? (double)sum / (double)n : NAN;
}

void
rv_shrink_stats(const struct rv_shrink *s, struct rv_shrink_stats *st)
{
	st->seen = s->seen;
	st->kept = s->kept;
	st->dropped = s->seen - s->kept;
	st->blind = s->blind;
	st->total_blind = s->total_blind;
	st->learns = learns(&s->conf);
	st->total_seen = s->total_seen;
	st->total_kept = s->total_kept;
	st->feedback = s->feedback;
	st->unmatched = s->unmatched;
	st->suspects = s->suspects;
	st->noise_cut = s->conf.noise_cut;
	st->warm = s->warm;
	st->lag_n = s->lag_n;
	st->lag_mean = mean_of(s->lag_sum, s->lag_n);
	st->lag_max = s->lag_max;
	st->total_lag_mean = mean_of(s->tlag_sum, s->tlag_n);
	st->total_lag_max = s->tlag_max;
	if (s->a != NULL) {
		rv_assist_stats(s->a, &st->assist);
	} else {
		memset(&st->assist, 0, sizeof(st->assist));
		st->assist.mean = st->assist.acc = st->assist.auc =
		    st->assist.pos_rate = NAN;
	}
}
