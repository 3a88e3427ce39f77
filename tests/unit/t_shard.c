/*
 * Sharding: the contiguous shares cover [0, N) exactly once and differ by
 * at most one sample, at any N and n (up to 2^64 - 1: no overflow); the
 * segments of a file order are those shares cut at the files' edges; the
 * rank from the environment, with every launcher's variables and errors.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "src/shard.h"
#include "unit.h"

static void
t_range(void)
{
	static const uint64_t totals[] = { 0, 1, 2, 7, 200, 1000003,
	    UINT64_MAX - 1, UINT64_MAX };
	static const uint32_t ns[] = { 1, 2, 3, 7, 64, 1000, UINT32_MAX };
	size_t a, b;

	for (a = 0; a < sizeof(totals) / sizeof(totals[0]); a++)
		for (b = 0; b < sizeof(ns) / sizeof(ns[0]); b++) {
			uint64_t t = totals[a], prev = 0, lo, hi;
			uint32_t n = ns[b], r, step = n > 5000 ? n / 1000 : 1;
			uint64_t q = t / n;

			for (r = 0; r < n; r += step) {
				rv_shard_range(t, r, n, &lo, &hi);
				if (step == 1)
					EXPECT_EQ(lo, prev);
				EXPECT(hi >= lo);
				EXPECT(hi - lo == q || hi - lo == q + 1);
				prev = hi;
				if (r > UINT32_MAX - step)
					break;
			}
			rv_shard_range(t, n - 1, n, &lo, &hi);
			EXPECT(hi == t);
			rv_shard_range(t, 0, n, &lo, &hi);
			EXPECT_EQ(lo, 0);
		}
}

static void
t_segments(void)
{
	/* files of 10, 20, 30, 25 samples; order 2, 0, 3, 1 */
	static const uint64_t count[] = { 10, 20, 30, 25 };
	static const uint64_t order[] = { 2, 0, 3, 1 };
	struct rv_shard_seg seg[4];
	uint64_t covered[85] = { 0 }, total = 0;
	uint32_t r, n = 3;
	size_t k, i, ns;

	/* 85 samples: 28, 28, 29 */
	ns = rv_shard_segments(count, order, 4, 0, n, seg);
	EXPECT_EQ(ns, 1);
	EXPECT_EQ(seg[0].src, 2);
	EXPECT_EQ(seg[0].first, 0);
	EXPECT_EQ(seg[0].n, 28);
	ns = rv_shard_segments(count, order, 4, 1, n, seg);
	EXPECT_EQ(ns, 3);
	EXPECT_EQ(seg[0].src, 2);
	EXPECT_EQ(seg[0].first, 28);
	EXPECT_EQ(seg[0].n, 2);
	EXPECT_EQ(seg[1].src, 0);
	EXPECT_EQ(seg[1].n, 10);
	EXPECT_EQ(seg[2].src, 3);
	EXPECT_EQ(seg[2].first, 0);
	EXPECT_EQ(seg[2].n, 16);
	/* every sample of every file once, over the ranks */
	for (r = 0; r < n; r++) {
		ns = rv_shard_segments(count, order, 4, r, n, seg);
		for (k = 0; k < ns; k++)
			for (i = 0; i < seg[k].n; i++) {
				uint64_t base = 0;
				size_t f;
				for (f = 0; f < seg[k].src; f++)
					base += count[f];
				covered[base + seg[k].first + i]++;
				total++;
			}
	}
	EXPECT_EQ(total, 85);
	for (i = 0; i < 85; i++)
		EXPECT_EQ(covered[i], 1);
	/* more ranks than samples: some ranks get nothing */
	ns = rv_shard_segments(count, order, 1, 50, 100, seg);
	EXPECT_EQ(ns, 0);
}

static void
env_clear(void)
{
	static const char *const v[] = { "RANK", "WORLD_SIZE", "SLURM_PROCID",
	    "SLURM_NTASKS", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
	    "PMI_RANK", "PMI_SIZE" };
	size_t k;

	for (k = 0; k < sizeof(v) / sizeof(v[0]); k++)
		unsetenv(v[k]);
}

