/*
 * Feedback lines (lib/stream/feedback.c): the strict format both ways, a
 * regular file written and followed, and FIFOs with no reader, a slow
 * reader, a reader that leaves and another that comes back (forked
 * children), and lines split across writes.  The writer must never block
 * and must account for every line: written + dropped + queued == put.
 */
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/err.h"
#include "stream/feedback.h"
#include "unit.h"

static char dir[64];

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
sleep_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

static void
tmp_path(char *buf, size_t cap, const char *name)
{
	snprintf(buf, cap, "%s/%s", dir, name);
}

static struct rv_fb_line
mkline(uint64_t id, uint32_t epoch, uint64_t step, float loss, float gn)
{
	struct rv_fb_line l = { id, epoch, step, loss, gn };

	return l;
}

/* Write all of s to fd (a test's raw writer). */
static void
put_raw(int fd, const char *s)
{
	size_t n = strlen(s);

	EXPECT_EQ(write(fd, s, n), (long long)n);
}

static void
test_format(void)
{
	struct rv_fb_line l = mkline(12, 3, 456, 0.5f, 1.25f), m;
	char buf[RV_FB_LINE_MAX];
	size_t n;

	n = rv_fb_format(&l, buf);
	EXPECT_EQ(n, strlen("12\t3\t456\t0.5\t1.25\n"));
	EXPECT_STR(buf, "12\t3\t456\t0.5\t1.25\n");
	l = mkline(UINT64_MAX, UINT32_MAX, UINT64_MAX, 3.4028235e38f,
	    1.4e-45f);
	n = rv_fb_format(&l, buf);
	EXPECT(n < RV_FB_LINE_MAX);
	EXPECT(buf[n - 1] == '\n');
	EXPECT_EQ(rv_fb_parse(buf, n - 1, &m), 0);
	EXPECT(m.id == UINT64_MAX);
	EXPECT(m.epoch == UINT32_MAX);
	EXPECT(m.step == UINT64_MAX);
	EXPECT(m.loss >= 3.40282e38f);
	EXPECT(m.gradnorm > 0 && m.gradnorm < 1e-44f);
	/* -0 is written as 0 */
	l = mkline(0, 0, 0, -0.0f, 0.0f);
	n = rv_fb_format(&l, buf);
	EXPECT_STR(buf, "0\t0\t0\t0\t0\n");
	/* 6 significant digits, stable once written */
	l = mkline(7, 1, 2, 0.123456789f, 98765.4321f);
	n = rv_fb_format(&l, buf);
	EXPECT_STR(buf, "7\t1\t2\t0.123457\t98765.4\n");
	EXPECT_EQ(rv_fb_parse(buf, n - 1, &m), 0);
	EXPECT(m.loss == 0.123457f && m.gradnorm == 98765.4f);
}

static void
test_parse_ok(void)
{
	static const struct {
		const char *s;
		uint64_t id, step;
		uint32_t epoch;
		float loss, gn;
	} ok[] = {
		{ "0\t0\t0\t0\t0", 0, 0, 0, 0, 0 },
		{ "18446744073709551615\t4294967295\t1\t1e3\t.5",
		    UINT64_MAX, 1, UINT32_MAX, 1000, 0.5f },
		{ "007\t01\t2\t+2.5\t0x1p-2", 7, 2, 1, 2.5f, 0.25f },
		{ "1\t2\t3\t-0\t1e-50", 1, 3, 2, 0, 0 },
		{ "1\t2\t3\t2.\t1E+2", 1, 3, 2, 2, 100 },
	};
	struct rv_fb_line l;
	size_t i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		int rc = rv_fb_parse(ok[i].s, strlen(ok[i].s), &l);

		EXPECT_EQ(rc, 0);
		if (rc < 0) {
			printf("# '%s': %s\n", ok[i].s, rv_errmsg());
			continue;
		}
		EXPECT(l.id == ok[i].id);
		EXPECT(l.epoch == ok[i].epoch);
		EXPECT(l.step == ok[i].step);
		EXPECT(l.loss == ok[i].loss);
		EXPECT(l.gradnorm == ok[i].gn);
		EXPECT(!signbit(l.loss) && !signbit(l.gradnorm));
	}
	/* len, not the NUL, ends the line */
	EXPECT_EQ(rv_fb_parse("1\t2\t3\t4\t5\tjunk", 9, &l), 0);
	EXPECT(l.gradnorm == 5);
}

