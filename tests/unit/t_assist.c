/*
 * The assistant: features against a naive area average, a sigmoid that
 * stays finite at the extremes, a planted rule learned and noise not,
 * class biases, the window's accuracy and AUC against an O(n^2) count
 * (ties included), configuration errors and bitwise determinism.  The
 * published AutoAssist assistant: its initial weights' scale, its
 * normalisation, its label rule and running mean, one mini-batch step
 * against the same step worked out here, its batching by trainer step and
 * its determinism.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/rng.h"
#include "shrink/assist.h"
#include "unit.h"

#define G RV_FEAT_GRID

static void
fill_random(uint8_t *px, size_t n, uint64_t seed)
{
	struct rv_rng r;
	size_t i;

	rv_rng_init(&r, seed, 0, 0, 0, 0);
	for (i = 0; i < n; i++)
		px[i] = (uint8_t)rv_rng_u32(&r);
}

/* The definition, one cell at a time. */
static void
feat_ref(const uint8_t *px, uint32_t h, uint32_t w, uint32_t c, double *phi)
{
	uint32_t ch, i, j, y, x, r0, r1, c0, c1;

	for (ch = 0; ch < c; ch++)
		for (i = 0; i < G; i++)
			for (j = 0; j < G; j++) {
				double sum = 0;

				r0 = i * h / G;
				r1 = (i + 1) * h / G;
				if (r1 <= r0)
					r1 = r0 + 1;
				c0 = j * w / G;
				c1 = (j + 1) * w / G;
				if (c1 <= c0)
					c1 = c0 + 1;
				for (y = r0; y < r1; y++)
					for (x = c0; x < c1; x++)
						sum += px[((size_t)y * w + x) *
						    c + ch];
				sum /= (double)(r1 - r0) * (c1 - c0);
				phi[ch * G * G + i * G + j] = sum / 127.5 - 1;
			}
	phi[c * G * G] = 1;
}

static void
t_feat_len(void)
{
	EXPECT_EQ(rv_feat_len(1), 65);
	EXPECT_EQ(rv_feat_len(3), 193);
	EXPECT_EQ(rv_feat_len(4), 257);
}

static void
t_feat_reference(void)
{
	static const uint32_t shapes[][3] = {
		{ 28, 28, 1 }, { 32, 32, 3 }, { 7, 5, 1 }, { 5, 7, 3 },
		{ 1, 1, 1 }, { 1, 1, 4 }, { 375, 500, 3 }, { 8, 8, 2 },
		{ 9, 17, 4 }, { 1, 100, 1 },
		/* rows wider than 4096 values take the direct path */
		{ 3, 1500, 3 }, { 20, 5000, 1 }, { 2, 4096, 1 },
	};
	size_t t, k, len, bad;

	for (t = 0; t < sizeof(shapes) / sizeof(shapes[0]); t++) {
		uint32_t h = shapes[t][0], w = shapes[t][1], c = shapes[t][2];
		size_t n = (size_t)h * w * c;
		uint8_t *px = malloc(n);
		double ref[4 * G * G + 1];
		float phi[4 * G * G + 2];

		len = rv_feat_len(c);
		fill_random(px, n, t + 1);
		phi[len] = 12345.0f;	/* nothing written past the end */
		rv_feat(px, h, w, c, phi);
		feat_ref(px, h, w, c, ref);
		bad = 0;
		for (k = 0; k < len; k++)
			if (fabs(phi[k] - ref[k]) > 1e-6 ||
			    phi[k] < -1 || phi[k] > 1)
				bad++;
		EXPECT_EQ(bad, 0);
		EXPECT(phi[len - 1] == 1.0f);
		EXPECT(phi[len] == 12345.0f);
		free(px);
	}
}

