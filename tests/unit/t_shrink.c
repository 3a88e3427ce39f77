/*
 * Instance shrinking: the floor and the uniform rate honoured in
 * expectation, reweighting unbiased, warm-up, a planted easy class found
 * by the assistant from simulated feedback, the bounded in-flight table
 * (eviction order checked against a model), history percentiles and
 * LRU, determinism, and configuration errors.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "err.h"
#include "rng.h"
#include "shrink.h"
#include "unit.h"

#define SZ	8	/* synthetic images are SZ x SZ grey */

static struct rv_shrink *
make(enum rv_policy policy, double floor)
{
	struct rv_shrink_conf c;

	rv_shrink_conf_init(&c);
	c.policy = policy;
	c.floor = floor;
	return rv_shrink_new(&c, 1, 10);
}

/* Class 0 is flat grey (easy); the others are noise fixed by the id. */
static void
image(uint64_t id, uint8_t *px)
{
	struct rv_rng r;
	int i;

	if (id % 10 == 0) {
		memset(px, 128, SZ * SZ);
		return;
	}
	rv_rng_init(&r, 99, 0, 0, 0, id);
	for (i = 0; i < SZ * SZ; i++)
		px[i] = (uint8_t)rv_rng_u32(&r);
}

static int
decide(struct rv_shrink *s, uint64_t id, uint32_t epoch, struct rv_keep *k)
{
	uint8_t px[SZ * SZ];

	image(id, px);
	return rv_shrink_decide(s, id, epoch, (int32_t)(id % 10), px, SZ, SZ,
	    1, k);
}

static void
feedback(struct rv_shrink *s, uint64_t id, uint32_t epoch, double loss,
    double gn)
{
	struct rv_fb_line l;

	l.id = id;
	l.epoch = epoch;
	l.step = 0;
	l.loss = (float)loss;
	l.gradnorm = (float)gn;
	rv_shrink_feedback(s, &l);
}

/* |rate - expected| within k standard errors of n Bernoulli draws. */
static int
near(double rate, double p, size_t n, double k)
{
	return fabs(rate - p) <= k * sqrt(p * (1 - p) / (double)n);
}

static void
t_floor(void)
{
	struct rv_shrink_conf c;
	struct rv_shrink *s;
	struct rv_keep k;
	struct rv_rng r;
	size_t i, kept, n = 20000;
	double sum_pk, var, rate;
	int ok;

	/* uniform: exactly `keep` */
	rv_shrink_conf_init(&c);
	c.policy = RV_POLICY_UNIFORM;
	c.keep = 0.37;
	s = rv_shrink_new(&c, 1, 10);
	EXPECT_EQ(decide(s, 0, 1, &k), 0);	/* epoch 1 passes all */
	kept = 0;
	ok = 1;
	for (i = 0; i < n; i++) {
		decide(s, i, 2, &k);
		kept += k.keep;
		ok &= k.p_keep == 0.37 && k.weight == 1 && isnan(k.score);
	}
	EXPECT(ok);
	rate = (double)kept / n;
	printf("# uniform 0.37: %.4f\n", rate);
	EXPECT(near(rate, 0.37, n, 3));
	rv_shrink_free(s);

	/*
	 * history with every id's gradnorm at the bottom: 0 for the ids
	 * decided on, then enough 1s from others that the recent ring
	 * holds no 0 and q = 0: p_keep is the floor exactly
	 */
	s = make(RV_POLICY_HISTORY, 0.3);
	for (i = 0; i < n; i++)
		feedback(s, i, 1, 1, 0);
	for (i = 0; i < 5000; i++)
		feedback(s, 1000000 + i, 1, 1, 1);
	decide(s, 5000000, 1, &k);
	kept = 0;
	ok = 1;
	for (i = 0; i < n; i++) {
		decide(s, i, 2, &k);
		kept += k.keep;
		ok &= k.p_keep == 0.3;
	}
	EXPECT(ok);
	rate = (double)kept / n;
	printf("# history floor 0.3: %.4f\n", rate);
	EXPECT(near(rate, 0.3, n, 3));
	rv_shrink_free(s);

	/*
	 * the assistant after an all-negative rule (falling gradnorms):
	 * p small but not 0, p_keep = b + (1 - b) p >= b, and the keep
	 * rate is the mean p_keep within 3 standard errors
	 */
	rv_shrink_conf_init(&c);
	c.floor = 0.2;
	c.min_feedback = 100;
	s = rv_shrink_new(&c, 1, 10);
	for (i = 0; i < 2000; i++) {
		decide(s, i, 1, &k);
		feedback(s, i, 1, 1, 10 - i * 0.001);
	}
	kept = 0;
	sum_pk = var = 0;
	ok = 1;
	rv_rng_init(&r, 5, 0, 0, 0, 0);
	for (i = 0; i < n; i++) {
		decide(s, 10000 + i, 2, &k);
		kept += k.keep;
		sum_pk += k.p_keep;
		var += k.p_keep * (1 - k.p_keep);
		ok &= k.p_keep >= 0.2 &&
		    fabs(k.p_keep - (0.2 + 0.8 * k.score)) < 1e-6;
	}
	EXPECT(ok);
	rate = (double)kept / n;
	printf("# assistant floor 0.2: rate %.4f mean p_keep %.4f\n", rate,
	    sum_pk / n);
	EXPECT(sum_pk / n < 0.3);
	EXPECT(fabs(rate - sum_pk / n) <= 3 * sqrt(var) / n);
	rv_shrink_free(s);
}

