/*
 * The AutoAssist assistant of rv-score: cheap area-averaged features and
 * an online logistic regression over them, trained by one SGD step per
 * feedback line.  Its accuracy and ROC AUC are measured on a window of
 * the predictions it made before learning each example (honest, since a
 * prediction never saw its own label).
 */
#include "assist.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "xmem.h"

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
};

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
	c->nfeat = 0;
	c->classes = 0;
	c->lr = 0.05;
	c->l2 = 1e-4;
	c->mean_decay = 0.99;
	c->target = RV_TARGET_GRADNORM;
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
	a = xcalloc(1, sizeof(*a));
	a->conf = *c;
	a->w = xcalloc(c->nfeat, sizeof(*a->w));
	a->u = xcalloc(c->classes ? c->classes : 1, sizeof(*a->u));
	a->rank = xcalloc(W, sizeof(*a->rank));
	a->mean = NAN;
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
	a->win_p[a->win_pos] = p;
	a->win_y[a->win_pos] = (unsigned char)y;
	a->win_pos = (a->win_pos + 1) % W;
	if (a->win_n < W)
		a->win_n++;

	g = p - y;
	for (k = 0; k < a->conf.nfeat; k++)
		a->w[k] -= lr * (g * phi[k] + l2 * a->w[k]);
	if (label >= 0 && (uint32_t)label < a->conf.classes)
		a->u[label] -= lr * (g + l2 * a->u[label]);
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
