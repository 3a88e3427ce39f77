/*
 * rv-refurbish: serve E epochs of a dataset with data refurbishing
 * (Revamper): each sample's partial augmentation is computed once every r
 * epochs and cached, its final augmentation runs on every use.  Options,
 * outputs (one stream, or one file per epoch with --resume) and messages
 * live here; the input is lib/refurb/refsrc.c, the epoch loop lib/refurb/refurb.c.
 * With --score 'OPTIONS' the trainer's assistant (lib/shrink/scorer.c, as
 * rv-score) picks each epoch's samples before their partials are made.
 * With --partials-out it stores each partial once instead, and with
 * --from-partials serves epochs from such a store (lib/refurb/store.c).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "aug/aug.h"
#include "base/err.h"
#include "base/io.h"
#include "base/opt.h"
#include "base/progress.h"
#include "base/xmem.h"
#include "refurb/refsrc.h"
#include "refurb/refurb.h"
#include "refurb/store.h"
#include "shrink/score_io.h"
#include "shrink/score_opt.h"
#include "shrink/scorer.h"
#include "stream/batch.h"
#include "stream/stream.h"

static const char usage[] =
    "usage: rv-refurbish [-qv] [-j N] [-o file|pattern] [--batch B]\n"
    "                    [--cache-dir dir] [--epoch-range a-b] [--epochs E]\n"
    "                    [--exact]\n"
    "                    [--level L] [--mem size] [--resume] [--reuse r]\n"
    "                    [--score options] [--seed S]\n"
    "                    --partial spec --final spec [input]\n"
    "       rv-refurbish --partials-out pattern [--format F] [--quality Q]\n"
    "                    [--subsample S] --partial spec [options] [input]\n"
    "       rv-refurbish --from-partials pattern [--strict] --final spec\n"
    "                    [options]\n"
    "  -o, --output FILE|PATTERN  write to FILE, or each epoch to PATTERN\n"
    "                             with its %d replaced by the epoch\n"
    "  -j, --jobs N               threads (default: all cores)\n"
    "      --partial SPEC         ops run once per refresh (rv-ops(7))\n"
    "      --final SPEC           ops run on every use ('' for none)\n"
    "      --reuse r              serve each partial r times (default 1)\n"
    "      --score OPTIONS        shrink before the partials: rv-score's\n"
    "                             options, --budget F required, e.g.\n"
    "                             '--budget 0.5 --feedback fb.fifo'\n"
    "      --epochs E             epochs to serve (default 1)\n"
    "      --batch B              the batch size downstream: the group\n"
    "                             of the cache-aware shuffle (default\n"
    "                             " RV_BATCH_DEFAULT_STR ", as rv-batch -b)\n"
    "      --mem SIZE             cache memory, K/M/G/T suffix (default 2G)\n"
    "      --cache-dir DIR        cache disk tier and pipe spill directory\n"
    "      --resume               skip the epochs whose -o files exist\n"
    "      --exact                decode JPEG samples at full scale only\n"
    "      --partials-out PATTERN store each partial once, epoch e's new\n"
    "                             ones in PATTERN with its %d replaced by e\n"
    "      --format F             their format: raw (default), png, jpeg\n"
    "      --quality Q            JPEG quality, 1 to 100 (default 90)\n"
    "      --subsample S          JPEG chroma: 420 (default) or 444\n"
    "      --from-partials PATTERN\n"
    "                             serve epochs from a store of partials\n"
    "                             with a fresh --final (no input)\n"
    "      --strict               a stored partial that does not decode\n"
    "                             is fatal instead of skipped\n"
    "      --epoch-range a-b      write epochs a to b only (from 0)\n"
    "      --level L              zstd level -7..19, 0 stores (default:\n"
    "                             $RV_LEVEL, else 0 to a pipe, -1 to a file)\n"
    "      --seed S               seed of the plan and the ops (default 0)\n"
    "  -q, --quiet                no progress\n"
    "  -v, --verbose              print a line per epoch and a summary\n"
    "  -h, --help                 print this help\n"
    "  -V, --version              print the version\n";

/* As rv-decode's: epoch numbers stay far from the int of a %d pattern. */
#define MAX_EPOCHS	1000000

