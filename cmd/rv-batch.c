/*
 * rv-batch: collate a sample stream into batch records of N u8 samples,
 * the last stage before the trainer.  Options and wiring only: the
 * collator and its shuffle buffer live in lib/stream/batch.c.  Metadata and
 * epoch-end records pass through; no batch spans an epoch.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "base/io.h"
#include "base/opt.h"
#include "base/progress.h"
#include "stream/batch.h"
#include "stream/meta.h"
#include "stream/stream.h"

static const char usage[] =
    "usage: rv-batch [-qv] [-b N] [-o FILE] [--drop-last] [--level L]\n"
    "                [--seed S] [--shuffle-buffer K] [file ...]\n"
    "  -b, --batch N            samples per batch (default "
    RV_BATCH_DEFAULT_STR ")\n"
    "  -o, --output FILE        write the stream to FILE (default stdout)\n"
    "      --drop-last          drop each epoch's short final batch\n"
    "      --level L            zstd level -7..19, 0 stores (default: $RV_LEVEL,\n"
    "                           else 0 to a pipe, -1 to a file)\n"
    "      --seed S             seed for --shuffle-buffer (default 0)\n"
    "      --shuffle-buffer K   shuffle through a buffer of K samples\n"
    "                           (default 0: keep the input order)\n"
    "  -j, --jobs N             accepted; rv-batch uses one thread\n"
    "  -q, --quiet              no progress\n"
    "  -v, --verbose            print a summary at the end\n"
    "  -h, --help               print this help\n"
    "  -V, --version            print the version\n";

enum {
	OPT_DROP_LAST = RV_OPT_FIRST_PRIVATE,
	OPT_SHUFFLE_BUFFER,
};

struct batch_opts {
	struct rv_common c;
	struct rv_batch_conf conf;
};

/* Where batches go; remembers whether a failure was the output's. */
struct sink {
	struct rv_writer *w;
	int failed;
	int warned;	/* about batches that cut rv-score's windows */
};

static void
parse_args(int argc, char *argv[], struct batch_opts *o)
{
	static const struct option longopts[] = {
		RV_COMMON_LONGOPTS,
		{ "batch", required_argument, NULL, 'b' },
		{ "drop-last", no_argument, NULL, OPT_DROP_LAST },
		{ "shuffle-buffer", required_argument, NULL,
		    OPT_SHUFFLE_BUFFER },
		{ NULL, 0, NULL, 0 }
	};
	int ch;

	memset(o, 0, sizeof(*o));
	rv_common_init(&o->c);
	rv_batch_conf_init(&o->conf);
	opterr = 0;
	while ((ch = getopt_long(argc, argv, RV_COMMON_SHORTOPTS "b:",
	    longopts, NULL)) != -1) {
		if (rv_common_opt(&o->c, ch, optarg, usage))
			continue;
		switch (ch) {
		case 'b':
			o->conf.size = (uint32_t)rv_opt_u64("-b", optarg, 1,
			    1 << 20, usage);
			break;
		case OPT_DROP_LAST:
			o->conf.drop_last = 1;
			break;
		case OPT_SHUFFLE_BUFFER:
			o->conf.shuffle = (uint32_t)rv_opt_u64(
			    "--shuffle-buffer", optarg, 0, 1 << 24, usage);
			break;
		default:
			rv_usage_error(argv, usage);
		}
	}
	o->conf.seed = o->c.seed;
	rv_common_operands(&o->c, argc, argv, optind);
}

static int
put_batch(void *ctx, const struct rv_rec *batch)
{
	struct sink *k = ctx;

	if (rv_writer_put(k->w, batch, batch->payload) < 0) {
		k->failed = 1;
		return -1;
	}
	return 0;
}

/*
 * Report a failure of the batcher: the output's message stands alone, a
 * sample's names the input it came from.
 */
static void
batch_error(const struct sink *k, const char *input)
{
	if (k->failed)
		rv_warn("%s", rv_errmsg());
	else
		rv_warn("'%s': %s", input, rv_errmsg());
}

/* Report a fault of the record just read, with its position. */
static void
record_error(const struct rv_reader *r)
{
	rv_warn("'%s': record %llu at byte %llu: %s", rv_reader_name(r),
	    (unsigned long long)rv_reader_records(r) - 1,
	    (unsigned long long)rv_reader_offset(r), rv_errmsg());
}

/*
 * A refurbished stream shrunk under rv-score --budget holds, in every
 * window of k kept samples, its share of the misses (rv-score(1),
 * strata): batches of a multiple of k, without a shuffle buffer, keep it;
 * others mix windows and the share varies from batch to batch.  Said
 * once; the batches are made as asked.
 */
static void
check_windows(struct sink *k, const struct rv_meta *m,
    const struct rv_batch_conf *conf)
{
	uint64_t keep, reuse;

	if (k->warned ||
	    rv_meta_u64(m, "score.window_keep", 1, UINT64_MAX, &keep) != 1 ||
	    rv_meta_u64(m, "refurbish.reuse", 2, UINT64_MAX, &reuse) != 1)
		return;
	if (conf->size % keep == 0 && conf->shuffle == 0)
		return;
	k->warned = 1;
	if (conf->shuffle != 0)
		rv_warn("warning: --shuffle-buffer mixes rv-score's windows "
		    "of %llu kept samples: batches no longer hold even "
		    "shares of rv-refurbish's misses",
		    (unsigned long long)keep);
	else
		rv_warn("warning: batches of %u cut across rv-score's windows "
		    "of %llu kept samples (score.window_keep): they no longer "
		    "hold even shares of rv-refurbish's misses; -b %llu keeps "
		    "them even", conf->size, (unsigned long long)keep,
		    (unsigned long long)keep);
}

