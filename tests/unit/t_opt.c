/*
 * Option helpers: the ranged parsers at their edges (overflow, signs,
 * spaces, suffixes, shards) and the behaviour every program shares through
 * them: --help, --version, bad values and unknown options, each run in a
 * child process to see its exit status and exact output.
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/err.h"
#include "base/opt.h"
#include "unit.h"

static int
u64_ok(const char *s, uint64_t min, uint64_t max, uint64_t want)
{
	uint64_t v = 12345;

	return rv_parse_u64(s, min, max, &v) == 0 && v == want;
}

static int
u64_err(const char *s, uint64_t min, uint64_t max, const char *msg)
{
	uint64_t v = 12345;
	int ok = rv_parse_u64(s, min, max, &v) == -1 && v == 12345 &&
	    strcmp(rv_errmsg(), msg) == 0;

	if (!ok)
		printf("# '%s': '%s'\n", s, rv_errmsg());
	return ok;
}

static void
t_u64(void)
{
	EXPECT(u64_ok("0", 0, 10, 0));
	EXPECT(u64_ok("10", 0, 10, 10));
	EXPECT(u64_ok("007", 0, 10, 7));
	EXPECT(u64_ok("18446744073709551615", 0, UINT64_MAX, UINT64_MAX));
	EXPECT(u64_err("18446744073709551616", 0, UINT64_MAX,
	    "'18446744073709551616': out of range [0, 18446744073709551615]"));
	EXPECT(u64_err("11", 0, 10, "'11': out of range [0, 10]"));
	EXPECT(u64_err("0", 1, 10, "'0': out of range [1, 10]"));
	EXPECT(u64_err("-1", 0, 10, "'-1': not a non-negative integer"));
	EXPECT(u64_err("+1", 0, 10, "'+1': not a non-negative integer"));
	EXPECT(u64_err(" 1", 0, 10, "' 1': not a non-negative integer"));
	EXPECT(u64_err("\t1", 0, 10, "'\t1': not a non-negative integer"));
	EXPECT(u64_err("1 ", 0, 10, "'1 ': not a non-negative integer"));
	EXPECT(u64_err("", 0, 10, "'': not a non-negative integer"));
	EXPECT(u64_err("0x10", 0, 100, "'0x10': not a non-negative integer"));
	EXPECT(u64_err("1e3", 0, 10000, "'1e3': not a non-negative integer"));
	EXPECT(u64_err("1K", 0, 10000, "'1K': not a non-negative integer"));
}

static void
t_i64(void)
{
	long long v = 5;

	EXPECT(rv_parse_i64("-7", -7, 19, &v) == 0 && v == -7);
	EXPECT(rv_parse_i64("+19", -7, 19, &v) == 0 && v == 19);
	EXPECT(rv_parse_i64("-9223372036854775808", INT64_MIN, INT64_MAX,
	    &v) == 0 && v == INT64_MIN);
	EXPECT(rv_parse_i64("9223372036854775807", INT64_MIN, INT64_MAX,
	    &v) == 0 && v == INT64_MAX);
	v = 5;
	EXPECT(rv_parse_i64("9223372036854775808", INT64_MIN, INT64_MAX,
	    &v) == -1 && v == 5);
	EXPECT_STR(rv_errmsg(), "'9223372036854775808': out of range "
	    "[-9223372036854775808, 9223372036854775807]");
	EXPECT(rv_parse_i64("-8", -7, 19, &v) == -1);
	EXPECT_STR(rv_errmsg(), "'-8': out of range [-7, 19]");
	EXPECT(rv_parse_i64("20", -7, 19, &v) == -1);
	EXPECT(rv_parse_i64("--1", -7, 19, &v) == -1);
	EXPECT_STR(rv_errmsg(), "'--1': not an integer");
	EXPECT(rv_parse_i64("-", -7, 19, &v) == -1);
	EXPECT(rv_parse_i64("", -7, 19, &v) == -1);
	EXPECT(rv_parse_i64(" 3", -7, 19, &v) == -1);
	EXPECT(rv_parse_i64("3x", -7, 19, &v) == -1);
	EXPECT(rv_parse_i64("1.0", -7, 19, &v) == -1);
	EXPECT_EQ(v, 5);
}

static void
t_f64(void)
{
	double v = 9;

	EXPECT(rv_parse_f64("0.5", 0, 1, &v) == 0 && v == 0.5);
	EXPECT(rv_parse_f64("1", 0, 1, &v) == 0 && v == 1);
	EXPECT(rv_parse_f64("-0.25", -1, 1, &v) == 0 && v == -0.25);
	EXPECT(rv_parse_f64("1e-3", 0, 1, &v) == 0 && v == 1e-3);
	EXPECT(rv_parse_f64("1.5", 0, 1, &v) == -1);
	EXPECT_STR(rv_errmsg(), "'1.5': out of range [0, 1]");
	EXPECT(rv_parse_f64("nan", 0, 1, &v) == -1);
	EXPECT_STR(rv_errmsg(), "'nan': not a number");
	EXPECT(rv_parse_f64("inf", 0, 1, &v) == -1);
	EXPECT_STR(rv_errmsg(), "'inf': out of range [0, 1]");
	EXPECT(rv_parse_f64("1e400", 0, 1e300, &v) == -1);
	EXPECT(rv_parse_f64("", 0, 1, &v) == -1);
	EXPECT(rv_parse_f64(" 1", 0, 1, &v) == -1);
	EXPECT(rv_parse_f64("1 ", 0, 1, &v) == -1);
	EXPECT(rv_parse_f64("0.5x", 0, 1, &v) == -1);
	EXPECT(rv_parse_f64("x", 0, 1, &v) == -1);
	EXPECT(v == 1e-3);
}

static int
size_is(const char *s, uint64_t want)
{
	uint64_t v = 0;
	int ok = rv_parse_size(s, &v) == 0 && v == want;

	if (!ok)
		printf("# '%s' -> %llu ('%s')\n", s, (unsigned long long)v,
		    rv_errmsg());
	return ok;
}

static int
size_bad(const char *s)
{
	uint64_t v = 77;

	return rv_parse_size(s, &v) == -1 && v == 77;
}

static void
t_size(void)
{
	EXPECT(size_is("0", 0));
	EXPECT(size_is("4096", 4096));
	EXPECT(size_is("1K", 1024));
	EXPECT(size_is("1k", 1024));
	EXPECT(size_is("2M", 2u << 20));
	EXPECT(size_is("3G", (uint64_t)3 << 30));
	EXPECT(size_is("4T", (uint64_t)4 << 40));
	EXPECT(size_is("1KB", 1024));
	EXPECT(size_is("1Ki", 1024));
	EXPECT(size_is("1KiB", 1024));
	EXPECT(size_is("5mb", 5u << 20));
	EXPECT(size_is("16777215T", (uint64_t)16777215 << 40));
	EXPECT(size_is("18446744073709551615", UINT64_MAX));
	EXPECT(size_bad("16777216T"));
	EXPECT_STR(rv_errmsg(), "'16777216T': too large");
	EXPECT(size_bad("18446744073709551616"));
	EXPECT(size_bad("1.5G"));
	EXPECT(size_bad("G"));
	EXPECT(size_bad(""));
	EXPECT(size_bad("-1"));
	EXPECT(size_bad(" 1"));
	EXPECT(size_bad("1 K"));
	EXPECT(size_bad("1KX"));
	EXPECT(size_bad("1KiBB"));
	EXPECT(size_bad("1B"));
	EXPECT(size_bad("1P"));
	EXPECT_STR(rv_errmsg(), "'1P': not a size");
}

static void
t_shard(void)
{
	uint32_t i = 9, n = 9;

	EXPECT(rv_parse_shard("0/1", &i, &n) == 0 && i == 0 && n == 1);
	EXPECT(rv_parse_shard("3/4", &i, &n) == 0 && i == 3 && n == 4);
	EXPECT(rv_parse_shard("4294967294/4294967295", &i, &n) == 0 &&
	    i == 4294967294u && n == 4294967295u);
	i = n = 9;
	EXPECT(rv_parse_shard("4/4", &i, &n) == -1);
	EXPECT_STR(rv_errmsg(), "'4/4': shard index must be below 4");
	EXPECT(rv_parse_shard("0/0", &i, &n) == -1);
	EXPECT_STR(rv_errmsg(), "'0/0': not of the form i/n");
	EXPECT(rv_parse_shard("1", &i, &n) == -1);
	EXPECT(rv_parse_shard("/2", &i, &n) == -1);
	EXPECT(rv_parse_shard("1/", &i, &n) == -1);
	EXPECT(rv_parse_shard("-1/2", &i, &n) == -1);
	EXPECT(rv_parse_shard("1/2/3", &i, &n) == -1);
	EXPECT(rv_parse_shard("a/b", &i, &n) == -1);
	EXPECT(rv_parse_shard("0/4294967296", &i, &n) == -1);
	EXPECT(rv_parse_shard("000000000000000000000000000000001/2", &i,
	    &n) == -1);
	EXPECT(i == 9 && n == 9);
}

/* ------------------------------------------------ the shared behaviour */

