/*
 * rv-augment: apply an op spec (rv-ops(7)) to every sample of a stream.
 * Samples are gathered in chunks, augmented (and framed) on -j threads
 * and written in input order (par.h), so the bytes depend on neither -j
 * nor how a spec is split over processes: each op draws from a generator
 * keyed by its index in the whole chain, carried in augment.ops.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aug/aug.h"
#include "aug/aug_text.h"
#include "base/err.h"
#include "base/io.h"
#include "base/opt.h"
#include "base/progress.h"
#include "base/rng.h"
#include "base/xmem.h"
#include "codec/codec.h"
#include "codec/coder.h"
#include "stream/filter.h"
#include "stream/meta.h"
#include "stream/stream.h"

static const char usage[] =
    "usage: rv-augment [-qv] [-j N] [-o FILE] [--exact] [--level L] [--seed S]\n"
    "                  [--strict] SPEC [file ...]\n"
    "       rv-augment --list-ops\n"
    "  -o, --output FILE  write the stream to FILE (default stdout)\n"
    "  -j, --jobs N       threads (default: all cores)\n"
    "      --exact        decode JPEG samples at full scale only: the bytes\n"
    "                     of decoding them upstream\n"
    "      --list-ops     list every op and its arguments, then exit\n"
    "      --level L      zstd level -7..19, 0 stores (default: $RV_LEVEL,\n"
    "                     else 0 to a pipe, -1 to a file)\n"
    "      --seed S       seed of the ops' random numbers (default 0)\n"
    "      --strict       an encoded image that does not decode is fatal\n"
    "                     instead of skipped\n"
    "  -q, --quiet        no progress\n"
    "  -v, --verbose      print a summary at the end\n"
    "  -h, --help         print this help\n"
    "  -V, --version      print the version\n";

enum {
	OPT_LIST_OPS = RV_OPT_FIRST_PRIVATE,
	OPT_EXACT,
	OPT_STRICT,
};

/* A chunk: up to 64 records per thread, fewer for large images (par.h). */
#define CHUNK_PER_THREAD	64
/* Op buffers larger than this are freed before a sample is framed. */
#define BIG_TMP			((size_t)64 << 20)

struct augment_opts {
	struct rv_common c;
	const char *spec_text;
	int level;		/* resolved for the output */
	int exact;		/* --exact */
	int strict;		/* --strict */
};

struct worker {
	struct rv_coder k;	/* decoder, encoder, image */
	struct rv_aug_ctx ctx;
};

/* A sample's mark (rv_filter_item): rv_spec_decode_apply()'s DCT
 * denominator, 0 for u8 pixels. */
struct job {
	const struct augment_opts *o;
	struct rv_spec spec;
	struct chain *ch;
	struct rv_writer *w;
	struct rv_progress *prog;
	uint64_t decoded;	/* encoded samples decoded (main thread) */
	uint64_t fused;		/* of them, with the crop fused */
	uint64_t scaled;	/* of those, below full scale */
};

/* The chain as the stream's metadata says it stands. */
struct chain {
	uint32_t upstream;	/* augment.ops before this program */
	char *spec;		/* augment.spec before it, or NULL */
};

static void
list_ops(void)
{
	struct rv_buf b = { 0 };

	rv_ops_describe(&b);
	fwrite(b.data, 1, b.len, stdout);
	rv_buf_release(&b);
	exit(fclose(stdout) == 0 ? 0 : 1);
}

static void
parse_args(int argc, char *argv[], struct augment_opts *o)
{
	static const struct option longopts[] = {
		RV_COMMON_LONGOPTS,
		{ "exact", no_argument, NULL, OPT_EXACT },
		{ "list-ops", no_argument, NULL, OPT_LIST_OPS },
		{ "strict", no_argument, NULL, OPT_STRICT },
		{ NULL, 0, NULL, 0 }
	};
	int ch, list = 0;

	memset(o, 0, sizeof(*o));
	rv_common_init(&o->c);
	opterr = 0;
	while ((ch = getopt_long(argc, argv, RV_COMMON_SHORTOPTS,
	    longopts, NULL)) != -1) {
		if (rv_common_opt(&o->c, ch, optarg, usage))
			continue;
		switch (ch) {
		case OPT_LIST_OPS:
			list = 1;
			break;
		case OPT_EXACT:
			o->exact = 1;
			break;
		case OPT_STRICT:
			o->strict = 1;
			break;
		default:
			rv_usage_error(argv, usage);
		}
	}
	if (list)
		list_ops();
	if (optind >= argc)
		rv_usage_die(usage, "no spec given");
	o->spec_text = argv[optind++];
	rv_common_operands(&o->c, argc, argv, optind);
}

static void
worker_stop(void *state)
{
	struct worker *w = state;

	if (!w)
		return;
	rv_coder_release(&w->k);
	rv_aug_ctx_release(&w->ctx);
	free(w);
}

static void *
worker_start(void *arg)
{
	const struct augment_opts *o = arg;
	struct worker *w = xcalloc(1, sizeof(*w));

	rv_aug_ctx_init(&w->ctx);
	if (rv_coder_init(&w->k, o->level, o->strict) < 0) {
		worker_stop(w);
		return NULL;
	}
	return w;
}

