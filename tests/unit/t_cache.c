/*
 * The refurbishing cache: pack/unpack round trips, the memory budget under
 * many puts and replacements, spill to disk and the bytes that come back,
 * coalesced reads (k neighbours, one pread), buffered writes, drops,
 * compaction, a disk file that never outlives the cache, and errors.
 */
#include <dirent.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/err.h"
#include "refurb/cache.h"
#include "unit.h"

static uint64_t
mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	return x ^ (x >> 33);
}

/* n bytes that depend only on (key, i): what a position should hold. */
static void
fill(unsigned char *p, size_t n, uint64_t key)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (unsigned char)mix(key * 1000003 + i);
}

/* An entry of n bytes from key (the cache never looks inside). */
static void
make_entry(struct rv_cache_entry *e, size_t n, uint64_t key)
{
	e->h = (uint32_t)(key % 7) + 1;
	e->w = 3;
	e->c = (key & 1) ? 3 : 1;
	e->data.len = 0;
	rv_buf_reserve(&e->data, n);
	fill(e->data.data, n, key);
	e->data.len = n;
}

static int
ref_is(const struct rv_cache_ref *r, size_t n, uint64_t key)
{
	static unsigned char want[4 << 20];

	if (r->n != n || n > sizeof(want))
		return 0;
	fill(want, n, key);
	return r->h == (uint32_t)(key % 7) + 1 && r->w == 3 &&
	    r->c == ((key & 1) ? 3u : 1u) && memcmp(r->p, want, n) == 0;
}

static char *
tmpdir(void)
{
	const char *t = getenv("TMPDIR");
	static char buf[4096];

	snprintf(buf, sizeof(buf), "%s/t_cache.XXXXXX", t && *t ? t : "/tmp");
	if (!mkdtemp(buf)) {
		perror("mkdtemp");
		exit(2);
	}
	return buf;
}

static int
dir_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int k = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			k++;
	closedir(d);
	return k;
}

static void
test_pack_roundtrip(void)
{
	static const uint32_t sz[][2] = {
		{ 1, 1 }, { 7, 13 }, { 28, 28 }, { 224, 224 }, { 300, 17 },
	};
	static const int levels[] = { RV_CACHE_LEVEL, 0, 3, -7 };
	struct rv_cache_scratch *s = rv_cache_scratch_new(RV_CACHE_LEVEL);
	struct rv_cache_entry e = { 0 };
	struct rv_img im = { 0 }, back = { 0 };
	size_t i, j, raw;
	uint32_t c;
	int l;

	EXPECT(s != NULL);
	for (l = 0; l < 4; l++) {
		rv_cache_scratch_free(s);
		s = rv_cache_scratch_new(levels[l]);
		for (c = 1; c <= 3; c += 2)
			for (i = 0; i < sizeof(sz) / sizeof(sz[0]); i++) {
				rv_img_reserve(&im, sz[i][0], sz[i][1], c);
				raw = (size_t)sz[i][0] * sz[i][1] * c;
				/* smooth with some noise */
				for (j = 0; j < raw; j++)
					im.data[j] = (unsigned char)(j / 7 +
					    (mix(j) % 8 == 0));
				EXPECT_EQ(rv_cache_pack(s, &im, &e), 0);
				EXPECT_EQ(e.h, sz[i][0]);
				EXPECT_EQ(e.w, sz[i][1]);
				EXPECT_EQ(e.c, c);
				if (raw > RV_CACHE_RAW_MAX && levels[l] >= -1)
					EXPECT(e.data.len < raw * 3 / 4);
				if (raw <= RV_CACHE_RAW_MAX)
					EXPECT_EQ(e.data.len, raw + 1);
				EXPECT_EQ(rv_cache_unpack(s, e.h, e.w, e.c,
				    e.data.data, e.data.len, &back), 0);
				EXPECT_EQ(back.h, sz[i][0]);
				EXPECT_EQ(back.w, sz[i][1]);
				EXPECT_EQ(back.c, c);
				EXPECT(memcmp(back.data, im.data, raw) == 0);
			}
	}
	/* a wrong shape or damaged bytes are refused, not overrun */
	EXPECT_EQ(rv_cache_unpack(s, e.h + 1, e.w, e.c, e.data.data,
	    e.data.len, &back), -1);
	EXPECT(strncmp(rv_errmsg(), "cache: corrupt entry: ", 22) == 0);
	EXPECT_EQ(rv_cache_unpack(s, e.h, e.w, e.c, e.data.data,
	    e.data.len / 2, &back), -1);
	EXPECT(strncmp(rv_errmsg(), "cache: corrupt entry: ", 22) == 0);
	rv_cache_entry_release(&e);
	rv_img_release(&im);
	rv_img_release(&back);
	rv_cache_scratch_free(s);
	rv_cache_scratch_free(NULL);
}

