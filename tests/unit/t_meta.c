/*
 * Stream metadata: set/get/replace, the key and value rules, the
 * "key=value\n" encoding and its parser (strict: a reader must not guess),
 * merging, and a META record written and read back; the caps on what an
 * rv_meta holds (RV_META_MAX bytes, RV_META_MAX_KEYS keys) and merging
 * record after record in time linear in the keys (issue 47, items 9-10).
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/xmem.h"
#include "stream/meta.h"
#include "stream/stream.h"
#include "unit.h"

static void
t_set_get(void)
{
	struct rv_meta m;

	rv_meta_init(&m);
	EXPECT(rv_meta_get(&m, "source") == NULL);
	EXPECT_EQ(rv_meta_set(&m, "source", "train.tar"), 0);
	EXPECT_EQ(rv_meta_set(&m, "classes", "10"), 0);
	EXPECT_EQ(rv_meta_set(&m, "class.0", "T-shirt/top"), 0);
	EXPECT_STR(rv_meta_get(&m, "source"), "train.tar");
	EXPECT_STR(rv_meta_get(&m, "class.0"), "T-shirt/top");
	EXPECT(rv_meta_get(&m, "class") == NULL);
	EXPECT(rv_meta_get(&m, "class.00") == NULL);
	/* replacing keeps the position */
	EXPECT_EQ(rv_meta_set(&m, "source", "val.tar"), 0);
	EXPECT_EQ(m.n, 3);
	EXPECT_STR(m.key[0], "source");
	EXPECT_STR(rv_meta_get(&m, "source"), "val.tar");
	/* empty values, '=' and UTF-8 in values are fine */
	EXPECT_EQ(rv_meta_set(&m, "note", ""), 0);
	EXPECT_STR(rv_meta_get(&m, "note"), "");
	EXPECT_EQ(rv_meta_set(&m, "argv", "rv-decode --x=1 \xc3\xa9t\xc3\xa9"),
	    0);
	EXPECT_STR(rv_meta_get(&m, "argv"),
	    "rv-decode --x=1 \xc3\xa9t\xc3\xa9");
	rv_meta_release(&m);
	EXPECT_EQ(m.n, 0);
	EXPECT(m.key == NULL);
	rv_meta_release(&m);	/* twice is harmless */
}

static void
t_rules(void)
{
	struct rv_meta m;
	char longkey[200];

	rv_meta_init(&m);
	EXPECT_EQ(rv_meta_set(&m, "", "x"), -1);
	EXPECT_STR(rv_errmsg(), "bad metadata key ''");
	EXPECT_EQ(rv_meta_set(&m, "a b", "x"), -1);
	EXPECT_STR(rv_errmsg(), "bad metadata key 'a b'");
	EXPECT_EQ(rv_meta_set(&m, "a=b", "x"), -1);
	EXPECT_EQ(rv_meta_set(&m, "caf\xc3\xa9", "x"), -1);
	EXPECT_EQ(rv_meta_set(&m, "A-Z_a.z-09", "x"), 0);
	memset(longkey, 'k', sizeof(longkey));
	longkey[128] = '\0';
	EXPECT_EQ(rv_meta_set(&m, longkey, "x"), 0);
	longkey[128] = 'k';
	longkey[129] = '\0';
	EXPECT_EQ(rv_meta_set(&m, longkey, "x"), -1);
	EXPECT_EQ(rv_meta_set(&m, "k", "two\nlines"), -1);
	EXPECT_STR(rv_errmsg(), "metadata value of 'k' holds a newline");
	EXPECT(rv_meta_get(&m, "k") == NULL);
	EXPECT_EQ(m.n, 2);
	rv_meta_release(&m);
}

