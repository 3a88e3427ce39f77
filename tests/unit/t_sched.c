/*
 * The refurbishing schedule: init errors, chunk sizes, every position once
 * per epoch, misses spread evenly over every group and window of B,
 * fresh/refresh/uses agreeing with a step-by-step simulation (r uses in
 * steady state), and orders that depend on the seed and epoch only.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "refurb/sched.h"
#include "unit.h"

struct cfg {
	uint64_t n;
	uint32_t r, b;
};

/* N not divisible by r or B, r = 1, r = N, B = 1, B > N, N = 1. */
static const struct cfg cfgs[] = {
	{ 10, 3, 4 }, { 1000, 7, 32 }, { 1001, 10, 64 }, { 97, 1, 8 },
	{ 50, 50, 7 }, { 37, 5, 1 }, { 20, 4, 100 }, { 1, 1, 1 },
	{ 2, 2, 1 }, { 12345, 13, 256 }, { 64, 8, 64 }, { 3, 2, 2 },
};
#define NCFG (sizeof(cfgs) / sizeof(cfgs[0]))

static void
t_init_errors(void)
{
	struct rv_sched s;

	EXPECT_EQ(rv_sched_init(&s, 1, 0, 1, 1), -1);
	EXPECT_STR(rv_errmsg(), "no samples");
	EXPECT(s.chunk == NULL);
	rv_sched_release(&s);
	EXPECT_EQ(rv_sched_init(&s, 1, 10, 0, 1), -1);
	EXPECT_STR(rv_errmsg(), "reuse 0: must be at least 1");
	EXPECT_EQ(rv_sched_init(&s, 1, 10, 11, 1), -1);
	EXPECT_STR(rv_errmsg(), "reuse 11: more than the 10 samples");
	EXPECT_EQ(rv_sched_init(&s, 1, 10, 2, 0), -1);
	EXPECT_STR(rv_errmsg(), "batch 0: must be at least 1");
	rv_sched_release(&s);

	EXPECT_EQ(rv_sched_init(&s, 1, 10, 10, 1000), 0);
	EXPECT_EQ(s.n, 10);
	EXPECT_EQ(s.reuse, 10);
	EXPECT_EQ(s.batch, 1000);
	rv_sched_release(&s);
	EXPECT(s.chunk == NULL);
	rv_sched_release(&s);
}

/* Chunks partition the positions into r sizes floor or ceil of N/r. */
static void
t_chunks(void)
{
	size_t c;

	for (c = 0; c < NCFG; c++) {
		struct rv_sched s;
		uint64_t *cnt, pos, total = 0;
		uint32_t k, r = cfgs[c].r;

		EXPECT_EQ(rv_sched_init(&s, 7, cfgs[c].n, r, cfgs[c].b), 0);
		cnt = calloc(r, sizeof(*cnt));
		for (pos = 0; pos < s.n; pos++) {
			EXPECT(s.chunk[pos] < r);
			cnt[s.chunk[pos]]++;
		}
		EXPECT_EQ(rv_sched_misses(&s, 0), s.n);
		for (k = 0; k < r; k++) {
			EXPECT(cnt[k] == s.n / r || cnt[k] == s.n / r + 1);
			total += cnt[k];
			if (r > 1) {
				EXPECT_EQ(rv_sched_misses(&s, k + 1), cnt[k]);
				EXPECT_EQ(rv_sched_misses(&s, k + 1 + r),
				    cnt[k]);
			} else {
				EXPECT_EQ(rv_sched_misses(&s, k + 1), s.n);
			}
		}
		EXPECT_EQ(total, s.n);
		free(cnt);
		rv_sched_release(&s);
	}
}

/* Misses in out[lo..lo+len) must be floor or ceil of len*m/n. */
static int
spread_ok(uint64_t cnt, uint64_t len, uint64_t m, uint64_t n)
{
	uint64_t lo = len * m / n;
	uint64_t hi = lo + (len * m % n != 0);

	return cnt >= lo && cnt <= hi;
}

/*
 * Every position once; the misses in order are those fresh() names, as
 * many as misses() says, spread within floor/ceil over every aligned
 * group of B.  The dealt order (batch 1: no shuffle inside groups) holds
 * floor/ceil of B m/N misses in every window of B, aligned or not; after
 * the in-group shuffle only aligned groups keep that.
 */