/* Many puts and replacements of random sizes: the budget always holds,
 * the counters add up, and every entry reads back as last put. */
static void
test_mem_budget(void)
{
	enum { N = 200, PUTS = 4000 };
	struct rv_cache_conf conf = { .n = N, .mem = 96 << 10 };
	struct rv_cache *c = rv_cache_new(&conf);
	const struct rv_cache_stats *st = rv_cache_stats(c);
	struct rv_cache_entry e = { 0 };
	struct rv_cache_ref ref[N];
	unsigned char found[N];
	uint64_t key[N], pos[N], i, p, held, bytes, over = 0, drops = 0;
	size_t len[N], n;
	int r, bad = 0;

	memset(key, 0, sizeof(key));
	for (i = 0; i < PUTS; i++) {
		p = mix(i) % N;
		/* sizes drift with i, so buffers are reused and remade */
		n = (size_t)(mix(i + 77) % (200 + i % 1500));
		make_entry(&e, n, i + 1);
		r = rv_cache_put(c, p, &e);
		if (r == 1) {
			key[p] = i + 1;
			len[p] = n;
		} else {
			key[p] = 0;
			drops++;
			bad |= r != 0;
		}
		if (st->mem_used > conf.mem)
			over++;
	}
	EXPECT_EQ(bad, 0);
	EXPECT_EQ(over, 0);
	EXPECT(drops > 0);
	EXPECT_EQ(st->dropped, drops);
	EXPECT_EQ(st->disk_entries, 0);
	held = bytes = 0;
	for (i = 0; i < N; i++) {
		pos[i] = i;
		if (key[i]) {
			held++;
			bytes += len[i];
		}
	}
	EXPECT_EQ(st->mem_entries, held);
	EXPECT_EQ(st->mem_bytes, bytes);
	EXPECT(st->mem_used >= bytes + held * RV_CACHE_ENTRY_OVERHEAD);
	/* capacity slack is bounded: at most 1/4 + 16 bytes an entry */
	EXPECT(st->mem_used <= bytes + bytes / 3 +
	    held * (16 + RV_CACHE_ENTRY_OVERHEAD));
	EXPECT_EQ(rv_cache_get_many(c, pos, N, ref, found), 0);
	for (i = 0; i < N; i++) {
		EXPECT_EQ(found[i], key[i] != 0);
		EXPECT_EQ(rv_cache_has(c, i), key[i] != 0);
		if (key[i] && !ref_is(&ref[i], len[i], key[i])) {
			printf("# position %llu differs\n",
			    (unsigned long long)i);
			unit_st.cur_failed = 1;
		}
	}
	EXPECT_EQ(st->disk_reads, 0);
	rv_cache_entry_release(&e);
	rv_cache_free(c);
}

/* Over the budget, entries go to disk and come back intact, whether
 * still in the write buffer or written out. */
