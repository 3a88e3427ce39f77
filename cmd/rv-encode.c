/*
 * rv-encode: store a stream's samples encoded, as JPEG or PNG (the
 * stream's jpeg and png dtypes), for epochs kept on disk.  Samples are
 * encoded (and framed) on -j threads in chunks and written in input order
 * (stream/filter.h), so the bytes do not depend on -j; the encoding rules
 * live in lib/codec/encode.c.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/io.h"
#include "base/opt.h"
#include "base/progress.h"
#include "base/xmem.h"
#include "codec/coder.h"
#include "codec/encode.h"
#include "stream/filter.h"
#include "stream/meta.h"
#include "stream/stream.h"

static const char usage[] =
    "usage: rv-encode [-qv] [-j N] [-o FILE] [--format F] [--quality Q]\n"
    "                 [--subsample S] [--level L] [--strict] [file ...]\n"
    "  -o, --output FILE  write the stream to FILE (default stdout)\n"
    "  -j, --jobs N       threads (default: all cores)\n"
    "      --format F     jpeg (default) or png\n"
    "      --quality Q    JPEG quality, 1 to 100 (default 90)\n"
    "      --subsample S  JPEG chroma: 420 (default, half resolution)\n"
    "                     or 444 (full)\n"
    "      --level L      zstd level -7..19 of the frames, 0 stores\n"
    "                     (default: $RV_LEVEL, else 0: the images are\n"
    "                     compressed already)\n"
    "      --strict       a sample that cannot be encoded is fatal\n"
    "                     instead of skipped\n"
    "  -q, --quiet        no progress\n"
    "  -v, --verbose      print a summary at the end\n"
    "  -h, --help         print this help\n"
    "  -V, --version      print the version\n";

enum {
	OPT_FORMAT = RV_OPT_FIRST_PRIVATE,
	OPT_QUALITY,
	OPT_STRICT,
	OPT_SUBSAMPLE,
};

/* A chunk: up to 64 records per thread (par.h). */
#define CHUNK_PER_THREAD	64

struct encode_opts {
	struct rv_common c;
	struct rv_encode_conf e;
	int level;		/* resolved for the output */
	int strict;
};

/* A sample's mark (rv_filter_item): 1 when it is in the format already
 * (written as it came); its n: the bytes of its encoding. */
struct worker {
	struct rv_coder k;	/* decoder, frame encoder, image */
	struct rv_encoder e;
	struct rv_buf out;	/* the encoded image */
};

struct job {
	const struct encode_opts *o;
	struct rv_writer *w;
	struct rv_progress *prog;
	uint64_t encoded, kept;	/* samples encoded; already in the format */
	uint64_t bytes_in, bytes_out;	/* their payloads */
};

static void
parse_args(int argc, char *argv[], struct encode_opts *o)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "jobs", required_argument, NULL, 'j' },
		{ "level", required_argument, NULL, RV_OPT_LEVEL },
		{ "output", required_argument, NULL, 'o' },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "quality", required_argument, NULL, OPT_QUALITY },
		{ "strict", no_argument, NULL, OPT_STRICT },
		{ "subsample", required_argument, NULL, OPT_SUBSAMPLE },
		{ NULL, 0, NULL, 0 }
	};
	uint64_t q;
	int ch, quality_set = 0, sub_set = 0;

	memset(o, 0, sizeof(*o));
	rv_common_init(&o->c);
	o->e.dtype = RV_DT_JPEG;
	o->e.quality = 90;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, RV_COMMON_SHORTOPTS,
	    longopts, NULL)) != -1) {
		if (rv_common_opt(&o->c, ch, optarg, usage))
			continue;
		switch (ch) {
		case OPT_FORMAT:
			if (rv_encode_format(optarg, &o->e.dtype) < 0)
				rv_usage_die(usage, "--format: %s",
				    rv_errmsg());
			break;
		case OPT_QUALITY:
			if (rv_parse_u64(optarg, 1, 100, &q) < 0)
				rv_usage_die(usage, "--quality: '%s': not a "
				    "quality from 1 to 100", optarg);
			o->e.quality = (int)q;
			quality_set = 1;
			break;
		case OPT_STRICT:
			o->strict = 1;
			break;
		case OPT_SUBSAMPLE:
			if (rv_encode_subsample(optarg, &o->e.subsample) < 0)
				rv_usage_die(usage, "--subsample: %s",
				    rv_errmsg());
			sub_set = 1;
			break;
		default:
			rv_usage_error(argv, usage);
		}
	}
	if ((quality_set || sub_set) && o->e.dtype != RV_DT_JPEG)
		rv_usage_die(usage, "--%s: only with --format jpeg (PNG "
		    "is lossless)", quality_set ? "quality" : "subsample");
	rv_common_operands(&o->c, argc, argv, optind);
}

static void
worker_stop(void *state)
{
	struct worker *w = state;

	if (!w)
		return;
	rv_coder_release(&w->k);
	rv_encoder_release(&w->e);
	rv_buf_release(&w->out);
	free(w);
}

static void *
worker_start(void *arg)
{
	const struct encode_opts *o = arg;
	struct worker *w = xcalloc(1, sizeof(*w));

	if (rv_coder_init(&w->k, o->level, 1) < 0 ||
	    rv_encoder_init(&w->e, &o->e) < 0) {
		worker_stop(w);
		return NULL;
	}
	return w;
}