static void
test_parse_bad(void)
{
	static const struct {
		const char *s, *msg;
	} bad[] = {
		{ "", "empty line" },
		{ "1\t2\t3\t4", "4 tab-separated fields, expected 5" },
		{ "1 2 3 4 5", "1 tab-separated field, expected 5" },
		{ "1\t2\t3\t4\t5\t6", "6 tab-separated fields, expected 5" },
		{ "1\t2\t3\t4\t5\t", "6 tab-separated fields, expected 5" },
		{ "1\t2\t3\t4\t5\r", "carriage return at the end of the line" },
		{ "\t2\t3\t4\t5", "field 1 'id': empty" },
		{ "+1\t2\t3\t4\t5",
		    "field 1 'id': not an unsigned decimal integer" },
		{ "-1\t2\t3\t4\t5",
		    "field 1 'id': not an unsigned decimal integer" },
		{ " 1\t2\t3\t4\t5",
		    "field 1 'id': not an unsigned decimal integer" },
		{ "0x1\t2\t3\t4\t5",
		    "field 1 'id': not an unsigned decimal integer" },
		{ "18446744073709551616\t2\t3\t4\t5",
		    "field 1 'id': out of range" },
		{ "99999999999999999999\t2\t3\t4\t5",
		    "field 1 'id': out of range" },
		{ "1\t4294967296\t3\t4\t5", "field 2 'epoch': out of range" },
		{ "1\t2.0\t3\t4\t5",
		    "field 2 'epoch': not an unsigned decimal integer" },
		{ "1\t\t3\t4\t5", "field 2 'epoch': empty" },
		{ "1\t2\t3x\t4\t5",
		    "field 3 'step': not an unsigned decimal integer" },
		{ "1\t2\t18446744073709551616\t4\t5",
		    "field 3 'step': out of range" },
		{ "1\t2\t3\tx\t5", "field 4 'loss': not a number" },
		{ "1\t2\t3\t\t5", "field 4 'loss': empty" },
		{ "1\t2\t3\t4.5.6\t5", "field 4 'loss': not a number" },
		{ "1\t2\t3\t 4\t5", "field 4 'loss': not a number" },
		{ "1\t2\t3\t4 \t5", "field 4 'loss': not a number" },
		{ "1\t2\t3\tnan\t5", "field 4 'loss': not finite" },
		{ "1\t2\t3\tinf\t5", "field 4 'loss': not finite" },
		{ "1\t2\t3\t1e39\t5", "field 4 'loss': out of range" },
		{ "1\t2\t3\t-1\t5", "field 4 'loss': negative" },
		{ "1\t2\t3\t4\t-0.5", "field 5 'gradnorm': negative" },
		{ "1\t2\t3\t4\tNaN", "field 5 'gradnorm': not finite" },
		{ "1\t2\t3\t4\t-inf", "field 5 'gradnorm': not finite" },
		{ "1\t2\t3\t4\t", "field 5 'gradnorm': empty" },
		{ "1\t2\t3\t4\t5e", "field 5 'gradnorm': not a number" },
	};
	struct rv_fb_line l = mkline(9, 9, 9, 9, 9);
	char longl[300];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = rv_fb_parse(bad[i].s, strlen(bad[i].s), &l);

		EXPECT_EQ(rc, -1);
		if (rc == -1 && strcmp(rv_errmsg(), bad[i].msg) != 0)
			printf("# '%s'\n", bad[i].s);
		EXPECT_STR(rv_errmsg(), bad[i].msg);
	}
	/* a NUL inside a field */
	EXPECT_EQ(rv_fb_parse("1\t2\t3\t4\0\t5", 10, &l), -1);
	EXPECT_STR(rv_errmsg(), "field 4 'loss': not a number");
	EXPECT_EQ(rv_fb_parse("1\0\t2\t3\t4\t5", 10, &l), -1);
	EXPECT_STR(rv_errmsg(),
	    "field 1 'id': not an unsigned decimal integer");
	/* RV_FB_LINE_MAX counts the LF: 127 bytes is the longest line */
	memset(longl, '0', sizeof(longl));
	memcpy(longl, "1\t2\t3\t4\t", 8);
	EXPECT_EQ(rv_fb_parse(longl, RV_FB_LINE_MAX - 1, &l), 0);
	EXPECT_EQ(rv_fb_parse(longl, RV_FB_LINE_MAX, &l), -1);
	EXPECT_STR(rv_errmsg(), "line too long");
	EXPECT_EQ(rv_fb_parse(longl, sizeof(longl), &l), -1);
	/* a failed parse leaves *l alone */
	EXPECT(l.id == 1 && l.loss == 4);
}