enum {
	OPT_BATCH = RV_OPT_FIRST_PRIVATE,
	OPT_CACHE_DIR,
	OPT_EPOCH_RANGE,
	OPT_EPOCHS,
	OPT_EXACT,
	OPT_FINAL,
	OPT_FORMAT,
	OPT_FROM_PARTIALS,
	OPT_MEM,
	OPT_PARTIAL,
	OPT_PARTIALS_OUT,
	OPT_QUALITY,
	OPT_RESUME,
	OPT_REUSE,
	OPT_SCORE,
	OPT_STRICT,
	OPT_SUBSAMPLE,
};

struct refurbish_opts {
	struct rv_common c;
	const char *partial, *final;
	int pattern;		/* output holds one %d */
	const char *cache_dir;
	const char *input;
	uint64_t mem;
	uint32_t reuse, batch, epochs;
	int exact;		/* --exact */
	uint32_t first, last;	/* --epoch-range, inclusive */
	int range, resume;
	const char *score_text;	/* --score */
	struct rv_score_opts score;	/* parsed from it */
	const char *partials_out;	/* --partials-out: the store written */
	const char *from;	/* --from-partials: the store read */
	int dtype, quality;	/* --format, --quality */
	int subsample;		/* --subsample */
	int format_set, quality_set, sub_set, mem_set, seed_set, reuse_set;
	int epochs_set, output_set;
	int strict;		/* --strict */
};

/*
 * 1 if s holds exactly one printf integer conversion (%d with flags and
 * width) and otherwise only "%%"; 0 if it holds no '%'; -1 else.  Only
 * then is s used as a format.
 */
static int
check_pattern(const char *s)
{
	int n = 0, any = 0;

	for (; *s; s++) {
		if (*s != '%')
			continue;
		any = 1;
		if (*++s == '%')
			continue;
		s += strspn(s, "-+ #0");
		s += strspn(s, "0123456789");
		if (*s != 'd')
			return -1;
		n++;
	}
	return n == 1 ? 1 : any ? -1 : 0;
}

static char *
epoch_path(const struct refurbish_opts *o, uint32_t e)
{
	return xasprintf(o->c.output, (int)e);
}

static void
parse_range(struct refurbish_opts *o, const char *s)
{
	const char *dash = strchr(s, '-');
	uint64_t a, b;
	char *lo;

	if (!dash)
		rv_usage_die(usage, "--epoch-range: '%s': not a-b", s);
	lo = xstrndup(s, (size_t)(dash - s));
	if (rv_parse_u64(lo, 0, MAX_EPOCHS - 1, &a) < 0 ||
	    rv_parse_u64(dash + 1, 0, MAX_EPOCHS - 1, &b) < 0) {
		free(lo);
		rv_usage_die(usage, "--epoch-range: %s", rv_errmsg());
	}
	free(lo);
	if (a > b)
		rv_usage_die(usage, "--epoch-range: '%s': %llu is after %llu",
		    s, (unsigned long long)a, (unsigned long long)b);
	o->first = (uint32_t)a;
	o->last = (uint32_t)b;
	o->range = 1;
}

/*
 * --score's text, after the program's own options: rv-score's options
 * but the ones rv-refurbish decides itself.
 */
static void
parse_score(struct refurbish_opts *o)
{
	struct rv_score_opts *s = &o->score;

	rv_score_opts_text(s, "--score", o->score_text, o->c.seed, usage);
	if (!(s->conf.budget > 0))
		rv_usage_die(usage, "--score: give --budget F: rv-refurbish "
		    "keeps exactly F of each epoch, a batch at a time, so "
		    "every batch holds its share of misses");
	if (s->window_set)
		rv_usage_die(usage, "--score: --window: not here; the window "
		    "is what one --batch of kept samples takes");
	if (s->strict)
		rv_usage_die(usage, "--score: --strict: not here; "
		    "rv-refurbish stops at a sample it cannot decode either "
		    "way");
}