static void
test_spill(void)
{
	enum { N = 100 };
	char *dir = tmpdir();
	struct rv_cache_conf conf = { .n = N, .mem = 10000, .dir = dir };
	struct rv_cache *c = rv_cache_new(&conf);
	const struct rv_cache_stats *st;
	struct rv_cache_entry e = { 0 };
	struct rv_cache_ref ref[N];
	unsigned char found[N];
	uint64_t pos[N], i, raw;
	int round, ok;

	EXPECT(c != NULL);
	if (!c)
		return;
	st = rv_cache_stats(c);
	for (i = 0; i < N; i++) {
		make_entry(&e, 1000, i + 5);
		EXPECT_EQ(rv_cache_put(c, i, &e), 1);
		pos[i] = N - 1 - i;
	}
	/* 1000 bytes take 1072 of capacity + 16 of overhead: 9 fit */
	EXPECT_EQ(st->mem_entries, 9);
	EXPECT_EQ(st->mem_used, 9 * (1072 + RV_CACHE_ENTRY_OVERHEAD));
	EXPECT_EQ(st->disk_entries, N - 9);
	EXPECT_EQ(st->disk_bytes, (N - 9) * 1000);
	for (i = 0, raw = 0; i < N; i++)
		raw += ((i + 5) % 7 + 1) * 3 * (((i + 5) & 1) ? 3 : 1);
	EXPECT_EQ(st->raw_bytes, raw);
	EXPECT_EQ(st->dropped, 0);
	/* buffered: nothing written yet */
	EXPECT_EQ(st->disk_writes, 0);
	for (round = 0; round < 2; round++) {
		EXPECT_EQ(rv_cache_get_many(c, pos, N, ref, found), 0);
		ok = 1;
		for (i = 0; i < N; i++)
			ok &= found[i] && ref_is(&ref[i], 1000, pos[i] + 5);
		EXPECT(ok);
		EXPECT_EQ(rv_cache_flush(c), 0);
		EXPECT_EQ(st->disk_writes, 1);
		EXPECT_EQ(st->disk_file_bytes, (N - 9) * 1000);
	}
	/* the first round read from the buffer, the second with 1 pread */
	EXPECT_EQ(st->disk_reads, 1);
	rv_cache_free(c);
	rv_cache_entry_release(&e);
	EXPECT_EQ(dir_entries(dir), 0);
	EXPECT_EQ(rmdir(dir), 0);
}

/* k neighbours in the file: one pread, in whatever order asked; entries
 * far apart: one pread each; an entry larger than the write buffer. */
static void
test_batched_reads(void)
{
	enum { N = 64, K = 32 };
	char *dir = tmpdir();
	struct rv_cache_conf conf = { .n = N, .mem = 0, .dir = dir };
	struct rv_cache *c = rv_cache_new(&conf);
	const struct rv_cache_stats *st;
	struct rv_cache_entry e = { 0 };
	struct rv_cache_ref ref[N];
	unsigned char found[N];
	uint64_t pos[N], i, r0;
	size_t big = (3 << 20) + 5;
	int ok;

	EXPECT(c != NULL);
	if (!c)
		return;
	st = rv_cache_stats(c);
	/* positions 0..K-1: 2000 bytes each, adjacent in the file */
	for (i = 0; i < K; i++) {
		make_entry(&e, 2000, i + 100);
		EXPECT_EQ(rv_cache_put(c, i, &e), 1);
	}
	/* K..K+7: 3000 and 100000 bytes in turn */
	for (i = K; i < K + 8; i++) {
		make_entry(&e, (i & 1) ? 100000 : 3000, i + 100);
		EXPECT_EQ(rv_cache_put(c, i, &e), 1);
	}
	make_entry(&e, big, 999);
	EXPECT_EQ(rv_cache_put(c, K + 8, &e), 1);
	EXPECT_EQ(rv_cache_flush(c), 0);
	EXPECT_EQ(st->disk_entries, K + 9);
	EXPECT_EQ(st->mem_entries, 0);

	for (i = 0; i < K; i++)
		pos[i] = (i * 13 + 5) % K;	/* shuffled */
	r0 = st->disk_reads;
	EXPECT_EQ(rv_cache_get_many(c, pos, K, ref, found), 0);
	EXPECT_EQ(st->disk_reads - r0, 1);
	ok = 1;
	for (i = 0; i < K; i++)
		ok &= found[i] && ref_is(&ref[i], 2000, pos[i] + 100);
	EXPECT(ok);

	/* K, K+2, K+4, K+6: 3000 bytes with 100 KB between: 4 preads */
	for (i = 0; i < 4; i++)
		pos[i] = K + 6 - 2 * i;
	pos[4] = K + 2;			/* twice: still one read for it */
	r0 = st->disk_reads;
	EXPECT_EQ(rv_cache_get_many(c, pos, 5, ref, found), 0);
	EXPECT_EQ(st->disk_reads - r0, 4);
	ok = 1;
	for (i = 0; i < 5; i++)
		ok &= found[i] && ref_is(&ref[i], 3000, pos[i] + 100);
	EXPECT(ok);

	/* K..K+3 contiguous in the file: 1 pread */
	for (i = 0; i < 4; i++)
		pos[i] = K + i;
	r0 = st->disk_reads;
	EXPECT_EQ(rv_cache_get_many(c, pos, 4, ref, found), 0);
	EXPECT_EQ(st->disk_reads - r0, 1);
	ok = 1;
	for (i = 0; i < 4; i++)
		ok &= ref_is(&ref[i], (i & 1) ? 100000 : 3000, K + i + 100);
	EXPECT(ok);

	pos[0] = K + 8;
	pos[1] = 0;
	EXPECT_EQ(rv_cache_get_many(c, pos, 2, ref, found), 0);
	EXPECT(found[0] && ref_is(&ref[0], big, 999));
	EXPECT(found[1] && ref_is(&ref[1], 2000, 100));
	/* out of range is the caller's mistake */
	pos[0] = N;
	EXPECT_EQ(rv_cache_get_many(c, pos, 1, ref, found), -1);
	EXPECT_STR(rv_errmsg(), "cache: position 64 out of range "
	    "(64 positions)");
	rv_cache_free(c);
	rv_cache_entry_release(&e);
	EXPECT_EQ(dir_entries(dir), 0);
	EXPECT_EQ(rmdir(dir), 0);
}