static void
test_file_roundtrip(void)
{
	struct rv_fb_line out[64];
	struct rv_fb_writer *w;
	struct rv_fb_reader *r;
	char path[128];
	uint64_t got = 0, wr, dr;
	int i, k, fd, bad = 0;

	tmp_path(path, sizeof(path), "fb.tsv");
	/* an existing file is truncated */
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0666);
	put_raw(fd, "junk\n");
	close(fd);
	w = rv_fb_writer_open(path, 16);
	EXPECT(w != NULL);
	if (!w)
		return;
	for (i = 0; i < 1000; i++) {
		struct rv_fb_line l = mkline((uint64_t)i * 7919, (uint32_t)i /
		    100, (uint64_t)i, (float)i / 8, (float)i * 0.25f);

		rv_fb_put(w, &l);
	}
	EXPECT_EQ(rv_fb_flush(w), 0);
	EXPECT_EQ(rv_fb_written(w), 1000);
	EXPECT_EQ(rv_fb_dropped(w), 0);
	EXPECT_EQ(rv_fb_queued(w), 0);

	r = rv_fb_reader_open(path);
	EXPECT(r != NULL);
	if (!r) {
		rv_fb_writer_close(w, 0, NULL, NULL);
		return;
	}
	while ((k = rv_fb_poll(r, out, 64)) > 0) {
		EXPECT(k <= 64);
		for (i = 0; i < k; i++, got++)
			if (out[i].id != got * 7919 || out[i].step != got ||
			    out[i].epoch != got / 100 ||
			    out[i].loss != (float)got / 8 ||
			    out[i].gradnorm != (float)got * 0.25f)
				bad++;
	}
	EXPECT_EQ(k, 0);
	EXPECT_EQ(got, 1000);
	EXPECT_EQ(bad, 0);
	EXPECT_EQ(rv_fb_lines(r), 1000);
	EXPECT_EQ(rv_fb_reader_eof(r), 1);

	/* a running trainer appends: the reader follows */
	for (i = 0; i < 5; i++) {
		struct rv_fb_line l = mkline(5000 + i, 9, 0, 1, 2);

		rv_fb_put(w, &l);
	}
	EXPECT_EQ(rv_fb_poll(r, out, 3), 3);
	EXPECT(out[0].id == 5000 && out[2].id == 5002);
	EXPECT_EQ(rv_fb_reader_eof(r), 0);
	EXPECT_EQ(rv_fb_poll(r, out, 64), 2);
	EXPECT(out[1].id == 5004);
	EXPECT_EQ(rv_fb_poll(r, out, 64), 0);
	EXPECT_EQ(rv_fb_reader_eof(r), 1);
	EXPECT_EQ(rv_fb_lines(r), 1005);
	EXPECT_EQ(rv_fb_writer_close(w, 100, &wr, &dr), 0);
	EXPECT_EQ(wr, 1005);
	EXPECT_EQ(dr, 0);
	rv_fb_reader_close(r);
	unlink(path);
}

/* Bad lines in a file: reported once each, numbered, between good ones. */
static void
test_file_errors(void)
{
	struct rv_fb_line out[8];
	struct rv_fb_reader *r;
	char path[128], longl[301];
	int fd;

	tmp_path(path, sizeof(path), "bad.tsv");
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0666);
	memset(longl, 'x', 300);
	longl[300] = '\0';
	put_raw(fd, "1\t0\t0\t1\t1\n2\t0\t0\tnan\t1\n3\t0\t0\t1\t1\n");
	put_raw(fd, longl);
	put_raw(fd, "\n4\t0\t0\t1\t1\n5\t0\t0\t1\t1\n6\t0\t0");
	r = rv_fb_reader_open(path);
	EXPECT(r != NULL);
	if (!r) {
		close(fd);
		return;
	}
	/* the good line before a bad one comes out first, alone */
	EXPECT_EQ(rv_fb_poll(r, out, 8), 1);
	EXPECT(out[0].id == 1);
	EXPECT_EQ(rv_fb_poll(r, out, 8), -1);
	EXPECT(strstr(rv_errmsg(), "/bad.tsv': line 2: field 4 'loss': "
	    "not finite") != NULL);
	EXPECT(rv_errmsg()[0] == '\'');
	EXPECT_EQ(rv_fb_poll(r, out, 8), 1);
	EXPECT(out[0].id == 3);
	EXPECT_EQ(rv_fb_poll(r, out, 8), -1);
	EXPECT(strstr(rv_errmsg(), "': line 4: line too long") != NULL);
	EXPECT_EQ(rv_fb_poll(r, out, 8), 2);
	EXPECT(out[0].id == 4 && out[1].id == 5);
	/* the unfinished last line waits for the rest */
	EXPECT_EQ(rv_fb_poll(r, out, 8), 0);
	EXPECT_EQ(rv_fb_reader_eof(r), 1);
	put_raw(fd, "\t2.5\t0.75\n");
	EXPECT_EQ(rv_fb_poll(r, out, 8), 1);
	EXPECT(out[0].id == 6 && out[0].loss == 2.5f);
	EXPECT_EQ(rv_fb_lines(r), 5);
	/* numbering goes on after the errors */
	put_raw(fd, "7\n");
	EXPECT_EQ(rv_fb_poll(r, out, 8), -1);
	EXPECT(strstr(rv_errmsg(), "': line 8: 1 tab-separated field, "
	    "expected 5") != NULL);
	close(fd);
	rv_fb_reader_close(r);
	unlink(path);
}