/* v_id: values a weighted mean must recover. */
static double
value(uint64_t id)
{
	return 1 + (double)(id * 37 % 101) / 10;
}

/*
 * Over E epochs, the estimate sum_{kept} w v / N per epoch must average
 * to mean(v) within 4 standard errors; without reweighting it must not
 * (the test has the power to see the bias).
 */
static void
unbiased(struct rv_shrink *s, int reweight, const char *what)
{
	const size_t n = 200, epochs = 300;
	double mean_v = 0, sum = 0, sum2 = 0, est, m, se;
	double pk_min = 1, pk_max = 0;
	struct rv_keep k;
	size_t i, e;

	for (i = 0; i < n; i++)
		mean_v += value(i) / n;
	for (e = 0; e < epochs; e++) {
		est = 0;
		for (i = 0; i < n; i++) {
			decide(s, i, (uint32_t)(10 + e), &k);
			if (reweight)
				EXPECT(k.weight == (float)(1 / k.p_keep));
			if (k.keep)
				est += k.weight * value(i) / n;
			pk_min = fmin(pk_min, k.p_keep);
			pk_max = fmax(pk_max, k.p_keep);
		}
		sum += est;
		sum2 += est * est;
	}
	m = sum / epochs;
	se = sqrt((sum2 / epochs - m * m) / epochs);
	printf("# %s: mean %.4f (se %.4f) vs %.4f, p_keep %.3f..%.3f\n",
	    what, m, se, mean_v, pk_min, pk_max);
	EXPECT(pk_max - pk_min > 0.3);
	if (reweight)
		EXPECT(fabs(m - mean_v) < 4 * se);
	else
		EXPECT(fabs(m - mean_v) > 10 * se);
}

static void
t_reweight(void)
{
	struct rv_shrink_conf c;
	struct rv_shrink *s;
	struct rv_keep k;
	uint64_t i;
	int rw;

	for (rw = 1; rw >= 0; rw--) {
		/* history: gradnorm i + 1 for id i, p_keep 0.3 .. 1 */
		rv_shrink_conf_init(&c);
		c.policy = RV_POLICY_HISTORY;
		c.reweight = rw;
		s = rv_shrink_new(&c, 1, 10);
		decide(s, 0, 1, &k);
		for (i = 0; i < 200; i++)
			feedback(s, i, 1, 1, (double)(i + 1));
		unbiased(s, rw, rw ? "history reweighted" : "history raw");
		rv_shrink_free(s);
	}

	/* the assistant, frozen after learning that odd classes are hard */
	rv_shrink_conf_init(&c);
	c.reweight = 1;
	c.floor = 0.1;
	c.min_feedback = 10;
	s = rv_shrink_new(&c, 1, 10);
	for (i = 0; i < 3000; i++) {
		decide(s, i % 200, 1, &k);
		feedback(s, i % 200, 1, 1, (i % 200) % 2 ? 2 : 1);
	}
	unbiased(s, 1, "assistant reweighted");
	rv_shrink_free(s);
}