/* No disk tier, over budget: dropped, counted, absent. */
static void
test_dropped(void)
{
	struct rv_cache_conf conf = { .n = 10, .mem = 3000 };
	struct rv_cache *c = rv_cache_new(&conf);
	const struct rv_cache_stats *st = rv_cache_stats(c);
	struct rv_cache_entry e = { 0 };
	struct rv_cache_ref ref[10];
	unsigned char found[10];
	uint64_t pos[10], i;

	for (i = 0; i < 10; i++) {
		make_entry(&e, 1000, i);
		EXPECT_EQ(rv_cache_put(c, i, &e), i < 2 ? 1 : 0);
		pos[i] = i;
	}
	EXPECT_EQ(st->mem_entries, 2);
	EXPECT_EQ(st->dropped, 8);
	EXPECT_EQ(rv_cache_has(c, 1), 1);
	EXPECT_EQ(rv_cache_has(c, 2), 0);
	EXPECT_EQ(rv_cache_has(c, 10), 0);
	EXPECT_EQ(rv_cache_get_many(c, pos, 10, ref, found), 0);
	for (i = 0; i < 10; i++) {
		EXPECT_EQ(found[i], i < 2);
		if (i >= 2)
			EXPECT(ref[i].p == NULL && ref[i].n == 0);
	}
	/* an entry of zero bytes is an entry */
	e.data.len = 0;
	EXPECT_EQ(rv_cache_put(c, 1, &e), 1);
	EXPECT_EQ(rv_cache_get_many(c, pos + 1, 1, ref, found), 0);
	EXPECT(found[0] && ref[0].n == 0 && ref[0].p != NULL);
	EXPECT_EQ(rv_cache_put(c, 10, &e), -1);
	EXPECT_STR(rv_errmsg(), "cache: position 10 out of range "
	    "(10 positions)");
	rv_cache_free(c);
	rv_cache_free(NULL);
	rv_cache_entry_release(&e);
}

/* Replacement frees the old space first; small changes reuse the buffer
 * in place; tiers follow the budget at each put. */