static void
t_feat_values(void)
{
	uint8_t px[16 * 16 * 3];
	float phi[3 * G * G + 1];
	size_t k;
	int y, x;

	/* constant images map to the ends of [-1, 1] */
	memset(px, 255, sizeof(px));
	rv_feat(px, 16, 16, 3, phi);
	for (k = 0; k < 3 * G * G; k++)
		EXPECT(phi[k] == 1.0f);
	memset(px, 0, sizeof(px));
	rv_feat(px, 16, 16, 3, phi);
	for (k = 0; k < 3 * G * G; k++)
		EXPECT(phi[k] == -1.0f);

	/* a 1x1 image repeats its one pixel in every cell */
	px[0] = 51;
	rv_feat(px, 1, 1, 1, phi);
	for (k = 0; k < G * G; k++)
		EXPECT(phi[k] == (float)(51 / 127.5 - 1));

	/* 2x2 cells of a 16x16 grey image: (0 + 255 + 255 + 255) / 4 */
	for (y = 0; y < 16; y++)
		for (x = 0; x < 16; x++)
			px[y * 16 + x] = (y % 2 == 0 && x % 2 == 0) ? 0 : 255;
	rv_feat(px, 16, 16, 1, phi);
	for (k = 0; k < G * G; k++)
		EXPECT(phi[k] == (float)(191.25 / 127.5 - 1));
	EXPECT(phi[G * G] == 1.0f);
}

static struct rv_assist *
make(uint32_t nfeat, uint32_t classes)
{
	struct rv_assist_conf c;

	rv_assist_conf_init(&c);
	c.nfeat = nfeat;
	c.classes = classes;
	return rv_assist_new(&c);
}

static void
t_conf(void)
{
	struct rv_assist_conf c;

	rv_assist_conf_init(&c);
	EXPECT(c.lr == 0.05);
	EXPECT(c.l2 == 1e-4);
	EXPECT(c.mean_decay == 0.99);
	EXPECT(c.target == RV_TARGET_GRADNORM);
	EXPECT_EQ(c.nfeat, 0);
	EXPECT_EQ(c.classes, 0);

	EXPECT(rv_assist_new(&c) == NULL);
	EXPECT_STR(rv_errmsg(), "assist: no features");
	c.nfeat = 65;
	c.lr = 0;
	EXPECT(rv_assist_new(&c) == NULL);
	EXPECT_STR(rv_errmsg(), "assist: lr 0: must be positive");
	c.lr = 0.1;
	c.l2 = -1;
	EXPECT(rv_assist_new(&c) == NULL);
	EXPECT_STR(rv_errmsg(), "assist: l2 -1: must be non-negative");
	c.l2 = 0;
	c.mean_decay = 1;
	EXPECT(rv_assist_new(&c) == NULL);
	EXPECT_STR(rv_errmsg(), "assist: mean decay 1: must be in [0, 1)");
	c.mean_decay = 0;
	c.target = (enum rv_assist_target)7;
	EXPECT(rv_assist_new(&c) == NULL);
	EXPECT_STR(rv_errmsg(), "assist: target 7: unknown");
	c.target = RV_TARGET_LOSS;
	rv_assist_free(rv_assist_new(&c));
	rv_assist_free(NULL);
}

static void
t_sigmoid_extremes(void)
{
	struct rv_assist *a = make(2, 0);
	float phi[2] = { 1, 1 };
	double p;
	int i;

	EXPECT(rv_assist_predict(a, phi, -1) == 0.5);
	rv_assist_learn(a, phi, -1, 0);		/* seeds the mean */
	for (i = 0; i < 5; i++)
		rv_assist_learn(a, phi, -1, 10);	/* positives */
	phi[1] = 0;
	phi[0] = 1e30f;
	p = rv_assist_predict(a, phi, -1);
	EXPECT(p == 1.0);
	phi[0] = -1e30f;
	p = rv_assist_predict(a, phi, -1);
	EXPECT(p == 0.0);
	phi[0] = -FLT_MAX;
	phi[1] = -FLT_MAX;
	p = rv_assist_predict(a, phi, -1);
	EXPECT(p == 0.0);
	phi[0] = FLT_MAX;
	phi[1] = FLT_MAX;
	p = rv_assist_predict(a, phi, -1);
	EXPECT(p == 1.0);
	phi[0] = 1e-3f;
	phi[1] = 0;
	p = rv_assist_predict(a, phi, -1);
	EXPECT(p > 0.5 && p < 0.51);
	rv_assist_free(a);
}

/*
 * Feed n examples from gen and, beside the assistant, recompute what its
 * window must hold: the prediction made before each example and the
 * label against the running mean; then compare accuracy and an O(n^2)
 * AUC (ties one half) with rv_assist_stats.
 */
struct ref_win {
	double p[RV_ASSIST_AUC_WINDOW];
	int y[RV_ASSIST_AUC_WINDOW];
	size_t n, pos;
};

