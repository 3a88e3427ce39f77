/*
 * The AutoAssist assistant of rv-score: cheap area-averaged features and
 * an online logistic regression over them, trained by one SGD step per
 * feedback line.  Its accuracy and ROC AUC are measured on a window of
 * the predictions it made before learning each example (honest, since a
 * prediction never saw its own label).  The published AutoAssist
 * assistant (assist.h) shares the window and the statistics, and learns by
 * the trainer's batch instead of by the line.
 */
#include "shrink/assist.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/rng.h"
#include "base/xmem.h"

#define G	RV_FEAT_GRID
#define W	RV_ASSIST_AUC_WINDOW

struct rank_item {
	double p;
	int y;
};

struct rv_assist {
	struct rv_assist_conf conf;
	double *w;		/* nfeat weights, the last one the bias */
	double *u;		/* classes class biases */
	double mean;		/* running mean of the target value */
	int have_mean;
	uint64_t seen;
	double win_p[W];	/* predictions before learning, a ring */
	unsigned char win_y[W];	/* their labels */
	size_t win_n, win_pos;
	/* rv_assist_stats sorts here: written through a const pointer,
	 * so stats calls on one assistant must not run concurrently */
	struct rank_item *rank;

	/* autoassist: feature of value v in channel ch, tab[ch][v] */
	double tab[4][256];
	double ema_sum, ema_n;	/* EMAs of batch loss sums and sizes */
	uint8_t *b_px;		/* the pending batch: RV_AA_BATCH_MAX images */
	double *b_loss;
	int32_t *b_label;
	size_t b_n;
	uint64_t b_step;
	double *b_p, *grad;	/* flush scratch: p per line, nfeat sums */
};

/* rv_rng op of the score stage for the initial weights (shrink.c has 0
 * and 1): never renumber */
#define OP_INIT		2

#define TWO_PI		6.283185307179586476925

size_t
rv_feat_len(uint32_t channels)
{
	return (size_t)channels * G * G + 1;
}

/* Cell k of n pixels: [k n / G, (k + 1) n / G), at least one pixel. */
static void
cell_bounds(uint32_t n, uint32_t k, uint32_t *lo, uint32_t *hi)
{
	*lo = (uint32_t)((uint64_t)k * n / G);
	*hi = (uint32_t)((uint64_t)(k + 1) * n / G);
	if (*hi <= *lo)
		*hi = *lo + 1;
}

/*
 * Images up to this many values a row (w c) are summed row by row into
 * column totals first: contiguous adds the compiler vectorises, then a
 * short pass per cell.  Wider ones sum each cell directly.
 */
#define FEAT_ROWBUF	4096

static void
feat_cells(const uint8_t *px, uint32_t h, uint32_t w, uint32_t c,
    const uint32_t *c0, const uint32_t *c1, const double *cs, float *phi)
{
	uint32_t col[FEAT_ROWBUF], r0, r1, i, j, ch, x, y;
	size_t rowlen = (size_t)w * c, k;

	for (i = 0; i < G; i++) {
		double rs;

		cell_bounds(h, i, &r0, &r1);
		rs = 1.0 / (double)(r1 - r0);
		/* (r1 - r0) 255 fits: h is at most 2^24 here */
		memset(col, 0, rowlen * sizeof(*col));
		for (y = r0; y < r1; y++) {
			const uint8_t *row = px + (size_t)y * rowlen;

			#pragma omp simd
			for (k = 0; k < rowlen; k++)
				col[k] += row[k];
		}
		for (j = 0; j < G; j++) {
			double scale = cs[j] * rs;

			for (ch = 0; ch < c; ch++) {
				uint64_t sum = 0;

				for (x = c0[j]; x < c1[j]; x++)
					sum += col[(size_t)x * c + ch];
				phi[(size_t)ch * G * G + i * G + j] =
				    (float)((double)sum * scale - 1.0);
			}
		}
	}
}

static void
feat_direct(const uint8_t *px, uint32_t h, uint32_t w, uint32_t c,
    const uint32_t *c0, const uint32_t *c1, const double *cs, float *phi)
{
	uint32_t r0, r1, i, j, ch, x, y;
	size_t rowlen = (size_t)w * c;

	for (i = 0; i < G; i++) {
		double rs;

		cell_bounds(h, i, &r0, &r1);
		rs = 1.0 / (double)(r1 - r0);
		for (j = 0; j < G; j++) {
			double scale = cs[j] * rs;

			for (ch = 0; ch < c; ch++) {
				uint64_t sum = 0;

				for (y = r0; y < r1; y++) {
					const uint8_t *row = px +
					    (size_t)y * rowlen + ch;

					for (x = c0[j]; x < c1[j]; x++)
						sum += row[(size_t)x * c];
				}
				phi[(size_t)ch * G * G + i * G + j] =
				    (float)((double)sum * scale - 1.0);
			}
		}
	}
}