static void
test_replace(void)
{
	char *dir = tmpdir();
	struct rv_cache_conf conf = { .n = 4, .mem = 5000, .dir = dir };
	struct rv_cache *c = rv_cache_new(&conf);
	const struct rv_cache_stats *st;
	struct rv_cache_entry e = { 0 };
	struct rv_cache_ref ref[4];
	unsigned char found[4];
	uint64_t pos[4] = { 0, 1, 2, 3 }, used;

	EXPECT(c != NULL);
	if (!c)
		return;
	st = rv_cache_stats(c);
	make_entry(&e, 2000, 1);
	EXPECT_EQ(rv_cache_put(c, 0, &e), 1);
	make_entry(&e, 2000, 2);
	EXPECT_EQ(rv_cache_put(c, 1, &e), 1);
	EXPECT_EQ(st->mem_entries, 2);
	used = st->mem_used;
	/* 10% smaller: the same buffer, the same count */
	make_entry(&e, 1800, 3);
	EXPECT_EQ(rv_cache_put(c, 0, &e), 1);
	EXPECT_EQ(st->mem_used, used);
	EXPECT_EQ(st->mem_bytes, 3800);
	/* much smaller: a smaller buffer */
	make_entry(&e, 500, 4);
	EXPECT_EQ(rv_cache_put(c, 0, &e), 1);
	EXPECT(st->mem_used < used);
	/* too big for what is left: disk; then position 0 replaced by a
	 * disk-sized entry frees its memory, and position 1 grows into it */
	make_entry(&e, 3000, 5);
	EXPECT_EQ(rv_cache_put(c, 2, &e), 1);
	EXPECT_EQ(st->disk_entries, 1);
	make_entry(&e, 4000, 6);
	EXPECT_EQ(rv_cache_put(c, 0, &e), 1);
	EXPECT_EQ(st->mem_entries, 1);
	EXPECT_EQ(st->disk_entries, 2);
	make_entry(&e, 2600, 7);
	EXPECT_EQ(rv_cache_put(c, 1, &e), 1);
	EXPECT_EQ(st->mem_entries, 1);
	/* a disk entry replaced by a small one comes to memory */
	make_entry(&e, 100, 8);
	EXPECT_EQ(rv_cache_put(c, 2, &e), 1);
	EXPECT_EQ(st->mem_entries, 2);
	EXPECT_EQ(st->disk_entries, 1);
	EXPECT_EQ(st->disk_bytes, 4000);
	EXPECT_EQ(st->disk_file_bytes, 7000);
	EXPECT(st->mem_used <= conf.mem);
	EXPECT_EQ(st->raw_bytes, (6 % 7 + 1) * 3 * 1 + (7 % 7 + 1) * 3 * 3 +
	    (8 % 7 + 1) * 3 * 1);
	EXPECT_EQ(rv_cache_get_many(c, pos, 4, ref, found), 0);
	EXPECT(found[0] && ref_is(&ref[0], 4000, 6));
	EXPECT(found[1] && ref_is(&ref[1], 2600, 7));
	EXPECT(found[2] && ref_is(&ref[2], 100, 8));
	EXPECT_EQ(found[3], 0);
	rv_cache_free(c);
	rv_cache_entry_release(&e);
	EXPECT_EQ(rmdir(dir), 0);
}

/* Replacements on disk leave garbage; compaction keeps it under the live
 * bytes (past compact_min), and every entry survives it. */
static void
test_compaction(void)
{
	enum { N = 50 };
	char *dir = tmpdir();
	struct rv_cache_conf conf = { .n = N, .mem = 0, .dir = dir,
	    .compact_min = 20000 };
	struct rv_cache *c = rv_cache_new(&conf);
	const struct rv_cache_stats *st;
	struct rv_cache_entry e = { 0 };
	struct rv_cache_ref ref[N];
	unsigned char found[N];
	uint64_t key[N], pos[N], i, p, dead, worst = 0;
	size_t len[N], n;
	int ok = 1, bound = 1;

	EXPECT(c != NULL);
	if (!c)
		return;
	st = rv_cache_stats(c);
	for (i = 0; i < 3000; i++) {
		p = i < N ? i : mix(i) % N;
		n = 500 + (size_t)(mix(i * 3) % 3000);
		if (i % 97 == 0)
			n = (1 << 20) + 17;	/* now and then, past wbuf */
		make_entry(&e, n, i + 1);
		EXPECT_EQ(rv_cache_put(c, p, &e), 1);
		key[p] = i + 1;
		len[p] = n;
		dead = st->disk_file_bytes - st->disk_bytes;
		if (dead > st->disk_bytes && dead > conf.compact_min)
			bound = 0;
		if (dead > worst)
			worst = dead;
		if (i % 500 == 499) {
			/* reads between puts, from the file and buffer */
			for (p = 0; p < N; p++)
				pos[p] = (p * 7) % N;
			EXPECT_EQ(rv_cache_get_many(c, pos, N, ref, found),
			    0);
			for (p = 0; p < N; p++)
				ok &= found[p] && ref_is(&ref[p],
				    len[pos[p]], key[pos[p]]);
		}
	}
	EXPECT(ok);
	EXPECT(bound);
	EXPECT(st->compactions > 10);
	EXPECT_EQ(st->disk_entries, N);
	EXPECT_EQ(dir_entries(dir), 0);
	rv_cache_free(c);
	rv_cache_entry_release(&e);
	EXPECT_EQ(rmdir(dir), 0);
}

