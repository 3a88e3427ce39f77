/*
 * Instance shrinking: the floor and the uniform rate honoured in
 * expectation, reweighting unbiased, warm-up, a planted easy class found
 * by the assistant from simulated feedback, the bounded in-flight table
 * (eviction order checked against a model), history percentiles and
 * LRU, determinism, configuration errors, and budget mode: exactly k of
 * every window, each sample with its pi_i, the same for the same seed.
 * The published AutoAssist assistant: no warm-up, its shape and
 * settings checked, learning by the trainer's step, a planted easy class
 * found.  Ids chosen to collide in the old unkeyed id hash (issue 47)
 * cost no more than others, from the stream and from feedback.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/err.h"
#include "base/rng.h"
#include "shrink/score_io.h"
#include "shrink/shrink.h"
#include "stream/meta.h"
#include "crafted.h"
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

/* offer() as decide() does it: the synthetic image of the id. */
static int
offer(struct rv_shrink *s, uint64_t id, uint32_t epoch)
{
	uint8_t px[SZ * SZ];

	image(id, px);
	return rv_shrink_offer(s, id, epoch, (int32_t)(id % 10), 0, px, SZ,
	    SZ, 1);
}

static void
t_budget_k(void)
{
	static const struct {
		double f;
		size_t w, k;
	} tab[] = {
		{ 0.5, 256, 128 }, { 0.5, 255, 128 }, { 0.5, 47, 24 },
		{ 0.3, 256, 77 }, { 0.3, 48, 14 }, { 0.3, 5, 2 },
		{ 0.7, 47, 33 }, { 0.25, 2, 1 }, { 0.001, 10, 1 },
		{ 0.5, 1, 1 }, { 1, 7, 7 }, { 0.999, 3, 3 }, { 0.5, 0, 0 },
		{ 0.1, 65536, 6554 },
	};
	size_t i;

	for (i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
		if (rv_shrink_budget_k(tab[i].f, tab[i].w) != tab[i].k) {
			printf("# k(%g, %zu) = %zu, not %zu\n", tab[i].f,
			    tab[i].w, rv_shrink_budget_k(tab[i].f, tab[i].w),
			    tab[i].k);
			EXPECT(0);
		}
}

/* An epoch's count under a budget: its windows' k summed (rv-score(1)). */
static void
t_budget_count(void)
{
	uint64_t n, want, w;

	/* rv-score(1)'s example: 29999 at 0.3, windows of 256 */
	EXPECT_EQ(rv_shrink_budget_count(0.3, 256, 29999), 9023);
	EXPECT_EQ(rv_shrink_budget_count(0.5, 256, 29999), 15000);
	EXPECT_EQ(rv_shrink_budget_count(0.3, 256, 1000), 301);
	EXPECT_EQ(rv_shrink_budget_count(0.5, 256, 0), 0);
	EXPECT_EQ(rv_shrink_budget_count(0.5, 0, 10), UINT64_MAX);
	EXPECT_EQ(rv_shrink_budget_count(0.5, 256, UINT64_MAX), UINT64_MAX);
	/* window by window, as rv-score cuts them */
	for (w = 1; w <= 40; w += 13)
		for (n = 0; n <= 200; n += 7) {
			uint64_t left = n, m;

			for (want = 0; left > 0; left -= m) {
				m = left < w ? left : w;
				want += rv_shrink_budget_k(0.37, (size_t)m);
			}
			EXPECT_EQ(rv_shrink_budget_count(0.37, (size_t)w, n),
			    want);
		}
}

/* The kept keys rv-score writes: from the input's counts, the first
 * epoch whole at the head but under autoassist; empty without a budget
 * or with counts unknown. */
static void
t_meta_kept(void)
{
	struct rv_shrink_conf c;
	struct rv_meta m;

	rv_shrink_conf_init(&c);
	c.budget = 0.3;
	c.window = 256;
	rv_meta_init(&m);
	rv_meta_set(&m, "samples", "1000");
	EXPECT_EQ(rv_score_meta_kept(&m, &c, 1), 0);
	EXPECT_STR(rv_meta_get(&m, "kept-first"), "1000");
	EXPECT_STR(rv_meta_get(&m, "kept"), "301");
	/* a second stage after it: its counts are the input's */
	c.budget = 0.5;
	EXPECT_EQ(rv_score_meta_kept(&m, &c, 1), 0);
	EXPECT_STR(rv_meta_get(&m, "kept-first"), "1000");
	EXPECT_STR(rv_meta_get(&m, "kept"), "151");
	EXPECT_EQ(rv_score_meta_kept(&m, &c, 0), 0);
	EXPECT_STR(rv_meta_get(&m, "kept-first"), "500");
	rv_meta_release(&m);
	/* rv-decode --resume: the first epoch is what was left */
	rv_meta_init(&m);
	rv_meta_set(&m, "samples", "1000");
	rv_meta_set(&m, "resume", "0:1:100");
	rv_meta_set(&m, "resume-samples", "900");
	c.policy = RV_POLICY_ASSISTANT;
	c.assist.kind = RV_ASSIST_AUTOASSIST;
	EXPECT_EQ(rv_score_meta_kept(&m, &c, 1), 0);
	EXPECT_STR(rv_meta_get(&m, "kept-first"), "450");
	EXPECT_STR(rv_meta_get(&m, "kept"), "500");
	rv_meta_release(&m);
	/* without a budget, or without samples: unknown, empty */
	rv_meta_init(&m);
	EXPECT_EQ(rv_score_meta_kept(&m, &c, 1), 0);
	EXPECT_STR(rv_meta_get(&m, "kept"), "");
	rv_meta_set(&m, "samples", "1000");
	c.budget = 0;
	EXPECT_EQ(rv_score_meta_kept(&m, &c, 1), 0);
	EXPECT_STR(rv_meta_get(&m, "kept-first"), "");
	EXPECT_STR(rv_meta_get(&m, "kept"), "");
	rv_meta_release(&m);
}

/* p of one of several shapes: the cases a policy or a floor of 0 give. */
static void
fill_p(struct rv_rng *r, unsigned kind, double *p, size_t w)
{
	size_t i;

	for (i = 0; i < w; i++) {
		double x = rv_rng_uniform(r);

		switch (kind % 8) {
		case 0:		/* assistant-like, floor 0.3 */
			p[i] = 0.3 + 0.7 * x;
			break;
		case 1:		/* floor 0: many zeros */
			p[i] = x < 0.5 ? 0 : x;
			break;
		case 2:		/* history: unknown ids keep, 1 */
			p[i] = x < 0.4 ? 1 : x * x;
			break;
		case 3:		/* all zero */
			p[i] = 0;
			break;
		case 4:		/* one huge, the rest tiny */
			p[i] = i == w / 2 ? 1e6 : 1e-6 * x;
			break;
		case 5:		/* all equal */
			p[i] = 0.37;
			break;
		case 6:		/* few positive: fewer than k */
			p[i] = x < 0.05 ? x : 0;
			break;
		default:	/* spread over decades, NaN and negative */
			p[i] = pow(10, -6 * x);
			if (i % 17 == 3)
				p[i] = NAN;
			if (i % 19 == 5)
				p[i] = -1;
			break;
		}
	}
}

/*
 * Many windows of every shape: sum pi = k, 0 <= pi <= 1, pi proportional
 * to p below the cap, zero p at zero pi unless the budget needs them,
 * and the draw keeps exactly k for any u, the capped always, the zero
 * never.
 */
static void
t_budget_exact(void)
{
	static double p[700], pi[700];
	static unsigned char keep[700];
	double us[5] = { 0, 0x1.fffffffffffffp-1, 0.5, 0, 0 };
	size_t trial, i, j, w, k, npos, n, nkeep;
	int bad_sum = 0, bad_range = 0, bad_prop = 0, bad_zero = 0;
	int bad_count = 0, bad_cap = 0;
	double sum, ratio;
	struct rv_rng r;

	rv_rng_init(&r, 11, 0, 0, 0, 0);
	for (trial = 0; trial < 4000; trial++) {
		w = 1 + (size_t)rv_rng_below(&r, trial % 10 ? 300 : 700);
		k = rv_shrink_budget_k((double)(1 + rv_rng_below(&r, 1000)) /
		    1000, w);
		fill_p(&r, (unsigned)trial, p, w);
		rv_shrink_budget_pi(p, w, k, pi);
		sum = 0;
		npos = 0;
		ratio = NAN;
		for (i = 0; i < w; i++) {
			int pos = p[i] > 0 && isfinite(p[i]);

			sum += pi[i];
			npos += pos;
			bad_range += !(pi[i] >= 0 && pi[i] <= 1);
			if (!pos || pi[i] >= 1)
				continue;
			if (isnan(ratio))
				ratio = pi[i] / p[i];
			bad_prop += fabs(pi[i] / p[i] - ratio) > 1e-9 * ratio;
		}
		bad_sum += fabs(sum - (double)k) > 1e-9 * (double)k;
		for (i = 0; i < w && npos >= k; i++)
			if (!(p[i] > 0 && isfinite(p[i])))
				bad_zero += pi[i] != 0;
		us[3] = rv_rng_uniform(&r);
		us[4] = rv_rng_uniform(&r);
		for (j = 0; j < 5; j++) {
			n = rv_shrink_budget_draw(pi, w, k, us[j], keep);
			nkeep = 0;
			for (i = 0; i < w; i++) {
				nkeep += keep[i];
				bad_cap += (pi[i] >= 1 && !keep[i]) ||
				    (pi[i] == 0 && keep[i]);
			}
			bad_count += n != k || nkeep != k;
		}
	}
	EXPECT_EQ(bad_sum, 0);
	EXPECT_EQ(bad_range, 0);
	EXPECT_EQ(bad_prop, 0);
	EXPECT_EQ(bad_zero, 0);
	EXPECT_EQ(bad_count, 0);
	EXPECT_EQ(bad_cap, 0);

	/* the fallbacks, exactly */
	for (i = 0; i < 8; i++)
		p[i] = 0;
	rv_shrink_budget_pi(p, 8, 2, pi);
	for (i = 0; i < 8; i++)
		EXPECT(pi[i] == 0.25);
	p[3] = 0.2;		/* one positive, k 3: it and 2 of 7 */
	rv_shrink_budget_pi(p, 8, 3, pi);
	EXPECT(pi[3] == 1);
	EXPECT(fabs(pi[0] - 2.0 / 7) < 1e-15 && pi[7] == pi[0]);
	p[5] = 1e6;		/* a huge p: capped, the rest shares */
	rv_shrink_budget_pi(p, 8, 2, pi);
	EXPECT(pi[5] == 1 && pi[3] == 1 && pi[0] == 0);
	rv_shrink_budget_pi(p, 8, 8, pi);
	for (i = 0; i < 8; i++)
		EXPECT(pi[i] == 1);
	EXPECT_EQ(rv_shrink_budget_draw(pi, 8, 8, 0.3, keep), 8);
}

/*
 * Over many u, each item is kept with frequency pi_i (4.5 standard
 * errors), on a window with capped, zero and small p.
 */
static void
t_budget_freq(void)
{
	static const double p[] = { 0, 1, 0.5, 0.3, 0.3, 2, 0.05, 0.9, 0,
		0.7, 0.2, 0.6, 0.01 };
	enum { W = sizeof(p) / sizeof(p[0]), K = 6, N = 40000 };
	double pi[W], sum = 0;
	unsigned char keep[W];
	size_t cnt[W] = { 0 }, i, t;
	struct rv_rng r;
	int bad = 0;

	rv_shrink_budget_pi(p, W, K, pi);
	for (i = 0; i < W; i++)
		sum += pi[i];
	EXPECT(fabs(sum - K) < 1e-12);
	EXPECT(pi[5] == 1 && pi[1] == 1 && pi[0] == 0 && pi[8] == 0);
	for (t = 0; t < N; t++) {
		rv_rng_init(&r, t, RV_STAGE_SCORE, 1, 0, 0);
		EXPECT_EQ(rv_shrink_budget_draw(pi, W, K, rv_rng_uniform(&r),
		    keep), K);
		for (i = 0; i < W; i++)
			cnt[i] += keep[i];
	}
	for (i = 0; i < W; i++) {
		double f = (double)cnt[i] / N;
		double se = sqrt(pi[i] * (1 - pi[i]) / N);

		printf("# pi %.4f kept %.4f\n", pi[i], f);
		bad += fabs(f - pi[i]) > 4.5 * se + 1e-12;
	}
	EXPECT_EQ(bad, 0);
}

/*
 * Through rv_shrink under the history policy, one seed a run: a window
 * of 12 (ids 0..9 with gradnorms i + 1, so p = ((i + 1) / 10)^2, ids 10
 * and 11 unknown, p 1) keeps exactly 6 in every run, each id with
 * frequency p_keep (the pi_i, the same in every run), weighted 1/pi_i.
 */
static void
t_budget_seeds(void)
{
	enum { W = 12, N = 20000 };
	struct rv_shrink_conf c;
	struct rv_shrink *s;
	struct rv_keep k[W];
	size_t cnt[W] = { 0 }, i, t, n;
	double pi[W];
	int bad_count = 0, bad_pi = 0, bad_w = 0, bad = 0;

	rv_shrink_conf_init(&c);
	c.policy = RV_POLICY_HISTORY;
	c.floor = 0;
	c.beta = 2;
	c.reweight = 1;
	c.max_ids = 64;
	c.max_inflight = 64;	/* 20000 shrinkers: keep each small */
	c.budget = 0.5;
	c.window = W;
	for (t = 0; t < N; t++) {
		c.seed = t;
		s = rv_shrink_new(&c, 1, 10);
		for (i = 0; i < 10; i++)
			feedback(s, i, 0, 1, (double)(i + 1));
		for (i = 0; i < W; i++)
			offer(s, i, 0);
		EXPECT_EQ(rv_shrink_decide_window(s, k), W);
		for (i = 0; i < W; i++)
			offer(s, i, 1);
		n = 0;
		EXPECT_EQ(rv_shrink_decide_window(s, k), W);
		for (i = 0; i < W; i++) {
			if (t == 0)
				pi[i] = k[i].p_keep;
			bad_pi += k[i].p_keep != pi[i];
			bad_w += k[i].weight != (float)(1 / pi[i]);
			n += k[i].keep;
			cnt[i] += k[i].keep;
		}
		bad_count += n != 6;
		rv_shrink_free(s);
	}
	EXPECT_EQ(bad_count, 0);
	EXPECT_EQ(bad_pi, 0);
	EXPECT_EQ(bad_w, 0);
	EXPECT(pi[9] == 1 && pi[10] == 1 && pi[11] == 1 && pi[8] < 1);
	for (i = 0; i < W; i++) {
		double f = (double)cnt[i] / N;
		double se = sqrt(pi[i] * (1 - pi[i]) / N);

		bad += fabs(f - pi[i]) > 4.5 * se + 1e-12;
	}
	EXPECT_EQ(bad, 0);
}

/*
 * Windows through rv_shrink: the first epoch keeps all; later ones keep
 * k of each window (the last one short) whatever the p; the stats count
 * samples as the windows are decided; the same seed gives the same
 * decisions and another seed others.
 */
static void
budget_epochs(uint64_t seed, unsigned char *kept_out)
{
	struct rv_shrink_conf c;
	struct rv_shrink *s;
	struct rv_shrink_stats st;
	struct rv_keep k[10];
	size_t i, j, n, kept, at = 0;
	uint32_t e;
	int ok = 1;

	rv_shrink_conf_init(&c);
	c.policy = RV_POLICY_UNIFORM;
	c.reweight = 1;
	c.budget = 0.3;
	c.window = 10;
	c.seed = seed;
	s = rv_shrink_new(&c, 1, 10);
	for (e = 5; e < 8; e++) {
		kept = 0;
		for (i = 0; i < 25; i++) {
			EXPECT_EQ(offer(s, i * 7 + e, e), 0);
			if (rv_shrink_pending(s) < 10 && i < 24)
				continue;
			n = rv_shrink_decide_window(s, k);
			EXPECT_EQ(n, i < 24 ? 10 : 5);
			EXPECT_EQ(rv_shrink_pending(s), 0);
			for (j = 0; j < n; j++) {
				kept += k[j].keep;
				kept_out[at++] = k[j].keep;
				if (e == 5)
					ok &= k[j].keep && k[j].p_keep == 1 &&
					    k[j].weight == 1;
				else
					ok &= k[j].p_keep == (n == 10 ?
					    0.3 : 0.4) && k[j].weight ==
					    (float)(1 / k[j].p_keep) &&
					    isnan(k[j].score);
			}
		}
		rv_shrink_stats(s, &st);
		EXPECT_EQ(st.seen, 25);
		EXPECT_EQ(st.kept, e == 5 ? 25 : 3 + 3 + 2);
		EXPECT_EQ(st.dropped, 25 - st.kept);
		EXPECT_EQ(st.warm, e > 5);
		rv_shrink_epoch_end(s);
	}
	EXPECT(ok);
	rv_shrink_stats(s, &st);
	EXPECT_EQ(st.total_seen, 75);
	EXPECT_EQ(st.total_kept, 25 + 8 + 8);
	EXPECT_EQ(rv_shrink_decide_window(s, k), 0);
	rv_shrink_free(s);
}

static void
t_budget_strata(void)
{
	static const struct {
		size_t n0, n1, k, k0, k1;
	} tab[] = {
		{ 3, 1, 2, 2, 0 }, { 1, 3, 2, 1, 1 }, { 0, 5, 3, 0, 3 },
		{ 5, 0, 3, 3, 0 }, { 0, 0, 3, 0, 0 }, { 2, 2, 9, 2, 2 },
		{ 86, 170, 128, 43, 85 }, { 85, 171, 128, 43, 85 },
		{ 87, 169, 128, 44, 84 }, { 84, 172, 128, 42, 86 },
		{ 1, 255, 128, 1, 127 }, { 255, 1, 128, 128, 0 },
		{ 7, 5, 12, 7, 5 }, { 65536, 65536, 65536, 32768, 32768 },
	};
	size_t i, n[2], ks[2];

	for (i = 0; i < sizeof(tab) / sizeof(tab[0]); i++) {
		n[0] = tab[i].n0;
		n[1] = tab[i].n1;
		rv_shrink_budget_strata(n, tab[i].k, ks);
		EXPECT_EQ(ks[0], tab[i].k0);
		EXPECT_EQ(ks[1], tab[i].k1);
	}
	/* every split of every window up to 40: the shares add up to k
	 * (or the window), fit their strata, and follow n_0 by +-1 */
	for (n[0] = 0; n[0] <= 40; n[0]++)
		for (n[1] = 0; n[0] + n[1] <= 40; n[1]++) {
			size_t k, w = n[0] + n[1];

			for (k = 0; k <= w + 1; k++) {
				double want = w ? (double)(k < w ? k : w) *
				    (double)n[0] / (double)w : 0;

				rv_shrink_budget_strata(n, k, ks);
				EXPECT(ks[0] <= n[0] && ks[1] <= n[1]);
				EXPECT_EQ(ks[0] + ks[1], k < w ? k : w);
				EXPECT(fabs((double)ks[0] - want) <= 0.5);
			}
		}
}

/*
 * Strata: windows of 24 samples, 8 or 10 of them cache hits (stratum 1),
 * at budget 0.5 keep exactly 12, of which 4 or 5 hits (their share), whatever the history policy's p; inside a
 * stratum a sample is kept with frequency pi_i, and pi_i follows p.  A
 * stratum of 2 is refused.
 */
static unsigned
hit_of(size_t id, size_t run)
{
	return id % 3 == 2 || ((run & 1) && (id == 1 || id == 4));
}

static void
t_budget_stratified(void)
{
	enum { W = 24, N = 4000 };
	struct rv_shrink_conf c;
	struct rv_shrink *s;
	struct rv_keep k[W];
	uint8_t px[SZ * SZ];
	size_t i, t, kept, hits, nh, cnt[W] = { 0 };
	double pi[W];
	int bad = 0, bad_pi = 0;

	rv_shrink_conf_init(&c);
	c.policy = RV_POLICY_HISTORY;
	c.floor = 0.05;
	c.reweight = 1;
	c.max_ids = 64;
	c.max_inflight = 64;	/* 20000 shrinkers: keep each small */
	c.budget = 0.5;
	c.window = W;
	for (t = 0; t < N; t++) {
		c.seed = t;
		s = rv_shrink_new(&c, 1, 10);
		/* ids 0..23 with gradient norms 1..24: p rises with the id */
		for (i = 0; i < W; i++)
			feedback(s, i, 0, 1, (double)(i + 1));
		image(0, px);
		for (i = 0; i < W; i++)
			EXPECT_EQ(rv_shrink_offer(s, i, 0, 0, 0, px, SZ, SZ,
			    1), 0);
		rv_shrink_decide_window(s, k);
		/* hits: every third id, and ids 1 and 4 in odd runs */
		nh = t & 1 ? 10 : 8;
		for (i = 0; i < W; i++)
			EXPECT_EQ(rv_shrink_offer(s, i, 1,
			    (int32_t)(i % 10), hit_of(i, t), px, SZ, SZ, 1),
			    0);
		EXPECT_EQ(rv_shrink_decide_window(s, k), W);
		kept = hits = 0;
		for (i = 0; i < W; i++) {
			int hit = hit_of(i, t);

			kept += k[i].keep;
			hits += k[i].keep && hit;
			if (t == 0)
				pi[i] = k[i].p_keep;
			if (!(t & 1)) {
				bad_pi += k[i].p_keep != pi[i];
				cnt[i] += k[i].keep;
			}
		}
		bad += kept != 12 || hits != (nh == 8 ? 4u : 5u);
		rv_shrink_free(s);
	}
	EXPECT_EQ(bad, 0);
	EXPECT_EQ(bad_pi, 0);
	/* even runs: the hits share 4 over 8 of them, the misses 8 over 16,
	 * in proportion to p (rising with the id) */
	for (i = 0; i < W; i++) {
		double f = (double)cnt[i] / (N / 2);

		EXPECT(fabs(f - pi[i]) < 0.04);
		if (i >= 3)
			EXPECT(pi[i] >= pi[i - 3]);
	}
	EXPECT(fabs(pi[2] + pi[5] + pi[8] + pi[11] + pi[14] + pi[17] +
	    pi[20] + pi[23] - 4) < 1e-9);
	EXPECT(pi[23] > pi[2]);
	s = rv_shrink_new(&c, 1, 10);
	EXPECT_EQ(rv_shrink_offer(s, 0, 0, 0, 2, px, SZ, SZ, 1), -1);
	EXPECT_STR(rv_errmsg(), "shrink: stratum 2: want 0 to 1");
	rv_shrink_free(s);
}

static void
t_budget_windows(void)
{
	unsigned char a[75], b[75];

	budget_epochs(3, a);
	budget_epochs(3, b);
	EXPECT(memcmp(a, b, sizeof(a)) == 0);
	budget_epochs(4, b);
	EXPECT(memcmp(a, b, sizeof(a)) != 0);
}

/*
 * The assistant under a budget: uniform k (p_keep k/w) while it has
 * learned fewer than min_feedback lines, whatever the feedback count at
 * the epoch's start; then its own ranking, still exactly k; feedback
 * for kept samples matches, for dropped ones not.
 */
static void
t_budget_assistant(void)
{
	struct rv_shrink_conf c;
	struct rv_shrink *s;
	struct rv_shrink_stats st;
	struct rv_keep k[20];
	size_t i, n, kept, easy;
	uint64_t id;
	uint32_t e;
	int ok = 1;

	rv_shrink_conf_init(&c);
	c.budget = 0.25;
	c.window = 20;
	c.min_feedback = 100;
	c.floor = 0;
	s = rv_shrink_new(&c, 1, 10);
	for (i = 0; i < 20; i++)
		offer(s, i, 0);
	EXPECT_EQ(rv_shrink_decide_window(s, k), 20);
	for (i = 0; i < 20; i++)
		ok &= k[i].keep && k[i].p_keep == 1 && !isnan(k[i].score);
	/* 20 lines: not enough; epoch 1 is uniform, 5 of 20 */
	for (i = 0; i < 20; i++)
		feedback(s, i, 0, 1, i % 10 ? 1 : 0.1);
	for (i = 0; i < 20; i++)
		offer(s, 100 + i, 1);
	rv_shrink_decide_window(s, k);
	kept = 0;
	for (i = 0; i < 20; i++) {
		ok &= k[i].p_keep == 0.25;
		kept += k[i].keep;
	}
	EXPECT_EQ(kept, 5);
	EXPECT(ok);
	rv_shrink_stats(s, &st);
	EXPECT_EQ(st.warm, 1);
	EXPECT_EQ(st.unmatched, 0);
	/* feedback of a dropped sample does not match, of a kept one does */
	for (i = 0; i < 20; i++)
		feedback(s, 100 + i, 1, 1, 1);
	rv_shrink_stats(s, &st);
	EXPECT_EQ(st.unmatched, 15);
	EXPECT_EQ(st.feedback, 25);

	/* learn that class 0 is easy (from the kept samples only), then
	 * rank: still 5 of every 20, class 0 (2 of them) kept less than half
	 * its share, 1 in 10, over the last 100 epochs */
	for (e = 2, easy = 0, kept = 0; e < 500; e++) {
		for (i = 0; i < 20; i++)
			offer(s, e * 20 + i, e);
		rv_shrink_decide_window(s, k);
		n = 0;
		for (i = 0, id = e * 20; i < 20; i++, id++) {
			n += k[i].keep;
			if (!k[i].keep)
				continue;
			if (e >= 400)
				easy += id % 10 == 0;
			feedback(s, id, e, 1, id % 10 ? 1 : 0.1);
		}
		kept += e >= 400 ? n : 0;
		ok &= n == 5;
	}
	printf("# assistant under a budget: %zu kept, %zu easy\n", kept, easy);
	EXPECT(ok);
	EXPECT_EQ(kept, 100 * 5);
	EXPECT(easy < kept / 10 / 2);
	rv_shrink_free(s);
}

static void
t_budget_errors(void)
{
	struct rv_shrink_conf c;
	struct rv_shrink *s;
	struct rv_keep k[4];

	rv_shrink_conf_init(&c);
	EXPECT(c.budget == 0 && c.window == 256);
	c.policy = RV_POLICY_UNIFORM;
	c.budget = 1.5;
	EXPECT(rv_shrink_new(&c, 1, 10) == NULL);
	EXPECT_STR(rv_errmsg(),
	    "shrink: budget 1.5: must be in (0, 1], or 0 for none");
	c.budget = -0.1;
	EXPECT(rv_shrink_new(&c, 1, 10) == NULL);
	c.budget = 0.5;
	c.window = 0;
	EXPECT(rv_shrink_new(&c, 1, 10) == NULL);
	EXPECT_STR(rv_errmsg(), "shrink: window 0: must be 1 to 65536");
	c.window = 65537;
	EXPECT(rv_shrink_new(&c, 1, 10) == NULL);
	EXPECT_STR(rv_errmsg(), "shrink: window 65537: must be 1 to 65536");
	c.window = 2;
	s = rv_shrink_new(&c, 1, 10);
	EXPECT_EQ(offer(s, 1, 3), 0);
	EXPECT_EQ(offer(s, 2, 4), -1);
	EXPECT_STR(rv_errmsg(),
	    "shrink: sample of epoch 4 offered to a window of epoch 3");
	EXPECT_EQ(offer(s, 2, 3), 0);
	EXPECT_EQ(offer(s, 3, 3), -1);
	EXPECT_STR(rv_errmsg(), "shrink: window of 2 samples full");
	EXPECT_EQ(rv_shrink_decide_window(s, k), 2);
	rv_shrink_free(s);
	c.budget = 0;
	s = rv_shrink_new(&c, 1, 10);
	EXPECT_EQ(offer(s, 1, 3), -1);
	EXPECT_STR(rv_errmsg(), "shrink: no budget: decide samples one by one");
	rv_shrink_free(s);
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

static struct rv_shrink *
make_aa(uint32_t h, uint32_t w, uint64_t seed)
{
	struct rv_shrink_conf c;

	rv_shrink_conf_init(&c);
	rv_shrink_conf_autoassist(&c);
	c.height = h;
	c.width = w;
	c.seed = seed;
	EXPECT(rv_aa_norm_default(1, c.assist.mean, c.assist.std) == 0);
	return rv_shrink_new(&c, 1, 10);
}

static void
t_autoassist(void)
{
	struct rv_shrink_conf c;
	struct rv_shrink *s = make_aa(SZ, SZ, 1);
	struct rv_shrink_stats st;
	struct rv_keep k;
	struct rv_fb_line l;
	uint8_t px[SZ * SZ + 1];
	size_t kept = 0, n = 4000, easy = 0, easy_kept = 0, i;
	uint64_t id, step = 0;
	uint32_t e;

	rv_shrink_conf_init(&c);
	rv_shrink_conf_autoassist(&c);
	EXPECT(c.assist.kind == RV_ASSIST_AUTOASSIST && c.assist.lr == 0.01 &&
	    c.assist.l2 == 1e-3 && c.min_feedback == 0 && c.hist_feat == 0 &&
	    c.assist.target == RV_TARGET_LOSS);
	/* no warm-up: p_keep 0.3 + 0.7 p from the first sample on */
	for (id = 0; id < n; id++) {
		EXPECT(decide(s, id, 0, &k) == 0);
		EXPECT(k.p_keep < 1 && fabs(k.p_keep - 0.65) < 0.03);
		EXPECT(fabs(k.score - 0.5) < 0.04);
		kept += (size_t)k.keep;
	}
	EXPECT(near((double)kept / (double)n, 0.65, n, 4));
	rv_shrink_stats(s, &st);
	EXPECT(st.warm == 1);
	/* another shape is an error, before anything else */
	EXPECT(rv_shrink_decide(s, 1, 0, 0, px, SZ, SZ + 1, 1, &k) == -1);
	EXPECT_STR(rv_errmsg(), "shrink: image is 9x8, not 8x8: the "
	    "autoassist assistant's features are the whole image");
	rv_shrink_free(s);

	/* a closed loop in which class 0 (flat grey) has a low loss: the
	 * easy samples come to be kept at about the floor, the others
	 * more; learned one trainer step of 32 lines at a time, at a
	 * learning rate that learns it in a few epochs (the published 0.01
	 * / 32 a line would take hundreds) */
	rv_shrink_conf_init(&c);
	rv_shrink_conf_autoassist(&c);
	c.height = c.width = SZ;
	c.seed = 2;
	c.assist.lr = 1;
	EXPECT(rv_aa_norm_default(1, c.assist.mean, c.assist.std) == 0);
	s = rv_shrink_new(&c, 1, 10);
	for (e = 0; e < 30; e++)
		for (id = 0; id < 1000; id++) {
			EXPECT(decide(s, id, e, &k) == 0);
			if (e == 29 && id % 10 == 0) {
				easy++;
				easy_kept += (size_t)k.keep;
			}
			if (!k.keep)
				continue;
			l.id = id;
			l.epoch = e;
			l.step = step++ / 32;
			l.loss = id % 10 == 0 ? 0.01f : 5;
			l.gradnorm = 1;
			rv_shrink_feedback(s, &l);
		}
	rv_shrink_stats(s, &st);
	printf("# autoassist: easy kept %.3f, auc %.3f pos %.3f\n",
	    (double)easy_kept / (double)easy, st.assist.auc,
	    st.assist.pos_rate);
	EXPECT((double)easy_kept / (double)easy < 0.4);
	EXPECT(st.assist.auc > 0.8);
	EXPECT(st.assist.seen > 0 && st.assist.seen <= st.feedback);
	rv_shrink_free(s);

	/* refused settings */
	rv_shrink_conf_init(&c);
	rv_shrink_conf_autoassist(&c);
	c.height = c.width = SZ;
	c.hist_feat = 1;
	EXPECT(rv_shrink_new(&c, 1, 10) == NULL);
	EXPECT_STR(rv_errmsg(), "shrink: the autoassist assistant has no "
	    "history features");
	c.hist_feat = 0;
	c.assist.target = RV_TARGET_GRADNORM;
	EXPECT(rv_shrink_new(&c, 1, 10) == NULL);
	EXPECT_STR(rv_errmsg(), "shrink: the autoassist assistant learns the "
	    "loss");
	c.assist.target = RV_TARGET_LOSS;
	c.width = 0;
	EXPECT(rv_shrink_new(&c, 1, 10) == NULL);
	EXPECT_STR(rv_errmsg(), "shrink: autoassist: 0x8x1 images: want 1 to "
	    "4294967295 values");
	/* under a budget the first epoch is budgeted too */
	c.width = SZ;
	c.budget = 0.5;
	c.window = 100;
	s = rv_shrink_new(&c, 1, 10);
	EXPECT(s != NULL);
	for (id = 0; id < 100; id++) {
		image(id, px);
		EXPECT(rv_shrink_offer(s, id, 0, 0, 0, px, SZ, SZ, 1) == 0);
	}
	{
		struct rv_keep out[100];

		EXPECT_EQ(rv_shrink_decide_window(s, out), 100);
		for (i = 0, kept = 0; i < 100; i++)
			kept += (size_t)out[i].keep;
		EXPECT_EQ(kept, 50);
	}
	rv_shrink_free(s);
}

/*
 * The counts given (rv-refurbish --score): each stratum keeps exactly its
 * ks, capped at its size, whatever the window's size; the first epoch
 * seen keeps all, and rv_shrink_keeps_all says so before and during it,
 * and not after.
 */
static void
t_budget_given(void)
{
	enum { W = 30 };
	struct rv_shrink_conf c;
	struct rv_shrink *s;
	struct rv_keep k[W];
	uint8_t px[SZ * SZ];
	size_t i, ks[2], kept[2], t;
	int bad = 0;

	rv_shrink_conf_init(&c);
	c.policy = RV_POLICY_UNIFORM;
	c.budget = 0.5;
	c.window = W;
	s = rv_shrink_new(&c, 1, 10);
	image(0, px);
	EXPECT(rv_shrink_keeps_all(s, 3));
	for (i = 0; i < W; i++)
		EXPECT_EQ(rv_shrink_offer(s, i, 3, 0, i % 3 == 0, px, SZ, SZ,
		    1), 0);
	EXPECT(rv_shrink_keeps_all(s, 3));
	ks[0] = 1;
	ks[1] = 1;
	EXPECT_EQ(rv_shrink_decide_window_ks(s, ks, k), W);
	for (i = 0; i < W; i++)
		bad += !k[i].keep;
	EXPECT_EQ(bad, 0);
	EXPECT(!rv_shrink_keeps_all(s, 4));
	for (t = 0; t < 200; t++) {
		size_t w = 3 + t % (W - 2);

		for (i = 0; i < w; i++)
			EXPECT_EQ(rv_shrink_offer(s, 100 * t + i, 4 + (uint32_t)t,
			    0, i % 3 == 0, px, SZ, SZ, 1), 0);
		ks[0] = t % 7;
		ks[1] = (t * 5) % 11;
		EXPECT_EQ(rv_shrink_decide_window_ks(s, ks, k), w);
		kept[0] = kept[1] = 0;
		for (i = 0; i < w; i++)
			kept[i % 3 == 0] += k[i].keep;
		/* stratum 1 holds ids i % 3 == 0: ceil(w / 3) of them */
		bad += kept[1] != (ks[1] < (w + 2) / 3 ? ks[1] : (w + 2) / 3);
		bad += kept[0] != (ks[0] < w - (w + 2) / 3 ? ks[0] :
		    w - (w + 2) / 3);
	}
	EXPECT_EQ(bad, 0);
	rv_shrink_free(s);
}

/*
 * 150000 samples of crafted ids (all kept in the first epoch: the
 * in-flight map fills and evicts) took 20 s under the old hash, 100000
 * feedback lines of crafted ids (the history map) 6.5 s; random ids
 * 0.15 s and 0.03 s.  Now both cost what random ids do: the bounds are
 * generous (shared machines, sanitizers).
 */
static void
t_flood(void)
{
	static const enum rv_policy pol[] = { RV_POLICY_ASSISTANT,
		RV_POLICY_HISTORY };
	struct rv_shrink *s;
	struct rv_shrink_stats st;
	struct rv_keep k;
	uint8_t px[SZ * SZ];
	double t0, td, tf;
	uint64_t i;
	int p;

	memset(px, 7, sizeof(px));
	for (i = 1; i <= 100; i++) {
		uint64_t x = crafted(i);

		x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
		x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
		EXPECT((x ^ (x >> 31)) == i << 21);
	}
	for (p = 0; p < 2; p++) {
		s = make(pol[p], 0.3);
		t0 = cpu_seconds();
		for (i = 1; i <= 150000; i++)
			rv_shrink_decide(s, crafted(i), 0, (int32_t)(i % 10),
			    px, SZ, SZ, 1, &k);
		td = cpu_seconds() - t0;
		t0 = cpu_seconds();
		for (i = 1; i <= 100000; i++)
			feedback(s, crafted(1000000 + i), 0, 1, 0.5);
		tf = cpu_seconds() - t0;
		rv_shrink_stats(s, &st);
		printf("# %s: 150000 crafted samples %.3f s, 100000 crafted "
		    "feedback lines %.3f s\n", p ? "history" : "assistant",
		    td, tf);
		EXPECT_EQ(st.total_kept, 150000);
		EXPECT(td < 2.0);
		EXPECT(tf < 2.0);
		rv_shrink_free(s);
	}
}

/*
 * rs2: each epoch a share k, no sample kept twice before every one is kept
 * once (after any number of epochs the counts differ by at most 1), the
 * same subsets for the same seed, others for another, k 1 keeping all,
 * and through rv_shrink_decide no warm-up and weight 1.
 */
static void
t_rs2(void)
{
	enum { N = 5000, E = 23 };
	static const double ks[] = { 0.3, 0.45, 0.1, 0.7, 1.0 / 3 };
	static unsigned cnt[N];
	struct rv_shrink_conf c;
	struct rv_shrink *s;
	struct rv_keep k;
	uint8_t px[SZ * SZ] = { 0 };
	unsigned lo, hi, kept, same, e, i, j;

	for (j = 0; j < sizeof(ks) / sizeof(ks[0]); j++) {
		memset(cnt, 0, sizeof(cnt));
		for (e = 0; e < E; e++) {
			kept = 0;
			for (i = 0; i < N; i++)
				if (rv_shrink_rs2_member(7, ks[j], i, e)) {
					cnt[i]++;
					kept++;
				}
			/* binomial: sd sqrt(N k (1 - k)) <= 36 */
			EXPECT(fabs(kept - N * ks[j]) < 200);
			lo = hi = cnt[0];
			for (i = 1; i < N; i++) {
				lo = cnt[i] < lo ? cnt[i] : lo;
				hi = cnt[i] > hi ? cnt[i] : hi;
			}
			EXPECT(hi - lo <= 1);
			EXPECT(lo == (unsigned)floor((e + 1) * ks[j]) ||
			    lo + 1 == (unsigned)ceil((e + 1) * ks[j]));
		}
	}
	/* k 1: every sample, every epoch */
	for (e = 0; e < 5; e++)
		for (i = 0; i < 100; i++)
			EXPECT(rv_shrink_rs2_member(1, 1, i, e));
	/* another seed, another subset; the same seed, the same one */
	same = 0;
	for (i = 0; i < N; i++) {
		same += rv_shrink_rs2_member(1, 0.5, i, 3) ==
		    rv_shrink_rs2_member(2, 0.5, i, 3);
		EXPECT(rv_shrink_rs2_member(1, 0.5, i, 3) ==
		    rv_shrink_rs2_member(1, 0.5, i, 3));
	}
	EXPECT(same > N / 2 - 250 && same < N / 2 + 250);

	/* the policy: the rule from the first sample, weight 1 */
	rv_shrink_conf_init(&c);
	c.policy = RV_POLICY_RS2;
	c.keep = 0.25;
	c.seed = 9;
	c.reweight = 1;
	s = rv_shrink_new(&c, 1, 10);
	EXPECT(s != NULL);
	kept = 0;
	for (i = 0; i < 1000; i++) {
		EXPECT(rv_shrink_decide(s, i, 0, 1, px, SZ, SZ, 1, &k) == 0);
		EXPECT(k.keep == rv_shrink_rs2_member(9, 0.25, i, 0));
		kept += (unsigned)k.keep;
		if (k.keep)
			EXPECT(k.weight == 1);
	}
	EXPECT(kept > 200 && kept < 300);
	rv_shrink_free(s);
	/* not with a budget */
	c.budget = 0.5;
	EXPECT(rv_shrink_new(&c, 1, 10) == NULL);
	EXPECT(strstr(rv_errmsg(), "rs2") != NULL);
}

/*
 * The noise cut's median counts each loss 1/p, p the probability its
 * sample was kept with: the median of the samples seen.  A policy that
 * keeps the high-loss samples always and the others a quarter of the
 * time gets back more high losses than low; their plain median is a high
 * loss, against which the mislabelled would never stand out.
 */
static void
t_noise_median(void)
{
	float v[5] = { 5, 1, 4, 2, 3 }, w3[5] = { 1, 1, 1, 1, 10 };
	float w1[5] = { 1, 10, 1, 1, 1 };
	struct rv_shrink_conf c;
	struct rv_shrink *s;
	struct rv_shrink_stats st;
	struct rv_keep k;
	uint64_t i;
	uint32_t e;
	unsigned kept_clean = 0, n_clean = 0;

	EXPECT(rv_shrink_weighted_median(v, NULL, 5) == 3);
	EXPECT(rv_shrink_weighted_median(v, NULL, 4) == 4);	/* upper */
	EXPECT(rv_shrink_weighted_median(v, w3, 5) == 3);
	EXPECT(rv_shrink_weighted_median(v, w1, 5) == 1);
	EXPECT(rv_shrink_weighted_median(v, NULL, 0) == 0);

	/* history, beta 8: the 30 % of high gradient norm (the
	 * mislabelled, loss 4) keep 1, the rest the floor, 0.25 */
	rv_shrink_conf_init(&c);
	c.policy = RV_POLICY_HISTORY;
	c.floor = 0.25;
	c.beta = 8;
	c.noise_cut = -1;	/* log 10 */
	c.noise_keep = 0.05;
	s = rv_shrink_new(&c, 1, 10);
	EXPECT(s != NULL);
	/* the first epoch: every loss near log 10, none suspect */
	for (i = 0; i < 4000; i++) {
		decide(s, i, 0, &k);
		feedback(s, i, 0, 2.4, i % 10 < 3 ? 1.4 : 0.2);
	}
	rv_shrink_epoch_end(s);
	/* then only the kept come back: 1,200 losses of 4 a pass against
	 * about 700 of 0.3 */
	for (e = 1; e <= 5; e++) {
		for (i = 0; i < 4000; i++) {
			decide(s, i, e, &k);
			if (e == 5 && i % 10 >= 3) {
				EXPECT(k.p_keep == 0.25);
				kept_clean += (unsigned)k.keep;
				n_clean++;
			}
			if (k.keep)
				feedback(s, i, e, i % 10 < 3 ? 4.0 : 0.3,
				    i % 10 < 3 ? 1.4 : 0.2);
		}
		rv_shrink_stats(s, &st);
		if (e < 5)
			rv_shrink_epoch_end(s);
	}
	/* the fifth epoch suspects every mislabelled sample, no other */
	EXPECT(st.suspects == 1200);
	EXPECT(near(kept_clean / (double)n_clean, 0.25, n_clean, 4));
	rv_shrink_free(s);
}

/*
 * The noise cut: after warm-up, an id whose last two losses were above the
 * cut and twice the median is kept with noise_keep and weight 1, the others by
 * their policy; losses all near log(classes) (a model's first steps) make
 * no suspect; a suspect's next loss below the cut clears it; the
 * assistant's too; auto is log(classes); refused for uniform and rs2.
 */
static void
t_noise_cut(void)
{
	struct rv_shrink_conf c;
	struct rv_shrink *s;
	struct rv_shrink_stats st;
	struct rv_keep k;
	uint64_t i, j;
	unsigned kept_sus = 0, kept_clean = 0;

	rv_shrink_conf_init(&c);
	c.policy = RV_POLICY_HISTORY;
	c.floor = 0.3;
	c.noise_cut = -1;	/* auto: log 10 = 2.30 */
	c.noise_keep = 0.1;
	c.reweight = 1;
	s = rv_shrink_new(&c, 1, 10);
	EXPECT(s != NULL);
	decide(s, 0, 0, &k);
	/* the first steps: every loss near log 10, none suspect */
	for (i = 0; i < 2000; i++)
		feedback(s, i, 0, 2.2 + 0.2 * (double)(i % 3), 1);
	for (i = 0; i < 2000; i++) {
		decide(s, i, 1, &k);
		EXPECT(k.p_keep >= 0.3);
	}
	rv_shrink_stats(s, &st);
	EXPECT(st.suspects == 0 && st.noise_cut > 2.30 && st.noise_cut < 2.31);
	rv_shrink_epoch_end(s);
	/* a model that has learnt: 30% of the ids confidently wrong; the
	 * median of the last 4096 comes down from 2.4 to 0.3 once the new
	 * losses are most of them: the third and fourth passes flag them, a
	 * streak of two */
	for (j = 0; j < 4; j++)
		for (i = 0; i < 2000; i++)
			feedback(s, i, 1, i % 10 < 3 ? 4.0 : 0.3,
			    i % 10 < 3 ? 1.4 : 0.2);
	for (i = 0; i < 2000; i++) {
		decide(s, i, 2, &k);
		if (i % 10 < 3) {
			EXPECT(k.p_keep == 0.1);
			kept_sus += (unsigned)k.keep;
			if (k.keep)
				EXPECT(k.weight == 1);
		} else {
			EXPECT(k.p_keep >= 0.3);
			kept_clean += (unsigned)k.keep;
		}
	}
	EXPECT(near(kept_sus / 600.0, 0.1, 600, 4));
	EXPECT(kept_clean > 400);
	rv_shrink_stats(s, &st);
	EXPECT(st.suspects == 600);
	/* a suspect whose next loss is low is one no more */
	feedback(s, 5, 2, 0.2, 0.1);
	decide(s, 5, 3, &k);
	EXPECT(k.p_keep >= 0.3);
	rv_shrink_free(s);

	/* the assistant, the cut given, a streak of one */
	rv_shrink_conf_init(&c);
	EXPECT(c.noise_streak == 2);
	c.noise_cut = 3;
	c.noise_keep = 0;
	c.noise_streak = 1;
	c.min_feedback = 10;
	s = rv_shrink_new(&c, 1, 10);
	EXPECT(s != NULL);
	for (i = 0; i < 200; i++)
		decide(s, i, 0, &k);
	/* id 0's loss is the first: there is no median to hold it against */
	for (i = 0; i < 200; i++)
		feedback(s, i, 0, i % 4 == 0 ? 3.5 : 0.5, 1);
	for (i = 1; i < 200; i++) {
		decide(s, i, 1, &k);
		EXPECT(i % 4 == 0 ? k.p_keep == 0 && !k.keep :
		    k.p_keep >= 0.3);
	}
	rv_shrink_free(s);

	/* the default streak of two: one suspect loss is not enough, a
	 * loss that is not suspect ends a streak */
	rv_shrink_conf_init(&c);
	c.policy = RV_POLICY_HISTORY;
	c.noise_cut = 2;
	s = rv_shrink_new(&c, 1, 10);
	EXPECT(s != NULL);
	decide(s, 0, 0, &k);
	for (i = 0; i < 300; i++)
		feedback(s, i, 0, 0.3, 1);
	/* one suspect loss: on probation, kept for its next loss (its
	 * gradnorm, the lowest, would give it the floor) */
	feedback(s, 7, 0, 5, 0.1);
	decide(s, 7, 1, &k);
	EXPECT(k.p_keep == 1 && k.keep);
	feedback(s, 7, 1, 0.2, 0.1);
	decide(s, 7, 1, &k);
	EXPECT(k.p_keep == 0.3);
	feedback(s, 7, 1, 5, 0.1);
	decide(s, 7, 2, &k);
	EXPECT(k.p_keep == 1);
	feedback(s, 7, 2, 6, 0.1);
	decide(s, 7, 3, &k);
	EXPECT(k.p_keep == 0.05);
	rv_shrink_free(s);

	/* not for uniform or rs2; auto needs classes */
	rv_shrink_conf_init(&c);
	c.noise_cut = -1;
	c.policy = RV_POLICY_UNIFORM;
	EXPECT(rv_shrink_new(&c, 1, 10) == NULL);
	c.policy = RV_POLICY_RS2;
	EXPECT(rv_shrink_new(&c, 1, 10) == NULL);
	c.policy = RV_POLICY_HISTORY;
	EXPECT(rv_shrink_new(&c, 1, 0) == NULL);
	EXPECT(strstr(rv_errmsg(), "log(classes)") != NULL);
	c.noise_keep = 1.5;
	c.noise_cut = 2;
	EXPECT(rv_shrink_new(&c, 1, 10) == NULL);
	c.noise_keep = 0.5;
	c.noise_streak = 0;
	EXPECT(rv_shrink_new(&c, 1, 10) == NULL);
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
	RUN(t_rs2);
	RUN(t_noise_cut);
	RUN(t_noise_median);
	RUN(t_determinism);
	RUN(t_errors);
	RUN(t_budget_k);
	RUN(t_budget_count);
	RUN(t_meta_kept);
	RUN(t_budget_exact);
	RUN(t_budget_freq);
	RUN(t_budget_seeds);
	RUN(t_budget_strata);
	RUN(t_budget_stratified);
	RUN(t_budget_windows);
	RUN(t_budget_given);
	RUN(t_budget_assistant);
	RUN(t_budget_errors);
	RUN(t_autoassist);
	RUN(t_flood);
	RUN(t_cost);
	return UNIT_DONE();
}