/* Encode and frame one sample of the chunk. */
static int
encode_one(void *state, struct rv_filter_item *s, struct rv_par_slot *slot,
    void *ctx)
{
	struct worker *w = state;
	struct rv_rec hdr;
	int rc;

	(void)ctx;
	rc = rv_encode_sample(&w->e, &w->k, &s->rec, s->in.data, &hdr,
	    &w->out);
	if (rc == 1) {
		s->mark = 1;	/* in the format already: as it came */
		return RV_PAR_OK;
	}
	if (rc == 0) {
		s->n = w->out.len;
		return rv_enc_frame(w->k.enc, &hdr, w->out.data,
		    &slot->frame) < 0 ? RV_PAR_FATAL : RV_PAR_OK;
	}
	/* a sample that cannot be stored so: encode_done decides */
	rv_preferr("'%s': record %llu (id %llu)", s->input,
	    (unsigned long long)s->recno, (unsigned long long)s->rec.id);
	return RV_PAR_SKIP;
}

/* In order, after a sample ran: its frame goes out after this. */
static int
encode_done(void *ctx, struct rv_filter_item *s,
    const struct rv_par_slot *slot)
{
	struct job *j = ctx;

	j->bytes_in += s->rec.payload_len;
	if (s->mark == 0) {
		j->encoded++;
		j->bytes_out += s->n;
		return 0;
	}
	j->kept++;
	j->bytes_out += s->rec.payload_len;
	return rv_writer_put(j->w, &s->rec, s->in.data);
}

/* A metadata record (rec, or none) passed on with what this stage does. */
static int
put_meta(void *ctx, const struct rv_rec *rec)
{
	struct job *j = ctx;
	struct rv_meta m;
	char q[16];
	int rc = -1;

	rv_meta_init(&m);
	if (rec != NULL && rv_meta_parse(&m, rec->payload,
	    (size_t)rec->payload_len) < 0)
		goto out;
	/* one sample out for one in: the total passes on as it is */
	rv_progress_total(j->prog, rv_meta_total(&m));
	snprintf(q, sizeof(q), "%d", j->o->e.quality);
	if (rv_meta_set(&m, "producer", "rv-encode " RV_VERSION_STRING) < 0 ||
	    rv_meta_set(&m, "encode.format",
	    rv_dtype_name(j->o->e.dtype)) < 0 ||
	    rv_meta_set(&m, "encode.quality",
	    j->o->e.dtype == RV_DT_JPEG ? q : "") < 0 ||
	    rv_meta_set(&m, "encode.subsample", j->o->e.dtype != RV_DT_JPEG ?
	    "" : j->o->e.subsample == 444 ? "444" : "420") < 0)
		goto out;
	rc = rv_meta_put(j->w, &m);
out:
	rv_meta_release(&m);
	return rc;
}

int
main(int argc, char *argv[])
{
	struct encode_opts o;
	struct rv_out out;
	struct rv_progress prog;
	struct job job;
	struct rv_filter *f = NULL;
	int status = 1;
	double t0;

	rv_setprogname(argv[0]);
	parse_args(argc, argv, &o);
	memset(&job, 0, sizeof(job));
	job.o = &o;
	if (rv_out_open(&out, o.c.output, 1) < 0)
		rv_die(1, "%s", rv_errmsg());
	rv_progress_init(&prog, o.c.quiet, "samples");
	job.prog = &prog;
	t0 = rv_now();
	/* the payloads are compressed already: stored unless told */
	o.level = rv_stream_level(o.c.level);
	if (o.level == RV_LEVEL_AUTO)
		o.level = 0;
	if ((job.w = rv_writer_new(out.fd, rv_out_name(&out), o.level)) ==
	    NULL)
		goto fail;
	f = rv_filter_new(&(struct rv_filter_conf){
		.strict = o.strict, .verb = "encode", .nthreads = rv_common_jobs(&o.c),
		.per_thread = CHUNK_PER_THREAD,
		.start = worker_start, .stop = worker_stop, .arg = &o,
		.sample = encode_one, .done = encode_done, .meta = put_meta,
		.ctx = &job, .out = job.w, .prog = &prog });
	if (f == NULL)
		goto fail;
	if (rv_filter_run(f, o.c.inputs, o.c.ninputs) < 0)
		goto fail;
	if (rv_writer_flush(job.w) < 0)
		goto fail;
	status = 0;
	goto out;
fail:
	rv_warn("%s", rv_errmsg());
out:
	rv_progress_done(&prog);
	if (status == 0 && o.c.verbose) {
		double dt = rv_now() - t0;
		uint64_t n = job.encoded + job.kept;

		rv_warn("%llu samples encoded as %s, %llu already so, %llu "
		    "skipped; %.1f KB a sample (%.1f KB in), %.2f s, %.0f "
		    "samples/s", (unsigned long long)job.encoded,
		    rv_dtype_name(o.e.dtype), (unsigned long long)job.kept,
		    (unsigned long long)rv_filter_stats(f)->skipped,
		    n ? (double)job.bytes_out / (double)n / 1000 : 0.0,
		    n ? (double)job.bytes_in / (double)n / 1000 : 0.0, dt,
		    dt > 0 ? (double)n / dt : 0.0);
	}
	if (rv_writer_close(job.w) < 0 && status == 0) {
		rv_warn("%s", rv_errmsg());
		status = 1;
	}
	rv_filter_free(f);
	if (rv_out_finish(&out, status == 0) < 0) {
		rv_warn("%s", rv_errmsg());
		status = 1;
	}
	return status;
}
