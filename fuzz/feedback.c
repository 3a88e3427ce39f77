/*
 * libFuzzer harness for the feedback reader (lib/stream/feedback.c): arbitrary
 * bytes as one line for rv_fb_parse, and as a regular file for
 * rv_fb_reader_open/rv_fb_poll, whose lines and errors must be exactly
 * those of a plain split on LF (the oracle below), whatever the poll size.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "stream/feedback.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	rv_setprogname("fuzz-feedback");
	return 0;
}

static int
same(const struct rv_fb_line *a, const struct rv_fb_line *b)
{
	return a->id == b->id && a->epoch == b->epoch && a->step == b->step &&
	    a->loss == b->loss && a->gradnorm == b->gradnorm;
}

/* A parsed line is in range and its written form reads back stably. */
static void
check_line(const struct rv_fb_line *l)
{
	char t1[RV_FB_LINE_MAX], t2[RV_FB_LINE_MAX];
	struct rv_fb_line m, m2;
	size_t n1, n2;

	if (!isfinite(l->loss) || !isfinite(l->gradnorm) || l->loss < 0 ||
	    l->gradnorm < 0 || signbit(l->loss) || signbit(l->gradnorm))
		abort();
	n1 = rv_fb_format(l, t1);
	if (n1 < 10 || n1 >= RV_FB_LINE_MAX || t1[n1 - 1] != '\n' ||
	    memchr(t1, '\n', n1 - 1) != NULL)
		abort();
	if (rv_fb_parse(t1, n1 - 1, &m) < 0)
		abort();
	if (m.id != l->id || m.epoch != l->epoch || m.step != l->step)
		abort();
	/* %.6g keeps FLT_DIG digits: one round fixes the text */
	n2 = rv_fb_format(&m, t2);
	if (n1 != n2 || memcmp(t1, t2, n1) != 0)
		abort();
	if (rv_fb_parse(t2, n2 - 1, &m2) < 0 || !same(&m, &m2))
		abort();
}

/* Expected results of reading buf: the good lines and the error count. */
struct oracle {
	struct rv_fb_line *good;
	size_t ngood, nerr;
};

static void
oracle(const uint8_t *buf, size_t size, struct oracle *o)
{
	size_t start = 0, i;
	struct rv_fb_line l;

	o->ngood = o->nerr = 0;
	for (i = 0; i < size; i++) {
		if (buf[i] != '\n')
			continue;
		if (rv_fb_parse((const char *)buf + start, i - start, &l) == 0)
			o->good[o->ngood++] = l;
		else
			o->nerr++;
		start = i + 1;
	}
	/* an unfinished last line is an error only once it is too long */
	if (size - start >= RV_FB_LINE_MAX)
		o->nerr++;
}

static void
check_reader(const uint8_t *data, size_t size, int max)
{
	struct rv_fb_line out[16];
	struct rv_fb_reader *r;
	struct oracle o;
	char path[] = "/tmp/fuzz-feedback.XXXXXX";
	size_t ngood = 0, nerr = 0, polls = 0, i;
	unsigned long long lineno, last = 0;
	const char *e, *p;
	int fd, k;

	o.good = malloc((size / 2 + 1) * sizeof(*o.good));
	if (!o.good)
		abort();
	oracle(data, size, &o);
	if ((fd = mkstemp(path)) < 0)
		abort();
	if (size > 0 && write(fd, data, size) != (ssize_t)size)
		abort();
	close(fd);
	if (!(r = rv_fb_reader_open(path)))
		abort();
	for (;;) {
		if (++polls > size + 4)	/* each poll makes progress */
			abort();
		k = rv_fb_poll(r, out, max);
		if (k < 0) {
			/* "'PATH': line N: reason", N rising */
			e = rv_errmsg();
			if (e[0] != '\'' || strncmp(e + 1, path,
			    strlen(path)) != 0)
				abort();
			p = e + 1 + strlen(path);
			if (sscanf(p, "': line %llu: ", &lineno) != 1 ||
			    lineno <= last || strstr(p, ": ") == NULL)
				abort();
			last = lineno;
			nerr++;
			continue;
		}
		if (k > max)
			abort();
		for (i = 0; i < (size_t)k; i++) {
			if (ngood >= o.ngood || !same(&out[i], &o.good[ngood]))
				abort();
			if (ngood < 16)	/* the rest are parsed alike */
				check_line(&out[i]);
			ngood++;
		}
		if (k == 0) {
			if (!rv_fb_reader_eof(r))
				abort();
			break;
		}
	}
	if (ngood != o.ngood || nerr != o.nerr ||
	    rv_fb_lines(r) != ngood)
		abort();
	/* at the end, polling again finds nothing and stays at the end */
	if (rv_fb_poll(r, out, max) != 0 || !rv_fb_reader_eof(r))
		abort();
	rv_fb_reader_close(r);
	unlink(path);
	free(o.good);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rv_fb_line l;
	int max;

	if (size < 1)
		return 0;
	/* byte 0: lines per poll, 1 to 16 */
	max = 1 + (data[0] & 15);
	data++;
	size--;
	if (rv_fb_parse((const char *)data, size, &l) == 0)
		check_line(&l);
	else if (rv_errmsg()[0] == '\0')
		abort();
	check_reader(data, size, max);
	return 0;
}