static void
t_encode_parse(void)
{
	struct rv_meta m, p;
	struct rv_buf b = { 0 };
	int i;

	rv_meta_init(&m);
	rv_meta_init(&p);
	rv_meta_set(&m, "producer", "rv-decode 0.1.0");
	rv_meta_set(&m, "mean", "0.286,0.286,0.286");
	rv_meta_set(&m, "eq", "a=b=c");
	rv_meta_set(&m, "empty", "");
	rv_meta_encode(&m, &b);
	EXPECT_EQ(b.len, strlen("producer=rv-decode 0.1.0\n"
	    "mean=0.286,0.286,0.286\neq=a=b=c\nempty=\n"));
	EXPECT(memcmp(b.data, "producer=rv-decode 0.1.0\n"
	    "mean=0.286,0.286,0.286\neq=a=b=c\nempty=\n", b.len) == 0);
	EXPECT_EQ(rv_meta_parse(&p, b.data, b.len), 0);
	EXPECT_EQ(p.n, m.n);
	for (i = 0; i < (int)m.n && i < (int)p.n; i++) {
		EXPECT_STR(p.key[i], m.key[i]);
		EXPECT_STR(p.val[i], m.val[i]);
	}
	/* encode appends */
	rv_meta_encode(&m, &b);
	EXPECT(memcmp(b.data + b.len / 2, b.data, b.len / 2) == 0);
	rv_buf_release(&b);

	/* an empty payload is an empty set; the last newline is optional */
	EXPECT_EQ(rv_meta_parse(&p, (const unsigned char *)"", 0), 0);
	EXPECT_EQ(rv_meta_parse(&p, (const unsigned char *)"x=1", 3), 0);
	EXPECT_STR(rv_meta_get(&p, "x"), "1");
	/* later values win */
	EXPECT_EQ(rv_meta_parse(&p, (const unsigned char *)"x=2\n", 4), 0);
	EXPECT_STR(rv_meta_get(&p, "x"), "2");
	rv_meta_release(&m);
	rv_meta_release(&p);
}

static int
parse_err(const char *s, size_t n, const char *want)
{
	struct rv_meta m;
	int rc;

	rv_meta_init(&m);
	rc = rv_meta_parse(&m, (const unsigned char *)s, n);
	rv_meta_release(&m);
	if (rc != -1 || strcmp(rv_errmsg(), want) != 0) {
		printf("# '%s': rc %d, '%s', want '%s'\n", s, rc, rv_errmsg(),
		    want);
		return 0;
	}
	return 1;
}

static void
t_parse_errors(void)
{
	EXPECT(parse_err("a=1\nnoequals\n", 13, "metadata line 2 has no '='"));
	EXPECT(parse_err("a=1\n\nb=2\n", 9, "metadata line 2 has no '='"));
	EXPECT(parse_err("=1\n", 3, "metadata line 1: bad metadata key ''"));
	EXPECT(parse_err("a b=1\n", 6, "metadata line 1: bad metadata key "
	    "'a b'"));
	EXPECT(parse_err("a=x\0y\n", 6, "metadata line 1: metadata value of "
	    "'a' holds a NUL byte"));
}

static void
t_merge(void)
{
	struct rv_meta a, b;

	rv_meta_init(&a);
	rv_meta_init(&b);
	rv_meta_set(&a, "source", "a");
	rv_meta_set(&a, "classes", "2");
	rv_meta_set(&b, "source", "b");
	rv_meta_set(&b, "x.future", "kept");
	EXPECT_EQ(rv_meta_merge(&a, &b), 0);
	EXPECT_EQ(a.n, 3);
	EXPECT_STR(rv_meta_get(&a, "source"), "b");
	EXPECT_STR(rv_meta_get(&a, "classes"), "2");
	EXPECT_STR(rv_meta_get(&a, "x.future"), "kept");
	rv_meta_release(&a);
	rv_meta_release(&b);
}

/* A META record through a writer and a reader. */
static void
t_record(void)
{
	struct rv_meta m, got;
	struct rv_writer *w;
	struct rv_reader *r;
	struct rv_rec rec;
	char path[] = "/tmp/t_meta.XXXXXX";
	int fd = mkstemp(path);

	EXPECT(fd >= 0);
	rv_meta_init(&m);
	rv_meta_init(&got);
	rv_meta_set(&m, "classes", "3");
	rv_meta_set(&m, "class.0", "a");
	w = rv_writer_new(fd, path, 1);
	EXPECT_EQ(rv_meta_put(w, &m), 0);
	EXPECT_EQ(rv_writer_close(w), 0);
	close(fd);
	r = rv_reader_open(path);
	EXPECT_EQ(rv_reader_next(r, &rec), 1);
	EXPECT_EQ(rec.kind, RV_META);
	EXPECT_EQ(rec.dtype, RV_DT_NONE);
	EXPECT_EQ(rec.payload_len, strlen("classes=3\nclass.0=a\n"));
	EXPECT_EQ(rv_meta_parse(&got, rec.payload, (size_t)rec.payload_len),
	    0);
	EXPECT_STR(rv_meta_get(&got, "class.0"), "a");
	EXPECT_EQ(rv_reader_next(r, &rec), 0);
	rv_reader_close(r);
	unlink(path);
	rv_meta_release(&m);
	rv_meta_release(&got);
}

