/*
 * augment_ops: the rv side of bench/augment.sh.  Decodes the given JPEGs
 * with rv_codec_decode, makes the input pools (as decoded, or resized and
 * centre-cropped to N x N by rv's own ops), then times rv_spec_apply of
 * every case of the case table on one reused ctx, one thread, and checks
 * that every registered op (rv_ops()) has a case.
 *
 * usage: augment_ops [-r REPEAT] [-t MS] [-R MS] CASES file ...
 *   CASES  the table: GROUP<TAB>NAME<TAB>INPUT<TAB>RV SPEC<TAB>TV EXPR per
 *          line ('#' comments); GROUP is op or recipe, INPUT is full or N
 *          (a trailing 't' concerns the Python side only)
 *   -r     timed repeats per case (default 5)
 *   -t     CPU milliseconds per repeat of an op case (default 25)
 *   -R     CPU milliseconds per repeat of a recipe case (default 150)
 * Each call copies a pool image into the working image first (ops work in
 * place).  Op rows report the call minus that copy, timed alone on the
 * same pool just before; recipe rows keep it.  Prints, tab-separated, one
 * line per repeat (the caller takes the median):
 *   GROUP NAME INPUT US WALL_US COPY_US CALLS
 * (US, WALL_US: process CPU and wall microseconds per call; COPY_US: the
 * copy's CPU time subtracted), then for each registered op no case times:
 *   nocase OP
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "aug/aug.h"
#include "base/err.h"
#include "base/io.h"
#include "base/xmem.h"
#include "codec/codec.h"

#define MAXCASES	128
#define MAXPOOLS	8

struct pool {
	char name[16];		/* "full" or the side, as in the table */
	struct rv_img *im;
	size_t n;
};

struct bcase {
	char *group, *name, *input, *spec;
	struct rv_spec s;
	struct pool *pool;
};

static struct pool pools[MAXPOOLS];
static size_t npools;
static struct rv_img *decoded;
static size_t ndecoded;
static uint64_t next_id;	/* a new sample id per call: fresh randomness */
static volatile unsigned sink;