/*
 * The sample's pixels become the worker's image by trading buffers, not
 * by a copy: with the reader's hand-over (rv_reader_take) a sample is
 * never copied on its way in, so a big one costs itself, what the ops
 * make of it and its output frame.
 */
static void
swap_in(struct worker *w, struct rv_filter_item *s)
{
	unsigned char *data = w->k.img.data;
	size_t cap = w->k.img.cap;

	w->k.img.data = s->in.data;
	w->k.img.cap = s->in.cap;
	w->k.img.h = s->rec.height;
	w->k.img.w = s->rec.width;
	w->k.img.c = s->rec.channels;
	s->in.data = data;
	s->in.cap = cap;
	s->in.len = 0;
}

/* Augment and frame one sample of the chunk. */
static int
augment_one(void *state, struct rv_filter_item *s, struct rv_par_slot *slot,
    void *ctx)
{
	struct worker *w = state;
	const struct job *j = ctx;
	struct rv_rec out;

	if (s->rec.channels != 1 && s->rec.channels != 3) {
		rv_seterr("sample has %u channels; ops take 1 or 3",
		    s->rec.channels);
		goto bad;
	}
	if (s->rec.height == 0 || s->rec.width == 0) {
		rv_seterr("sample is %ux%u", s->rec.width, s->rec.height);
		goto bad;
	}
	if (s->rec.dtype == RV_DT_U8) {
		if (s->in.len != (size_t)s->rec.height * s->rec.width *
		    s->rec.channels) {
			rv_seterr("payload of %zu bytes for %ux%ux%u pixels",
			    s->in.len, s->rec.width, s->rec.height,
			    s->rec.channels);
			goto bad;
		}
		swap_in(w, s);
		if (rv_spec_apply(&j->spec, &w->k.img, &w->ctx, j->o->c.seed,
		    RV_STAGE_AUGMENT, s->rec.epoch, s->rec.id) < 0)
			goto bad;
	} else if (s->rec.dtype == RV_DT_JPEG || s->rec.dtype == RV_DT_PNG) {
		s->mark = rv_spec_decode_apply(&j->spec, w->k.codec, &s->rec,
		    s->in.data, s->in.len, &w->k.img, &w->ctx, j->o->c.seed,
		    RV_STAGE_AUGMENT, s->rec.epoch, s->rec.id);
		if (s->mark < 0) {
			/* a bad image in the dataset: augment_done decides */
			rv_preferr("'%s': record %llu (id %llu)", s->input,
			    (unsigned long long)s->recno,
			    (unsigned long long)s->rec.id);
			return RV_PAR_SKIP;
		}
	} else {
		rv_seterr("sample of dtype '%s' has no pixels",
		    rv_dtype_name(s->rec.dtype));
		goto bad;
	}
	/* a big op buffer would sit beside the frame: give it back */
	if (w->ctx.tmp.cap > BIG_TMP)
		rv_img_release(&w->ctx.tmp);
	out = s->rec;
	out.dtype = RV_DT_U8;
	out.height = w->k.img.h;
	out.width = w->k.img.w;
	out.channels = w->k.img.c;
	out.payload_len = (uint64_t)w->k.img.h * w->k.img.w * w->k.img.c;
	out.payload = NULL;
	if (rv_enc_frame(w->k.enc, &out, w->k.img.data, &slot->frame) < 0)
		goto bad;
	return RV_PAR_OK;
bad:
	return rv_preferr("'%s': record %llu (id %llu)", s->input,
	    (unsigned long long)s->recno, (unsigned long long)s->rec.id);
}

/* In order, after a sample ran: its frame goes out after this. */
static int
augment_done(void *ctx, struct rv_filter_item *s,
    const struct rv_par_slot *slot)
{
	struct job *j = ctx;

	j->decoded += s->rec.dtype != RV_DT_U8;
	j->fused += s->mark > 0;
	j->scaled += s->mark > 1;
	return 0;
}

/*
 * Write a metadata record saying what ran: m (upstream's record, or an
 * empty one) with augment.ops = upstream count + ours and augment.spec
 * with our canonical text appended.
 */
static int
put_meta(struct rv_writer *w, struct rv_meta *m, const struct chain *ch,
    const struct rv_spec *spec)
{
	char *text;
	int rc;

	if (rv_meta_set(m, "producer", "rv-augment " RV_VERSION_STRING) < 0 ||
	    rv_meta_set_u64(m, "augment.ops", ch->upstream + spec->n) < 0)
		return -1;
	if (ch->spec && *ch->spec && *spec->text)
		text = xasprintf("%s; %s", ch->spec, spec->text);
	else
		text = xstrdup(ch->spec && *ch->spec ? ch->spec : spec->text);
	rc = rv_meta_set(m, "augment.spec", text);
	free(text);
	return rc < 0 ? -1 : rv_meta_put(w, m);
}