/* The one strict reading of values: integers of digits only, lists of
 * finite decimal numbers in range, and rv_meta_check()'s rules. */
static void
t_values(void)
{
	struct rv_meta m;
	uint64_t u = 7;
	float v[4];
	int n = 0;

	rv_meta_init(&m);
	EXPECT_EQ(rv_meta_u64(&m, "classes", 0, 100, &u), 0);
	EXPECT_EQ(u, 7);
	EXPECT_EQ(rv_meta_floats(&m, "mean", 0, 0, 1, v, 4, &n), 0);
	EXPECT_EQ(rv_meta_check(&m), 0);
	rv_meta_set(&m, "classes", "010");
	EXPECT_EQ(rv_meta_u64(&m, "classes", 0, 100, &u), 1);
	EXPECT_EQ(u, 10);
	rv_meta_set(&m, "classes", "10abc");
	EXPECT_EQ(rv_meta_u64(&m, "classes", 0, 100, &u), -1);
	EXPECT_STR(rv_errmsg(), "metadata 'classes=10abc': not a decimal "
	    "integer");
	EXPECT_EQ(rv_meta_check(&m), -1);
	EXPECT_STR(rv_errmsg(), "metadata 'classes=10abc': not a decimal "
	    "integer");
	rv_meta_set(&m, "classes", "-1");
	EXPECT_EQ(rv_meta_u64(&m, "classes", 0, 100, &u), -1);
	rv_meta_set(&m, "classes", " 1");
	EXPECT_EQ(rv_meta_u64(&m, "classes", 0, 100, &u), -1);
	rv_meta_set(&m, "classes", "");
	EXPECT_EQ(rv_meta_u64(&m, "classes", 0, 100, &u), -1);
	rv_meta_set(&m, "classes", "101");
	EXPECT_EQ(rv_meta_u64(&m, "classes", 0, 100, &u), -1);
	EXPECT_STR(rv_errmsg(), "metadata 'classes=101': out of range "
	    "[0, 100]");
	rv_meta_set(&m, "classes", "18446744073709551616");
	EXPECT_EQ(rv_meta_u64(&m, "classes", 0, UINT64_MAX, &u), -1);
	rv_meta_set(&m, "classes", "18446744073709551615");
	EXPECT_EQ(rv_meta_u64(&m, "classes", 0, UINT64_MAX, &u), 1);
	EXPECT(u == UINT64_MAX);
	EXPECT_EQ(rv_meta_check(&m), -1);	/* over UINT32_MAX */
	rv_meta_set(&m, "classes", "10");
	EXPECT_EQ(rv_meta_check(&m), 0);

	rv_meta_set(&m, "mean", "0.5,1e-1,0");
	EXPECT_EQ(rv_meta_floats(&m, "mean", 0, 0, 1, v, 4, &n), 1);
	EXPECT_EQ(n, 3);
	EXPECT(v[0] == 0.5f && v[1] == 0.1f && v[2] == 0);
	rv_meta_set(&m, "mean", "0.1,0.2,0.3,0.4,0.5");
	EXPECT_EQ(rv_meta_floats(&m, "mean", 0, 0, 1, v, 4, &n), -1);
	EXPECT_STR(rv_errmsg(), "metadata 'mean=0.1,0.2,0.3,0.4,0.5': more "
	    "than 4 values");
	{
		static const char *const bad[] = { "abc", "nan", "inf",
		    "1e999", "0x1p-1", " 0.5", "0.5 ", "0.5,", ",0.5", "",
		    "1e", "." };
		size_t i;

		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			rv_meta_set(&m, "mean", bad[i]);
			EXPECT_EQ(rv_meta_floats(&m, "mean", 0, 0, 1, v, 4,
			    &n), -1);
			EXPECT_EQ(rv_meta_check(&m), -1);
		}
	}
	rv_meta_set(&m, "mean", "1.5");
	EXPECT_EQ(rv_meta_check(&m), -1);
	EXPECT_STR(rv_errmsg(), "metadata 'mean=1.5': 1.5 is out of range "
	    "[0, 1]");
	rv_meta_set(&m, "mean", "0");
	rv_meta_set(&m, "std", "0");
	EXPECT_EQ(rv_meta_check(&m), -1);
	EXPECT_STR(rv_errmsg(), "metadata 'std=0': 0 is out of range "
	    "(0, 1000]");
	rv_meta_set(&m, "std", "1000,1e-9");
	EXPECT_EQ(rv_meta_check(&m), 0);
	rv_meta_set(&m, "samples", "60000");
	EXPECT_EQ(rv_meta_check(&m), 0);
	rv_meta_set(&m, "samples", "6e4");
	EXPECT_EQ(rv_meta_check(&m), -1);
	rv_meta_release(&m);
}