/* What --partials-out and --from-partials take, and refuse. */
static void
check_store_opts(struct refurbish_opts *o, int operands)
{
	const char *mode = o->partials_out ? "--partials-out" :
	    "--from-partials";

	if (o->partials_out && o->from)
		rv_usage_die(usage, "--partials-out and --from-partials: one "
		    "run stores the partials, another serves them");
	if (!o->partials_out && (o->format_set || o->quality_set ||
	    o->sub_set))
		rv_usage_die(usage, "--%s: only with --partials-out",
		    o->format_set ? "format" : o->quality_set ? "quality" :
		    "subsample");
	if ((o->quality_set || o->sub_set) && o->dtype != RV_DT_JPEG)
		rv_usage_die(usage, "--%s: only with --format jpeg (PNG "
		    "and raw are lossless)", o->quality_set ? "quality" :
		    "subsample");
	if (o->strict && !o->from)
		rv_usage_die(usage, "--strict: only with --from-partials (a "
		    "sample rv-refurbish cannot decode stops it anyway)");
	if (!o->partials_out && !o->from)
		return;
	if (o->score_text != NULL)
		rv_usage_die(usage, "--score: not with %s: %s", mode,
		    o->from ? "put rv-score --budget after rv-refurbish "
		    "--from-partials, the partials are made already" :
		    "the trainer scores at training time (--from-partials "
		    "| rv-score)");
	if (o->mem_set)
		rv_usage_die(usage, "--mem: not with %s: the partials are "
		    "on disk, not in a cache", mode);
	if (o->partials_out) {
		if (o->output_set)
			rv_usage_die(usage, "-o: not with --partials-out, "
			    "whose pattern names the files");
		if (o->final)
			rv_usage_die(usage, "--final: not with --partials-out: "
			    "the final runs when the partials are served "
			    "(--from-partials)");
		if (check_pattern(o->partials_out) != 1)
			rv_usage_die(usage, "--partials-out: '%s': a pattern "
			    "holds one %%d conversion", o->partials_out);
		o->c.output = o->partials_out;
		return;
	}
	if (operands > 0)
		rv_usage_die(usage, "--from-partials: no input: the store "
		    "holds the samples");
	if (o->partial)
		rv_usage_die(usage, "--partial: not with --from-partials: the "
		    "store's partials were made with its own");
	if (o->cache_dir)
		rv_usage_die(usage, "--cache-dir: not with --from-partials: "
		    "nothing is cached or spilled");
	if (check_pattern(o->from) != 1)
		rv_usage_die(usage, "--from-partials: '%s': a pattern holds "
		    "one %%d conversion", o->from);
}