static void
ref_push(struct ref_win *rw, double p, int y)
{
	rw->p[rw->pos] = p;
	rw->y[rw->pos] = y;
	rw->pos = (rw->pos + 1) % RV_ASSIST_AUC_WINDOW;
	if (rw->n < RV_ASSIST_AUC_WINDOW)
		rw->n++;
}

static void
ref_check(const struct ref_win *rw, const struct rv_assist_stats *st)
{
	double pairs = 0, wins = 0;
	size_t i, j, npos = 0, right = 0;

	for (i = 0; i < rw->n; i++) {
		npos += rw->y[i];
		right += (rw->p[i] > 0.5) == rw->y[i];
	}
	for (i = 0; i < rw->n; i++) {
		if (!rw->y[i])
			continue;
		for (j = 0; j < rw->n; j++) {
			if (rw->y[j])
				continue;
			pairs++;
			wins += rw->p[i] > rw->p[j] ? 1 :
			    rw->p[i] == rw->p[j] ? 0.5 : 0;
		}
	}
	EXPECT(fabs(st->acc - (double)right / rw->n) < 1e-12);
	EXPECT(fabs(st->pos_rate - (double)npos / rw->n) < 1e-12);
	if (pairs == 0)
		EXPECT(isnan(st->auc));
	else
		EXPECT(fabs(st->auc - wins / pairs) < 1e-9);
}

enum gen { GEN_RULE, GEN_NOISE, GEN_CLASS };

static void
example(struct rv_rng *r, enum gen g, size_t i, float *phi, int32_t *label,
    double *value)
{
	double noise;
	int k;

	for (k = 0; k < 64; k++)
		phi[k] = (float)(rv_rng_uniform(r) * 2 - 1);
	phi[64] = 1;
	noise = rv_rng_uniform(r) + rv_rng_uniform(r) + rv_rng_uniform(r) -
	    1.5;
	*label = (int32_t)(i % 5);
	switch (g) {
	case GEN_RULE:
		*value = 1 + 5 * (phi[3] > 0) + noise;
		break;
	case GEN_NOISE:
		*value = rv_rng_uniform(r);
		break;
	case GEN_CLASS:
		*value = (*label == 2 ? 10 : 1) + noise;
		break;
	}
}

static void
run_gen(struct rv_assist *a, enum gen g, size_t n, uint64_t seed,
    struct rv_assist_stats *st, int check)
{
	static struct ref_win rw;
	struct rv_rng r;
	float phi[65];
	double value, mean = 0, p;
	int32_t label;
	size_t i;

	memset(&rw, 0, sizeof(rw));
	rv_rng_init(&r, seed, 0, 0, 0, 0);
	for (i = 0; i < n; i++) {
		example(&r, g, i, phi, &label, &value);
		p = rv_assist_predict(a, phi, label);
		if (i == 0) {
			mean = value;
		} else {
			ref_push(&rw, p, value > mean);
			mean += (1 - 0.99) * (value - mean);
		}
		rv_assist_learn(a, phi, label, value);
	}
	rv_assist_stats(a, st);
	EXPECT_EQ(st->seen, n - 1);
	EXPECT(fabs(st->mean - mean) < 1e-9);
	if (check)
		ref_check(&rw, st);
}

static void
t_planted_rule(void)
{
	struct rv_assist *a = make(65, 0);
	struct rv_assist_stats st;

	run_gen(a, GEN_RULE, 5000, 7, &st, 1);
	EXPECT(st.auc > 0.9);
	EXPECT(st.acc > 0.85);
	EXPECT(st.pos_rate > 0.4 && st.pos_rate < 0.6);
	printf("# planted: auc %.4f acc %.4f pos %.3f\n", st.auc, st.acc,
	    st.pos_rate);
	rv_assist_free(a);

	a = make(65, 0);
	run_gen(a, GEN_NOISE, 5000, 8, &st, 1);
	EXPECT(st.auc > 0.4 && st.auc < 0.6);
	printf("# noise: auc %.4f acc %.4f\n", st.auc, st.acc);
	rv_assist_free(a);
}

static void
t_class_bias(void)
{
	struct rv_assist *a = make(65, 5);
	struct rv_assist_stats st;
	float zero[65];
	double pu[5];
	int k;

	run_gen(a, GEN_CLASS, 3000, 9, &st, 1);
	memset(zero, 0, sizeof(zero));
	for (k = 0; k < 5; k++)
		pu[k] = rv_assist_predict(a, zero, k);
	for (k = 0; k < 5; k++)
		if (k != 2)
			EXPECT(pu[2] > pu[k] + 0.1);
	/* outside [0, classes): no class term */
	EXPECT(rv_assist_predict(a, zero, -1) == 0.5);
	EXPECT(rv_assist_predict(a, zero, 5) == 0.5);
	EXPECT(st.auc > 0.9);
	rv_assist_free(a);
}