/* A payload of n lines "<prefix><i>=\n", i from 0. */
static void
keys_payload(struct rv_buf *b, const char *prefix, size_t n)
{
	char line[64];
	size_t i;

	for (i = 0; i < n; i++)
		rv_buf_append(b, line, (size_t)snprintf(line, sizeof(line),
		    "%s%zx=\n", prefix, i));
}

/* m refused the last call for the caps, with this message, and
 * rv_meta_put() will not write it. */
static int
refused(const struct rv_meta *m, const char *want)
{
	struct rv_writer *w;
	int fd, ok;

	ok = strcmp(rv_errmsg(), want) == 0;
	if (!ok)
		printf("# '%s', want '%s'\n", rv_errmsg(), want);
	if ((fd = open("/dev/null", O_WRONLY)) < 0)
		return 0;
	w = rv_writer_new(fd, "/dev/null", 1);
	if (rv_meta_put(w, m) != -1 || strcmp(rv_errmsg(), "metadata cut "
	    "at its limits (1048576 keys, 16777216 bytes): not written") !=
	    0) {
		printf("# put: '%s'\n", rv_errmsg());
		ok = 0;
	}
	rv_writer_close(w);
	close(fd);
	return ok;
}

/*
 * RV_META_MAX_KEYS: a parse, a set or a merge that would hold one key
 * more is refused, whether the keys come in one record or several, and
 * what m holds is kept.
 */
static void
t_cap_keys(void)
{
	struct rv_meta m, one;
	struct rv_buf b = { 0 };

	EXPECT_EQ(RV_META_MAX_KEYS, 1048576);
	rv_meta_init(&m);
	rv_meta_init(&one);
	keys_payload(&b, "a", RV_META_MAX_KEYS / 2);
	EXPECT_EQ(rv_meta_parse(&m, b.data, b.len), 0);
	b.len = 0;
	keys_payload(&b, "b", RV_META_MAX_KEYS / 2);
	EXPECT_EQ(rv_meta_parse(&m, b.data, b.len), 0);
	EXPECT_EQ(m.n, RV_META_MAX_KEYS);
	EXPECT_EQ(m.refused, 0);
	/* at the cap: a replaced value is no new key */
	EXPECT_EQ(rv_meta_parse(&m, (const unsigned char *)"a0=x\n", 5), 0);
	EXPECT_STR(rv_meta_get(&m, "a0"), "x");
	EXPECT_EQ(rv_meta_parse(&m, (const unsigned char *)"a1=y\nnew=1\n",
	    11), -1);
	EXPECT(refused(&m, "metadata over the limit of 1048576 keys"));
	EXPECT_EQ(m.n, RV_META_MAX_KEYS);
	EXPECT_STR(rv_meta_get(&m, "a1"), "y");
	EXPECT(rv_meta_get(&m, "new") == NULL);
	EXPECT_EQ(rv_meta_set(&m, "new", "1"), -1);
	EXPECT_EQ(m.n, RV_META_MAX_KEYS);
	/* a merge: all of src or none of it */
	rv_meta_set(&one, "a2", "z");
	rv_meta_set(&one, "new", "1");
	EXPECT_EQ(rv_meta_merge(&m, &one), -1);
	EXPECT_STR(rv_errmsg(), "metadata over the limit of 1048576 keys");
	EXPECT_STR(rv_meta_get(&m, "a2"), "");
	EXPECT_EQ(m.n, RV_META_MAX_KEYS);
	/* a merge of cut metadata is cut too */
	rv_meta_release(&one);
	rv_meta_init(&one);
	EXPECT_EQ(rv_meta_merge(&one, &m), 0);
	EXPECT_EQ(one.n, RV_META_MAX_KEYS);
	EXPECT_EQ(one.refused, 1);
	rv_meta_release(&m);
	rv_meta_release(&one);
	rv_buf_release(&b);
}