static void
parse_args(int argc, char *argv[], struct refurbish_opts *o)
{
	static const struct option longopts[] = {
		RV_COMMON_LONGOPTS,
		{ "batch", required_argument, NULL, OPT_BATCH },
		{ "cache-dir", required_argument, NULL, OPT_CACHE_DIR },
		{ "epoch-range", required_argument, NULL, OPT_EPOCH_RANGE },
		{ "epochs", required_argument, NULL, OPT_EPOCHS },
		{ "exact", no_argument, NULL, OPT_EXACT },
		{ "final", required_argument, NULL, OPT_FINAL },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "from-partials", required_argument, NULL, OPT_FROM_PARTIALS },
		{ "mem", required_argument, NULL, OPT_MEM },
		{ "partial", required_argument, NULL, OPT_PARTIAL },
		{ "partials-out", required_argument, NULL, OPT_PARTIALS_OUT },
		{ "quality", required_argument, NULL, OPT_QUALITY },
		{ "resume", no_argument, NULL, OPT_RESUME },
		{ "reuse", required_argument, NULL, OPT_REUSE },
		{ "score", required_argument, NULL, OPT_SCORE },
		{ "strict", no_argument, NULL, OPT_STRICT },
		{ "subsample", required_argument, NULL, OPT_SUBSAMPLE },
		{ NULL, 0, NULL, 0 }
	};
	uint64_t q;
	int ch;

	memset(o, 0, sizeof(*o));
	rv_common_init(&o->c);
	rv_score_opts_init(&o->score);
	o->mem = (uint64_t)2 << 30;
	o->reuse = 1;
	o->batch = RV_BATCH_DEFAULT;
	o->epochs = 1;
	o->dtype = RV_DT_U8;
	o->quality = 90;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, RV_COMMON_SHORTOPTS,
	    longopts, NULL)) != -1) {
		if (ch == RV_OPT_SEED)
			o->seed_set = 1;
		if (ch == 'o')
			o->output_set = 1;
		if (rv_common_opt(&o->c, ch, optarg, usage))
			continue;
		switch (ch) {
		case OPT_BATCH:
			o->batch = (uint32_t)rv_opt_u64("--batch", optarg, 1,
			    UINT32_MAX, usage);
			break;
		case OPT_CACHE_DIR:
			o->cache_dir = optarg;
			break;
		case OPT_EPOCH_RANGE:
			parse_range(o, optarg);
			break;
		case OPT_EPOCHS:
			o->epochs = (uint32_t)rv_opt_u64("--epochs", optarg, 1,
			    MAX_EPOCHS, usage);
			o->epochs_set = 1;
			break;
		case OPT_EXACT:
			o->exact = 1;
			break;
		case OPT_FINAL:
			o->final = optarg;
			break;
		case OPT_FORMAT:
			if (rv_store_format(optarg, &o->dtype) < 0)
				rv_usage_die(usage, "--format: %s",
				    rv_errmsg());
			o->format_set = 1;
			break;
		case OPT_FROM_PARTIALS:
			o->from = optarg;
			break;
		case OPT_MEM:
			if (rv_parse_size(optarg, &o->mem) < 0)
				rv_usage_die(usage, "--mem: %s", rv_errmsg());
			o->mem_set = 1;
			break;
		case OPT_PARTIALS_OUT:
			o->partials_out = optarg;
			break;
		case OPT_QUALITY:
			if (rv_parse_u64(optarg, 1, 100, &q) < 0)
				rv_usage_die(usage, "--quality: '%s': not a "
				    "quality from 1 to 100", optarg);
			o->quality = (int)q;
			o->quality_set = 1;
			break;
		case OPT_PARTIAL:
			o->partial = optarg;
			break;
		case OPT_RESUME:
			o->resume = 1;
			break;
		case OPT_REUSE:
			o->reuse = (uint32_t)rv_opt_u64("--reuse", optarg, 1,
			    UINT32_MAX, usage);
			o->reuse_set = 1;
			break;
		case OPT_SCORE:
			o->score_text = optarg;
			break;
		case OPT_STRICT:
			o->strict = 1;
			break;
		case OPT_SUBSAMPLE:
			if (rv_encode_subsample(optarg, &o->subsample) < 0)
				rv_usage_die(usage, "--subsample: %s",
				    rv_errmsg());
			o->sub_set = 1;
			break;
		default:
			rv_usage_error(argv, usage);
		}
	}
	if (rv_common_operands(&o->c, argc, argv, optind) > 1)
		rv_usage_die(usage, "one input at most; got %d",
		    o->c.ninputs);
	o->input = o->c.inputs[0];
	check_store_opts(o, argc - optind);
	if (!o->partial && !o->from)
		rv_usage_die(usage, "--partial is required");
	if (!o->final && !o->partials_out)
		rv_usage_die(usage, "--final is required");
	if (o->c.output && (o->pattern = check_pattern(o->c.output)) < 0)
		rv_usage_die(usage, "-o: '%s': a pattern holds one %%d "
		    "conversion", o->c.output);
	if (o->resume && !o->pattern)
		rv_usage_die(usage, "--resume needs -o with a %%d pattern");
	if (o->score_text != NULL)
		parse_score(o);
	if (!o->range) {
		o->first = 0;
		o->last = o->epochs - 1;
	} else if (o->from && !o->epochs_set) {
		/* the store's --epochs, read later, bounds the range */
	} else if (o->last >= o->epochs) {
		rv_usage_die(usage, "--epoch-range: epoch %u is past --epochs "
		    "%u", o->last, o->epochs);
	}
}