static void
test_open_errors(void)
{
	uint64_t wr = 1, dr = 1;
	char path[128];

	tmp_path(path, sizeof(path), "no/such/file");
	EXPECT(rv_fb_writer_open(path, 8) == NULL);
	EXPECT(strstr(rv_errmsg(), "/no/such/file': No such file") != NULL);
	EXPECT(rv_fb_reader_open(path) == NULL);
	EXPECT(strstr(rv_errmsg(), "/no/such/file': No such file") != NULL);
	EXPECT(rv_fb_writer_open(dir, 8) == NULL);
	EXPECT(strstr(rv_errmsg(), "': Is a directory") != NULL);
	EXPECT(rv_fb_reader_open(dir) == NULL);
	EXPECT(strstr(rv_errmsg(), "': is a directory") != NULL);
	tmp_path(path, sizeof(path), "q0");
	EXPECT(rv_fb_writer_open(path, 0) == NULL);
	EXPECT(strstr(rv_errmsg(), "bad feedback queue length 0") != NULL);
	EXPECT(access(path, F_OK) < 0);
	EXPECT_EQ(rv_fb_writer_close(NULL, 10, &wr, &dr), 0);
	EXPECT_EQ(wr, 0);
	EXPECT_EQ(dr, 0);
	rv_fb_reader_close(NULL);
}

/* A write error on a file is reported by flush and again by close. */
static void
test_write_error(void)
{
	struct rv_fb_line l = mkline(1, 2, 3, 4, 5);
	struct rv_fb_writer *w;
	uint64_t wr, dr;

	if (access("/dev/full", W_OK) < 0) {
		printf("# no /dev/full: skipped\n");
		return;
	}
	w = rv_fb_writer_open("/dev/full", 4);
	EXPECT(w != NULL);
	if (!w)
		return;
	rv_fb_put(w, &l);
	EXPECT_EQ(rv_fb_queued(w), 1);
	EXPECT_EQ(rv_fb_flush(w), -1);
	EXPECT_STR(rv_errmsg(), "'/dev/full': write: No space left on device");
	rv_seterr("something else");
	EXPECT_EQ(rv_fb_writer_close(w, 20, &wr, &dr), -1);
	EXPECT_EQ(wr, 0);
	EXPECT_EQ(dr, 1);
	EXPECT_STR(rv_errmsg(), "'/dev/full': write: No space left on device");
}

#define CHK(c) do { \
	if (!(c)) { \
		printf("# %s:%d: in child: expected %s\n", __FILE__, \
		    __LINE__, #c); \
		fflush(stdout); \
		_exit(1); \
	} \
} while (0)

/*
 * A write that stops inside a line (here at RLIMIT_FSIZE, in a child):
 * the rest of that line goes out first when writing works again, so the
 * file holds whole lines only, exactly those counted written.
 */
static void
partial_child(const char *path)
{
	struct rv_fb_line out[16];
	struct rv_fb_writer *w;
	struct rv_fb_reader *r;
	struct rlimit rl;
	uint64_t i, wr, dr;

	signal(SIGXFSZ, SIG_IGN);
	CHK(getrlimit(RLIMIT_FSIZE, &rl) == 0);
	rl.rlim_cur = 25;	/* two lines of 10 bytes and half a third */
	CHK(setrlimit(RLIMIT_FSIZE, &rl) == 0);
	CHK((w = rv_fb_writer_open(path, 4)) != NULL);
	for (i = 0; i < 8; i++) {
		struct rv_fb_line l = mkline(i, 0, 0, 1, 1);

		rv_fb_put(w, &l);
		CHK(rv_fb_written(w) + rv_fb_dropped(w) + rv_fb_queued(w) ==
		    i + 1);
	}
	CHK(rv_fb_written(w) == 2);
	/* the half-written line, apart, and a full queue: one dropped */
	CHK(rv_fb_queued(w) == 5 && rv_fb_dropped(w) == 1);
	CHK(rv_fb_flush(w) == -1);
	CHK(strstr(rv_errmsg(), "write: File too large") != NULL);
	rl.rlim_cur = rl.rlim_max;
	CHK(setrlimit(RLIMIT_FSIZE, &rl) == 0);
	CHK(rv_fb_flush(w) == 0);
	CHK(rv_fb_written(w) == 7 && rv_fb_queued(w) == 0);
	/* the error is kept for close */
	CHK(rv_fb_writer_close(w, 0, &wr, &dr) == -1);
	CHK(strstr(rv_errmsg(), "write: File too large") != NULL);
	CHK(wr == 7 && dr == 1);
	CHK((r = rv_fb_reader_open(path)) != NULL);
	CHK(rv_fb_poll(r, out, 16) == 7);
	CHK(out[0].id == 0 && out[1].id == 1 && out[2].id == 2);
	/* id 3 was the oldest queued whole line when the queue overflowed */
	CHK(out[3].id == 4 && out[6].id == 7);
	CHK(rv_fb_poll(r, out, 16) == 0 && rv_fb_reader_eof(r));
	rv_fb_reader_close(r);
	_exit(0);
}

