/*
 * Option helpers shared by every program: ranged number parsing (never
 * atoi), the common options (-h -V -q -v -j -o --seed --level) and
 * operands, and the unknown-option message.  Usage errors exit 2.
 */
#ifndef RV_OPT_H
#define RV_OPT_H

#include <stdint.h>

#define RV_VERSION_STRING "0.1.0"

/* Long-option codes for the common options without a short form. */
enum {
	RV_OPT_SEED = 0x1000,
	RV_OPT_LEVEL,
	RV_OPT_FIRST_PRIVATE = 0x1100	/* programs number theirs from here */
};

#define RV_COMMON_LONGOPTS \
	{ "help", no_argument, NULL, 'h' }, \
	{ "version", no_argument, NULL, 'V' }, \
	{ "quiet", no_argument, NULL, 'q' }, \
	{ "verbose", no_argument, NULL, 'v' }, \
	{ "jobs", required_argument, NULL, 'j' }, \
	{ "seed", required_argument, NULL, RV_OPT_SEED }, \
	{ "level", required_argument, NULL, RV_OPT_LEVEL }, \
	{ "output", required_argument, NULL, 'o' }

#define RV_COMMON_SHORTOPTS "hVqvj:o:"

struct rv_common {
	int quiet;
	int verbose;
	int jobs;		/* 0 until set: rv_common_jobs() resolves */
	uint64_t seed;
	int level;		/* < -7: not given */
	const char *output;	/* -o FILE; NULL for stdout (also "-o -") */
	char *const *inputs;	/* rv_common_operands() */
	int ninputs;
};

void rv_common_init(struct rv_common *c);
/*
 * Handle one getopt_long result if it is a common option: returns 1 if it
 * was, 0 if not.  --help prints usage to stdout and exits 0; --version
 * prints the version and exits 0; a bad value exits 2.
 */
int rv_common_opt(struct rv_common *c, int ch, const char *arg,
    const char *usage);
/*
 * The operands from argv[first] on as c->inputs (c->ninputs of them), or
 * stdin alone ("-") when there are none.  Returns how many were given.
 */
int rv_common_operands(struct rv_common *c, int argc, char *argv[],
    int first);
/* -j: the value given, else the number of online cores. */
int rv_common_jobs(const struct rv_common *c);

/* Report an unknown option or missing argument (from getopt_long with
 * opterr = 0) and exit 2; an unknown long option is given the closest
 * one the usage text names, if one is near. */
void rv_usage_error(char *const argv[], const char *usage)
    __attribute__((noreturn));
/* Print "prog: msg" and "Try 'prog --help' for more information." to
 * stderr (GNU's convention, not the whole usage), and exit 2. */
void rv_usage_die(const char *usage, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));

/* Ranged parsing; 0 or -1 with rv_errmsg() set ("'x': not a number"). */
int rv_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);
int rv_parse_i64(const char *s, long long min, long long max,
    long long *out);
int rv_parse_f64(const char *s, double min, double max, double *out);
/* A size with an optional K, M, G or T suffix (powers of 1024). */
int rv_parse_size(const char *s, uint64_t *out);
/* "i/n" with 0 <= i < n. */
int rv_parse_shard(const char *s, uint32_t *i, uint32_t *n);
/* Option wrappers: parse or rv_usage_die naming the option. */
uint64_t rv_opt_u64(const char *opt, const char *s, uint64_t min,
    uint64_t max, const char *usage);
double rv_opt_f64(const char *opt, const char *s, double min, double max,
    const char *usage);

/* Monotonic seconds. */
double rv_now(void);
/* This process's CPU seconds, every thread's (0 if the clock fails). */
double rv_cpu_now(void);

/* What this process has read (bytes through read(2) and the like:
 * /proc/self/io's rchar) and its peak resident memory (bytes).  0 for
 * what the system does not tell. */
void rv_self_usage(uint64_t *read_bytes, uint64_t *peak_rss);

#endif