/* A spec, or exit 2 naming the option. */
static void
parse_spec(const char *opt, const char *text, struct rv_spec *spec)
{
	if (rv_spec_parse(text, 0, spec) < 0) {
		rv_warn("%s: %s", opt, rv_errmsg());
		exit(2);
	}
}

/* The epochs to write, in order: the range, less existing files. */
static uint32_t *
plan_epochs(const struct refurbish_opts *o, size_t *n)
{
	uint32_t *v = xreallocarray(NULL, (size_t)(o->last - o->first) + 1,
	    sizeof(*v));
	struct stat st;
	uint64_t e;
	char *path;

	*n = 0;
	for (e = o->first; e <= o->last; e++) {
		if (o->resume) {
			path = epoch_path(o, (uint32_t)e);
			if (stat(path, &st) == 0) {
				free(path);
				continue;
			}
			free(path);
		}
		v[(*n)++] = (uint32_t)e;
	}
	return v;
}

/* What makes the epochs: the online loop, or a store's writer or reader
 * (one of the three). */
struct maker {
	struct rv_refurb *rf;
	struct rv_store_writer *sw;
	struct rv_store *st;
};

/* The warnings a run owes its user, each once. */
static void
cache_warnings(struct rv_refurb *rf, uint64_t n, int *warned)
{
	const struct rv_cache_stats *cs;
	const char *msg;

	if (rf == NULL)
		return;
	cs = rv_refurb_cache_stats(rf);
	if ((msg = rv_refurb_cache_error(rf)) != NULL)
		rv_warn("%s; the cache goes on in memory", msg);
	if (!*warned && cs->dropped > 0) {
		rv_warn("cache holds %llu of %llu partials; the rest are "
		    "recomputed: raise --mem or give --cache-dir",
		    (unsigned long long)(cs->mem_entries + cs->disk_entries),
		    (unsigned long long)n);
		*warned = 1;
	}
}

/* Write one epoch to an open output. */
static int
write_epoch(const struct maker *mk, struct rv_out *out, int level, uint32_t e,
    uint32_t next, struct rv_refurb_stats *st)
{
	struct rv_writer *w = rv_writer_new(out->fd, rv_out_name(out), level);
	int rc;

	if (!w)
		return -1;
	if (mk->sw != NULL)
		rc = rv_store_write(mk->sw, e, w, st);
	else if (mk->st != NULL)
		rc = rv_store_epoch(mk->st, e, w, st);
	else
		rc = rv_refurb_epoch(mk->rf, e, next, w, st);
	if (rv_writer_close(w) < 0)
		rc = -1;
	return rc;
}

/* -v's summary of the run. */
static void
summary(const struct refurbish_opts *o, const struct maker *mk, uint64_t n,
    size_t nep, uint64_t expected, uint64_t actual, uint64_t kept)
{
	if (mk->st != NULL)
		rv_warn("partials: none run, %llu samples served from '%s'",
		    (unsigned long long)kept, o->from);
	else if (mk->sw != NULL)
		rv_warn("partials: %llu stored in %zu files", (unsigned long
		    long)actual, nep);
	else if (o->score_text != NULL)
		rv_warn("partials: %llu for %llu samples served, %.3f a "
		    "sample (1/r = %.3f)", (unsigned long long)actual,
		    (unsigned long long)kept,
		    kept > 0 ? (double)actual / (double)kept : 0.0,
		    1.0 / o->reuse);
	else
		rv_warn("partials: expected %llu + (%zu-1)*%llu/%u = %llu, "
		    "actual %llu", (unsigned long long)n, nep,
		    (unsigned long long)n, o->reuse,
		    (unsigned long long)expected, (unsigned long long)actual);
}

/*
 * Write the planned epochs: to out when single, else each to its own
 * file.  Messages are printed here; returns 0 or -1.
 */