/* Disk entries replaced by memory ones: the garbage goes too, down to an
 * empty file. */
static void
test_compact_to_empty(void)
{
	char *dir = tmpdir();
	struct rv_cache_conf conf = { .n = 5, .mem = 100000, .dir = dir,
	    .compact_min = 500 };
	struct rv_cache *c = rv_cache_new(&conf);
	const struct rv_cache_stats *st;
	struct rv_cache_entry e = { 0 };
	struct rv_cache_ref ref[5];
	unsigned char found[5];
	uint64_t pos[5] = { 0, 1, 2, 3, 4 }, i;
	int ok = 1;

	EXPECT(c != NULL);
	if (!c)
		return;
	st = rv_cache_stats(c);
	make_entry(&e, 94000, 0);	/* leaves 96 bytes of budget */
	EXPECT_EQ(rv_cache_put(c, 0, &e), 1);
	for (i = 1; i < 5; i++) {
		make_entry(&e, 1000, i);
		EXPECT_EQ(rv_cache_put(c, i, &e), 1);
	}
	EXPECT_EQ(st->disk_entries, 4);
	make_entry(&e, 10, 10);
	EXPECT_EQ(rv_cache_put(c, 0, &e), 1);
	for (i = 1; i < 5; i++) {
		make_entry(&e, 1000, 10 + i);
		EXPECT_EQ(rv_cache_put(c, i, &e), 1);
	}
	/* compacted with one entry left on disk, then with none */
	EXPECT_EQ(st->compactions, 2);
	EXPECT_EQ(st->disk_entries, 0);
	EXPECT_EQ(st->disk_file_bytes, 0);
	EXPECT_EQ(st->mem_entries, 5);
	EXPECT_EQ(rv_cache_get_many(c, pos, 5, ref, found), 0);
	for (i = 0; i < 5; i++)
		ok &= found[i] && ref_is(&ref[i], i ? 1000 : 10, 10 + i);
	EXPECT(ok);
	rv_cache_free(c);
	rv_cache_entry_release(&e);
	EXPECT_EQ(rmdir(dir), 0);
}

/* A compaction that cannot make its file keeps the old one, loses
 * nothing, and is tried again after another compact_min of garbage. */
static void
test_compact_later(void)
{
	enum { N = 10 };
	char *dir = tmpdir();
	struct rv_cache_conf conf = { .n = N, .mem = 0, .dir = dir,
	    .compact_min = 10000 };
	struct rv_cache *c = rv_cache_new(&conf);
	const struct rv_cache_stats *st;
	struct rv_cache_entry e = { 0 };
	struct rv_cache_ref ref[N];
	unsigned char found[N];
	uint64_t pos[N], i, k;
	int ok = 1, early = 0;

	EXPECT(c != NULL);
	if (!c)
		return;
	st = rv_cache_stats(c);
	for (i = 0; i < N; i++) {
		make_entry(&e, 1000, i);
		EXPECT_EQ(rv_cache_put(c, i, &e), 1);
		pos[i] = i;
	}
	/* the directory goes (it is empty: the file has no name) */
	EXPECT_EQ(rmdir(dir), 0);
	for (k = 1; k <= 31; k++) {
		if (k == 26)
			EXPECT_EQ(mkdir(dir, 0700), 0);
		make_entry(&e, 1000, 100 + k);
		EXPECT_EQ(rv_cache_put(c, k % N, &e), 1);
		/* tried at 11 and 21 garbage entries, done at 31 */
		if (k < 31 && st->compactions != 0)
			early = 1;
	}
	EXPECT_EQ(early, 0);
	EXPECT_EQ(st->compactions, 1);
	EXPECT_EQ(st->disk_file_bytes, N * 1000);
	EXPECT_EQ(rv_cache_get_many(c, pos, N, ref, found), 0);
	for (i = 0; i < N; i++)
		ok &= found[i] && ref_is(&ref[i], 1000, 100 + (i <= 1 ?
		    30 + i : 20 + i));
	EXPECT(ok);
	rv_cache_free(c);
	rv_cache_entry_release(&e);
	EXPECT_EQ(rmdir(dir), 0);
}