static void
t_warmup(void)
{
	struct rv_shrink_conf c;
	struct rv_shrink *s;
	struct rv_shrink_stats st;
	struct rv_keep k;
	size_t i, kept;
	int ok;

	/* uniform: the first epoch seen (5 here) passes all, weight 1 */
	rv_shrink_conf_init(&c);
	c.policy = RV_POLICY_UNIFORM;
	c.keep = 0.1;
	c.reweight = 1;
	s = rv_shrink_new(&c, 1, 10);
	ok = 1;
	for (i = 0; i < 1000; i++) {
		decide(s, i, 5, &k);
		ok &= k.keep && k.p_keep == 1 && k.weight == 1;
	}
	EXPECT(ok);
	rv_shrink_stats(s, &st);
	EXPECT_EQ(st.warm, 0);
	EXPECT_EQ(st.seen, 1000);
	EXPECT_EQ(st.kept, 1000);
	rv_shrink_epoch_end(s);
	kept = 0;
	for (i = 0; i < 1000; i++) {
		decide(s, i, 6, &k);
		kept += k.keep;
		if (k.keep)
			EXPECT(k.weight == 10);
	}
	EXPECT(kept > 50 && kept < 150);
	rv_shrink_stats(s, &st);
	EXPECT_EQ(st.warm, 1);
	EXPECT_EQ(st.seen, 1000);
	EXPECT_EQ(st.kept, kept);
	EXPECT_EQ(st.dropped, 1000 - kept);
	EXPECT_EQ(st.total_seen, 2000);
	EXPECT_EQ(st.total_kept, 1000 + kept);
	rv_shrink_free(s);

	/* the assistant: also until min_feedback lines were learned from */
	rv_shrink_conf_init(&c);
	c.min_feedback = 100;
	c.floor = 0.05;
	s = rv_shrink_new(&c, 1, 10);
	ok = 1;
	for (i = 0; i < 60; i++) {
		decide(s, i, 1, &k);
		ok &= k.keep && k.p_keep == 1 && !isnan(k.score);
		feedback(s, i, 1, 1, i % 10 ? 5 : 0.1);
	}
	for (i = 0; i < 40; i++) {
		decide(s, i, 2, &k);
		ok &= k.keep && k.p_keep == 1 && !isnan(k.score);
	}
	EXPECT(ok);
	rv_shrink_stats(s, &st);
	EXPECT_EQ(st.warm, 0);
	EXPECT_EQ(st.feedback, 60);
	for (i = 0; i < 40; i++)
		feedback(s, i, 2, 1, i % 10 ? 5 : 0.1);
	rv_shrink_stats(s, &st);
	EXPECT_EQ(st.feedback, 100);
	EXPECT_EQ(st.warm, 0);		/* until the next decision */
	kept = 0;
	for (i = 0; i < 1000; i++) {
		decide(s, i, 2, &k);
		kept += k.keep;
	}
	rv_shrink_stats(s, &st);
	EXPECT_EQ(st.warm, 1);
	EXPECT(kept < 1000);
	rv_shrink_free(s);

	/* history: the first epoch passes all, then unknown ids keep */
	s = make(RV_POLICY_HISTORY, 0.3);
	ok = 1;
	for (i = 0; i < 100; i++) {
		decide(s, i, 1, &k);
		ok &= k.keep && k.p_keep == 1 && isnan(k.score);
	}
	for (i = 0; i < 100; i++) {
		decide(s, i, 2, &k);
		ok &= k.keep && k.p_keep == 1;
	}
	EXPECT(ok);
	rv_shrink_stats(s, &st);
	EXPECT_EQ(st.warm, 1);
	EXPECT_EQ(st.total_seen, 200);
	EXPECT(isnan(st.assist.auc));
	rv_shrink_free(s);
}