static void
t_order(void)
{
	size_t c;

	for (c = 0; c < NCFG; c++) {
		struct rv_sched s, s1;
		uint64_t n = cfgs[c].n, b = cfgs[c].b;
		uint64_t *out = malloc(n * sizeof(*out));
		uint64_t *dealt = malloc(n * sizeof(*dealt));
		unsigned char *seen = malloc(n), *miss = malloc(n);
		uint32_t e, epochs = 2 * cfgs[c].r + 2;
		int bad_perm = 0, bad_group = 0, bad_window = 0;

		if (epochs > 24)
			epochs = 24;
		EXPECT_EQ(rv_sched_init(&s, 42, n, cfgs[c].r, cfgs[c].b), 0);
		EXPECT_EQ(rv_sched_init(&s1, 42, n, cfgs[c].r, 1), 0);
		for (e = 0; e < epochs; e++) {
			uint64_t i, m = 0, w, lo, win;

			rv_sched_order(&s, e, out);
			memset(seen, 0, n);
			for (i = 0; i < n; i++) {
				if (out[i] >= n || seen[out[i]])
					bad_perm++;
				else
					seen[out[i]] = 1;
				miss[i] = (unsigned char)rv_sched_fresh(&s,
				    out[i], e);
				m += miss[i];
			}
			EXPECT_EQ(m, rv_sched_misses(&s, e));
			for (lo = 0; lo < n; lo += b) {
				uint64_t len = n - lo < b ? n - lo : b;
				for (w = 0, i = lo; i < lo + len; i++)
					w += miss[i];
				if (!spread_ok(w, len, m, n))
					bad_group++;
			}
			rv_sched_order(&s1, e, dealt);
			for (i = 0; i < n; i++)
				miss[i] = (unsigned char)rv_sched_fresh(&s1,
				    dealt[i], e);
			win = b < n ? b : n;
			for (w = 0, i = 0; i < n; i++) {
				w += miss[i];
				if (i >= win)
					w -= miss[i - win];
				if (i + 1 >= win && !spread_ok(w, win, m, n))
					bad_window++;
			}
		}
		if (bad_perm || bad_group || bad_window)
			printf("# n %llu r %u b %u: perm %d group %d "
			    "window %d\n", (unsigned long long)n, cfgs[c].r,
			    cfgs[c].b, bad_perm, bad_group, bad_window);
		EXPECT_EQ(bad_perm, 0);
		EXPECT_EQ(bad_group, 0);
		EXPECT_EQ(bad_window, 0);
		rv_sched_release(&s);
		rv_sched_release(&s1);
		free(out);
		free(dealt);
		free(seen);
		free(miss);
	}
}

/*
 * The group shuffle only permutes inside aligned groups: an order with
 * batch B holds, group by group, the same positions as the batch-1 order
 * (the deal does not depend on B), and is not the same sequence.
 */
static void
t_group_shuffle(void)
{
	struct rv_sched s1, sb;
	uint64_t n = 1000, b = 100, i, lo;
	uint64_t *o1 = malloc(n * sizeof(*o1)), *ob = malloc(n * sizeof(*ob));
	unsigned char *in = calloc(n, 1);
	uint32_t e;
	int same_seq = 1, bad = 0;

	EXPECT_EQ(rv_sched_init(&s1, 5, n, 10, 1), 0);
	EXPECT_EQ(rv_sched_init(&sb, 5, n, 10, (uint32_t)b), 0);
	EXPECT(memcmp(s1.chunk, sb.chunk, n * sizeof(*s1.chunk)) == 0);
	for (e = 0; e < 12; e++) {
		rv_sched_order(&s1, e, o1);
		rv_sched_order(&sb, e, ob);
		if (memcmp(o1, ob, n * sizeof(*o1)) != 0)
			same_seq = 0;
		for (lo = 0; lo < n; lo += b) {
			for (i = lo; i < lo + b; i++)
				in[o1[i]] = 1;
			for (i = lo; i < lo + b; i++) {
				if (!in[ob[i]])
					bad++;
				in[ob[i]] = 0;
			}
		}
	}
	EXPECT_EQ(bad, 0);
	EXPECT(!same_seq);
	rv_sched_release(&s1);
	rv_sched_release(&sb);
	free(o1);
	free(ob);
	free(in);
}

/*
 * Walk every position through E epochs: fresh() agrees with the chunk
 * rule, refresh() and uses() with the walk, the fresh partials total N plus
 * the chunk sizes, and a partial refreshed in epoch >= 1 is served exactly
 * r times (one refreshed in epoch 0, chunk c + 1 times).
 */