/* The file is gone from the directory while the cache lives and after. */
static void
test_no_leftover(void)
{
	char *dir = tmpdir();
	struct rv_cache_conf conf = { .n = 8, .mem = 0, .dir = dir };
	struct rv_cache *c = rv_cache_new(&conf);
	struct rv_cache_entry e = { 0 };
	uint64_t i;

	EXPECT(c != NULL);
	if (!c)
		return;
	for (i = 0; i < 8; i++) {
		make_entry(&e, 300000, i);
		EXPECT_EQ(rv_cache_put(c, i, &e), 1);
	}
	EXPECT_EQ(rv_cache_flush(c), 0);
	EXPECT(rv_cache_stats(c)->disk_file_bytes == 8 * 300000);
	EXPECT_EQ(dir_entries(dir), 0);
	rv_cache_free(c);
	EXPECT_EQ(dir_entries(dir), 0);
	EXPECT_EQ(rmdir(dir), 0);
	rv_cache_entry_release(&e);
}

static void
test_bad_dir(void)
{
	char *dir = tmpdir();
	char path[4200], want[4400];
	struct rv_cache_conf conf = { .n = 8, .mem = 0,
	    .dir = "/nonexistent-rv-cache-dir/sub" };
	FILE *f;

	EXPECT(rv_cache_new(&conf) == NULL);
	EXPECT_STR(rv_errmsg(), "cache: '/nonexistent-rv-cache-dir/sub': "
	    "create file: No such file or directory");
	snprintf(path, sizeof(path), "%s/file", dir);
	f = fopen(path, "w");
	EXPECT(f != NULL);
	if (f)
		fclose(f);
	conf.dir = path;
	EXPECT(rv_cache_new(&conf) == NULL);
	snprintf(want, sizeof(want), "cache: '%s': create file: "
	    "Not a directory", path);
	EXPECT_STR(rv_errmsg(), want);
	unlink(path);
	EXPECT_EQ(rmdir(dir), 0);
}

/*
 * A write error (here the file-size limit, as a full disk would): the put
 * says -1 with the reason, buffered entries become absent, what was
 * written stays readable, and later puts that miss memory are dropped.
 */
static void
test_write_error(void)
{
	enum { N = 600 };
	char *dir = tmpdir();
	struct rv_cache_conf conf = { .n = N, .mem = 0, .dir = dir };
	struct rv_cache *c = rv_cache_new(&conf);
	const struct rv_cache_stats *st;
	struct rv_cache_entry e = { 0 };
	struct rv_cache_ref ref[N];
	unsigned char found[N];
	struct rlimit old, lim;
	uint64_t pos[N], i, fail_at = 0;
	char msg[1024], want[4400];
	int r = 0, after = -2, flushed = -2, ok = 1;

	EXPECT(c != NULL);
	if (!c)
		return;
	st = rv_cache_stats(c);
	for (i = 0; i < 10; i++) {
		make_entry(&e, 2000, i);
		EXPECT_EQ(rv_cache_put(c, i, &e), 1);
	}
	EXPECT_EQ(rv_cache_flush(c), 0);
	/* nothing may print while the limit holds: stdout may be a file */
	getrlimit(RLIMIT_FSIZE, &old);
	lim = old;
	lim.rlim_cur = 100000;
	signal(SIGXFSZ, SIG_IGN);
	setrlimit(RLIMIT_FSIZE, &lim);
	for (i = 10; i < N && r != -1; i++) {
		make_entry(&e, 2000, i);
		if ((r = rv_cache_put(c, i, &e)) == -1)
			fail_at = i;
	}
	snprintf(msg, sizeof(msg), "%s", rv_errmsg());
	if (r == -1) {
		make_entry(&e, 2000, N - 1);
		after = rv_cache_put(c, N - 1, &e);
		flushed = rv_cache_flush(c);
	}
	setrlimit(RLIMIT_FSIZE, &old);
	signal(SIGXFSZ, SIG_DFL);

	EXPECT_EQ(r, -1);
	snprintf(want, sizeof(want), "cache: '%s': write: File too large",
	    dir);
	EXPECT_STR(msg, want);
	EXPECT_EQ(after, 0);
	EXPECT_EQ(flushed, 0);
	EXPECT_EQ(st->disk_entries, 10);
	EXPECT_EQ(st->dropped, fail_at - 10 + 1 + 1);
	for (i = 0; i < N; i++)
		pos[i] = i;
	EXPECT_EQ(rv_cache_get_many(c, pos, N, ref, found), 0);
	for (i = 0; i < N; i++)
		ok &= i < 10 ? found[i] && ref_is(&ref[i], 2000, i) :
		    !found[i];
	EXPECT(ok);
	rv_cache_free(c);
	rv_cache_entry_release(&e);
	EXPECT_EQ(rmdir(dir), 0);
}