#define USAGE "usage: t_opt [-qv] [-j N] [-o FILE] [--seed S] [--level L] " \
	"[file ...]\n" \
	"  -o, --output FILE\n"

enum { OPT_LIMIT = RV_OPT_FIRST_PRIVATE };

static const struct option longopts[] = {
	RV_COMMON_LONGOPTS,
	{ "output", required_argument, NULL, 'o' },
	{ "limit", required_argument, NULL, OPT_LIMIT },
	{ "shuffle", no_argument, NULL, 's' },
	{ NULL, 0, NULL, 0 }
};

/* What a program's parse_args() does; prints the outcome on stdout. */
static void
parse(int argc, char **argv)
{
	struct rv_common c;
	int ch;

	rv_common_init(&c);
	opterr = 0;
	optind = 0;
	while ((ch = getopt_long(argc, argv, RV_COMMON_SHORTOPTS "o:s",
	    longopts, NULL)) != -1) {
		if (rv_common_opt(&c, ch, optarg, USAGE))
			continue;
		switch (ch) {
		case 'o':
		case OPT_LIMIT:
		case 's':
			break;
		default:
			rv_usage_error(argv, USAGE);
		}
	}
	printf("q%d v%d j%d seed%llu level%d\n", c.quiet, c.verbose, c.jobs,
	    (unsigned long long)c.seed, c.level);
}