static void __attribute__((format(printf, 1, 2), noreturn))
die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "augment_ops: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static double
now(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Copy a pool image into img, then apply s (NULL: the copy alone). */
static void
loop(const struct rv_spec *s, const struct pool *p, long iters,
    struct rv_img *img, struct rv_aug_ctx *ctx, double *cpu, double *wall)
{
	double c0 = now(CLOCK_PROCESS_CPUTIME_ID), w0 = now(CLOCK_MONOTONIC);
	long i;

	for (i = 0; i < iters; i++) {
		const struct rv_img *src = &p->im[(size_t)i % p->n];

		rv_img_reserve(img, src->h, src->w, src->c);
		memcpy(img->data, src->data,
		    (size_t)src->h * src->w * src->c);
		if (s != NULL && rv_spec_apply(s, img, ctx, 0, 0, 0,
		    next_id++) < 0)
			die("'%s': %s", s->text, rv_errmsg());
		sink += img->data[0];
	}
	*cpu = now(CLOCK_PROCESS_CPUTIME_ID) - c0;
	*wall = now(CLOCK_MONOTONIC) - w0;
}

/*
 * Time case c: grow the call count until one run takes about target CPU
 * seconds (this also warms the buffers and caches), then print one line
 * per repeat.  For op cases each repeat also times the copy alone, just
 * before, and reports the difference: the drift of a loaded machine
 * then cancels out.
 */
static void
bench(const struct bcase *c, double target, int repeat, struct rv_img *img,
    struct rv_aug_ctx *ctx)
{
	const struct pool *p = c->pool;
	int sub = strcmp(c->group, "op") == 0, r;
	double cpu, wall, ccpu = 0, cwall = 0;
	long iters = (long)p->n;

	for (;;) {
		loop(&c->s, p, iters, img, ctx, &cpu, &wall);
		if (cpu >= target / 2 || iters > 100000000L)
			break;
		iters *= cpu > target / 64 ? 2 : 16;
	}
	if (cpu > 0)
		iters = (long)((double)iters * target / cpu) + 1;
	for (r = 0; r < repeat; r++) {
		if (sub)
			loop(NULL, p, iters, img, ctx, &ccpu, &cwall);
		loop(&c->s, p, iters, img, ctx, &cpu, &wall);
		printf("%s\t%s\t%s\t%.3f\t%.3f\t%.3f\t%ld\n", c->group,
		    c->name, c->input, (cpu - ccpu) / (double)iters * 1e6,
		    (wall - cwall) / (double)iters * 1e6,
		    ccpu / (double)iters * 1e6, iters);
	}
	fflush(stdout);
}

/* The pool called name, made from the decoded images on first use. */
static struct pool *
get_pool(const char *input, struct rv_aug_ctx *ctx)
{
	char name[16], spec[96];
	struct rv_spec s;
	size_t i, len = strlen(input);
	struct pool *p;
	long side = 0;

	if (len > 0 && input[len - 1] == 't')
		len--;		/* tensor input: Python side only */
	if (len == 0 || len >= sizeof(name))
		die("input '%s': expected full or a side", input);
	memcpy(name, input, len);
	name[len] = '\0';
	for (i = 0; i < npools; i++)
		if (strcmp(pools[i].name, name) == 0)
			return &pools[i];
	if (npools == MAXPOOLS)
		die("more than %d input kinds", MAXPOOLS);
	if (strcmp(name, "full") != 0) {
		char *end;
		side = strtol(name, &end, 10);
		if (*end != '\0' || side < 1 || side > 65536)
			die("input '%s': expected full or a side", input);
	}
	p = &pools[npools++];
	memcpy(p->name, name, len + 1);
	p->n = ndecoded;
	p->im = xcalloc(ndecoded, sizeof(*p->im));
	snprintf(spec, sizeof(spec), "resize size=%ld; center_crop size=%ld",
	    side, side);
	if (side > 0 && rv_spec_parse(spec, 0, &s) < 0)
		die("'%s': %s", spec, rv_errmsg());
	for (i = 0; i < ndecoded; i++) {
		const struct rv_img *d = &decoded[i];
		rv_img_reserve(&p->im[i], d->h, d->w, d->c);
		memcpy(p->im[i].data, d->data, (size_t)d->h * d->w * d->c);
		if (side > 0 && rv_spec_apply(&s, &p->im[i], ctx, 0, 0, 0,
		    i) < 0)
			die("'%s': %s", spec, rv_errmsg());
	}
	if (side > 0)
		rv_spec_release(&s);
	return p;
}

/* Split line at tabs into f[0..n-1]; returns the field count. */
static int
split(char *line, char **f, int n)
{
	int k = 0;

	line[strcspn(line, "\r\n")] = '\0';
	while (k < n) {
		f[k++] = line;
		line = strchr(line, '\t');
		if (line == NULL)
			break;
		*line++ = '\0';
	}
	return k;
}

static size_t
read_cases(const char *path, struct bcase *c, struct rv_aug_ctx *ctx)
{
	FILE *fp = fopen(path, "r");
	char line[1024], *f[5];
	size_t n = 0;

	if (fp == NULL)
		die("'%s': cannot open", path);
	while (fgets(line, sizeof(line), fp) != NULL) {
		if (line[0] == '#' || line[strspn(line, " \t\r\n")] == '\0')
			continue;
		if (split(line, f, 5) != 5)
			die("'%s': a line with fewer than 5 fields", path);
		if (n == MAXCASES)
			die("'%s': more than %d cases", path, MAXCASES);
		c[n].group = xstrdup(f[0]);
		c[n].name = xstrdup(f[1]);
		c[n].input = xstrdup(f[2]);
		c[n].spec = xstrdup(f[3]);
		if (rv_spec_parse(c[n].spec, 0, &c[n].s) < 0)
			die("'%s': %s", c[n].spec, rv_errmsg());
		c[n].pool = get_pool(c[n].input, ctx);
		n++;
	}
	fclose(fp);
	return n;
}

static void
decode_all(char **files, int n)
{
	struct rv_decode_opts o = { .channels = 3 };
	struct rv_codec *codec = rv_codec_new();
	int i;

	decoded = xcalloc((size_t)n, sizeof(*decoded));
	for (i = 0; i < n; i++) {
		unsigned char *buf;
		size_t len;

		if (rv_slurp(files[i], &buf, &len) < 0 ||
		    rv_codec_decode(codec, buf, len, &o, &decoded[i]) < 0)
			die("'%s': %s", files[i], rv_errmsg());
		free(buf);
	}
	ndecoded = (size_t)n;
	rv_codec_free(codec);
}

int
main(int argc, char **argv)
{
	static struct bcase cases[MAXCASES];
	const struct rv_op_def *const *d;
	struct rv_aug_ctx ctx;
	struct rv_img img = { 0 };
	double t_op = 0.025, t_recipe = 0.150;
	int repeat = 5, ch;
	size_t ncases, i, k;

	rv_setprogname(argv[0]);
	while ((ch = getopt(argc, argv, "r:t:R:")) != -1) {
		switch (ch) {
		case 'r':
			repeat = atoi(optarg);
			break;
		case 't':
			t_op = atof(optarg) / 1000;
			break;
		case 'R':
			t_recipe = atof(optarg) / 1000;
			break;
		default:
			goto usage;
		}
	}
	if (argc - optind < 2 || repeat < 1 || repeat > 1000 ||
	    t_op <= 0 || t_recipe <= 0)
		goto usage;
	rv_aug_ctx_init(&ctx);
	decode_all(argv + optind + 1, argc - optind - 1);
	ncases = read_cases(argv[optind], cases, &ctx);

	for (i = 0; i < ncases; i++)
		bench(&cases[i], strcmp(cases[i].group, "op") == 0 ? t_op :
		    t_recipe, repeat, &img, &ctx);
	for (d = rv_ops(); *d != NULL; d++) {
		for (k = 0; k < ncases; k++)
			if (cases[k].s.n > 0 &&
			    cases[k].s.ops[0].def == *d &&
			    strcmp(cases[k].group, "op") == 0)
				break;
		if (k == ncases)
			printf("nocase\t%s\n", (*d)->name);
	}

	for (i = 0; i < ncases; i++) {
		rv_spec_release(&cases[i].s);
		free(cases[i].group);
		free(cases[i].name);
		free(cases[i].input);
		free(cases[i].spec);
	}
	for (i = 0; i < npools; i++) {
		for (k = 0; k < pools[i].n; k++)
			rv_img_release(&pools[i].im[k]);
		free(pools[i].im);
	}
	for (i = 0; i < ndecoded; i++)
		rv_img_release(&decoded[i]);
	free(decoded);
	rv_img_release(&img);
	rv_aug_ctx_release(&ctx);
	return 0;
usage:
	fprintf(stderr, "usage: augment_ops [-r REPEAT] [-t MS] [-R MS] "
	    "CASES file ...\n");
	return 2;
}