static void
test_file_partial_write(void)
{
	char path[128];
	pid_t pid;
	int st;

	tmp_path(path, sizeof(path), "partial.tsv");
	fflush(stdout);
	if ((pid = fork()) == 0)
		partial_child(path);
	EXPECT(pid > 0);
	EXPECT_EQ(waitpid(pid, &st, 0), pid);
	EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	unlink(path);
}

/* No reader: opening succeeds, puts return at once, the queue is bounded. */
static void
test_fifo_no_reader(void)
{
	struct rv_fb_writer *w;
	char path[128];
	double t0, dt;
	uint64_t i, wr, dr;

	tmp_path(path, sizeof(path), "noreader");
	EXPECT_EQ(mkfifo(path, 0600), 0);
	t0 = now_s();
	w = rv_fb_writer_open(path, 1024);
	EXPECT(w != NULL);
	if (!w)
		return;
	for (i = 0; i < 100000; i++) {
		struct rv_fb_line l = mkline(i, 0, i, 1, 1);

		rv_fb_put(w, &l);
	}
	dt = now_s() - t0;
	EXPECT(dt < 1.0);
	EXPECT_EQ(rv_fb_written(w), 0);
	EXPECT_EQ(rv_fb_queued(w), 1024);
	EXPECT_EQ(rv_fb_dropped(w), 100000 - 1024);
	EXPECT_EQ(rv_fb_flush(w), 0);
	t0 = now_s();
	EXPECT_EQ(rv_fb_writer_close(w, 30, &wr, &dr), 0);
	dt = now_s() - t0;
	EXPECT_EQ(wr, 0);
	EXPECT_EQ(dr, 100000);
	EXPECT(dt >= 0.025 && dt < 0.5);
	unlink(path);
}

/* An empty FIFO, with no writer or with a silent one, polls 0 at once. */
static void
test_fifo_empty_poll(void)
{
	struct rv_fb_line out[4];
	struct rv_fb_reader *r;
	char path[128];
	double t0;
	int fd;

	tmp_path(path, sizeof(path), "empty");
	EXPECT_EQ(mkfifo(path, 0600), 0);
	t0 = now_s();
	r = rv_fb_reader_open(path);
	EXPECT(r != NULL);
	if (!r)
		return;
	EXPECT_EQ(rv_fb_poll(r, out, 4), 0);
	fd = open(path, O_WRONLY | O_NONBLOCK);
	EXPECT(fd >= 0);
	EXPECT_EQ(rv_fb_poll(r, out, 4), 0);
	EXPECT_EQ(rv_fb_reader_eof(r), 0);
	EXPECT(now_s() - t0 < 0.05);
	close(fd);
	EXPECT_EQ(rv_fb_poll(r, out, 4), 0);
	EXPECT_EQ(rv_fb_reader_eof(r), 0);
	rv_fb_reader_close(r);
	unlink(path);
}

/*
 * Lines split across writes are reassembled; when the writer closes, the
 * same reader fd sees the next writer's data (Linux keeps the pipe while
 * a reader holds it); a writer that leaves in mid-line is reported and
 * its fragment is not glued to the next writer's first line.
 */