void
rv_feat(const uint8_t *px, uint32_t h, uint32_t w, uint32_t c, float *phi)
{
	uint32_t c0[G], c1[G], j;
	double cs[G];

	/* a cell's sum times cs[j] rs[i] is its mean / 127.5: 16 divisions */
	for (j = 0; j < G; j++) {
		cell_bounds(w, j, &c0[j], &c1[j]);
		cs[j] = 1.0 / (127.5 * (double)(c1[j] - c0[j]));
	}
	if ((size_t)w * c <= FEAT_ROWBUF && h <= (1u << 24))
		feat_cells(px, h, w, c, c0, c1, cs, phi);
	else
		feat_direct(px, h, w, c, c0, c1, cs, phi);
	phi[(size_t)c * G * G] = 1.0f;
}

void
rv_assist_conf_init(struct rv_assist_conf *c)
{
	int i;

	c->nfeat = 0;
	c->classes = 0;
	c->lr = 0.05;
	c->l2 = 1e-4;
	c->mean_decay = 0.99;
	c->target = RV_TARGET_GRADNORM;
	c->kind = RV_ASSIST_RV;
	c->channels = 0;
	c->seed = 0;
	for (i = 0; i < 4; i++) {
		c->mean[i] = 0;
		c->std[i] = 1;
	}
}

int
rv_aa_norm_default(uint32_t channels, float mean[4], float std[4])
{
	static const float m3[3] = { 0.4914f, 0.4822f, 0.4465f };
	static const float s3[3] = { 0.2023f, 0.1994f, 0.2010f };
	uint32_t i;

	if (channels == 1) {
		mean[0] = 0.1307f;
		std[0] = 0.3081f;
		return 0;
	}
	if (channels == 3) {
		for (i = 0; i < 3; i++) {
			mean[i] = m3[i];
			std[i] = s3[i];
		}
		return 0;
	}
	return rv_seterr("autoassist: no published mean and std for %u "
	    "channels: give them in the stream's metadata", channels);
}

/* N(0, sd^2) into v[0..n), two a Box-Muller pair. */
static void
draw_normal(struct rv_rng *r, double *v, size_t n, double sd)
{
	size_t i;

	for (i = 0; i < n; i += 2) {
		double u1 = 1.0 - rv_rng_uniform(r);	/* (0, 1] */
		double u2 = rv_rng_uniform(r);
		double rad = sqrt(-2.0 * log(u1));

		v[i] = sd * rad * cos(TWO_PI * u2);
		if (i + 1 < n)
			v[i + 1] = sd * rad * sin(TWO_PI * u2);
	}
}

static int
check_aa(const struct rv_assist_conf *c)
{
	uint32_t i;

	if (c->channels < 1 || c->channels > 4)
		return rv_seterr("assist: %u channels: must be 1 to 4",
		    c->channels);
	if (c->nfeat % c->channels != 0)
		return rv_seterr("assist: %u features: not whole pixels of %u "
		    "channels", c->nfeat, c->channels);
	for (i = 0; i < c->channels; i++)
		if (!isfinite(c->mean[i]) || !(c->std[i] > 0) ||
		    !isfinite(c->std[i]))
			return rv_seterr("assist: channel %u: mean %g, std %g: "
			    "want finite values, std above 0", i,
			    (double)c->mean[i], (double)c->std[i]);
	return 0;
}

/* The published assistant's tables, weights and batch. */
static void
init_aa(struct rv_assist *a)
{
	const struct rv_assist_conf *c = &a->conf;
	struct rv_rng r;
	uint32_t ch;
	int v;

	for (ch = 0; ch < c->channels; ch++)
		for (v = 0; v < 256; v++)
			a->tab[ch][v] = ((double)v / 255.0 - c->mean[ch]) /
			    c->std[ch];
	rv_rng_init(&r, c->seed, RV_STAGE_SCORE, OP_INIT, 0, 0);
	draw_normal(&r, a->w, c->nfeat, RV_AA_INIT_SD);
	draw_normal(&r, a->u, c->classes, RV_AA_INIT_SD);
	/* pages touched only as far as the batches reach */
	a->b_px = xcalloc(RV_AA_BATCH_MAX, c->nfeat);
	a->b_loss = xcalloc(RV_AA_BATCH_MAX, sizeof(*a->b_loss));
	a->b_label = xcalloc(RV_AA_BATCH_MAX, sizeof(*a->b_label));
	a->b_p = xcalloc(RV_AA_BATCH_MAX, sizeof(*a->b_p));
	a->grad = xcalloc(c->nfeat, sizeof(*a->grad));
}