/*
 * A trainer that finds class 0 easy: gradnorm about 0.1 for it, about
 * 1 for the rest, reported for every kept sample a batch later.
 */
static double
trainer_gn(struct rv_rng *r, uint64_t id)
{
	return (id % 10 == 0 ? 0.1 : 1) + 0.01 * rv_rng_uniform(r);
}

/*
 * 3000 samples, 300 of the easy class: after learning from every kept
 * sample for 3 epochs, epoch 4 keeps the easy class at about the floor
 * (its mean p_keep within 0.08 of b, its rate within 3 standard errors
 * of that) and the hard ones at about 1.
 */
static void
t_easy_hard(void)
{
	struct rv_shrink *s = make(RV_POLICY_ASSISTANT, 0.3);
	struct rv_shrink_stats st;
	struct rv_keep k;
	struct rv_rng r;
	uint64_t batch[32], id;
	size_t nb = 0, i, seen[2] = { 0, 0 }, kept[2] = { 0, 0 };
	uint32_t e;
	double r0, r1, pk0 = 0, var0 = 0;

	rv_rng_init(&r, 3, 0, 0, 0, 0);
	for (e = 1; e <= 4; e++) {
		for (id = 0; id < 3000; id++) {
			EXPECT_EQ(decide(s, id, e, &k), 0);
			if (e == 4) {
				seen[id % 10 != 0]++;
				kept[id % 10 != 0] += k.keep;
				if (id % 10 == 0) {
					pk0 += k.p_keep;
					var0 += k.p_keep * (1 - k.p_keep);
				}
			}
			if (!k.keep)
				continue;
			batch[nb++] = id;
			if (nb == 32) {
				for (i = 0; i < nb; i++)
					feedback(s, batch[i], e, 1,
					    trainer_gn(&r, batch[i]));
				nb = 0;
			}
		}
		rv_shrink_epoch_end(s);
	}
	rv_shrink_stats(s, &st);
	r0 = (double)kept[0] / seen[0];
	r1 = (double)kept[1] / seen[1];
	pk0 /= seen[0];
	printf("# easy kept %.3f (p_keep %.3f), hard kept %.3f, auc %.3f "
	    "acc %.3f\n", r0, pk0, r1, st.assist.auc, st.assist.acc);
	EXPECT(pk0 >= 0.3 && pk0 < 0.38);
	EXPECT(fabs(r0 - pk0) <= 3 * sqrt(var0) / seen[0]);
	EXPECT(r1 > 0.95);
	EXPECT(st.assist.auc > 0.8);
	EXPECT_EQ(st.unmatched, 0);
	EXPECT_EQ(st.seen, 0);
	rv_shrink_free(s);
}

/*
 * Hardness that pixels do not show: every image is noise of one class,
 * and a quarter of the ids, picked by a hash, are hard (gradnorm about 1,
 * the rest about 0.1) in every epoch.  On the image alone the assistant
 * can only guess; with the history features it finds them from their
 * last feedback: AUC over 0.9 against under 0.7, and from epoch 3 the
 * hard ids are all but always kept, the easy ones near the floor.
 */