static void
t_window_stats(void)
{
	struct rv_assist_conf c;
	struct rv_assist *a;
	struct rv_assist_stats st;
	static struct ref_win rw;
	float phi[4] = { 0, 0, 0, 0 };
	double mean = 0, v, p;
	int i;

	a = make(4, 0);
	rv_assist_stats(a, &st);
	EXPECT_EQ(st.seen, 0);
	EXPECT(isnan(st.mean) && isnan(st.acc) && isnan(st.auc) &&
	    isnan(st.pos_rate));
	rv_assist_learn(a, phi, 0, 3);
	rv_assist_stats(a, &st);
	EXPECT_EQ(st.seen, 0);	/* the first only seeds the mean */
	EXPECT(st.mean == 3);
	EXPECT(isnan(st.auc));
	rv_assist_learn(a, phi, 0, NAN);	/* ignored */
	rv_assist_learn(a, phi, 0, INFINITY);
	rv_assist_stats(a, &st);
	EXPECT_EQ(st.seen, 0);
	EXPECT(st.mean == 3);
	/* falling values: every label 0, one class, no AUC */
	for (i = 0; i < 100; i++)
		rv_assist_learn(a, phi, 0, 2 - i * 0.01);
	rv_assist_stats(a, &st);
	EXPECT_EQ(st.seen, 100);
	EXPECT(isnan(st.auc));
	EXPECT(st.pos_rate == 0);
	EXPECT(st.acc == 1);	/* p = 0.5 exactly: predicted 0 */
	rv_assist_free(a);

	/* rising values: every label 1 */
	a = make(4, 0);
	for (i = 0; i < 50; i++)
		rv_assist_learn(a, phi, 0, i);
	rv_assist_stats(a, &st);
	EXPECT(isnan(st.auc));
	EXPECT(st.pos_rate == 1);
	rv_assist_free(a);

	/* all-zero features: every prediction 0.5, one tie, AUC 1/2 */
	a = make(4, 0);
	for (i = 0; i < 200; i++)
		rv_assist_learn(a, phi, -1, i % 3);
	rv_assist_stats(a, &st);
	EXPECT(st.auc == 0.5);
	rv_assist_free(a);

	/* a few distinct predictions (class biases only), many ties,
	 * checked against the pair count; and the window wraps */
	rv_assist_conf_init(&c);
	c.nfeat = 4;
	c.classes = 3;
	c.mean_decay = 0.5;
	a = rv_assist_new(&c);
	memset(&rw, 0, sizeof(rw));
	for (i = 0; i < RV_ASSIST_AUC_WINDOW + 1000; i++) {
		int32_t y = (int32_t)(i % 3);

		v = y + (i % 7) * 0.2;
		p = rv_assist_predict(a, phi, y);
		if (i == 0) {
			mean = v;
		} else {
			ref_push(&rw, p, v > mean);
			mean += 0.5 * (v - mean);
		}
		rv_assist_learn(a, phi, y, v);
	}
	rv_assist_stats(a, &st);
	EXPECT(st.mean == mean);
	ref_check(&rw, &st);
	rv_assist_free(a);
}

/* Predictions on unit vectors read every weight back, bit for bit. */
static void
probe(const struct rv_assist *a, double *out)
{
	float e[65];
	int k, y;

	memset(e, 0, sizeof(e));
	for (k = 0; k < 65; k++) {
		e[k] = 1;
		out[k] = rv_assist_predict(a, e, -1);
		e[k] = 0;
	}
	for (y = 0; y < 5; y++)
		out[65 + y] = rv_assist_predict(a, e, y);
}

static void
t_determinism(void)
{
	struct rv_assist *a = make(65, 5), *b = make(65, 5), *c = make(65, 5);
	struct rv_assist_stats sa, sb, sc;
	double pa[70], pb[70], pc[70];

	run_gen(a, GEN_RULE, 2000, 11, &sa, 0);
	run_gen(b, GEN_RULE, 2000, 11, &sb, 0);
	run_gen(c, GEN_RULE, 2000, 12, &sc, 0);
	probe(a, pa);
	probe(b, pb);
	probe(c, pc);
	EXPECT(memcmp(pa, pb, sizeof(pa)) == 0);
	EXPECT(memcmp(&sa, &sb, sizeof(sa)) == 0);
	EXPECT(memcmp(pa, pc, sizeof(pa)) != 0);
	rv_assist_free(a);
	rv_assist_free(b);
	rv_assist_free(c);
}

