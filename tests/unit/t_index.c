/*
 * The dataset index, rv-index(5): a parsed index formats back to the same
 * text (escapes and class ranges included); every malformed line is an
 * error naming the line; paths relative to the index climb with "../"
 * and resolve back; the checksum reads the ends only.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "src/index.h"
#include "unit.h"

static const char good[] =
    "rv-index\t1\n"
    "# rv-index(5): the shards of a dataset, for rv-decode --index\n"
    "samples\t30\n"
    "shards\t3\n"
    "classes\t12\n"
    "class\t0\tcat\n"
    "class\t1\ttab\\there\n"
    "class\t2\tback\\\\slash\\x01\n"
    "shard\t10\t30720\t1796536124.895153479\t0b2520cbf4951772\tarchive"
    "\t12\t0,2\ta/s-0.tar\n"
    "shard\t20\t51200\t-5.000000001\t5c072318f2a21b55\tarchive\t0\t-\t"
    "/abs/new\\nline.tar\n"
    "shard\t0\t0\t0.000000000\t0000000000000000\tcifar\t0\tf\tc.bin\n";

static int
parse(const char *text, struct rv_index *ix)
{
	return rv_index_parse(text, strlen(text), "t.idx", ix);
}

static void
t_roundtrip(void)
{
	struct rv_index ix;
	struct rv_buf b = { 0 };

	EXPECT_EQ(parse(good, &ix), 0);
	EXPECT_EQ(ix.samples, 30);
	EXPECT_EQ(ix.classes, 12);
	EXPECT_EQ(ix.nnames, 3);
	EXPECT_STR(ix.names[1], "tab\there");
	EXPECT_STR(ix.names[2], "back\\slash\x01");
	EXPECT_EQ(ix.nshards, 3);
	EXPECT_EQ(ix.shard[0].nnames, 2);
	EXPECT_EQ(ix.shard[0].names[1], 2);
	EXPECT_EQ(ix.shard[0].names_kind, RV_INDEX_NAMES_SOME);
	/* seconds floored, nanoseconds added: -5 + 1e-9 */
	EXPECT_EQ(ix.shard[1].mtime_ns, -4999999999LL);
	EXPECT_STR(ix.shard[1].path, "/abs/new\nline.tar");
	EXPECT_EQ(ix.shard[2].names_kind, RV_INDEX_NAMES_FIXED);
	rv_index_format(&ix, &b);
	EXPECT_EQ(b.len, strlen(good));
	EXPECT(b.len == strlen(good) && memcmp(b.data, good, b.len) == 0);
	rv_buf_release(&b);
	rv_index_release(&ix);
}

/* The error of good with line `n` (1-based) replaced by `line` ("" drops
 * it). */
static const char *
with_line(int n, const char *line)
{
	static char out[4096], err[512];
	struct rv_index ix;
	const char *p = good;
	size_t at = 0;
	int k;

	for (k = 1; *p; k++) {
		const char *e = strchr(p, '\n') + 1;

		if (k == n) {
			strcpy(out + at, line);
			at += strlen(line);
		} else {
			memcpy(out + at, p, (size_t)(e - p));
			at += (size_t)(e - p);
		}
		p = e;
	}
	out[at] = '\0';
	if (parse(out, &ix) == 0) {
		rv_index_release(&ix);
		return "parsed";
	}
	snprintf(err, sizeof(err), "%s", rv_errmsg());
	return err;
}

