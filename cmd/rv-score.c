/*
 * rv-score: instance shrinking between the epoch driver and rv-batch.
 * Each sample is kept or dropped by the assistant, history or uniform
 * policy (lib/shrink/shrink.c), learning from the trainer's feedback lines,
 * polled between records without ever blocking.  With --budget, samples
 * wait in a window of W until lib/shrink/shrink.c keeps exactly k of them.
 * Encoded samples (rv-decode --encoded) are scored before they are
 * decoded: the assistant sees a thumbnail from a reduced decode, kept by
 * id (lib/shrink/thumb.c).  The options and the scoring side
 * (shrinker, feedback, thumbnails) are lib/shrink's, shared with
 * rv-refurbish --score; the stream's wiring is here.
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/io.h"
#include "base/opt.h"
#include "base/progress.h"
#include "base/xmem.h"
#include "shrink/score_io.h"
#include "shrink/score_opt.h"
#include "shrink/scorer.h"
#include "shrink/shrink.h"
#include "stream/meta.h"
#include "stream/stream.h"

static const char usage[] =
    "usage: rv-score [-qv] [-j N] [-o FILE] [--feedback PATH] [--policy P]\n"
    "                [--assistant rv|autoassist]\n"
    "                [--floor B] [--beta X] [--keep F] [--reweight]\n"
    "                [--budget F] [--window W]\n"
    "                [--target gradnorm|loss] [--features F] [--lr LR]\n"
    "                [--l2 L]\n"
    "                [--min-feedback N] [--noise-cut L] [--noise-keep P]\n"
    "                [--noise-streak N]\n"
    "                [--max-inflight N] [--max-ids N]\n"
    "                [--strict] [--seed S] [--level L] [file ...]\n"
    "  -o, --output FILE      write the stream to FILE (default stdout)\n"
    "      --feedback PATH    the trainer's feedback, a FIFO or file\n"
    "                         (without it nothing is learned)\n"
    "      --policy P         assistant (default), history, uniform\n"
    "                         or rs2\n"
    "      --assistant A      rv (default): pooled image and history,\n"
    "                         or autoassist: the authors' as published\n"
    "      --floor B          keep probability floor, 0..1 (default 0.3)\n"
    "      --beta X           history: exponent on the percentile (default 1)\n"
    "      --keep F           uniform, rs2: fraction kept, (0, 1]\n"
    "                         (default 0.5)\n"
    "      --reweight         write weight 1/P(keep) into kept samples\n"
    "      --budget F         keep exactly F, rounded, of each window of an\n"
    "                         epoch, (0, 1]: equal counts on every rank\n"
    "                         (default: off, a draw per sample)\n"
    "      --window W         --budget's window, 1..65536 samples\n"
    "                         (default: the input's refurbish.batch,\n"
    "                         else 256)\n"
    "      --target T         rv assistant: learn gradnorm (default) or\n"
    "                         loss (autoassist: loss only)\n"
    "      --features F       rv assistant: image,history (default) or\n"
    "                         image\n"
    "      --lr LR            assistant SGD step (default 0.05;\n"
    "                         autoassist 0.01)\n"
    "      --l2 L             assistant L2 (default 1e-4; autoassist 1e-3)\n"
    "      --min-feedback N   assistant warm-up: lines learned before any\n"
    "                         drop (default 1000; autoassist 0)\n"
    "      --noise-cut L      assistant, history: a sample whose last\n"
    "                         --noise-streak losses were above L and twice\n"
    "                         the median is suspected mislabelled; auto:\n"
    "                         L = log(classes); off (default)\n"
    "      --noise-keep P     a suspect's keep probability (default 0.05)\n"
    "      --noise-streak N   suspect losses in a row, 1..255 (default 2)\n"
    "      --max-inflight N   kept samples awaiting feedback (default 65536)\n"
    "      --max-ids N        history and history features: ids remembered\n"
    "                         (default 1048576)\n"
    "      --strict           an encoded image the assistant cannot decode\n"
    "                         is fatal instead of skipped\n"
    "      --seed S           seed of the keep draws (default 0)\n"
    "      --level L          zstd level -7..19, 0 stores (default: $RV_LEVEL,\n"
    "                         else 0 to a pipe, -1 to a file)\n"
    "  -j, --jobs N           accepted; rv-score uses one thread\n"
    "  -q, --quiet            no progress\n"
    "  -v, --verbose          a line per epoch and a summary at the end\n"
    "  -h, --help             print this help\n"
    "  -V, --version          print the version\n";

struct score_opts {
	struct rv_common c;
	struct rv_score_opts s;
};

/* A sample waiting for its budget window's decision, payload owned. */
struct held {
	struct rv_rec rec;
	unsigned char *buf;
	size_t cap;
};