static double
hist_run(int hist_feat, double *hard_kept, double *easy_kept)
{
	struct rv_shrink_conf c;
	struct rv_shrink *s;
	struct rv_shrink_stats st;
	struct rv_keep k;
	struct rv_rng r;
	uint8_t px[SZ * SZ];
	uint64_t batch[32], id;
	size_t nb = 0, i, seen[2] = { 0, 0 }, kept[2] = { 0, 0 };
	uint32_t e;
	int hard;

	rv_shrink_conf_init(&c);
	c.hist_feat = hist_feat;
	s = rv_shrink_new(&c, 1, 10);
	EXPECT(s != NULL);
	rv_rng_init(&r, 5, 0, 0, 0, 0);
	for (e = 1; e <= 4; e++) {
		for (id = 0; id < 3000; id++) {
			image(id * 10 + 1, px);	/* noise, never class 0 */
			EXPECT_EQ(rv_shrink_decide(s, id, e, 1, px, SZ, SZ,
			    1, &k), 0);
			hard = (id * 0x9E3779B97F4A7C15ull) >> 62 == 0;
			if (e >= 3) {
				seen[hard]++;
				kept[hard] += k.keep;
			}
			if (!k.keep)
				continue;
			batch[nb++] = id;
			if (nb < 32)
				continue;
			for (i = 0; i < nb; i++) {
				hard = (batch[i] * 0x9E3779B97F4A7C15ull) >>
				    62 == 0;
				feedback(s, batch[i], e, 1, (hard ? 1 : 0.1) +
				    0.01 * rv_rng_uniform(&r));
			}
			nb = 0;
		}
		rv_shrink_epoch_end(s);
	}
	rv_shrink_stats(s, &st);
	*hard_kept = (double)kept[1] / seen[1];
	*easy_kept = (double)kept[0] / seen[0];
	rv_shrink_free(s);
	return st.assist.auc;
}

static void
t_hist_feat(void)
{
	double auc_img, auc_hist, hk, ek;

	auc_img = hist_run(0, &hk, &ek);
	printf("# image only: auc %.3f, hard kept %.3f, easy kept %.3f\n",
	    auc_img, hk, ek);
	EXPECT(auc_img < 0.7);
	auc_hist = hist_run(1, &hk, &ek);
	printf("# image,history: auc %.3f, hard kept %.3f, easy kept %.3f\n",
	    auc_hist, hk, ek);
	EXPECT(auc_hist > 0.9);
	EXPECT(hk > 0.9);
	EXPECT(ek < 0.45);
}

/* The loss variant learns from the loss column, not the gradnorm. */
static void
t_loss_target(void)
{
	struct rv_shrink_conf c;
	struct rv_shrink *s;
	struct rv_shrink_stats st;
	struct rv_keep k;
	struct rv_rng r;
	uint64_t id;
	int t;

	for (t = 0; t < 2; t++) {
		rv_shrink_conf_init(&c);
		c.assist.target = t ? RV_TARGET_LOSS : RV_TARGET_GRADNORM;
		s = rv_shrink_new(&c, 1, 10);
		rv_rng_init(&r, 4, 0, 0, 0, 0);
		for (id = 0; id < 3000; id++) {
			decide(s, id % 1000, 1, &k);
			feedback(s, id % 1000, 1, trainer_gn(&r, id % 1000),
			    rv_rng_uniform(&r));
		}
		rv_shrink_stats(s, &st);
		if (t)
			EXPECT(st.assist.auc > 0.8);
		else
			EXPECT(st.assist.auc > 0.4 && st.assist.auc < 0.6);
		rv_shrink_free(s);
	}
}

static void
t_inflight(void)
{
	struct rv_shrink_conf c;
	struct rv_shrink *s;
	struct rv_shrink_stats st;
	struct rv_keep k;
	uint64_t i;

	rv_shrink_conf_init(&c);
	c.max_inflight = 8;
	s = rv_shrink_new(&c, 1, 10);
	for (i = 0; i < 20; i++)
		decide(s, i, 1, &k);
	for (i = 0; i < 20; i++)
		feedback(s, i, 1, 1, 1);
	rv_shrink_stats(s, &st);
	EXPECT_EQ(st.unmatched, 12);
	EXPECT_EQ(st.feedback, 8);
	rv_shrink_free(s);

	/* oldest first: the newest 8 of 20000 are the ones matched */
	s = rv_shrink_new(&c, 1, 10);
	for (i = 0; i < 20000; i++)
		decide(s, i, 1, &k);
	for (i = 0; i < 20000; i++)
		feedback(s, i, 1, 1, 1);
	rv_shrink_stats(s, &st);
	EXPECT_EQ(st.feedback, 8);
	EXPECT_EQ(st.unmatched, 20000 - 8);
	/* the same id kept again replaces its entry */
	decide(s, 7, 1, &k);
	decide(s, 7, 1, &k);
	feedback(s, 7, 1, 1, 1);
	feedback(s, 7, 1, 1, 1);
	rv_shrink_stats(s, &st);
	EXPECT_EQ(st.feedback, 9);
	EXPECT_EQ(st.unmatched, 20000 - 8 + 1);
	rv_shrink_free(s);
}