static void
t_errors(void)
{
	struct rv_index ix;

	EXPECT_STR(with_line(1, "rv-index\t2\n"), "'t.idx': line 1: version "
	    "'2': this rv reads version 1: a newer rv wrote it");
	EXPECT_STR(with_line(3, "samples\t31\n"), "'t.idx': its shards hold "
	    "30 samples, but it says 31");
	EXPECT_STR(with_line(4, "shards\t4\n"), "'t.idx': 3 shard lines, but "
	    "it says 4 (cut short?)");
	EXPECT_STR(with_line(4, "shards\t99999999\n"), "'t.idx': line 4: "
	    "99999999 shards: more than its lines can hold");
	EXPECT_STR(with_line(4, ""), "'t.idx': line 8: a shard line before "
	    "the samples, shards and classes lines");
	EXPECT_STR(with_line(6, "class\t1\tdog\n"), "'t.idx': line 6: class 1 "
	    "where class 0 comes next");
	EXPECT_STR(with_line(6, "class\t0\tx\\q\n"), "'t.idx': line 6: class "
	    "name: unknown escape '\\q'");
	EXPECT_STR(with_line(6, "class\t0\tx\\x00\n"), "'t.idx': line 6: class "
	    "name: \\x00: a name holds no NUL");
	EXPECT_STR(with_line(9, "shard\t10\t30720\t1.5\t0b2520cbf4951772\t"
	    "archive\t12\t0,2\ta\n"), "'t.idx': line 9: time '1.5' is not "
	    "SECONDS.NANOSECONDS");
	EXPECT_STR(with_line(9, "shard\t10\t30720\t1.000000000\t0b25\t"
	    "archive\t12\t0,2\ta\n"), "'t.idx': line 9: checksum '0b25' is "
	    "not 16 hex digits");
	EXPECT_STR(with_line(9, "shard\t10\t30720\t1.000000000\t"
	    "0b2520cbf4951772\tarchive\t12\t2,0\ta\n"), "'t.idx': line 9: "
	    "classes: not ascending at 0");
	EXPECT_STR(with_line(9, "shard\t10\t30720\t1.000000000\t"
	    "0b2520cbf4951772\tarchive\t12\t0-3\ta\n"), "'t.idx': line 9: "
	    "classes: 0-3 is not a range of the 3 class lines");
	EXPECT_STR(with_line(9, "shard\t10\t30720\t1.000000000\t"
	    "0b2520cbf4951772\tArch\t12\t0\ta\n"), "'t.idx': line 9: kind "
	    "'Arch' is not a reader's name");
	EXPECT_STR(with_line(9, "shard\t10\t30720\t1.000000000\t"
	    "0b2520cbf4951772\tarchive\t12\t0\t\n"), "'t.idx': line 9: "
	    "empty path");
	EXPECT_STR(with_line(9, "shard\tx\t30720\n"), "'t.idx': line 9: a "
	    "shard line has 9 fields, not 3");
	EXPECT_STR(with_line(9, "shard\t1\t2\t3\t4\t5\t6\t7\t8\t9\t10\n"),
	    "'t.idx': line 9: too many fields");
	EXPECT_STR(with_line(5, "classes\t10\nclasses\t10\n"), "'t.idx': line "
	    "6: 'classes': given twice");
	EXPECT_STR(with_line(5, "labels\t10\n"), "'t.idx': line 5: 'labels': "
	    "not a line of an index");
	EXPECT_STR(with_line(11, "class\t3\tlate\n"), "'t.idx': line 11: a "
	    "class line after the shards");
	EXPECT_STR(with_line(1, "rv-index\t1\t\n"), "'t.idx': line 1: "
	    "version '1\t': not a version");
	EXPECT_STR(with_line(9, "shard\t10\t30720\t-0.500000000\t"
	    "0b2520cbf4951772\tarchive\t12\t0,2\ta\n"), "'t.idx': line 9: "
	    "time '-0.500000000' is not SECONDS.NANOSECONDS");
	EXPECT_STR(with_line(9, "shard\t10\t30720\t1.000000000\t"
	    "0b2520cbf4951772\tarchive\t12\t0,,2\ta\n"), "'t.idx': line 9: "
	    "classes: '0,,2': an empty item");
	EXPECT_STR(with_line(9, "shard\t10\t30720\t1.000000000\t"
	    "0b2520cbf4951772\tarchive\t12\t1,3-x\ta\n"), "'t.idx': line "
	    "9: classes: '3-x' is not a class number or range");
	EXPECT_EQ(rv_index_parse(good, strlen(good) - 1, "t.idx", &ix), -1);
	EXPECT_STR(rv_errmsg(), "'t.idx': cut short (no newline at its end)");
	EXPECT_EQ(rv_index_parse("tar\n", 4, "t.idx", &ix), -1);
	EXPECT_STR(rv_errmsg(), "'t.idx': not an rv index (its first line is "
	    "not 'rv-index<TAB>1')");
}

static void
t_paths(void)
{
	char *p;

	p = rv_index_relative("/d/ix/train.idx", "/d/ix/s/a.tar");
	EXPECT_STR(p, "s/a.tar");
	free(p);
	p = rv_index_relative("/d/ix/train.idx", "/d/shards/./x/../a.tar");
	EXPECT_STR(p, "../shards/a.tar");
	free(p);
	p = rv_index_relative("/d/ixy/t.idx", "/d/ix/a.tar");
	EXPECT_STR(p, "../ix/a.tar");
	free(p);
	p = rv_index_relative("/t.idx", "/a/b.tar");
	EXPECT_STR(p, "a/b.tar");
	free(p);
	p = rv_index_resolve("data/train.idx", "s/a.tar");
	EXPECT_STR(p, "data/s/a.tar");
	free(p);
	p = rv_index_resolve("train.idx", "s/a.tar");
	EXPECT_STR(p, "s/a.tar");
	free(p);
	p = rv_index_resolve("data/train.idx", "/abs/a.tar");
	EXPECT_STR(p, "/abs/a.tar");
	free(p);
	p = rv_index_resolve("/train.idx", "a.tar");
	EXPECT_STR(p, "/a.tar");
	free(p);
	/* resolved lexically: no ".." left where it can go */
	p = rv_index_resolve("/d/ix/train.idx", "../data/./a.tar");
	EXPECT_STR(p, "/d/data/a.tar");
	free(p);
	p = rv_index_resolve("ix/train.idx", "../../up/a.tar");
	EXPECT_STR(p, "../up/a.tar");
	free(p);
	p = rv_index_resolve("/train.idx", "../a.tar");
	EXPECT_STR(p, "/a.tar");
	free(p);
}

static void
t_checksum(void)
{
	char path[] = "/tmp/t_index.XXXXXX";
	static unsigned char buf[20000];
	uint64_t a, b, c;
	int fd = mkstemp(path);

	EXPECT(fd >= 0);
	memset(buf, 7, sizeof(buf));
	EXPECT_EQ(write(fd, buf, sizeof(buf)), (long)sizeof(buf));
	EXPECT_EQ(rv_index_checksum(fd, sizeof(buf), &a), 0);
	/* the middle is not read */
	EXPECT_EQ(pwrite(fd, "x", 1, 10000), 1);
	EXPECT_EQ(rv_index_checksum(fd, sizeof(buf), &b), 0);
	EXPECT_EQ(a, b);
	/* the ends are */
	EXPECT_EQ(pwrite(fd, "x", 1, sizeof(buf) - 1), 1);
	EXPECT_EQ(rv_index_checksum(fd, sizeof(buf), &c), 0);
	EXPECT(c != a);
	/* past the end: an error */
	EXPECT_EQ(rv_index_checksum(fd, sizeof(buf) + 10, &c), -1);
	close(fd);
	unlink(path);
}

int
main(void)
{
	rv_setprogname("t_index");
	RUN(t_roundtrip);
	RUN(t_errors);
	RUN(t_paths);
	RUN(t_checksum);
	return UNIT_DONE();
}
