/* Common options and number parsing, identical in every program. */
#include "base/opt.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "base/err.h"
#include "base/near.h"

void
rv_common_init(struct rv_common *c)
{
	memset(c, 0, sizeof(*c));
	c->level = -100;
}

void
rv_usage_die(const char *usage, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	(void)usage;
	/* GNU's convention: the reason, then where the usage is; the whole
	 * usage would bury the line that matters */
	fprintf(stderr, "%s: %s\nTry '%s --help' for more information.\n",
	    rv_progname(), buf, rv_progname());
	exit(2);
}

/*
 * The long option of the usage text nearest to bad[0..n) ("--limt"), as
 * "--limit", into out (rv_nearby, on the names without their dashes): 1
 * if one is near, else 0.
 */
static int
closest_long(const char *usage, const char *bad, size_t n, char *out,
    size_t outsz)
{
	struct rv_nearby nb;
	const char *p;

	rv_nearby_init(&nb, bad + 2, n - 2);
	for (p = usage; (p = strstr(p, "--")) != NULL;) {
		size_t m = 2;

		while (isalnum((unsigned char)p[m]) || p[m] == '-')
			m++;
		if (m > 2 && m < outsz && (p == usage ||
		    (!isalnum((unsigned char)p[-1]) && p[-1] != '-')))
			rv_nearby_offer(&nb, p + 2, m - 2);
		p += m;
	}
	if (!rv_nearby_best(&nb))
		return 0;
	snprintf(out, outsz, "--%.*s", (int)nb.len, nb.best);
	return 1;
}

/* Does the usage text mention short option -c (as "-c", "-c," or "-c N")? */
static int
usage_has(const char *usage, int c)
{
	const char *p;

	for (p = usage; (p = strchr(p, '-')) != NULL; p++) {
		if (p[1] != c)
			continue;
		if (p > usage && (isalnum((unsigned char)p[-1]) ||
		    p[-1] == '-'))
			continue;
		if (!isalnum((unsigned char)p[2]) && p[2] != '-')
			return 1;
	}
	return 0;
}

/*
 * getopt_long with opterr = 0 returns '?' and leaves only optind and optopt
 * to tell what went wrong, so reconstruct it:
 *  - optopt 0: an unknown (or ambiguous) long option, argv[optind - 1];
 *  - argv[optind - 1] a long option with optopt set: its argument is missing
 *    (it was last) or was given to an option that takes none ("--x=v");
 *  - otherwise a short option optopt, possibly inside a cluster that
 *    getopt has not finished (then optind still points at it).  It is
 *    missing its argument only if it ended the last word and the usage
 *    names it; getopt itself cannot say which.
 */
void
rv_usage_error(char *const argv[], const char *usage)
{
	const char *bad, *cur, *eq;
	int argc = 0, c = optopt, incluster;

	while (argv[argc])
		argc++;
	bad = optind >= 1 && optind <= argc ? argv[optind - 1] : NULL;
	cur = optind < argc ? argv[optind] : NULL;
	if (c == 0) {
		if (!bad)
			rv_usage_die(usage, "unknown option");
		size_t n;
		char near[64];

		eq = strchr(bad, '=');
		n = eq ? (size_t)(eq - bad) : strlen(bad);
		if (n > 2 && strncmp(bad, "--", 2) == 0 &&
		    closest_long(usage, bad, n, near, sizeof(near)))
			rv_usage_die(usage, "unknown option '%.*s' (did you "
			    "mean '%s'?)", (int)n, bad, near);
		rv_usage_die(usage, "unknown option '%.*s'", (int)n, bad);
	}
	/* a short option in the middle of the cluster argv[optind] */
	incluster = c < 0x100 && cur && cur[0] == '-' && cur[1] != '-' &&
	    strchr(cur + 1, c) && strchr(cur + 1, c)[1] != '\0';
	if (!incluster && bad && strncmp(bad, "--", 2) == 0 && bad[2] &&
	    ((eq = strchr(bad, '=')) != NULL || optind == argc)) {
		if (eq)
			rv_usage_die(usage, "option '%.*s' doesn't allow an "
			    "argument", (int)(eq - bad), bad);
		rv_usage_die(usage, "option '%s' needs an argument", bad);
	}
	if (c >= 0x100 || c < 0)
		rv_usage_die(usage, "bad option");
	if (!incluster && optind == argc && bad && bad[0] == '-' &&
	    bad[1] != '-' && bad[strlen(bad) - 1] == c && usage_has(usage, c))
		rv_usage_die(usage, "option '-%c' needs an argument", c);
	rv_usage_die(usage, "unknown option '-%c'", c);
}

int
rv_common_opt(struct rv_common *c, int ch, const char *arg,
    const char *usage)
{
	switch (ch) {
	case 'h':
		fputs(usage, stdout);
		exit(fclose(stdout) == 0 ? 0 : 1);
	case 'V':
		printf("%s %s\n", rv_progname(), RV_VERSION_STRING);
		exit(fclose(stdout) == 0 ? 0 : 1);
	case 'q':
		c->quiet = 1;
		return 1;
	case 'v':
		c->verbose++;
		return 1;
	case 'j':
		c->jobs = (int)rv_opt_u64("-j", arg, 1, 1024, usage);
		return 1;
	case RV_OPT_SEED:
		c->seed = rv_opt_u64("--seed", arg, 0, UINT64_MAX, usage);
		return 1;
	case RV_OPT_LEVEL: {
		long long v;
		if (rv_parse_i64(arg, -7, 19, &v) < 0)
			rv_usage_die(usage, "--level: %s", rv_errmsg());
		c->level = (int)v;
		return 1;
	}
	case 'o':
		c->output = strcmp(arg, "-") == 0 ? NULL : arg;
		return 1;
	default:
		return 0;
	}
}