/*
 * RV_META_MAX: the bytes rv_meta_encode() would write, for a new key or a
 * longer value, set, parsed or merged.  At the cap is fine: a record of
 * RV_META_MAX bytes parses.  (Values are compared by length: a failed
 * EXPECT_STR would print 16 MiB.)
 */
static void
t_cap_bytes(void)
{
	const size_t vn = RV_META_MAX - 3;	/* "v=" VALUE "\n" */
	struct rv_meta m, src;
	struct rv_buf b = { 0 };
	char *x = xmalloc(vn + 1);

	/* x + vn - n: a string of n 'x's */
	memset(x, 'x', vn);
	x[vn] = '\0';
	rv_meta_init(&m);
	rv_meta_init(&src);
	EXPECT_EQ(rv_meta_set(&m, "v", x), 0);
	EXPECT_EQ(m.bytes, RV_META_MAX);
	rv_meta_encode(&m, &b);
	EXPECT_EQ(b.len, RV_META_MAX);
	EXPECT_EQ(rv_meta_set(&m, "v", "short"), 0);
	EXPECT_EQ(m.bytes, 8);
	rv_meta_release(&m);
	rv_meta_init(&m);
	EXPECT_EQ(rv_meta_parse(&m, b.data, b.len), 0);
	EXPECT_EQ(m.refused, 0);
	/* one byte more */
	EXPECT_EQ(rv_meta_set(&m, "w", ""), -1);
	EXPECT(refused(&m, "metadata over the limit of 16777216 bytes"));
	EXPECT(rv_meta_get(&m, "w") == NULL);
	EXPECT_EQ(m.n, 1);
	rv_meta_release(&m);

	/* a parse goes line by line: a longer value over the cap is
	 * refused, after a shorter one it is not */
	rv_meta_init(&m);
	EXPECT_EQ(rv_meta_set(&m, "v", x + 3), 0);
	EXPECT_EQ(rv_meta_parse(&m, (const unsigned char *)"w=", 2), 0);
	EXPECT_EQ(m.bytes, RV_META_MAX);
	EXPECT_EQ(rv_meta_parse(&m, (const unsigned char *)"w=x\n", 4), -1);
	EXPECT_STR(rv_errmsg(), "metadata over the limit of 16777216 bytes");
	EXPECT_STR(rv_meta_get(&m, "w"), "");
	EXPECT_EQ(rv_meta_parse(&m, (const unsigned char *)"v=xx\nw=x", 8),
	    0);
	EXPECT_STR(rv_meta_get(&m, "v"), "xx");
	EXPECT_STR(rv_meta_get(&m, "w"), "x");
	EXPECT_EQ(m.bytes, 9);
	rv_meta_release(&m);

	/* a merge counts the whole, whatever the order of its pairs */
	rv_meta_init(&m);
	EXPECT_EQ(rv_meta_set(&m, "a", "1"), 0);
	EXPECT_EQ(rv_meta_set(&m, "v", x + 4), 0);
	EXPECT_EQ(m.bytes, RV_META_MAX);
	rv_meta_set(&src, "a", "12");	/* one byte more, */
	rv_meta_set(&src, "v", "");	/* then far fewer */
	EXPECT_EQ(rv_meta_merge(&m, &src), 0);
	EXPECT_EQ(m.bytes, 8);
	EXPECT_EQ(m.refused, 0);
	rv_meta_release(&src);
	rv_meta_init(&src);
	rv_meta_set(&src, "b", "4");
	rv_meta_set(&src, "a", x + 6);	/* with v=, one byte over */
	EXPECT_EQ(src.bytes, RV_META_MAX - 2);
	EXPECT_EQ(rv_meta_merge(&m, &src), -1);
	EXPECT_STR(rv_errmsg(), "metadata over the limit of 16777216 bytes");
	EXPECT_STR(rv_meta_get(&m, "a"), "12");
	EXPECT(rv_meta_get(&m, "b") == NULL);
	EXPECT_EQ(m.bytes, 8);
	EXPECT_EQ(m.refused, 1);
	/* without b it fits: a's old value no longer counts */
	rv_meta_release(&src);
	rv_meta_init(&src);
	rv_meta_set(&src, "a", x + 6);
	EXPECT_EQ(rv_meta_merge(&m, &src), 0);
	EXPECT_EQ(strlen(rv_meta_get(&m, "a")), RV_META_MAX - 9);
	EXPECT_EQ(m.bytes, RV_META_MAX - 3);
	rv_meta_release(&m);
	rv_meta_release(&src);
	rv_buf_release(&b);
	free(x);
}