struct rv_assist *
rv_assist_new(const struct rv_assist_conf *c)
{
	struct rv_assist *a;

	if (c->nfeat == 0) {
		rv_seterr("assist: no features");
		return NULL;
	}
	if (!(c->lr > 0) || !isfinite(c->lr)) {
		rv_seterr("assist: lr %g: must be positive", c->lr);
		return NULL;
	}
	if (!(c->l2 >= 0) || !isfinite(c->l2)) {
		rv_seterr("assist: l2 %g: must be non-negative", c->l2);
		return NULL;
	}
	if (!(c->mean_decay >= 0 && c->mean_decay < 1)) {
		rv_seterr("assist: mean decay %g: must be in [0, 1)",
		    c->mean_decay);
		return NULL;
	}
	if (c->target != RV_TARGET_GRADNORM && c->target != RV_TARGET_LOSS) {
		rv_seterr("assist: target %d: unknown", (int)c->target);
		return NULL;
	}
	if (c->kind != RV_ASSIST_RV && c->kind != RV_ASSIST_AUTOASSIST) {
		rv_seterr("assist: kind %d: unknown", (int)c->kind);
		return NULL;
	}
	if (c->kind == RV_ASSIST_AUTOASSIST && check_aa(c) < 0)
		return NULL;
	a = xcalloc(1, sizeof(*a));
	a->conf = *c;
	a->w = xcalloc(c->nfeat, sizeof(*a->w));
	a->u = xcalloc(c->classes ? c->classes : 1, sizeof(*a->u));
	a->rank = xcalloc(W, sizeof(*a->rank));
	a->mean = NAN;
	if (c->kind == RV_ASSIST_AUTOASSIST)
		init_aa(a);
	return a;
}

void
rv_assist_free(struct rv_assist *a)
{
	if (a == NULL)
		return;
	free(a->w);
	free(a->u);
	free(a->rank);
	free(a->b_px);
	free(a->b_loss);
	free(a->b_label);
	free(a->b_p);
	free(a->grad);
	free(a);
}

/* exp() of a non-positive number only: no overflow for any z. */
static double
sigmoid(double z)
{
	double e;

	if (z >= 0)
		return 1.0 / (1.0 + exp(-z));
	e = exp(z);
	return e / (1.0 + e);
}

static double
logit(const struct rv_assist *a, const float *phi, int32_t label)
{
	double z = 0;
	uint32_t k;

	for (k = 0; k < a->conf.nfeat; k++)
		z += a->w[k] * phi[k];
	if (label >= 0 && (uint32_t)label < a->conf.classes)
		z += a->u[label];
	return z;
}

double
rv_assist_predict(const struct rv_assist *a, const float *phi,
    int32_t label)
{
	return sigmoid(logit(a, phi, label));
}

/* Count a prediction and its label in the window. */
static void
window_put(struct rv_assist *a, double p, int y)
{
	a->win_p[a->win_pos] = p;
	a->win_y[a->win_pos] = (unsigned char)y;
	a->win_pos = (a->win_pos + 1) % W;
	if (a->win_n < W)
		a->win_n++;
}

void
rv_assist_learn(struct rv_assist *a, const float *phi, int32_t label,
    double value)
{
	double p, g, lr = a->conf.lr, l2 = a->conf.l2;
	uint32_t k;
	int y;

	/* a non-finite value would poison the mean for good */
	if (!isfinite(value))
		return;
	p = rv_assist_predict(a, phi, label);
	if (!a->have_mean) {
		a->mean = value;
		a->have_mean = 1;
		return;
	}
	y = value > a->mean;
	a->mean += (1 - a->conf.mean_decay) * (value - a->mean);
	a->seen++;
	window_put(a, p, y);

	g = p - y;
	for (k = 0; k < a->conf.nfeat; k++)
		a->w[k] -= lr * (g * phi[k] + l2 * a->w[k]);
	if (label >= 0 && (uint32_t)label < a->conf.classes)
		a->u[label] -= lr * (g + l2 * a->u[label]);
}

double
rv_assist_predict_px(const struct rv_assist *a, const uint8_t *px,
    int32_t label)
{
	uint32_t k, ch = 0, c = a->conf.channels;
	double z = 0;

	for (k = 0; k < a->conf.nfeat; k++) {
		z += a->w[k] * a->tab[ch][px[k]];
		if (++ch == c)
			ch = 0;
	}
	if (label >= 0 && (uint32_t)label < a->conf.classes)
		z += a->u[label];
	return sigmoid(z);
}