/*
 * Random keeps and feedback against a model of the table (ids in age
 * order; a kept id moves to the young end; a full table drops the old
 * end): the hash table's probing and deletion under many collisions.
 */
static void
model_run(size_t cap, uint64_t nid, uint64_t seed)
{
	struct rv_shrink_conf c;
	struct rv_shrink *s;
	struct rv_shrink_stats st;
	struct rv_keep k;
	struct rv_rng r;
	uint64_t model[64], id, matched = 0, unmatched = 0;
	size_t n = 0, i, j, op, bad = 0;

	rv_shrink_conf_init(&c);
	c.max_inflight = cap;
	s = rv_shrink_new(&c, 1, 10);
	rv_rng_init(&r, seed, 0, 0, 0, 0);
	for (op = 0; op < 20000; op++) {
		id = rv_rng_below(&r, nid);
		for (i = 0; i < n && model[i] != id; i++)
			;
		if (rv_rng_below(&r, 2)) {
			decide(s, id, 1, &k);	/* epoch 1: kept */
			if (i < n) {
				for (j = i; j + 1 < n; j++)
					model[j] = model[j + 1];
				n--;
			} else if (n == cap) {
				for (j = 0; j + 1 < n; j++)
					model[j] = model[j + 1];
				n--;
			}
			model[n++] = id;
		} else {
			feedback(s, id, 1, 1, 1);
			if (i < n) {
				matched++;
				for (j = i; j + 1 < n; j++)
					model[j] = model[j + 1];
				n--;
			} else {
				unmatched++;
			}
		}
		if (op % 64 != 63)
			continue;
		rv_shrink_stats(s, &st);
		bad += st.feedback != matched || st.unmatched != unmatched;
	}
	EXPECT_EQ(bad, 0);
	EXPECT(matched > 500 && unmatched > 500);
	rv_shrink_free(s);
}

static void
t_inflight_model(void)
{
	model_run(64, 200, 6);
	model_run(3, 10, 7);
	model_run(1, 4, 8);
	model_run(33, 40, 9);
}

static void
t_history(void)
{
	struct rv_shrink_conf c;
	struct rv_shrink *s;
	struct rv_keep k;
	uint64_t i;

	rv_shrink_conf_init(&c);
	c.policy = RV_POLICY_HISTORY;
	c.floor = 0.005;
	c.max_ids = 100;
	s = rv_shrink_new(&c, 1, 10);
	decide(s, 0, 1, &k);
	for (i = 1; i <= 100; i++)
		feedback(s, i, 1, 1, (double)i);
	decide(s, 100, 2, &k);
	EXPECT(k.p_keep == 1 && k.keep);
	decide(s, 50, 2, &k);
	EXPECT(k.p_keep == 0.5);
	decide(s, 1, 2, &k);
	EXPECT(k.p_keep == 0.01);
	decide(s, 1000, 2, &k);		/* unknown */
	EXPECT(k.p_keep == 1 && k.keep);
	/* id 2 updated again is young; id 101 evicts the oldest, id 1 */
	feedback(s, 2, 2, 1, 2);
	feedback(s, 101, 2, 1, 50);
	decide(s, 1, 2, &k);
	EXPECT(k.p_keep == 1);
	decide(s, 2, 2, &k);
	EXPECT(k.p_keep < 1);
	feedback(s, 102, 2, 1, 50);	/* now id 3 goes, not id 2 */
	decide(s, 3, 2, &k);
	EXPECT(k.p_keep == 1);
	decide(s, 2, 2, &k);
	EXPECT(k.p_keep < 1);
	rv_shrink_free(s);

	/* beta 2: 0.01^2 under the floor, 0.5^2 over it */
	c.beta = 2;
	c.max_ids = 1000;
	s = rv_shrink_new(&c, 1, 10);
	decide(s, 0, 1, &k);
	for (i = 1; i <= 100; i++)
		feedback(s, i, 1, 1, (double)i);
	decide(s, 1, 2, &k);
	EXPECT(k.p_keep == 0.005);
	decide(s, 50, 2, &k);
	EXPECT(k.p_keep == 0.25);
	decide(s, 100, 2, &k);
	EXPECT(k.p_keep == 1);
	rv_shrink_free(s);
}