static double
cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/*
 * Readers merge every record into one rv_meta: a record of many keys then
 * many tiny records must cost time linear in the keys.  Rebuilding the
 * key index for every record made 200000 keys then 2000 one-key records
 * take about 10 s of CPU; once indexed, they take well under 1 s, even
 * under AddressSanitizer.
 */
static void
t_merge_linear(void)
{
	struct rv_meta m;
	struct rv_buf b = { 0 };
	char line[32];
	double t0, t;
	size_t i;
	int ok = 1;

	rv_meta_init(&m);
	keys_payload(&b, "k", 200000);
	t0 = cpu_seconds();
	EXPECT_EQ(rv_meta_parse(&m, b.data, b.len), 0);
	for (i = 0; i < 2000; i++) {
		int n = snprintf(line, sizeof(line), "t.%zu=%zu\n", i, i);

		ok &= rv_meta_parse(&m, (const unsigned char *)line,
		    (size_t)n) == 0;
	}
	t = cpu_seconds() - t0;
	printf("# 200000 keys then 2000 records: %.3f s of CPU\n", t);
	EXPECT(ok);
	EXPECT(t < 2.0);
	EXPECT_EQ(m.n, 202000);
	EXPECT_STR(rv_meta_get(&m, "k30d3f"), "");
	EXPECT_STR(rv_meta_get(&m, "t.1999"), "1999");
	rv_meta_release(&m);
	rv_buf_release(&b);
}

/* The counts a stream's head says of its epochs (rv-stream(5), kept). */
static void
t_epoch_counts(void)
{
	struct rv_meta m;
	uint64_t f, r;

	rv_meta_init(&m);
	rv_meta_epoch_counts(&m, &f, &r);
	EXPECT(f == RV_META_UNKNOWN && r == RV_META_UNKNOWN);
	rv_meta_set(&m, "samples", "1000");
	rv_meta_epoch_counts(&m, &f, &r);
	EXPECT(f == 1000 && r == 1000);
	/* rv-decode --resume: the first epoch holds resume-samples */
	rv_meta_set(&m, "resume", "0:1:100");
	rv_meta_set(&m, "resume-samples", "900");
	rv_meta_epoch_counts(&m, &f, &r);
	EXPECT(f == 900 && r == 1000);
	rv_meta_set(&m, "resume", "");
	rv_meta_epoch_counts(&m, &f, &r);
	EXPECT(f == 1000);
	/* kept wins; kept-first absent is kept */
	rv_meta_set(&m, "kept", "301");
	rv_meta_epoch_counts(&m, &f, &r);
	EXPECT(f == 301 && r == 301);
	EXPECT_EQ(rv_meta_set_kept(&m, 1000, 301), 0);
	EXPECT_STR(rv_meta_get(&m, "kept-first"), "1000");
	rv_meta_epoch_counts(&m, &f, &r);
	EXPECT(f == 1000 && r == 301);
	/* empty, or not a number: unknown */
	EXPECT_EQ(rv_meta_set_kept(&m, 5, RV_META_UNKNOWN), 0);
	EXPECT_STR(rv_meta_get(&m, "kept"), "");
	rv_meta_epoch_counts(&m, &f, &r);
	EXPECT(f == 5 && r == RV_META_UNKNOWN);
	rv_meta_set(&m, "kept", "12x");
	rv_meta_set(&m, "kept-first", "-1");
	rv_meta_epoch_counts(&m, &f, &r);
	EXPECT(f == RV_META_UNKNOWN && r == RV_META_UNKNOWN);
	rv_meta_set(&m, "kept", "18446744073709551615");
	rv_meta_epoch_counts(&m, &f, &r);
	EXPECT(r == RV_META_UNKNOWN);
	rv_meta_release(&m);
}

int
main(void)
{
	rv_setprogname("t_meta");
	RUN(t_set_get);
	RUN(t_rules);
	RUN(t_encode_parse);
	RUN(t_parse_errors);
	RUN(t_merge);
	RUN(t_record);
	RUN(t_values);
	RUN(t_cap_keys);
	RUN(t_cap_bytes);
	RUN(t_merge_linear);
	RUN(t_epoch_counts);
	return UNIT_DONE();
}