/*
 * Metadata goes on with the batch size and whether short batches are
 * dropped, so that a reader knows how many batches an epoch of `samples`
 * makes (rvstream's len()).
 */
static int
put_meta(struct sink *k, const struct rv_rec *rec,
    const struct rv_batch_conf *conf, struct rv_progress *prog)
{
	struct rv_meta m;
	int rc = -1;

	rv_meta_init(&m);
	if (rv_meta_parse(&m, rec->payload, (size_t)rec->payload_len) < 0) {
		/* not ours to judge: passed on as it came */
		rv_meta_release(&m);
		return rv_writer_put(k->w, rec, rec->payload);
	}
	check_windows(k, &m, conf);
	rv_progress_total(prog, rv_meta_total(&m));
	if (rv_meta_set_u64(&m, "batch.size", conf->size) < 0 ||
	    rv_meta_set(&m, "batch.drop-last", conf->drop_last ? "1" : "0") <
	    0)
		goto out;
	rc = rv_meta_put(k->w, &m);
out:
	rv_meta_release(&m);
	return rc;
}

/* Feed the inputs, read as one stream, to the batcher, passing other
 * records through. */
static int
run_input(char *const *paths, int npaths, struct rv_batcher *b,
    struct sink *k, const struct rv_batch_conf *conf,
    struct rv_progress *prog)
{
	struct rv_reader *r;
	struct rv_rec rec;
	uint64_t seen = 0;	/* samples of the epoch so far */
	int got = 0, rc = 0;

	if ((r = rv_reader_open_list(paths, npaths)) == NULL) {
		rv_warn("%s", rv_errmsg());
		return -1;
	}
	while (rc == 0 && (got = rv_reader_next(r, &rec)) == 1) {
		switch (rec.kind) {
		case RV_SAMPLE:
		case RV_BATCH:
			seen += rec.count;
			if ((rc = rv_batch_check_weights(&rec)) < 0)
				record_error(r);
			else if ((rc = rv_batcher_add(b, &rec)) < 0)
				batch_error(k, rv_reader_name(r));
			break;
		case RV_EPOCH_END:
			if ((rc = rv_batch_check_epoch_end(&rec, seen)) < 0)
				record_error(r);
			else if ((rc = rv_batcher_end_epoch(b)) < 0)
				batch_error(k, rv_reader_name(r));
			else if ((rc = rv_writer_put(k->w, &rec, NULL)) < 0)
				rv_warn("%s", rv_errmsg());
			seen = 0;
			break;
		case RV_META:
			if ((rc = put_meta(k, &rec, conf, prog)) < 0)
				rv_warn("%s", rv_errmsg());
			break;
		default:
			/* kinds of later versions */
			if ((rc = rv_writer_put(k->w, &rec, rec.payload)) < 0)
				rv_warn("%s", rv_errmsg());
			break;
		}
		rv_progress_tick(prog, rv_batcher_stats(b)->samples);
	}
	if (rc == 0 && (got < 0 || rv_reader_check_end(r) < 0)) {
		rv_warn("%s", rv_errmsg());
		rc = -1;
	}
	rv_reader_close(r);
	return rc;
}

static void
summary(const struct rv_batch_stats *st, const struct rv_batch_conf *conf)
{
	rv_warn("%llu samples in, %llu batches out (%llu full of %u, %llu "
	    "short), %llu short dropped (%llu samples), %llu epoch%s",
	    (unsigned long long)st->samples,
	    (unsigned long long)st->batches,
	    (unsigned long long)(st->batches - st->short_out), conf->size,
	    (unsigned long long)st->short_out,
	    (unsigned long long)st->short_dropped,
	    (unsigned long long)st->samples_dropped,
	    (unsigned long long)st->epochs, st->epochs == 1 ? "" : "s");
}

int
main(int argc, char *argv[])
{
	struct batch_opts o;
	struct rv_out out;
	struct sink sink = { NULL, 0, 0 };
	struct rv_batcher *b = NULL;
	struct rv_progress prog;
	int status = 1;

	rv_setprogname(argv[0]);
	parse_args(argc, argv, &o);
	if (rv_out_open(&out, o.c.output, 1) < 0)
		rv_die(1, "%s", rv_errmsg());
	rv_progress_init(&prog, o.c.quiet, "samples");
	sink.w = rv_writer_new(out.fd, rv_out_name(&out),
	    rv_stream_level(o.c.level));
	if (!sink.w || (b = rv_batcher_new(&o.conf, put_batch,
	    &sink)) == NULL) {
		rv_warn("%s", rv_errmsg());
		goto out;
	}
	if (run_input(o.c.inputs, o.c.ninputs, b, &sink, &o.conf, &prog) < 0)
		goto out;
	/* the input may end without an epoch-end record */
	if (rv_batcher_end_epoch(b) < 0) {
		batch_error(&sink, o.c.inputs[o.c.ninputs - 1]);
		goto out;
	}
	if (rv_writer_flush(sink.w) < 0) {
		rv_warn("%s", rv_errmsg());
		goto out;
	}
	status = 0;
out:
	rv_progress_done(&prog);
	if (status == 0 && o.c.verbose)
		summary(rv_batcher_stats(b), &o.conf);
	rv_batcher_free(b);
	if (rv_writer_close(sink.w) < 0 && status == 0) {
		rv_warn("%s", rv_errmsg());
		status = 1;
	}
	if (rv_out_finish(&out, status == 0) < 0) {
		rv_warn("%s", rv_errmsg());
		status = 1;
	}
	return status;
}