static void
t_uses(void)
{
	size_t c;

	for (c = 0; c < NCFG; c++) {
		struct rv_sched s;
		uint64_t n = cfgs[c].n, pos, fresh_total = 0, planned = 0;
		uint32_t r = cfgs[c].r, e, E = 3 * r + 2;
		int bad = 0, bad_steady = 0, bad_first = 0, steady_seen = 0;

		EXPECT_EQ(rv_sched_init(&s, 9, n, r, cfgs[c].b), 0);
		for (e = 0; e < E; e++)
			planned += rv_sched_misses(&s, e);
		for (pos = 0; pos < n; pos++) {
			uint32_t last = 0, served = 0;
			for (e = 0; e < E; e++) {
				int f = rv_sched_fresh(&s, pos, e);
				int want = e == 0 || r == 1 ||
				    s.chunk[pos] == (e - 1) % r;
				if (f != want)
					bad++;
				if (f && e > 0) {
					/* the old partial's run ends */
					if (last > 0) {
						steady_seen = 1;
						if (served != r)
							bad_steady++;
					} else if (served !=
					    (r == 1 ? 1 : s.chunk[pos] + 1)) {
						bad_first++;
					}
				}
				if (f) {
					fresh_total++;
					last = e;
					served = 0;
				}
				served++;
				if (rv_sched_refresh(&s, pos, e) != last ||
				    rv_sched_uses(&s, pos, e) != e - last + 1 ||
				    rv_sched_uses(&s, pos, e) != served ||
				    served > r)
					bad++;
			}
		}
		if (bad || bad_steady || bad_first)
			printf("# n %llu r %u: bad %d steady %d first %d\n",
			    (unsigned long long)n, r, bad, bad_steady,
			    bad_first);
		EXPECT_EQ(bad, 0);
		EXPECT_EQ(bad_steady, 0);
		EXPECT_EQ(bad_first, 0);
		EXPECT(steady_seen);
		EXPECT_EQ(fresh_total, planned);
		/* N + (E-1) N/r, each chunk within 1 of N/r */
		EXPECT(fresh_total * r + (uint64_t)(E - 1) * r >=
		    n * r + (uint64_t)(E - 1) * n);
		EXPECT(fresh_total * r <= n * r + (uint64_t)(E - 1) * n +
		    (uint64_t)(E - 1) * r);
		rv_sched_release(&s);
	}
}

/* refresh() is arithmetic: far epochs agree with the chunk rule. */
static void
t_refresh_far(void)
{
	static const uint32_t es[] = { 1000000, 4000000000u, 0xFFFFFFFFu };
	struct rv_sched s;
	uint64_t pos;
	size_t i;
	int bad = 0;

	EXPECT_EQ(rv_sched_init(&s, 3, 500, 7, 16), 0);
	for (pos = 0; pos < s.n; pos++) {
		for (i = 0; i < sizeof(es) / sizeof(es[0]); i++) {
			uint32_t e = es[i], f = rv_sched_refresh(&s, pos, e);
			if (f > e || f < 1 || e - f >= 7 ||
			    !rv_sched_fresh(&s, pos, f) ||
			    (rv_sched_fresh(&s, pos, e) && f != e) ||
			    rv_sched_uses(&s, pos, e) != e - f + 1)
				bad++;
		}
	}
	EXPECT_EQ(bad, 0);
	rv_sched_release(&s);

	EXPECT_EQ(rv_sched_init(&s, 3, 5, 1, 2), 0);
	EXPECT_EQ(rv_sched_refresh(&s, 4, 123456), 123456);
	EXPECT_EQ(rv_sched_uses(&s, 4, 123456), 1);
	EXPECT(rv_sched_fresh(&s, 4, 123456));
	rv_sched_release(&s);
}

/*
 * Orders depend on (seed, N, r, B, epoch) only: the same for a second
 * plan and in any call order, different for another seed or epoch.
 */
static void
t_determinism(void)
{
	struct rv_sched a, b, c;
	uint64_t n = 1000;
	uint64_t *oa = malloc(n * sizeof(*oa)), *ob = malloc(n * sizeof(*ob));
	uint32_t e;

	EXPECT_EQ(rv_sched_init(&a, 11, n, 4, 32), 0);
	EXPECT_EQ(rv_sched_init(&b, 11, n, 4, 32), 0);
	EXPECT_EQ(rv_sched_init(&c, 12, n, 4, 32), 0);
	EXPECT(memcmp(a.chunk, b.chunk, n * sizeof(*a.chunk)) == 0);
	EXPECT(memcmp(a.chunk, c.chunk, n * sizeof(*a.chunk)) != 0);

	rv_sched_order(&b, 7, ob);	/* b plans epoch 7 first */
	for (e = 0; e < 10; e++) {
		rv_sched_order(&a, e, oa);
		if (e == 7)
			EXPECT(memcmp(oa, ob, n * sizeof(*oa)) == 0);
	}
	rv_sched_order(&b, 7, ob);
	rv_sched_order(&a, 7, oa);
	EXPECT(memcmp(oa, ob, n * sizeof(*oa)) == 0);
	rv_sched_order(&c, 7, ob);
	EXPECT(memcmp(oa, ob, n * sizeof(*oa)) != 0);
	rv_sched_order(&a, 3, ob);	/* same chunk evicted, other epoch */
	EXPECT(memcmp(oa, ob, n * sizeof(*oa)) != 0);

	rv_sched_release(&a);
	rv_sched_release(&b);
	rv_sched_release(&c);
	free(oa);
	free(ob);
}