void
rv_assist_flush(struct rv_assist *a)
{
	const struct rv_assist_conf *c = &a->conf;
	size_t n = a->b_n, i;
	double sum = 0, lr, alpha = RV_AA_ALPHA;
	uint32_t k, ch;

	if (n == 0)
		return;
	for (i = 0; i < n; i++)
		sum += a->b_loss[i];
	/* a ratio of EMAs from 0: the first batch's mean is its own */
	a->ema_sum = alpha * a->ema_sum + (1 - alpha) * sum;
	a->ema_n = alpha * a->ema_n + (1 - alpha) * (double)n;
	a->mean = a->ema_sum / a->ema_n;
	memset(a->grad, 0, c->nfeat * sizeof(*a->grad));
	for (i = 0; i < n; i++) {
		const uint8_t *px = a->b_px + i * c->nfeat;
		double p = rv_assist_predict_px(a, px, a->b_label[i]);
		int y = a->b_loss[i] > a->mean;

		window_put(a, p, y);
		a->b_p[i] = p - y;
		for (k = 0, ch = 0; k < c->nfeat; k++) {
			a->grad[k] += a->b_p[i] * a->tab[ch][px[k]];
			if (++ch == c->channels)
				ch = 0;
		}
	}
	lr = c->lr / (double)n;
	for (i = 0; i < n; i++) {
		int32_t l = a->b_label[i];

		if (l >= 0 && (uint32_t)l < c->classes)
			a->u[l] -= lr * (a->b_p[i] + c->l2 * a->u[l]);
	}
	for (k = 0; k < c->nfeat; k++)
		a->w[k] -= lr * (a->grad[k] + c->l2 * a->w[k]);
	a->seen += n;
	a->b_n = 0;
}

void
rv_assist_add_px(struct rv_assist *a, const uint8_t *px, int32_t label,
    double loss, uint64_t step)
{
	if (!isfinite(loss))
		return;
	if (a->b_n > 0 && (step != a->b_step || a->b_n == RV_AA_BATCH_MAX))
		rv_assist_flush(a);
	memcpy(a->b_px + a->b_n * a->conf.nfeat, px, a->conf.nfeat);
	a->b_loss[a->b_n] = loss;
	a->b_label[a->b_n] = label;
	a->b_step = step;
	a->b_n++;
}

size_t
rv_assist_pending(const struct rv_assist *a)
{
	return a->b_n;
}

const double *
rv_assist_w(const struct rv_assist *a)
{
	return a->w;
}

const double *
rv_assist_u(const struct rv_assist *a)
{
	return a->u;
}

static int
cmp_rank(const void *x, const void *y)
{
	double a = ((const struct rank_item *)x)->p;
	double b = ((const struct rank_item *)y)->p;

	return (a > b) - (a < b);
}

/* Mann-Whitney U / (n1 n0), ties counted one half through average ranks. */
static double
window_auc(const struct rv_assist *a, size_t npos)
{
	struct rank_item *r = a->rank;
	size_t n = a->win_n, nneg = n - npos, i, j;
	double rsum = 0;

	if (npos == 0 || nneg == 0)
		return NAN;
	for (i = 0; i < n; i++) {
		r[i].p = a->win_p[i];
		r[i].y = a->win_y[i];
	}
	qsort(r, n, sizeof(*r), cmp_rank);
	for (i = 0; i < n; i = j) {
		double avg;
		size_t pos = 0;

		for (j = i; j < n && r[j].p == r[i].p; j++)
			pos += r[j].y;
		/* ranks i+1 .. j share their mean */
		avg = ((double)(i + 1) + (double)j) / 2;
		rsum += avg * (double)pos;
	}
	return (rsum - (double)npos * ((double)npos + 1) / 2) /
	    ((double)npos * (double)nneg);
}

void
rv_assist_stats(const struct rv_assist *a, struct rv_assist_stats *s)
{
	size_t i, npos = 0, right = 0;

	s->seen = a->seen;
	s->mean = a->mean;
	if (a->win_n == 0) {
		s->acc = s->auc = s->pos_rate = NAN;
		return;
	}
	for (i = 0; i < a->win_n; i++) {
		npos += a->win_y[i];
		right += (a->win_p[i] > 0.5) == a->win_y[i];
	}
	s->acc = (double)right / (double)a->win_n;
	s->pos_rate = (double)npos / (double)a->win_n;
	s->auc = window_auc(a, npos);
}

double
rv_assist_mean(const struct rv_assist *a)
{
	return a->mean;
}