static void
test_fifo_split_and_writers(void)
{
	struct rv_fb_line out[8];
	struct rv_fb_reader *r;
	char path[128], xs[101];
	int fd;

	tmp_path(path, sizeof(path), "split");
	EXPECT_EQ(mkfifo(path, 0600), 0);
	r = rv_fb_reader_open(path);
	EXPECT(r != NULL);
	if (!r)
		return;
	/* no writer yet: nobody has left */
	EXPECT_EQ(rv_fb_poll(r, out, 8), 0);
	EXPECT_EQ(rv_fb_reader_connected(r), 0);
	EXPECT_EQ(rv_fb_reader_left(r), 0);
	fd = open(path, O_WRONLY | O_NONBLOCK);
	EXPECT(fd >= 0);
	put_raw(fd, "12\t1\t");
	EXPECT_EQ(rv_fb_poll(r, out, 8), 0);
	EXPECT_EQ(rv_fb_reader_connected(r), 1);
	put_raw(fd, "5\t0.5");
	EXPECT_EQ(rv_fb_poll(r, out, 8), 0);
	put_raw(fd, "\t1.25\n13\t1\t6\t2\t3\n14");
	EXPECT_EQ(rv_fb_poll(r, out, 8), 2);
	EXPECT(out[0].id == 12 && out[0].epoch == 1 && out[0].step == 5 &&
	    out[0].loss == 0.5f && out[0].gradnorm == 1.25f);
	EXPECT(out[1].id == 13 && out[1].gradnorm == 3);
	put_raw(fd, "\t1\t7\t0\t0\n");
	EXPECT_EQ(rv_fb_poll(r, out, 8), 1);
	EXPECT(out[0].id == 14);
	close(fd);
	EXPECT_EQ(rv_fb_poll(r, out, 8), 0);
	/* the first writer left, once */
	EXPECT_EQ(rv_fb_reader_connected(r), 0);
	EXPECT_EQ(rv_fb_reader_left(r), 1);
	EXPECT_EQ(rv_fb_poll(r, out, 8), 0);
	EXPECT_EQ(rv_fb_reader_left(r), 1);

	/* a new writer, the same reader fd */
	fd = open(path, O_WRONLY | O_NONBLOCK);
	EXPECT(fd >= 0);
	put_raw(fd, "15\t2\t8\t1\t1\n");
	EXPECT_EQ(rv_fb_poll(r, out, 8), 1);
	EXPECT(out[0].id == 15 && out[0].epoch == 2);
	/* it leaves in mid-line */
	put_raw(fd, "16\t2\t9\t1\t1\n99\t2");
	close(fd);
	EXPECT_EQ(rv_fb_poll(r, out, 8), 1);
	EXPECT(out[0].id == 16);
	EXPECT_EQ(rv_fb_poll(r, out, 8), -1);
	EXPECT(strstr(rv_errmsg(), "/split': line 6: no newline before the "
	    "writer closed the FIFO") != NULL);
	fd = open(path, O_WRONLY | O_NONBLOCK);
	EXPECT(fd >= 0);
	put_raw(fd, "17\t3\t10\t1\t1\n");
	EXPECT_EQ(rv_fb_poll(r, out, 8), 1);
	EXPECT(out[0].id == 17 && out[0].epoch == 3);

	/* an over-long line that arrives in pieces is reported once */
	memset(xs, 'x', 100);
	xs[100] = '\0';
	put_raw(fd, xs);
	EXPECT_EQ(rv_fb_poll(r, out, 8), 0);
	put_raw(fd, xs);
	EXPECT_EQ(rv_fb_poll(r, out, 8), -1);
	EXPECT(strstr(rv_errmsg(), "': line 8: line too long") != NULL);
	put_raw(fd, xs);
	EXPECT_EQ(rv_fb_poll(r, out, 8), 0);
	put_raw(fd, "xx\n18\t3\t11\t1\t1\n");
	EXPECT_EQ(rv_fb_poll(r, out, 8), 1);
	EXPECT(out[0].id == 18);
	/* and one whose writer leaves is over with it */
	put_raw(fd, xs);
	put_raw(fd, xs);
	EXPECT_EQ(rv_fb_poll(r, out, 8), -1);
	EXPECT(strstr(rv_errmsg(), "': line 10: line too long") != NULL);
	close(fd);
	EXPECT_EQ(rv_fb_poll(r, out, 8), 0);
	fd = open(path, O_WRONLY | O_NONBLOCK);
	EXPECT(fd >= 0);
	put_raw(fd, "19\t3\t12\t1\t1\n");
	EXPECT_EQ(rv_fb_poll(r, out, 8), 1);
	EXPECT(out[0].id == 19);
	EXPECT_EQ(rv_fb_lines(r), 8);
	/* writers 1 to 3 came with bytes and left; 4 is here */
	EXPECT_EQ(rv_fb_reader_left(r), 3);
	EXPECT_EQ(rv_fb_reader_connected(r), 1);
	close(fd);
	rv_fb_reader_close(r);
	unlink(path);
}

/*
 * EPIPE: the reader leaves; the lines of the failed write stay queued and
 * go to the next reader once the writer reopens (RV_FB_REOPEN_MS later).
 */
static void
test_fifo_epipe_requeue(void)
{
	struct rv_fb_line out[8];
	struct rv_fb_writer *w;
	struct rv_fb_reader *r;
	char path[128];
	uint64_t i;

	tmp_path(path, sizeof(path), "epipe");
	EXPECT_EQ(mkfifo(path, 0600), 0);
	r = rv_fb_reader_open(path);
	w = rv_fb_writer_open(path, 8);
	EXPECT(r != NULL && w != NULL);
	if (!r || !w)
		return;
	rv_fb_reader_close(r);
	for (i = 0; i < 3; i++) {
		struct rv_fb_line l = mkline(i, 0, i, 1, 1);

		rv_fb_put(w, &l);
	}
	EXPECT_EQ(rv_fb_written(w), 0);
	EXPECT_EQ(rv_fb_queued(w), 3);
	EXPECT_EQ(rv_fb_dropped(w), 0);
	r = rv_fb_reader_open(path);
	EXPECT(r != NULL);
	if (!r)
		return;
	{
		struct rv_fb_line l = mkline(3, 0, 3, 1, 1);

		rv_fb_put(w, &l);
	}
	/* too early to reopen */
	EXPECT_EQ(rv_fb_queued(w), 4);
	sleep_us((RV_FB_REOPEN_MS + 10) * 1000L);
	EXPECT_EQ(rv_fb_flush(w), 0);
	EXPECT_EQ(rv_fb_written(w), 4);
	EXPECT_EQ(rv_fb_queued(w), 0);
	EXPECT_EQ(rv_fb_poll(r, out, 8), 4);
	for (i = 0; i < 4; i++)
		EXPECT(out[i].id == i);
	EXPECT_EQ(rv_fb_writer_close(w, 0, NULL, NULL), 0);
	rv_fb_reader_close(r);
	unlink(path);
}