/*
 * A metadata record: merge it into the chain's view (a record without
 * augment.ops keeps the count, as readers merge every record), number
 * our ops after upstream's and pass the record on with our part added.
 */
static int
meta_record(const struct rv_rec *rec, struct chain *ch, struct job *j,
    struct rv_writer *w)
{
	struct rv_meta m;
	const char *v;
	uint64_t up;
	size_t k;
	int rc = -1;

	rv_meta_init(&m);
	if (rv_meta_parse(&m, rec->payload, (size_t)rec->payload_len) < 0)
		goto out;
	if ((v = rv_meta_get(&m, "augment.ops")) != NULL) {
		if (rv_parse_u64(v, 0, UINT32_MAX - 65536, &up) < 0) {
			rv_preferr("augment.ops");
			goto out;
		}
		ch->upstream = (uint32_t)up;
	}
	if ((v = rv_meta_get(&m, "augment.spec")) != NULL) {
		free(ch->spec);
		ch->spec = xstrdup(v);
	}
	/* One sample out for one in: the total passes on as it is. */
	rv_progress_total(j->prog, rv_meta_total(&m));
	for (k = 0; k < j->spec.n; k++)
		j->spec.ops[k].index = ch->upstream + (uint32_t)k;
	rc = put_meta(w, &m, ch, &j->spec);
out:
	rv_meta_release(&m);
	return rc;
}

/* The filter's metadata hook: a record passed on with our part added,
 * or (rec NULL) what ran said before a first sample without one. */
static int
augment_meta(void *ctx, const struct rv_rec *rec)
{
	struct job *j = ctx;
	struct rv_meta empty;
	int rc;

	if (rec != NULL)
		return meta_record(rec, j->ch, j, j->w);
	rv_meta_init(&empty);
	rc = put_meta(j->w, &empty, j->ch, &j->spec);
	rv_meta_release(&empty);
	return rc;
}

int
main(int argc, char *argv[])
{
	struct augment_opts o;
	struct rv_out out;
	struct rv_progress prog;
	struct job job;
	struct chain ch = { 0, NULL };
	struct rv_filter *f = NULL;
	uint64_t written = 0;
	int status = 1;
	double t0;

	rv_setprogname(argv[0]);
	parse_args(argc, argv, &o);
	memset(&job, 0, sizeof(job));
	job.o = &o;
	job.ch = &ch;
	if (rv_spec_parse(o.spec_text, 0, &job.spec) < 0) {
		rv_warn("%s", rv_errmsg());
		exit(2);
	}
	job.spec.exact = o.exact;
	if (rv_out_open(&out, o.c.output, 1) < 0)
		rv_die(1, "%s", rv_errmsg());
	rv_progress_init(&prog, o.c.quiet, "samples");
	job.prog = &prog;
	t0 = rv_now();
	o.level = rv_stream_level_fd(rv_stream_level(o.c.level), out.fd);
	if ((job.w = rv_writer_new(out.fd, rv_out_name(&out), o.level)) ==
	    NULL)
		goto fail;
	f = rv_filter_new(&(struct rv_filter_conf){
		.strict = o.strict, .verb = "augment", .nthreads = rv_common_jobs(&o.c),
		.per_thread = CHUNK_PER_THREAD,
		.start = worker_start, .stop = worker_stop, .arg = &o,
		.sample = augment_one, .done = augment_done,
		.meta = augment_meta, .ctx = &job, .out = job.w,
		.prog = &prog });
	if (f == NULL)
		goto fail;
	if (rv_filter_run(f, o.c.inputs, o.c.ninputs) < 0)
		goto fail;
	if (rv_writer_flush(job.w) < 0)
		goto fail;
	written = rv_filter_stats(f)->frames;
	status = 0;
	goto out;
fail:
	rv_warn("%s", rv_errmsg());
out:
	rv_progress_done(&prog);
	if (status == 0 && o.c.verbose) {
		double dt = rv_now() - t0;
		uint64_t skipped = rv_filter_stats(f)->skipped;
		char fu[160] = "";
		size_t k = 0;

		if (skipped > 0)
			k = (size_t)snprintf(fu, sizeof(fu), ", %llu skipped",
			    (unsigned long long)skipped);
		if (job.fused > 0)
			snprintf(fu + k, sizeof(fu) - k, ", %llu with the crop "
			    "fused, %llu of them below full scale",
			    (unsigned long long)job.fused,
			    (unsigned long long)job.scaled);
		rv_warn("%llu samples (%llu decoded%s), %zu op%s, %.2f s, "
		    "%.0f samples/s", (unsigned long long)written,
		    (unsigned long long)job.decoded, fu, job.spec.n,
		    job.spec.n == 1 ? "" : "s", dt,
		    dt > 0 ? (double)written / dt : 0.0);
	}
	if (rv_writer_close(job.w) < 0 && status == 0) {
		rv_warn("%s", rv_errmsg());
		status = 1;
	}
	rv_filter_free(f);
	rv_spec_release(&job.spec);
	free(ch.spec);
	if (rv_out_finish(&out, status == 0) < 0) {
		rv_warn("%s", rv_errmsg());
		status = 1;
	}
	return status;
}