/* An autoassist assistant over h w c images (std 0 here: the defaults). */
static struct rv_assist *
make_aa(uint32_t npx, uint32_t c, uint32_t classes, uint64_t seed)
{
	struct rv_assist_conf cf;

	rv_assist_conf_init(&cf);
	cf.kind = RV_ASSIST_AUTOASSIST;
	cf.lr = RV_AA_LR;
	cf.l2 = RV_AA_L2;
	cf.target = RV_TARGET_LOSS;
	cf.nfeat = npx * c;
	cf.channels = c;
	cf.classes = classes;
	cf.seed = seed;
	EXPECT(rv_aa_norm_default(c, cf.mean, cf.std) == 0);
	return rv_assist_new(&cf);
}

static void
t_aa_norm(void)
{
	float m[4], sd[4];

	EXPECT(rv_aa_norm_default(1, m, sd) == 0);
	EXPECT(m[0] == 0.1307f && sd[0] == 0.3081f);
	EXPECT(rv_aa_norm_default(3, m, sd) == 0);
	EXPECT(m[0] == 0.4914f && m[1] == 0.4822f && m[2] == 0.4465f);
	EXPECT(sd[0] == 0.2023f && sd[1] == 0.1994f && sd[2] == 0.2010f);
	EXPECT(rv_aa_norm_default(2, m, sd) == -1);
	EXPECT_STR(rv_errmsg(), "autoassist: no published mean and std for 2 "
	    "channels: give them in the stream's metadata");
	EXPECT(rv_aa_norm_default(4, m, sd) == -1);
}

/* w and u ~ N(0, 0.001^2): mean and sd of 20000 + 10 draws. */
static void
t_aa_init(void)
{
	struct rv_assist *a = make_aa(20000, 1, 10, 3);
	struct rv_assist *b = make_aa(20000, 1, 10, 3);
	struct rv_assist *c = make_aa(20000, 1, 10, 4);
	const double *w = rv_assist_w(a);
	double sum = 0, sq = 0, m, sd, big = 0;
	size_t k, n = 20000;

	for (k = 0; k < n; k++) {
		sum += w[k];
		sq += w[k] * w[k];
		big = fmax(big, fabs(w[k]));
	}
	m = sum / (double)n;
	sd = sqrt(sq / (double)n - m * m);
	/* the sd's standard error is 0.5%, the mean's 7e-6 */
	EXPECT(fabs(sd - 0.001) < 0.03 * 0.001);
	EXPECT(fabs(m) < 3e-5);
	EXPECT(big < 0.006 && big > 0.003);
	for (k = 0; k < 10; k++)
		EXPECT(rv_assist_u(a)[k] != 0 &&
		    fabs(rv_assist_u(a)[k]) < 0.006);
	EXPECT(memcmp(w, rv_assist_w(b), n * sizeof(*w)) == 0);
	EXPECT(memcmp(rv_assist_u(a), rv_assist_u(b), 10 * sizeof(*w)) == 0);
	EXPECT(memcmp(w, rv_assist_w(c), n * sizeof(*w)) != 0);
	rv_assist_free(a);
	rv_assist_free(b);
	rv_assist_free(c);
}

/*
 * One batch of three 1x2 grey images, worked out from the definition:
 * features (v / 255 - 0.1307) / 0.3081, the mean of the batch's losses
 * (the first batch: 3.5 / 3), labels loss > mean, then
 * u_y -= (0.01 / 3)(g + 1e-3 u_y) in order and
 * w -= (0.01 / 3)(sum g x + 1e-3 w).  A second batch moves the mean by
 * the ratio of EMAs (alpha 0.75).
 */