int
rv_common_operands(struct rv_common *c, int argc, char *argv[], int first)
{
	static char *const stdin_only[] = { "-", NULL };

	if (first < argc) {
		c->inputs = argv + first;
		c->ninputs = argc - first;
		return c->ninputs;
	}
	c->inputs = stdin_only;
	c->ninputs = 1;
	return 0;
}

int
rv_common_jobs(const struct rv_common *c)
{
	long n;

	if (c->jobs > 0)
		return c->jobs;
	n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (int)(n > 1024 ? 1024 : n) : 1;
}

int
rv_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	if (!isdigit((unsigned char)*s))
		return rv_seterr("'%s': not a non-negative integer", s);
	v = strtoull(s, &end, 10);
	if (*end || end == s)
		return rv_seterr("'%s': not a non-negative integer", s);
	if (errno == ERANGE || v < min || v > max)
		return rv_seterr("'%s': out of range [%llu, %llu]", s,
		    (unsigned long long)min, (unsigned long long)max);
	*out = v;
	return 0;
}

int
rv_parse_i64(const char *s, long long min, long long max, long long *out)
{
	char *end;
	long long v;

	errno = 0;
	if (!isdigit((unsigned char)(*s == '-' || *s == '+' ? s[1] : *s)))
		return rv_seterr("'%s': not an integer", s);
	v = strtoll(s, &end, 10);
	if (*end || end == s)
		return rv_seterr("'%s': not an integer", s);
	if (errno == ERANGE || v < min || v > max)
		return rv_seterr("'%s': out of range [%lld, %lld]", s, min,
		    max);
	*out = v;
	return 0;
}

int
rv_parse_f64(const char *s, double min, double max, double *out)
{
	char *end;
	double v;

	errno = 0;
	if (!*s || isspace((unsigned char)*s))
		return rv_seterr("'%s': not a number", s);
	v = strtod(s, &end);
	if (*end || end == s || isnan(v))
		return rv_seterr("'%s': not a number", s);
	if (errno == ERANGE || v < min || v > max)
		return rv_seterr("'%s': out of range [%g, %g]", s, min, max);
	*out = v;
	return 0;
}

int
rv_parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	int shift = 0;

	errno = 0;
	if (!isdigit((unsigned char)*s))
		return rv_seterr("'%s': not a size", s);
	v = strtoull(s, &end, 10);
	if (end == s || errno == ERANGE)
		return rv_seterr("'%s': not a size", s);
	switch (*end) {
	case '\0': break;
	case 'k': case 'K': shift = 10; break;
	case 'm': case 'M': shift = 20; break;
	case 'g': case 'G': shift = 30; break;
	case 't': case 'T': shift = 40; break;
	default: return rv_seterr("'%s': not a size", s);
	}
	if (*end && end[1] != '\0' && !((end[1] == 'B' || end[1] == 'b' ||
	    end[1] == 'i') && (end[2] == '\0' || (end[1] == 'i' &&
	    end[2] == 'B' && end[3] == '\0'))))
		return rv_seterr("'%s': not a size", s);
	if (shift && v > (UINT64_MAX >> shift))
		return rv_seterr("'%s': too large", s);
	*out = (uint64_t)v << shift;
	return 0;
}

int
rv_parse_shard(const char *s, uint32_t *i, uint32_t *n)
{
	const char *slash = strchr(s, '/');
	char head[32];
	uint64_t a, b;

	if (!slash || (size_t)(slash - s) >= sizeof(head))
		return rv_seterr("'%s': not of the form i/n", s);
	memcpy(head, s, (size_t)(slash - s));
	head[slash - s] = '\0';
	if (rv_parse_u64(head, 0, UINT32_MAX, &a) < 0 ||
	    rv_parse_u64(slash + 1, 1, UINT32_MAX, &b) < 0)
		return rv_seterr("'%s': not of the form i/n", s);
	if (a >= b)
		return rv_seterr("'%s': shard index must be below %llu", s,
		    (unsigned long long)b);
	*i = (uint32_t)a;
	*n = (uint32_t)b;
	return 0;
}

uint64_t
rv_opt_u64(const char *opt, const char *s, uint64_t min, uint64_t max,
    const char *usage)
{
	uint64_t v;

	if (rv_parse_u64(s, min, max, &v) < 0)
		rv_usage_die(usage, "%s: %s", opt, rv_errmsg());
	return v;
}

double
rv_opt_f64(const char *opt, const char *s, double min, double max,
    const char *usage)
{
	double v;

	if (rv_parse_f64(s, min, max, &v) < 0)
		rv_usage_die(usage, "%s: %s", opt, rv_errmsg());
	return v;
}

double
rv_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double
rv_cpu_now(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) < 0)
		return 0;
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void
rv_self_usage(uint64_t *read_bytes, uint64_t *peak_rss)
{
	struct rusage ru;
	char line[128];
	FILE *f;

	*read_bytes = *peak_rss = 0;
	if ((f = fopen("/proc/self/io", "re")) != NULL) {
		while (fgets(line, sizeof(line), f))
			if (strncmp(line, "rchar: ", 7) == 0)
				*read_bytes = strtoull(line + 7, NULL, 10);
		fclose(f);
	}
	if (getrusage(RUSAGE_SELF, &ru) == 0 && ru.ru_maxrss > 0)
		*peak_rss = (uint64_t)ru.ru_maxrss * 1024;	/* Linux: KiB */
}