/* What a reader child reports through its result pipe. */
struct child_res {
	uint64_t lines, errors, disorder, last_id;
	int saw_end;
};

struct child_cfg {
	uint64_t stop_after;	/* leave after this many lines (0: never) */
	int slow_ms;		/* first read 5 lines every 2 ms */
	int deadline_ms;
};

/* A line with this epoch is the writer's last. */
#define END_EPOCH	7

static void
reader_child(const char *path, const struct child_cfg *c, int ready,
    int result)
{
	struct rv_fb_line out[1000];
	struct child_res res = { 0, 0, 0, 0, 0 };
	struct rv_fb_reader *r;
	double t0 = now_s(), el;
	int k, i;

	r = rv_fb_reader_open(path);
	if (!r)
		_exit(3);
	if (write(ready, "r", 1) != 1)
		_exit(3);
	while ((el = (now_s() - t0) * 1000) < c->deadline_ms) {
		int slow = el < c->slow_ms, max = slow ? 5 : 1000;

		if (c->stop_after && c->stop_after - res.lines < (uint64_t)max)
			max = (int)(c->stop_after - res.lines);
		k = rv_fb_poll(r, out, max);
		if (k < 0)
			res.errors++;
		for (i = 0; i < k; i++) {
			if (res.lines > 0 && out[i].id <= res.last_id)
				res.disorder++;
			res.last_id = out[i].id;
			res.lines++;
			if (out[i].epoch == END_EPOCH)
				res.saw_end = 1;
		}
		if (res.saw_end ||
		    (c->stop_after && res.lines >= c->stop_after))
			break;
		if (slow)
			sleep_us(2000);
		else if (k == 0)
			sleep_us(200);
	}
	rv_fb_reader_close(r);
	if (write(result, &res, sizeof(res)) != (ssize_t)sizeof(res))
		_exit(3);
	_exit(0);
}

struct child {
	pid_t pid;
	int result;
};

/* Fork a reader and wait until it has the FIFO open. */
static int
start_child(struct child *ch, const char *path, const struct child_cfg *c)
{
	int rp[2], res[2];
	char b;

	if (pipe(rp) < 0 || pipe(res) < 0)
		return -1;
	fflush(stdout);
	ch->pid = fork();
	if (ch->pid < 0)
		return -1;
	if (ch->pid == 0) {
		close(rp[0]);
		close(res[0]);
		reader_child(path, c, rp[1], res[1]);
	}
	close(rp[1]);
	close(res[1]);
	ch->result = res[0];
	if (read(rp[0], &b, 1) != 1) {
		close(rp[0]);
		return -1;
	}
	close(rp[0]);
	return 0;
}

static int
end_child(struct child *ch, struct child_res *res)
{
	int st, ok;

	ok = read(ch->result, res, sizeof(*res)) == (ssize_t)sizeof(*res);
	close(ch->result);
	if (waitpid(ch->pid, &st, 0) != ch->pid || !WIFEXITED(st) ||
	    WEXITSTATUS(st) != 0)
		ok = 0;
	return ok ? 0 : -1;
}

/* Flush until the queue is empty or ms pass; 1 if it emptied. */
static int
drain(struct rv_fb_writer *w, int ms)
{
	double end = now_s() + ms / 1000.0;

	while (rv_fb_queued(w) > 0 && now_s() < end) {
		rv_fb_flush(w);
		sleep_us(500);
	}
	return rv_fb_queued(w) == 0;
}

/*
 * A slow reader: puts never wait for it, every line is accounted for, and
 * what was written is exactly what the reader got, whole and in order.
 */