struct score {
	const struct score_opts *o;
	struct rv_scorer *scorer;
	/* the scorer's configuration: --budget's window from the input's
	 * refurbish.batch when --window is not given; fixed at the first
	 * sample */
	struct rv_shrink_conf *conf;
	struct rv_writer *w;
	struct rv_shrink *s;	/* made at the first sample */
	uint64_t skipped;	/* encoded samples that would not decode */
	uint64_t epochs;
	uint64_t samples;	/* read, for the progress line */
	struct rv_progress *prog;
	int meta_out;		/* our metadata record is out */
	struct held *win;	/* --budget: the window, W slots */
	struct rv_keep *keeps;	/* and its decisions */
	size_t nwin;
};

static void
parse_args(int argc, char *argv[], struct score_opts *o)
{
	static const struct option longopts[] = {
		RV_COMMON_LONGOPTS,
		RV_SCORE_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	int ch;

	memset(o, 0, sizeof(*o));
	rv_common_init(&o->c);
	rv_score_opts_init(&o->s);
	opterr = 0;
	while ((ch = getopt_long(argc, argv, RV_COMMON_SHORTOPTS,
	    longopts, NULL)) != -1) {
		if (rv_common_opt(&o->c, ch, optarg, usage) ||
		    rv_score_opt(&o->s, ch, optarg, usage))
			continue;
		rv_usage_error(argv, usage);
	}
	rv_score_opts_finish(&o->s, o->c.seed, usage);
	rv_common_operands(&o->c, argc, argv, optind);
}

/*
 * --budget without --window: windows of rv-refurbish's groups, so that
 * each window holds an even share of its misses (rv-score(1), strata).
 */
static int
window_from(struct score *sc, const struct rv_meta *m)
{
	uint64_t b;
	int rc;

	rc = rv_meta_u64(m, "refurbish.batch", 1, UINT64_MAX, &b);
	if (rc <= 0)
		return rc;
	if (b > RV_SHRINK_MAX_WINDOW)
		return rv_seterr("refurbish.batch %llu: over the largest "
		    "--budget window, %d: give --window",
		    (unsigned long long)b, RV_SHRINK_MAX_WINDOW);
	sc->conf->window = (uint32_t)b;
	return 0;
}

/*
 * Our metadata: rec's pairs (NULL: none) with what rv-score does added.
 * Returns 0, -1 for bad metadata or 1 for a failure of the output.
 */
static int
put_meta(struct score *sc, const struct rv_rec *rec)
{
	struct rv_meta m;
	int rc = -1;

	rv_meta_init(&m);
	if (rec != NULL && rv_meta_parse(&m, rec->payload,
	    (size_t)rec->payload_len) < 0)
		goto out;
	if (rv_scorer_meta(sc->scorer, &m) < 0)
		goto out;
	/* The progress counts what comes in; what goes out is fewer, by as
	 * many as are dropped: not known ahead. */
	rv_progress_total(sc->prog, rv_meta_total(&m));
	if (sc->conf->budget > 0 && !sc->o->s.window_set && sc->s == NULL &&
	    window_from(sc, &m) < 0)
		goto out;
	/* the options that shape the output are score.* keys, never argv:
	 * the bytes do not depend on -j, -o or -q */
	if (rv_meta_set(&m, "producer", "rv-score " RV_VERSION_STRING) < 0 ||
	    rv_meta_set(&m, "total", "") < 0 ||
	    rv_score_meta_conf(&m, sc->conf) < 0 ||
	    rv_score_meta_kept(&m, sc->conf, sc->s == NULL) < 0)
		goto out;
	rc = rv_meta_put(sc->w, &m) < 0 ? 1 : 0;
	sc->meta_out = 1;
out:
	rv_meta_release(&m);
	return rc;
}

/* Write a kept sample, scored and weighted. */
static int
put_kept(struct score *sc, const struct rv_rec *rec, const struct rv_keep *k)
{
	struct rv_rec out = *rec;

	out.flags |= RV_F_SCORED;
	out.score = k->score;
	if (sc->conf->reweight) {
		out.flags |= RV_F_REWEIGHTED;
		out.weight *= k->weight;
	}
	return rv_writer_put(sc->w, &out, rec->payload) < 0 ? 1 : 0;
}

/* --budget: decide the window and write what it keeps, in order. */
static int
flush_window(struct score *sc)
{
	size_t i, n;

	if (sc->nwin == 0)
		return 0;
	n = rv_shrink_decide_window(sc->s, sc->keeps);
	sc->nwin = 0;
	for (i = 0; i < n; i++)
		if (sc->keeps[i].keep &&
		    put_kept(sc, &sc->win[i].rec, &sc->keeps[i]) != 0)
			return 1;
	return 0;
}

/*
 * --budget: offer the sample (px, h x w x c: what the assistant sees of
 * it) and hold a copy until its window is full.
 */
static int
hold(struct score *sc, const struct rv_rec *rec, const uint8_t *px,
    uint32_t h, uint32_t w, uint32_t c)
{
	struct held *slot;

	if (sc->nwin > 0 && rec->epoch != sc->win[0].rec.epoch &&
	    flush_window(sc) != 0)
		return 1;
	/* misses and cache hits are kept in proportion (strata) */
	if (rv_shrink_offer(sc->s, rec->id, rec->epoch, rec->label,
	    (rec->flags & RV_F_CACHED) != 0, px, h, w, c) < 0)
		return -1;
	slot = &sc->win[sc->nwin++];
	/* grown to the largest sample seen, then reused */
	if (rec->payload_len > slot->cap) {
		slot->buf = xrealloc(slot->buf, (size_t)rec->payload_len);
		slot->cap = (size_t)rec->payload_len;
	}
	if (rec->payload_len > 0)
		memcpy(slot->buf, rec->payload, (size_t)rec->payload_len);
	slot->rec = *rec;
	slot->rec.payload = slot->buf;
	if (sc->nwin == sc->conf->window)
		return flush_window(sc);
	return 0;
}

/* The shrinker, at the first sample, and --budget's window. */
static int
make_shrink(struct score *sc, const struct rv_rec *rec)
{
	if (rv_scorer_start(sc->scorer, rec) < 0)
		return -1;
	sc->s = rv_scorer_shrink(sc->scorer);
	if (sc->conf->budget > 0) {
		sc->win = xcalloc(sc->conf->window, sizeof(*sc->win));
		sc->keeps = xcalloc(sc->conf->window, sizeof(*sc->keeps));
	}
	return 0;
}

/* Score one sample.  0, 1 for one skipped (rv_errmsg() says why), -1. */
static int
sample(struct score *sc, const struct rv_rec *rec)
{
	const uint8_t *px;
	uint32_t h, w, c;
	struct rv_keep k;
	int rc;

	if (sc->s == NULL && make_shrink(sc, rec) < 0)
		return -1;
	/* only the assistant looks at pixels: the others pass encoded
	 * samples on as they are */
	if ((rc = rv_scorer_view(sc->scorer, rec, &px, &h, &w, &c)) != 0)
		return rc;
	rv_scorer_poll(sc->scorer);
	if (sc->conf->budget > 0)
		return hold(sc, rec, px, h, w, c);
	if (rv_shrink_decide(sc->s, rec->id, rec->epoch, rec->label, px, h,
	    w, c, &k) < 0)
		return -1;
	return k.keep ? put_kept(sc, rec, &k) : 0;
}

/* The epoch's report, as metadata and with -v on stderr, then its end. */
static int
epoch_end(struct score *sc, const struct rv_rec *rec)
{
	struct rv_shrink_stats st;
	struct rv_meta m;
	struct rv_rec out;
	char line[256];
	int rc;

	if (flush_window(sc) != 0)
		return 1;
	rv_score_stats(sc->s, &st);
	rv_meta_init(&m);
	rc = rv_score_meta_epoch(&m, rec->epoch, &st);
	if (rc == 0)
		rc = rv_meta_put(sc->w, &m);
	rv_meta_release(&m);
	out = *rec;
	out.count = (uint32_t)st.kept;
	if (rc < 0 || rv_writer_put(sc->w, &out, NULL) < 0)
		return 1;
	if (sc->o->c.verbose) {
		rv_score_epoch_line(line, sizeof(line), rec->epoch, &st,
		    sc->conf->policy);
		rv_warn("%s", line);
	}
	if (sc->s != NULL)
		rv_shrink_epoch_end(sc->s);
	sc->epochs++;
	return 0;
}

/*
 * Score the inputs, read as one stream (rv_reader_open_list).  Returns 0,
 * -1 for a failure of the input (reported here, with the record), or 1
 * for one of the output (left in rv_errmsg()).
 */
static int
run_input(char *const *paths, int npaths, struct score *sc,
    struct rv_progress *prog)
{
	struct rv_reader *r;
	struct rv_rec rec;
	int got = 0, rc = 0;

	if ((r = rv_reader_open_list(paths, npaths)) == NULL) {
		rv_warn("%s", rv_errmsg());
		return -1;
	}
	while (rc == 0 && (got = rv_reader_next(r, &rec)) == 1) {
		if (!sc->meta_out && rec.kind != RV_META &&
		    put_meta(sc, NULL) != 0) {
			rc = 1;
			break;
		}
		switch (rec.kind) {
		case RV_SAMPLE:
			rc = sample(sc, &rec);
			sc->samples++;
			if (rc != 1)
				break;
			/* as rv-augment says it */
			rv_preferr("'%s': record %llu (id %llu)",
			    rv_reader_name(r),
			    (unsigned long long)rv_reader_records(r) - 1,
			    (unsigned long long)rec.id);
			if (sc->o->s.strict) {
				rc = 2;
				break;
			}
			rv_warn("%s (skipped)", rv_errmsg());
			sc->skipped++;
			rc = 0;
			break;
		case RV_BATCH:
			rc = rv_seterr("rv-score works on samples: put it "
			    "before rv-batch");
			break;
		case RV_EPOCH_END:
			rc = epoch_end(sc, &rec);
			break;
		case RV_META:
			/* passed on at once, ahead of a window's samples:
			 * metadata may come anywhere, and a window cut here
			 * would make the count depend on where it came */
			rc = put_meta(sc, &rec);
			break;
		default:
			/* kinds of later versions, in their place */
			rc = flush_window(sc);
			if (rc == 0 && rv_writer_put(sc->w, &rec,
			    rec.payload) < 0)
				rc = 1;
			break;
		}
		if (rc == 2)
			rc = -1;	/* named above */
		else if (rc < 0)
			rv_preferr("'%s': record %llu at byte %llu",
			    rv_reader_name(r),
			    (unsigned long long)rv_reader_records(r) - 1,
			    (unsigned long long)rv_reader_offset(r));
		/* not rv_score_stats(): the assistant's AUC sorts its
		 * window, far too dear for every sample */
		rv_progress_tick(prog, sc->samples);
	}
	if (rc == 0 && (got < 0 || rv_reader_check_end(r) < 0))
		rc = -1;
	if (rc == 0)
		rc = flush_window(sc);
	if (rc < 0)
		rv_warn("%s", rv_errmsg());
	rv_reader_close(r);
	return rc;
}

/* The summary's end for encoded input: "; N encoded samples decoded
 * reduced for the assistant (M from the cache), K skipped". */
static const char *
thumbs_line(const struct score *sc, char *buf, size_t len)
{
	size_t n;

	rv_scorer_thumbs_line(sc->scorer, buf, len);
	n = strlen(buf);
	if (sc->skipped > 0 && n < len)
		snprintf(buf + n, len - n, "%s%llu skipped",
		    n > 0 ? ", " : "; ", (unsigned long long)sc->skipped);
	return buf;
}

int
main(int argc, char *argv[])
{
	struct score_opts o;
	struct score *sc;
	struct rv_out out;
	struct rv_progress prog;
	struct rv_shrink_stats st;
	struct rv_scorer *scorer;
	char line[256], tl[160];
	size_t i;
	int rc, status = 1;

	rv_setprogname(argv[0]);
	parse_args(argc, argv, &o);
	if ((scorer = rv_scorer_new(&o.s)) == NULL)
		rv_die(1, "%s", rv_errmsg());
	if (rv_out_open(&out, o.c.output, 1) < 0) {
		rv_warn("%s", rv_errmsg());
		rv_scorer_free(scorer);
		return 1;
	}
	sc = xcalloc(1, sizeof(*sc));
	sc->o = &o;
	sc->scorer = scorer;
	sc->conf = rv_scorer_conf(scorer);
	rv_progress_init(&prog, o.c.quiet, "samples");
	sc->prog = &prog;
	sc->w = rv_writer_new(out.fd, rv_out_name(&out),
	    rv_stream_level(o.c.level));
	if (sc->w == NULL) {
		rv_warn("%s", rv_errmsg());
		goto out;
	}
	if ((rc = run_input(o.c.inputs, o.c.ninputs, sc, &prog)) != 0) {
		if (rc > 0)
			rv_warn("%s", rv_errmsg());
		goto out;
	}
	if ((!sc->meta_out && put_meta(sc, NULL) != 0) ||
	    rv_writer_flush(sc->w) < 0) {
		rv_warn("%s", rv_errmsg());
		goto out;
	}
	status = 0;
	rv_scorer_report_left(sc->scorer);
	rv_score_stats(sc->s, &st);
	if (!o.c.quiet && rv_score_feedback_warning(line, sizeof(line), &st))
		rv_warn("warning: %s", line);
out:
	rv_progress_done(&prog);
	if (status == 0 && o.c.verbose) {	/* st: the run's, above */
		rv_score_summary_line(line, sizeof(line), sc->epochs, &st);
		rv_warn("%s%s", line, thumbs_line(sc, tl, sizeof(tl)));
	}
	for (i = 0; sc->win != NULL && i < sc->conf->window; i++)
		free(sc->win[i].buf);
	free(sc->win);
	free(sc->keeps);
	rv_scorer_free(sc->scorer);
	if (rv_writer_close(sc->w) < 0 && status == 0) {
		rv_warn("%s", rv_errmsg());
		status = 1;
	}
	free(sc);
	if (rv_out_finish(&out, status == 0) < 0) {
		rv_warn("%s", rv_errmsg());
		status = 1;
	}
	return status;
}