/*
 * Pin one small plan: rv-refurbish's output order depends on it, so a
 * change to the draws shows up here first.
 */
static void
t_pinned(void)
{
	static const uint64_t want[10] = { 4, 6, 2, 7, 5, 9, 1, 8, 0, 3 };
	struct rv_sched s;
	uint64_t out[10];
	int i;

	EXPECT_EQ(rv_sched_init(&s, 1, 10, 3, 4), 0);
	rv_sched_order(&s, 1, out);
	printf("# seed 1 n 10 r 3 b 4 epoch 1:");
	for (i = 0; i < 10; i++)
		printf(" %llu", (unsigned long long)out[i]);
	printf("\n");
	for (i = 0; i < 10; i++)
		EXPECT_EQ(out[i], want[i]);
	rv_sched_release(&s);
}

/* A size like the real ones (N ~ 10^5..10^6) stays a permutation. */
static void
t_large(void)
{
	struct rv_sched s;
	uint64_t n = 200003, i, lo, m;
	uint64_t *out = malloc(n * sizeof(*out));
	unsigned char *seen = calloc(n, 1);
	int bad = 0;

	EXPECT_EQ(rv_sched_init(&s, 77, n, 20, 256), 0);
	rv_sched_order(&s, 21, out);
	m = rv_sched_misses(&s, 21);
	EXPECT(m == n / 20 || m == n / 20 + 1);
	for (i = 0; i < n; i++) {
		if (out[i] >= n || seen[out[i]])
			bad++;
		else
			seen[out[i]] = 1;
	}
	for (lo = 0; lo < n; lo += 256) {
		uint64_t len = n - lo < 256 ? n - lo : 256, w = 0;
		for (i = lo; i < lo + len; i++)
			w += (uint64_t)rv_sched_fresh(&s, out[i], 21);
		if (!spread_ok(w, len, m, n))
			bad++;
	}
	EXPECT_EQ(bad, 0);
	rv_sched_release(&s);
	free(out);
	free(seen);
}

/*
 * rv_sched_deal: misses given by a bitmap (rv-refurbish --score's due
 * samples) are dealt like the schedule's: every position once, and every
 * window of w consecutive outputs, aligned or not, holds floor or ceil of
 * w m / N; with the schedule's own misses it is rv_sched_order at B = 1.
 */
static void
t_deal(void)
{
	struct rv_sched s, s1;
	uint64_t n = 1009, i, lo, m = 0, w;
	uint64_t *out = malloc(n * sizeof(*out));
	uint64_t *ref = malloc(n * sizeof(*ref));
	unsigned char *miss = malloc(n), *seen = calloc(n, 1);
	int bad = 0;

	EXPECT_EQ(rv_sched_init(&s, 5, n, 4, 32), 0);
	for (i = 0; i < n; i++) {
		miss[i] = (i * 7919 % 13) < 4;
		m += miss[i];
	}
	rv_sched_deal(&s, 9, miss, out);
	for (i = 0; i < n; i++) {
		if (out[i] >= n || seen[out[i]])
			bad++;
		else
			seen[out[i]] = 1;
	}
	for (w = 1; w <= 300; w += 37)
		for (lo = 0; lo + w <= n; lo++) {
			uint64_t c = 0;
			for (i = lo; i < lo + w; i++)
				c += miss[out[i]];
			if (!spread_ok(c, w, m, n))
				bad++;
		}
	EXPECT_EQ(bad, 0);
	EXPECT_EQ(rv_sched_init(&s1, 5, n, 4, 1), 0);
	for (i = 0; i < n; i++)
		miss[i] = (unsigned char)rv_sched_fresh(&s1, i, 6);
	rv_sched_deal(&s1, 6, miss, out);
	rv_sched_order(&s1, 6, ref);
	EXPECT(memcmp(out, ref, n * sizeof(*out)) == 0);
	rv_sched_release(&s);
	rv_sched_release(&s1);
	free(out);
	free(ref);
	free(miss);
	free(seen);
}

int
main(void)
{
	RUN(t_init_errors);
	RUN(t_chunks);
	RUN(t_order);
	RUN(t_group_shuffle);
	RUN(t_uses);
	RUN(t_refresh_far);
	RUN(t_determinism);
	RUN(t_pinned);
	RUN(t_large);
	RUN(t_deal);
	return UNIT_DONE();
}