static void
t_env(void)
{
	uint32_t i = 9, n = 9;
	const char *from = "x";

	env_clear();
	EXPECT_EQ(rv_shard_from_env(&i, &n, &from), 0);
	EXPECT(i == 0 && n == 1 && from == NULL);
	setenv("SLURM_PROCID", "3", 1);
	setenv("SLURM_NTASKS", "4", 1);
	EXPECT_EQ(rv_shard_from_env(&i, &n, &from), 0);
	EXPECT(i == 3 && n == 4);
	EXPECT_STR(from, "SLURM_PROCID/SLURM_NTASKS");
	setenv("RANK", "1", 1);
	setenv("WORLD_SIZE", "2", 1);
	EXPECT_EQ(rv_shard_from_env(&i, &n, &from), 0);
	EXPECT(i == 1 && n == 2);
	EXPECT_STR(from, "RANK/WORLD_SIZE");
	unsetenv("WORLD_SIZE");
	EXPECT_EQ(rv_shard_from_env(&i, &n, &from), -1);
	EXPECT_STR(rv_errmsg(), "RANK is set but not WORLD_SIZE");
	env_clear();
	setenv("PMI_RANK", "5", 1);
	setenv("PMI_SIZE", "5", 1);
	EXPECT_EQ(rv_shard_from_env(&i, &n, &from), -1);
	EXPECT_STR(rv_errmsg(), "PMI_RANK=5 is not below PMI_SIZE=5");
	setenv("PMI_SIZE", "0", 1);
	EXPECT_EQ(rv_shard_from_env(&i, &n, &from), -1);
	EXPECT_STR(rv_errmsg(), "PMI_SIZE='0': not a world size");
	env_clear();
	setenv("OMPI_COMM_WORLD_RANK", "-1", 1);
	setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
	EXPECT_EQ(rv_shard_from_env(&i, &n, &from), -1);
	EXPECT_STR(rv_errmsg(), "OMPI_COMM_WORLD_RANK='-1': not a rank");
	env_clear();
}

/* The positions a stopped job served: each rank's first k of its share,
 * in its order; cut by --even drop; the same for the same seed. */
static void
t_served(void)
{
	static const uint64_t k0[] = { 2, 3 }, k1[] = { 5, 9 }, k2[] = { 4, 4 };
	unsigned char s[10], t[10];
	size_t i, in0 = 0, in1 = 0;

	/* shares [0,5) and [5,10), in order */
	EXPECT_EQ(rv_shard_served(10, 2, k0, UINT64_MAX, 1, 0, 0, s), 5);
	for (i = 0; i < 10; i++)
		EXPECT_EQ(s[i], i < 2 || (i >= 5 && i < 8));
	/* past a share (padding) serves nothing more; drop cuts at 4 */
	EXPECT_EQ(rv_shard_served(10, 2, k1, UINT64_MAX, 1, 0, 0, s), 10);
	/* drop: what each rank left out of the epoch stays out of it */
	EXPECT_EQ(rv_shard_served(10, 2, k1, 4, 1, 0, 0, s), 10);
	EXPECT(s[4] && s[9] && s[3] && s[8]);
	EXPECT_EQ(rv_shard_served(10, 2, k0, 4, 1, 0, 0, s), 7);
	EXPECT(s[0] && s[1] && !s[2] && !s[3] && s[4] && s[5] && !s[8]);
	/* shuffled: k of each share, not the first k; the same again */
	EXPECT_EQ(rv_shard_served(10, 2, k2, UINT64_MAX, 7, 3, 1, s), 8);
	for (i = 0; i < 10; i++) {
		in0 += i < 5 && s[i];
		in1 += i >= 5 && s[i];
	}
	EXPECT_EQ(in0, 4);
	EXPECT_EQ(in1, 4);
	rv_shard_served(10, 2, k2, UINT64_MAX, 7, 3, 1, t);
	EXPECT(memcmp(s, t, 10) == 0);
}

int
main(void)
{
	rv_setprogname("t_shard");
	RUN(t_range);
	RUN(t_segments);
	RUN(t_served);
	RUN(t_env);
	return UNIT_DONE();
}