static void
t_aa_step(void)
{
	static const uint8_t px[3][2] = { { 255, 0 }, { 0, 255 }, { 51, 102 } };
	static const int32_t lab[3] = { 0, 1, 0 };
	static const double loss[3] = { 2.0, 0.5, 1.0 };
	struct rv_assist *a = make_aa(2, 1, 2, 9), *b;
	struct rv_assist_stats st;
	double w[2], u[2], x[3][2], p[3], g[3], mean, lr = 0.01 / 3;
	double sum0 = 0, sum1 = 0;
	int i, k, y[3] = { 1, 0, 0 };

	memcpy(w, rv_assist_w(a), sizeof(w));
	memcpy(u, rv_assist_u(a), sizeof(u));
	for (i = 0; i < 3; i++) {
		for (k = 0; k < 2; k++)
			x[i][k] = (px[i][k] / 255.0 - (double)0.1307f) /
			    (double)0.3081f;
		p[i] = 1 / (1 + exp(-(w[0] * x[i][0] + w[1] * x[i][1] +
		    u[lab[i]])));
		EXPECT(fabs(rv_assist_predict_px(a, px[i], lab[i]) - p[i]) <
		    1e-15);
		rv_assist_add_px(a, px[i], lab[i], loss[i], 41);
	}
	/* nothing is learned until the step's last line is known */
	EXPECT_EQ(rv_assist_pending(a), 3);
	EXPECT(memcmp(w, rv_assist_w(a), sizeof(w)) == 0);
	EXPECT(isnan(rv_assist_mean(a)));
	rv_assist_add_px(a, px[0], 1, 3.0, 42);
	EXPECT_EQ(rv_assist_pending(a), 1);
	mean = 3.5 / 3;
	EXPECT(fabs(rv_assist_mean(a) - mean) < 1e-15);
	for (i = 0; i < 3; i++) {
		g[i] = p[i] - y[i];
		sum0 += g[i] * x[i][0];
		sum1 += g[i] * x[i][1];
		u[lab[i]] -= lr * (g[i] + 1e-3 * u[lab[i]]);
	}
	w[0] -= lr * (sum0 + 1e-3 * w[0]);
	w[1] -= lr * (sum1 + 1e-3 * w[1]);
	EXPECT(fabs(rv_assist_w(a)[0] - w[0]) < 1e-15);
	EXPECT(fabs(rv_assist_w(a)[1] - w[1]) < 1e-15);
	EXPECT(fabs(rv_assist_u(a)[0] - u[0]) < 1e-15);
	EXPECT(fabs(rv_assist_u(a)[1] - u[1]) < 1e-15);
	/* the step moved w far beyond its initial scale */
	b = make_aa(2, 1, 2, 9);
	EXPECT(fabs(rv_assist_w(a)[0] - rv_assist_w(b)[0]) > 1e-3);
	rv_assist_free(b);
	rv_assist_stats(a, &st);
	EXPECT_EQ(st.seen, 3);
	EXPECT(fabs(st.pos_rate - 1.0 / 3) < 1e-12);
	/* the second batch, one line of loss 3: (0.75 0.875 + 0.25 3) /
	 * (0.75 0.75 + 0.25) */
	rv_assist_flush(a);
	EXPECT_EQ(rv_assist_pending(a), 0);
	EXPECT(fabs(rv_assist_mean(a) - 1.40625 / 0.8125) < 1e-12);
	rv_assist_stats(a, &st);
	EXPECT_EQ(st.seen, 4);
	/* 3 > 1.73: positive */
	EXPECT(fabs(st.pos_rate - 2.0 / 4) < 1e-12);
	rv_assist_flush(a);
	EXPECT_EQ(st.seen, 4);
	rv_assist_free(a);
}

/* Label 1 only for a loss strictly above the mean, which includes the
 * batch being labelled; a non-finite loss is skipped. */
static void
t_aa_label(void)
{
	struct rv_assist *a = make_aa(4, 1, 0, 1);
	struct rv_assist_stats st;
	uint8_t px[4] = { 1, 2, 3, 4 };

	/* equal losses: all at the mean, none above */
	rv_assist_add_px(a, px, 0, 1.5, 0);
	rv_assist_add_px(a, px, 0, 1.5, 0);
	rv_assist_add_px(a, px, 0, NAN, 0);
	rv_assist_add_px(a, px, 0, INFINITY, 0);
	EXPECT_EQ(rv_assist_pending(a), 2);
	rv_assist_flush(a);
	rv_assist_stats(a, &st);
	EXPECT_EQ(st.seen, 2);
	EXPECT(st.pos_rate == 0);
	EXPECT(st.mean == 1.5);
	/* the next batch, one line: EMAs of sums and sizes from 0.25 3 and
	 * 0.25 2, a mean of 4.9, and 10 above it */
	rv_assist_add_px(a, px, 0, 10, 1);
	rv_assist_flush(a);
	rv_assist_stats(a, &st);
	EXPECT(fabs(st.mean - (0.75 * 0.25 * 3 + 0.25 * 10) /
	    (0.75 * 0.25 * 2 + 0.25)) < 1e-12);
	EXPECT(fabs(st.mean - 4.9) < 1e-12);
	EXPECT(fabs(st.pos_rate - 1.0 / 3) < 1e-12);
	rv_assist_free(a);
}