static void
run_seq(enum rv_policy policy, struct rv_keep *out, size_t n)
{
	struct rv_shrink_conf c;
	struct rv_shrink *s;
	struct rv_rng r;
	size_t i;

	rv_shrink_conf_init(&c);
	c.policy = policy;
	c.seed = 77;
	c.reweight = 1;
	c.min_feedback = 200;
	s = rv_shrink_new(&c, 1, 10);
	rv_rng_init(&r, 8, 0, 0, 0, 0);
	for (i = 0; i < n; i++) {
		uint64_t id = i % 500;

		decide(s, id, (uint32_t)(i / 500), &out[i]);
		if (out[i].keep)
			feedback(s, id, (uint32_t)(i / 500), 1,
			    trainer_gn(&r, id));
	}
	rv_shrink_free(s);
}

static int
same(const struct rv_keep *a, const struct rv_keep *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (a[i].keep != b[i].keep || a[i].p_keep != b[i].p_keep ||
		    a[i].weight != b[i].weight ||
		    memcmp(&a[i].score, &b[i].score, sizeof(float)) != 0)
			return 0;
	return 1;
}

static void
t_determinism(void)
{
	static struct rv_keep a[3000], b[3000];
	size_t i, drops;

	run_seq(RV_POLICY_ASSISTANT, a, 3000);
	run_seq(RV_POLICY_ASSISTANT, b, 3000);
	EXPECT(same(a, b, 3000));
	for (drops = i = 0; i < 3000; i++)
		drops += !a[i].keep;
	EXPECT(drops > 100);
	run_seq(RV_POLICY_HISTORY, a, 3000);
	run_seq(RV_POLICY_HISTORY, b, 3000);
	EXPECT(same(a, b, 3000));
	for (drops = i = 0; i < 3000; i++)
		drops += !a[i].keep;
	EXPECT(drops > 100);
}