struct outcome {
	int status;
	char out[1024], err[1024];
};

static void
slurp_fd(int fd, char *buf, size_t n)
{
	size_t got = 0;
	ssize_t r;

	while (got + 1 < n && (r = read(fd, buf + got, n - 1 - got)) > 0)
		got += (size_t)r;
	buf[got] = '\0';
}

/* Run parse() on the words of line in a child; collect what it did. */
static void
run_parse(const char *line, struct outcome *o)
{
	int po[2], pe[2];
	pid_t pid;

	memset(o, 0, sizeof(*o));
	if (pipe(po) != 0 || pipe(pe) != 0)
		return;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		char *copy = strdup(line), *argv[32], *tok;
		int argc = 0;
		dup2(po[1], 1);
		dup2(pe[1], 2);
		close(po[0]);
		close(pe[0]);
		argv[argc++] = "t_opt";
		for (tok = strtok(copy, " "); tok && argc < 31;
		    tok = strtok(NULL, " "))
			argv[argc++] = tok;
		argv[argc] = NULL;
		parse(argc, argv);
		fflush(stdout);
		_exit(0);
	}
	close(po[1]);
	close(pe[1]);
	slurp_fd(po[0], o->out, sizeof(o->out));
	slurp_fd(pe[0], o->err, sizeof(o->err));
	close(po[0]);
	close(pe[0]);
	waitpid(pid, &o->status, 0);
	o->status = WIFEXITED(o->status) ? WEXITSTATUS(o->status) : -1;
}

/* Expect exit 2 with this first stderr line, then where the usage is. */
static int
usage_error(const char *line, const char *first)
{
	struct outcome o;
	char want[1024];

	run_parse(line, &o);
	snprintf(want, sizeof(want), "t_opt: %s\nTry 't_opt --help' for "
	    "more information.\n", first);
	if (o.status != 2 || strcmp(o.err, want) != 0 || o.out[0]) {
		printf("# '%s': status %d, stderr '%s'\n", line, o.status,
		    o.err);
		return 0;
	}
	return 1;
}

static int
parses_to(const char *line, const char *want)
{
	struct outcome o;

	run_parse(line, &o);
	if (o.status != 0 || strcmp(o.out, want) != 0 || o.err[0]) {
		printf("# '%s': status %d, out '%s', err '%s'\n", line,
		    o.status, o.out, o.err);
		return 0;
	}
	return 1;
}