/*
 * A budget that holds every entry raw keeps photo-sized entries raw (no
 * time spent compressing), and those raw entries still respect it.
 */
static void
test_raw_share(void)
{
	struct rv_cache_scratch *s = rv_cache_scratch_new(RV_CACHE_LEVEL);
	struct rv_cache_entry e = { 0 };
	struct rv_img im = { 0 }, back = { 0 };
	size_t raw = 224 * 224 * 3, j;
	struct rv_cache_conf cc = { 0 };
	struct rv_cache *c;
	uint64_t pos;

	EXPECT_EQ(rv_cache_raw_share(0, 10), 0);
	EXPECT_EQ(rv_cache_raw_share(1000, 0), 0);
	/* each raw entry may take its pixels plus 1/16 slack and overhead */
	EXPECT(rv_cache_raw_share((uint64_t)10 * (raw + raw / 15 + 200), 10) >=
	    raw);
	EXPECT(rv_cache_raw_share((uint64_t)10 * raw, 10) < raw);
	rv_img_reserve(&im, 224, 224, 3);
	for (j = 0; j < raw; j++)
		im.data[j] = (unsigned char)(j / 7);
	EXPECT_EQ(rv_cache_pack(s, &im, &e), 0);
	EXPECT(e.data.len < raw / 2);		/* compressed by default */
	rv_cache_scratch_raw_max(s, rv_cache_raw_share(
	    (uint64_t)10 * (raw + raw / 15 + 200), 10));
	EXPECT_EQ(rv_cache_pack(s, &im, &e), 0);
	EXPECT_EQ(e.data.len, raw + 1);		/* now raw */
	EXPECT_EQ(rv_cache_unpack(s, 224, 224, 3, e.data.data, e.data.len,
	    &back), 0);
	EXPECT(memcmp(back.data, im.data, raw) == 0);
	cc.n = 10;
	cc.mem = (uint64_t)10 * (raw + raw / 15 + 200);
	c = rv_cache_new(&cc);
	for (pos = 0; pos < 10; pos++)
		EXPECT_EQ(rv_cache_put(c, pos, &e), 1);
	EXPECT(rv_cache_stats(c)->mem_used <= cc.mem);
	EXPECT_EQ(rv_cache_stats(c)->dropped, 0);
	rv_cache_free(c);
	rv_cache_entry_release(&e);
	rv_img_release(&im);
	rv_img_release(&back);
	rv_cache_scratch_free(s);
}

int
main(void)
{
	RUN(test_pack_roundtrip);
	RUN(test_mem_budget);
	RUN(test_spill);
	RUN(test_batched_reads);
	RUN(test_dropped);
	RUN(test_replace);
	RUN(test_compaction);
	RUN(test_compact_to_empty);
	RUN(test_compact_later);
	RUN(test_no_leftover);
	RUN(test_bad_dir);
	RUN(test_write_error);
	RUN(test_raw_share);
	return UNIT_DONE();
}