static int
run_epochs(const struct refurbish_opts *o, const struct maker *mk,
    struct rv_out *out, int single, int level, const uint32_t *epochs,
    size_t nep, uint64_t n, struct rv_progress *prog)
{
	struct rv_refurb_stats st;
	uint64_t expected = 0, actual = 0, kept = 0, skipped = 0;
	char line[256];
	size_t k;
	int rc, warned = 0;
	char *path;

	for (k = 0; k < nep; k++) {
		uint32_t e = epochs[k];
		uint32_t next = k + 1 < nep ? epochs[k + 1] : RV_REFURB_NONE;

		if (!single) {
			path = epoch_path(o, e);
			rc = rv_out_open(out, path, 1);
			free(path);
			if (rc < 0) {
				rv_warn("%s", rv_errmsg());
				return -1;
			}
		}
		rc = write_epoch(mk, out, level, e, next, &st);
		if (rc < 0)
			rv_warn("%s", rv_errmsg());
		if (!single && rv_out_finish(out, rc == 0) < 0) {
			rv_warn("%s", rv_errmsg());
			rc = -1;
		}
		if (rc < 0)
			return -1;
		cache_warnings(mk->rf, n, &warned);
		/* the first epoch written computes every partial it serves */
		expected += k == 0 ? st.kept : st.misses;
		actual += st.partials;
		kept += st.kept;
		skipped += st.skipped;
		if (o->c.verbose) {
			rv_progress_done(prog);
			rv_warn("epoch %u: %llu misses, %llu hits, %llu "
			    "partials run, %.2f s CPU, %.0f samples/s", e,
			    (unsigned long long)st.misses,
			    (unsigned long long)st.hits,
			    (unsigned long long)st.partials, st.cpu,
			    st.wall > 0 ? (double)st.kept / st.wall : 0.0);
			if (o->score_text != NULL) {
				rv_score_epoch_line(line, sizeof(line), e,
				    &st.score, o->score.conf.policy);
				rv_warn("score %s", line);
			}
		}
	}
	if (o->c.verbose)
		summary(o, mk, n, nep, expected, actual, kept);
	if (skipped > 0 && !o->c.quiet)
		rv_warn("%llu stored partials did not decode and were "
		    "skipped: the store is damaged; make their files again",
		    (unsigned long long)skipped);
	return 0;
}

/*
 * --from-partials: what the store's first file served says, for the
 * options not given (--seed, --reuse, --epochs).  Exits 1 when the file
 * cannot say (missing, not a store's), 2 for a range past the epochs.
 */
static void
store_defaults(struct refurbish_opts *o, struct rv_store_info *info)
{
	if (rv_store_peek(o->from, o->first, info) < 0) {
		rv_warn("%s", rv_errmsg());
		exit(1);
	}
	if (!o->seed_set)
		o->c.seed = info->seed;
	if (!o->reuse_set)
		o->reuse = info->reuse;
	if (!o->epochs_set)
		o->epochs = o->range && o->last >= info->epochs ?
		    o->last + 1 : info->epochs;
	if (!o->range)
		o->last = o->epochs - 1;
}