static void
t_errors(void)
{
	struct rv_shrink_conf c;
	struct rv_shrink *s;
	struct rv_keep k;
	uint8_t px[12];

	rv_shrink_conf_init(&c);
	EXPECT(c.policy == RV_POLICY_ASSISTANT && c.floor == 0.3 &&
	    c.beta == 1 && c.keep == 0.5 && c.reweight == 0 && c.seed == 0 &&
	    c.min_feedback == 1000 && c.max_inflight == 65536 &&
	    c.max_ids == 1048576 && c.assist.lr == 0.05);
	c.floor = 1.5;
	EXPECT(rv_shrink_new(&c, 1, 10) == NULL);
	EXPECT_STR(rv_errmsg(), "shrink: floor 1.5: must be in [0, 1]");
	c.floor = NAN;
	EXPECT(rv_shrink_new(&c, 1, 10) == NULL);
	EXPECT_STR(rv_errmsg(), "shrink: floor nan: must be in [0, 1]");
	c.floor = 0;
	c.keep = 0;
	EXPECT(rv_shrink_new(&c, 1, 10) == NULL);
	EXPECT_STR(rv_errmsg(), "shrink: keep 0: must be in (0, 1]");
	c.keep = 1;
	c.beta = 0;
	EXPECT(rv_shrink_new(&c, 1, 10) == NULL);
	EXPECT_STR(rv_errmsg(), "shrink: beta 0: must be positive");
	c.beta = 1;
	c.max_inflight = 0;
	EXPECT(rv_shrink_new(&c, 1, 10) == NULL);
	EXPECT_STR(rv_errmsg(), "shrink: max_inflight 0: must be at least 1");
	c.max_inflight = 1;
	c.max_ids = 0;
	EXPECT(rv_shrink_new(&c, 1, 10) == NULL);
	EXPECT_STR(rv_errmsg(), "shrink: max_ids 0: must be at least 1");
	c.max_ids = (size_t)1 << 31;
	EXPECT(rv_shrink_new(&c, 1, 10) == NULL);
	EXPECT_STR(rv_errmsg(),
	    "shrink: max_ids 2147483648: more than 1073741824");
	c.max_ids = 1;
	EXPECT(rv_shrink_new(&c, 0, 10) == NULL);
	EXPECT_STR(rv_errmsg(), "shrink: 0 channels: must be 1 to 4");
	EXPECT(rv_shrink_new(&c, 5, 10) == NULL);
	EXPECT_STR(rv_errmsg(), "shrink: 5 channels: must be 1 to 4");
	c.policy = (enum rv_policy)9;
	EXPECT(rv_shrink_new(&c, 1, 10) == NULL);
	EXPECT_STR(rv_errmsg(), "shrink: policy 9: unknown");
	c.policy = RV_POLICY_ASSISTANT;
	c.assist.lr = -1;
	EXPECT(rv_shrink_new(&c, 1, 10) == NULL);
	EXPECT_STR(rv_errmsg(), "shrink: assist: lr -1: must be positive");
	c.assist.lr = 0.05;

	/* shapes the features don't fit */
	s = rv_shrink_new(&c, 3, 0);
	memset(px, 7, sizeof(px));
	EXPECT_EQ(rv_shrink_decide(s, 1, 1, 0, px, 2, 2, 1, &k), -1);
	EXPECT_STR(rv_errmsg(), "shrink: image has 1 channels, not 3");
	EXPECT_EQ(rv_shrink_decide(s, 1, 1, 0, px, 0, 2, 3, &k), -1);
	EXPECT_STR(rv_errmsg(), "shrink: empty 2x0 image");
	EXPECT_EQ(rv_shrink_decide(s, 1, 1, 0, px, 2, 2, 3, &k), 0);
	EXPECT(k.keep && k.score == 0.5f);
	rv_shrink_free(s);
	rv_shrink_free(NULL);
}

/* Not a check: the cost of one assistant decision on a 28x28 image. */
static void
t_cost(void)
{
	struct rv_shrink_conf c;
	struct rv_shrink *s;
	struct rv_keep k;
	struct timespec t0, t1;
	uint8_t px[28 * 28];
	size_t i, n = 20000, kept = 0;
	double ns;

	rv_shrink_conf_init(&c);
	c.min_feedback = 0;
	s = rv_shrink_new(&c, 1, 10);
	for (i = 0; i < sizeof(px); i++)
		px[i] = (uint8_t)(i * 7);
	rv_shrink_decide(s, 0, 0, 0, px, 28, 28, 1, &k);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < n; i++) {
		rv_shrink_decide(s, i, 1, (int32_t)(i % 10), px, 28, 28, 1, &k);
		kept += k.keep;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ns = ((double)(t1.tv_sec - t0.tv_sec) * 1e9 +
	    (double)(t1.tv_nsec - t0.tv_nsec)) / (double)n;
	printf("# decide 28x28 grey (assistant): %.0f ns, kept %zu\n", ns,
	    kept);
	rv_shrink_free(s);
}

int
main(void)
{
	RUN(t_floor);
	RUN(t_reweight);
	RUN(t_warmup);
	RUN(t_easy_hard);
	RUN(t_hist_feat);
	RUN(t_loss_target);
	RUN(t_inflight);
	RUN(t_inflight_model);
	RUN(t_history);
	RUN(t_determinism);
	RUN(t_errors);
	RUN(t_cost);
	return UNIT_DONE();
}