static void
t_common(void)
{
	struct outcome o;

	EXPECT(parses_to("", "q0 v0 j0 seed0 level-100\n"));
	EXPECT(parses_to("-q -v -v -j 3 --seed 18446744073709551615 "
	    "--level -7", "q1 v2 j3 seed18446744073709551615 level-7\n"));
	EXPECT(parses_to("-qvvj2 --level=19 --seed=0", "q1 v2 j2 seed0 "
	    "level19\n"));
	EXPECT(parses_to("--jobs 1024 --quiet --verbose", "q1 v1 j1024 "
	    "seed0 level-100\n"));

	run_parse("--help", &o);
	EXPECT_EQ(o.status, 0);
	EXPECT_STR(o.out, USAGE);
	EXPECT_STR(o.err, "");
	run_parse("-q -h", &o);
	EXPECT_EQ(o.status, 0);
	EXPECT_STR(o.out, USAGE);
	run_parse("--version", &o);
	EXPECT_EQ(o.status, 0);
	EXPECT_STR(o.out, "t_opt " RV_VERSION_STRING "\n");
	EXPECT_STR(o.err, "");
	run_parse("-V", &o);
	EXPECT_STR(o.out, "t_opt 0.1.0\n");

	EXPECT(usage_error("-j 0", "-j: '0': out of range [1, 1024]"));
	EXPECT(usage_error("-j 1025", "-j: '1025': out of range [1, 1024]"));
	EXPECT(usage_error("-j x", "-j: 'x': not a non-negative integer"));
	EXPECT(usage_error("--seed -1", "--seed: '-1': not a non-negative "
	    "integer"));
	EXPECT(usage_error("--level 20", "--level: '20': out of range "
	    "[-7, 19]"));
	EXPECT(usage_error("--level -8", "--level: '-8': out of range "
	    "[-7, 19]"));
}

static void
t_unknown(void)
{
	EXPECT(usage_error("--bogus", "unknown option '--bogus'"));
	EXPECT(usage_error("--bogus=3", "unknown option '--bogus'"));
	EXPECT(usage_error("a --bogus b", "unknown option '--bogus'"));
	EXPECT(usage_error("--ver", "unknown option '--ver'"));
	/* a near long option of the usage is named */
	EXPECT(usage_error("--levle 3", "unknown option '--levle' (did you "
	    "mean '--level'?)"));
	EXPECT(usage_error("--sed=3", "unknown option '--sed' (did you mean "
	    "'--seed'?)"));
	EXPECT(usage_error("--outptu x", "unknown option '--outptu' (did "
	    "you mean '--output'?)"));
	EXPECT(usage_error("-x", "unknown option '-x'"));
	EXPECT(usage_error("-x a", "unknown option '-x'"));
	EXPECT(usage_error("-qx", "unknown option '-x'"));
	EXPECT(usage_error("-xq a", "unknown option '-x'"));
	EXPECT(usage_error("--quiet -xq", "unknown option '-x'"));
	EXPECT(usage_error("--jobs=1 -xq", "unknown option '-x'"));
	EXPECT(usage_error("-j", "option '-j' needs an argument"));
	EXPECT(usage_error("-qj", "option '-j' needs an argument"));
	EXPECT(usage_error("-o", "option '-o' needs an argument"));
	EXPECT(usage_error("--jobs", "option '--jobs' needs an argument"));
	EXPECT(usage_error("--seed", "option '--seed' needs an argument"));
	EXPECT(usage_error("--limit", "option '--limit' needs an argument"));
	EXPECT(usage_error("--help=3", "option '--help' doesn't allow an "
	    "argument"));
	EXPECT(usage_error("--shuffle=1 -q", "option '--shuffle' doesn't "
	    "allow an argument"));
	EXPECT(usage_error("--help=3 -h", "option '--help' doesn't allow an "
	    "argument"));
}

static void
t_misc(void)
{
	struct rv_common c;
	double a, b;
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	rv_common_init(&c);
	EXPECT(c.level < -7);
	EXPECT_EQ(rv_common_jobs(&c), n > 0 ? n : 1);
	c.jobs = 3;
	EXPECT_EQ(rv_common_jobs(&c), 3);
	a = rv_now();
	b = rv_now();
	EXPECT(b >= a && a > 0);
	/* opt values handed through the wrappers */
	EXPECT(rv_opt_u64("-n", "5", 0, 10, USAGE) == 5);
	EXPECT(rv_opt_f64("-p", "0.5", 0, 1, USAGE) == 0.5);
}

int
main(void)
{
	rv_setprogname("t_opt");
	RUN(t_u64);
	RUN(t_i64);
	RUN(t_f64);
	RUN(t_size);
	RUN(t_shard);
	RUN(t_common);
	RUN(t_unknown);
	RUN(t_misc);
	return UNIT_DONE();
}