/* A run of one step longer than RV_AA_BATCH_MAX is learned in parts. */
static void
t_aa_batch_max(void)
{
	struct rv_assist *a = make_aa(1, 1, 0, 1);
	struct rv_assist_stats st;
	uint8_t px = 7;
	size_t i;

	for (i = 0; i < RV_AA_BATCH_MAX + 5; i++)
		rv_assist_add_px(a, &px, 0, (double)(i % 3), 5);
	EXPECT_EQ(rv_assist_pending(a), 5);
	rv_assist_stats(a, &st);
	EXPECT_EQ(st.seen, RV_AA_BATCH_MAX);
	rv_assist_free(a);
}

/* The same seed and lines, the same weights bit for bit, in 3 channels. */
static void
t_aa_determinism(void)
{
	struct rv_assist *a[3];
	uint8_t px[5 * 4 * 3];
	struct rv_rng r;
	int j, i;

	a[0] = make_aa(20, 3, 10, 77);
	a[1] = make_aa(20, 3, 10, 77);
	a[2] = make_aa(20, 3, 10, 78);
	for (j = 0; j < 3; j++) {
		rv_rng_init(&r, 5, 0, 0, 0, 0);
		for (i = 0; i < 3000; i++) {
			fill_random(px, sizeof(px), (uint64_t)i);
			rv_assist_add_px(a[j], px, i % 10, rv_rng_uniform(&r) *
			    (1 + px[0] / 64), (uint64_t)i / 32);
		}
		rv_assist_flush(a[j]);
	}
	EXPECT(memcmp(rv_assist_w(a[0]), rv_assist_w(a[1]),
	    60 * sizeof(double)) == 0);
	EXPECT(memcmp(rv_assist_u(a[0]), rv_assist_u(a[1]),
	    10 * sizeof(double)) == 0);
	EXPECT(memcmp(rv_assist_w(a[0]), rv_assist_w(a[2]),
	    60 * sizeof(double)) != 0);
	for (j = 0; j < 3; j++)
		rv_assist_free(a[j]);
}

static void
t_aa_conf(void)
{
	struct rv_assist_conf c;

	rv_assist_conf_init(&c);
	EXPECT(c.kind == RV_ASSIST_RV);
	c.kind = RV_ASSIST_AUTOASSIST;
	c.nfeat = 6;
	c.channels = 0;
	EXPECT(rv_assist_new(&c) == NULL);
	EXPECT_STR(rv_errmsg(), "assist: 0 channels: must be 1 to 4");
	c.channels = 4;
	EXPECT(rv_assist_new(&c) == NULL);
	EXPECT_STR(rv_errmsg(),
	    "assist: 6 features: not whole pixels of 4 channels");
	c.channels = 3;
	c.std[1] = 0;
	EXPECT(rv_assist_new(&c) == NULL);
	EXPECT_STR(rv_errmsg(), "assist: channel 1: mean 0, std 0: want "
	    "finite values, std above 0");
	c.std[1] = 1;
	c.kind = (enum rv_assist_kind)5;
	EXPECT(rv_assist_new(&c) == NULL);
	EXPECT_STR(rv_errmsg(), "assist: kind 5: unknown");
}

int
main(void)
{
	RUN(t_feat_len);
	RUN(t_feat_reference);
	RUN(t_feat_values);
	RUN(t_conf);
	RUN(t_sigmoid_extremes);
	RUN(t_planted_rule);
	RUN(t_class_bias);
	RUN(t_window_stats);
	RUN(t_determinism);
	RUN(t_aa_norm);
	RUN(t_aa_init);
	RUN(t_aa_step);
	RUN(t_aa_label);
	RUN(t_aa_batch_max);
	RUN(t_aa_determinism);
	RUN(t_aa_conf);
	return UNIT_DONE();
}