int
main(int argc, char *argv[])
{
	struct refurbish_opts o;
	struct rv_spec partial = { 0 }, final = { 0 };
	struct rv_refurb_conf conf;
	struct rv_store_conf sc;
	struct rv_store_info info;
	struct rv_refsrc *src = NULL;
	struct maker mk = { NULL, NULL, NULL };
	struct rv_progress prog;
	struct rv_out out = { -1, NULL, NULL };
	struct rv_scorer *scorer = NULL;
	struct rv_shrink_stats sst;
	char line[256], tl[160];
	uint32_t *epochs;
	uint64_t n = 0, total = 0;
	size_t nep, k;
	int level, status = 1, single = 0;

	rv_setprogname(argv[0]);
	parse_args(argc, argv, &o);
	if (o.partial)
		parse_spec("--partial", o.partial, &partial);
	if (o.final)
		parse_spec("--final", o.final, &final);
	partial.exact = final.exact = o.exact;
	if (o.from)
		store_defaults(&o, &info);
	epochs = plan_epochs(&o, &nep);
	rv_progress_init(&prog, o.c.quiet, "samples");
	if (nep == 0) {
		/* --resume: every file is there already */
		status = 0;
		goto out;
	}
	level = rv_stream_level(o.c.level);
	if (!o.pattern) {
		if (rv_out_open(&out, o.c.output, 1) < 0) {
			rv_warn("%s", rv_errmsg());
			goto out;
		}
		single = 1;
		level = rv_stream_level_fd(level, out.fd);
	} else if (level == RV_LEVEL_AUTO) {
		/* encoded partials are compressed already */
		level = o.partials_out && o.dtype != RV_DT_U8 ? 0 :
		    RV_LEVEL_FILE;
	}
	memset(&conf, 0, sizeof(conf));
	conf.partial = &partial;
	conf.final = &final;
	conf.seed = o.c.seed;
	conf.reuse = o.reuse;
	conf.batch = o.batch;
	conf.epochs = o.epochs;
	conf.written = single ? (uint32_t)nep : 0;
	conf.mem = o.mem;
	conf.cache_dir = o.cache_dir;
	conf.jobs = rv_common_jobs(&o.c);
	conf.level = level;
	conf.prog = &prog;
	memset(&sc, 0, sizeof(sc));
	sc.run = conf;
	sc.dtype = o.dtype;
	sc.quality = o.quality;
	sc.subsample = o.subsample;
	sc.strict = o.strict;
	if (o.from) {
		if ((mk.st = rv_store_open(o.from, &sc, &info, epochs,
		    nep)) == NULL) {
			rv_warn("%s", rv_errmsg());
			goto out;
		}
		n = info.samples;
		rv_progress_total(&prog, n * nep);
		goto run;
	}
	if (o.score_text != NULL &&
	    (scorer = rv_scorer_new(&o.score)) == NULL) {
		rv_warn("%s", rv_errmsg());
		goto out;
	}
	if ((src = rv_refsrc_open(o.input, o.cache_dir)) == NULL) {
		rv_warn("%s", rv_errmsg());
		goto out;
	}
	n = rv_refsrc_count(src);
	if (o.partials_out) {
		if ((mk.sw = rv_store_writer_new(&sc, src)) == NULL) {
			rv_warn("%s", rv_errmsg());
			goto out;
		}
		for (k = 0; k < nep; k++)
			total += rv_store_writer_count(mk.sw, epochs[k]);
		rv_progress_total(&prog, total);
		goto run;
	}
	conf.scorer = scorer;
	/* Every sample every epoch, unless the assistant drops some.  The
	 * metadata's total is the run's E epochs whatever is written (one
	 * file an epoch, --epoch-range), so that the files are the bytes of
	 * one run and concatenate into it; the progress counts this run. */
	if (scorer == NULL) {
		conf.total = n * o.epochs;
		rv_progress_total(&prog, n * nep);
	}
	if ((mk.rf = rv_refurb_new(&conf, src)) == NULL) {
		rv_warn("%s", rv_errmsg());
		goto out;
	}
run:
	if (run_epochs(&o, &mk, &out, single, level, epochs, nep, n,
	    &prog) == 0)
		status = 0;
	if (status == 0 && scorer != NULL) {
		rv_scorer_report_left(scorer);
		rv_score_stats(rv_scorer_shrink(scorer), &sst);
		if (!o.c.quiet && rv_score_feedback_warning(line,
		    sizeof(line), &sst))
			rv_warn("score: warning: %s", line);
		if (o.c.verbose) {
			rv_score_summary_line(line, sizeof(line), nep, &sst);
			rv_warn("score: %s%s", line, rv_scorer_thumbs_line(scorer, tl,
			    sizeof(tl)));
		}
	}
out:
	rv_progress_done(&prog);
	if (single && rv_out_finish(&out, status == 0) < 0) {
		rv_warn("%s", rv_errmsg());
		status = 1;
	}
	rv_refurb_free(mk.rf);
	rv_store_writer_free(mk.sw);
	rv_store_free(mk.st);
	rv_scorer_free(scorer);
	rv_score_opts_release(&o.score);
	rv_refsrc_free(src);
	rv_spec_release(&partial);
	rv_spec_release(&final);
	free(epochs);
	return status;
}