static void
test_fifo_slow_reader(void)
{
	const struct child_cfg cfg = { 0, 100, 900 };
	const uint64_t n = 50000;
	struct rv_fb_writer *w;
	struct child_res res;
	struct child ch;
	char path[128];
	double t0, worst = 0, dt;
	uint64_t i, acct_bad = 0, wr, dr;

	tmp_path(path, sizeof(path), "slow");
	EXPECT_EQ(mkfifo(path, 0600), 0);
	if (start_child(&ch, path, &cfg) < 0) {
		EXPECT(!"fork");
		return;
	}
	w = rv_fb_writer_open(path, 256);
	EXPECT(w != NULL);
	if (!w)
		return;
	t0 = now_s();
	for (i = 0; i < n; i++) {
		struct rv_fb_line l = mkline(i, i + 1 == n ? END_EPOCH : 1, i,
		    (float)i, 0.5f);
		double t = now_s();

		rv_fb_put(w, &l);
		if ((dt = now_s() - t) > worst)
			worst = dt;
		if (rv_fb_written(w) + rv_fb_dropped(w) + rv_fb_queued(w) !=
		    i + 1)
			acct_bad++;
	}
	dt = now_s() - t0;
	EXPECT(dt < 1.0);
	EXPECT(worst < 0.1);
	EXPECT_EQ(acct_bad, 0);
	EXPECT(rv_fb_dropped(w) > 0);
	EXPECT(rv_fb_queued(w) <= 256);
	EXPECT(drain(w, 700));
	EXPECT_EQ(rv_fb_written(w) + rv_fb_dropped(w), n);
	EXPECT_EQ(end_child(&ch, &res), 0);
	EXPECT_EQ(res.errors, 0);
	EXPECT_EQ(res.disorder, 0);
	EXPECT_EQ(res.saw_end, 1);
	EXPECT_EQ(res.last_id, n - 1);
	EXPECT_EQ(res.lines, rv_fb_written(w));
	EXPECT_EQ(rv_fb_writer_close(w, 0, &wr, &dr), 0);
	EXPECT_EQ(wr, res.lines);
	EXPECT_EQ(wr + dr, n);
	unlink(path);
}

/*
 * A reader that leaves mid-run (the writer sees EPIPE) and another that
 * comes later: training goes on, and the second reader gets whole lines
 * only, in order, up to the last one.
 */
static void
test_fifo_reader_returns(void)
{
	const struct child_cfg c1 = { 10, 0, 500 }, c2 = { 0, 0, 900 };
	struct child_res r1, r2;
	struct rv_fb_writer *w;
	struct child ch1, ch2;
	char path[128];
	double t0, el;
	uint64_t i = 0;
	int second = 0;

	tmp_path(path, sizeof(path), "returns");
	EXPECT_EQ(mkfifo(path, 0600), 0);
	if (start_child(&ch1, path, &c1) < 0) {
		EXPECT(!"fork");
		return;
	}
	w = rv_fb_writer_open(path, 512);
	EXPECT(w != NULL);
	if (!w)
		return;
	t0 = now_s();
	while ((el = now_s() - t0) < 0.45) {
		struct rv_fb_line l = mkline(i, 1, i, 1, 2);

		if (!second && el > 0.1) {
			EXPECT_EQ(end_child(&ch1, &r1), 0);
			if (start_child(&ch2, path, &c2) < 0) {
				EXPECT(!"fork");
				break;
			}
			second = 1;
		}
		rv_fb_put(w, &l);
		i++;
		sleep_us(100);
	}
	{
		struct rv_fb_line l = mkline(i++, END_EPOCH, 0, 1, 2);

		rv_fb_put(w, &l);
	}
	EXPECT(drain(w, 400));
	EXPECT_EQ(rv_fb_written(w) + rv_fb_dropped(w) + rv_fb_queued(w), i);
	EXPECT_EQ(rv_fb_writer_close(w, 0, NULL, NULL), 0);
	EXPECT_EQ(second, 1);
	if (!second)
		return;
	EXPECT_EQ(r1.lines, 10);
	EXPECT_EQ(r1.errors, 0);
	EXPECT_EQ(end_child(&ch2, &r2), 0);
	EXPECT_EQ(r2.errors, 0);
	EXPECT_EQ(r2.disorder, 0);
	EXPECT(r2.lines > 0);
	EXPECT_EQ(r2.saw_end, 1);
	EXPECT_EQ(r2.last_id, i - 1);
	unlink(path);
}

/* Every test removed what it made: the directory is empty. */
static void
test_cleanup(void)
{
	EXPECT_EQ(rmdir(dir), 0);
}

int
main(void)
{
	/* as rv-train-gpu does: a reader that leaves is EPIPE, not death */
	signal(SIGPIPE, SIG_IGN);
	snprintf(dir, sizeof(dir), "/tmp/t_feedback.XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(test_format);
	RUN(test_parse_ok);
	RUN(test_parse_bad);
	RUN(test_file_roundtrip);
	RUN(test_file_errors);
	RUN(test_open_errors);
	RUN(test_write_error);
	RUN(test_file_partial_write);
	RUN(test_fifo_no_reader);
	RUN(test_fifo_empty_poll);
	RUN(test_fifo_split_and_writers);
	RUN(test_fifo_epipe_requeue);
	RUN(test_fifo_slow_reader);
	RUN(test_fifo_reader_returns);
	RUN(test_cleanup);
	return UNIT_DONE();
}
