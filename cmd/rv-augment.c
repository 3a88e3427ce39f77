/*
 * rv-augment: apply an op spec (rv-ops(7)) to every sample of a stream.
 * Samples are gathered in chunks, augmented (and framed) by a pool of -j
 * threads and written in input order, so the bytes depend on neither -j
 * nor how a spec is split over processes: each op draws from a generator
 * keyed by its index in the whole chain, carried in augment.ops.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aug.h"
#include "aug_text.h"
#include "codec.h"
#include "err.h"
#include "io.h"
#include "meta.h"
#include "opt.h"
#include "pool.h"
#include "rng.h"
#include "stream.h"
#include "xmem.h"

static const char usage[] =
    "usage: rv-augment [-qv] [-j N] [-o FILE] [--level L] [--seed S] SPEC\n"
    "                  [file ...]\n"
    "       rv-augment --list-ops\n"
    "  -o, --output FILE  write the stream to FILE (default stdout)\n"
    "  -j, --jobs N       threads (default: all cores)\n"
    "      --list-ops     list every op and its arguments, then exit\n"
    "      --level L      zstd level -7..19, 0 stores (default: $RV_LEVEL,\n"
    "                     else 0 to a pipe, -1 to a file)\n"
    "      --seed S       seed of the ops' random numbers (default 0)\n"
    "  -q, --quiet        no progress\n"
    "  -v, --verbose      print a summary at the end\n"
    "  -h, --help         print this help\n"
    "  -V, --version      print the version\n";

enum {
	OPT_LIST_OPS = RV_OPT_FIRST_PRIVATE,
};

/*
 * A chunk: up to 64 samples per worker, fewer when their pixels in and
 * out would pass CHUNK_BYTES (a chunk of 64 x J large photographs would
 * hold gigabytes).  The output side is estimated from the last chunk.
 */
#define CHUNK_PER_THREAD	64
#define CHUNK_BYTES		((size_t)64 << 20)

struct augment_opts {
	struct rv_common c;
	const char *output;
	const char *spec_text;
	int level;		/* resolved for the output */
	char **inputs;
	int ninputs;
};

/* One record of a chunk: a sample to augment or a record to pass on. */
struct slot {
	struct rv_rec rec;	/* header; payload in `in` */
	struct rv_buf in;
	struct rv_buf frame;	/* the augmented sample, framed */
	const char *input;
	uint64_t recno;
	int pass;		/* write rec and `in` unchanged */
	int bad;
	char msg[1024];
};

struct worker {
	struct rv_codec *codec;
	struct rv_enc *enc;
	struct rv_img img;
	struct rv_aug_ctx ctx;
};

struct job {
	const struct augment_opts *o;
	struct rv_spec spec;
	struct slot *slots;
	size_t n, cap;
	size_t bytes;		/* estimated bytes the chunk holds */
	size_t out_avg;		/* mean output frame of the last chunk */
	uint64_t decoded;	/* encoded samples decoded (main thread) */
};

/* The chain as the stream's metadata says it stands. */
struct chain {
	uint32_t upstream;	/* augment.ops before this program */
	char *spec;		/* augment.spec before it, or NULL */
	int seen_meta;
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
		{ "list-ops", no_argument, NULL, OPT_LIST_OPS },
		{ "output", required_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 }
	};
	static char *stdin_only[] = { "-" };
	int ch, list = 0;

	memset(o, 0, sizeof(*o));
	rv_common_init(&o->c);
	opterr = 0;
	while ((ch = getopt_long(argc, argv, RV_COMMON_SHORTOPTS "o:",
	    longopts, NULL)) != -1) {
		if (rv_common_opt(&o->c, ch, optarg, usage))
			continue;
		switch (ch) {
		case 'o':
			o->output = strcmp(optarg, "-") == 0 ? NULL : optarg;
			break;
		case OPT_LIST_OPS:
			list = 1;
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
	if (optind < argc) {
		o->inputs = argv + optind;
		o->ninputs = argc - optind;
	} else {
		o->inputs = stdin_only;
		o->ninputs = 1;
	}
}

static void *
worker_start(void *arg)
{
	const struct augment_opts *o = arg;
	struct worker *w = xcalloc(1, sizeof(*w));

	w->codec = rv_codec_new();
	w->enc = rv_enc_new(o->level);
	if (!w->codec || !w->enc)
		rv_die(1, "%s", rv_errmsg());
	rv_aug_ctx_init(&w->ctx);
	return w;
}

static void
worker_stop(void *state)
{
	struct worker *w = state;

	rv_codec_free(w->codec);
	rv_enc_free(w->enc);
	rv_img_release(&w->img);
	rv_aug_ctx_release(&w->ctx);
	free(w);
}

/*
 * Decode an encoded sample into w->img, at the reduced size the spec's
 * decode hint allows for JPEG (rv-augment(1) explains the rule).
 */
static int
decode_sample(struct worker *w, const struct job *j, const struct slot *s)
{
	const struct rv_rec *r = &s->rec;
	struct rv_decode_opts d = { r->channels, 0, 0 };
	uint32_t eh = r->height, ew = r->width;

	if (r->dtype == RV_DT_JPEG) {
		d.max_side = rv_spec_decode_hint(&j->spec, r->height,
		    r->width);
		rv_fit_max_side(r->height, r->width, d.max_side, &eh, &ew);
	}
	if (rv_codec_decode(w->codec, s->in.data, s->in.len, &d,
	    &w->img) < 0)
		return -1;
	if (w->img.h != eh || w->img.w != ew)
		return rv_seterr("the %s is %ux%u, the record says %ux%u",
		    rv_dtype_name(r->dtype), w->img.w, w->img.h, r->width,
		    r->height);
	return 0;
}

/* Augment and frame one sample of the chunk. */
static void
augment_one(void *state, size_t i, void *ctx)
{
	struct worker *w = state;
	struct job *j = ctx;
	struct slot *s = &j->slots[i];
	struct rv_rec out;

	s->frame.len = 0;
	s->bad = 0;
	if (s->pass)
		return;
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
		rv_img_reserve(&w->img, s->rec.height, s->rec.width,
		    s->rec.channels);
		memcpy(w->img.data, s->in.data, s->in.len);
	} else if (s->rec.dtype == RV_DT_JPEG || s->rec.dtype == RV_DT_PNG) {
		if (decode_sample(w, j, s) < 0)
			goto bad;
	} else {
		rv_seterr("sample of dtype '%s' has no pixels",
		    rv_dtype_name(s->rec.dtype));
		goto bad;
	}
	if (rv_spec_apply(&j->spec, &w->img, &w->ctx, j->o->c.seed,
	    RV_STAGE_AUGMENT, s->rec.epoch, s->rec.id) < 0)
		goto bad;
	out = s->rec;
	out.dtype = RV_DT_U8;
	out.height = w->img.h;
	out.width = w->img.w;
	out.channels = w->img.c;
	out.payload_len = (uint64_t)w->img.h * w->img.w * w->img.c;
	out.payload = NULL;
	if (rv_enc_frame(w->enc, &out, w->img.data, &s->frame) < 0)
		goto bad;
	return;
bad:
	s->bad = 1;
	snprintf(s->msg, sizeof(s->msg), "'%s': record %llu (id %llu): %s",
	    s->input, (unsigned long long)s->recno,
	    (unsigned long long)s->rec.id, rv_errmsg());
}

/* The next free slot of the chunk, holding a copy of rec. */
static struct slot *
add_slot(struct job *j, const struct rv_rec *rec, const char *input,
    uint64_t recno, int pass)
{
	struct slot *s = &j->slots[j->n++];

	s->rec = *rec;
	s->rec.payload = NULL;
	s->in.len = 0;
	if (rec->payload_len)
		rv_buf_append(&s->in, rec->payload, (size_t)rec->payload_len);
	s->input = input;
	s->recno = recno;
	s->pass = pass;
	if (!pass && rec->dtype != RV_DT_U8)
		j->decoded++;
	j->bytes += s->in.len + (pass ? 0 : j->out_avg);
	return s;
}

/* Augment the chunk on the pool and write it in order. */
static int
run_chunk(struct job *j, struct rv_pool *pool, struct rv_writer *w,
    uint64_t *written)
{
	size_t i, out = 0, nout = 0;

	rv_pool_run(pool, j->n, augment_one, j);
	for (i = 0; i < j->n; i++) {
		struct slot *s = &j->slots[i];
		int rc;
		if (s->bad) {
			rv_warn("%s", s->msg);
			return -1;
		}
		if (s->pass)
			rc = rv_writer_put(w, &s->rec, s->in.data);
		else
			rc = rv_writer_put_frames(w, s->frame.data,
			    s->frame.len, 1);
		if (rc < 0) {
			rv_warn("%s", rv_errmsg());
			return -1;
		}
		if (!s->pass) {
			(*written)++;
			out += s->frame.len;
			nout++;
		}
	}
	if (nout)
		j->out_avg = out / nout;
	j->n = 0;
	j->bytes = 0;
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
	char num[32];
	char *text;
	int rc;

	snprintf(num, sizeof(num), "%llu",
	    (unsigned long long)ch->upstream + spec->n);
	if (rv_meta_set(m, "producer", "rv-augment " RV_VERSION_STRING) < 0 ||
	    rv_meta_set(m, "augment.ops", num) < 0)
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
	ch->seen_meta = 1;
	for (k = 0; k < j->spec.n; k++)
		j->spec.ops[k].index = ch->upstream + (uint32_t)k;
	rc = put_meta(w, &m, ch, &j->spec);
out:
	rv_meta_release(&m);
	return rc;
}

/* Read one input, augmenting its samples chunk by chunk. */
static int
run_input(const char *path, struct job *j, struct chain *ch,
    struct rv_pool *pool, struct rv_writer *w, struct rv_progress *prog,
    uint64_t *written)
{
	struct rv_reader *r;
	struct rv_rec rec;
	struct rv_meta empty;
	uint64_t recno;
	int got, rc = 0;

	if ((r = rv_reader_open(path)) == NULL) {
		rv_warn("%s", rv_errmsg());
		return -1;
	}
	while (rc == 0 && (got = rv_reader_next(r, &rec)) == 1) {
		recno = rv_reader_records(r) - 1;
		switch (rec.kind) {
		case RV_BATCH:
			rv_warn("'%s': record %llu is a batch; augment "
			    "before rv-batch", rv_reader_name(r),
			    (unsigned long long)recno);
			rc = -1;
			break;
		case RV_META:
			if ((rc = run_chunk(j, pool, w, written)) < 0)
				break;
			if ((rc = meta_record(&rec, ch, j, w)) < 0)
				rv_warn("'%s': record %llu: %s",
				    rv_reader_name(r),
				    (unsigned long long)recno, rv_errmsg());
			break;
		case RV_SAMPLE:
			if (!ch->seen_meta) {
				/* say what ran even without upstream meta */
				if ((rc = run_chunk(j, pool, w, written)) < 0)
					break;
				rv_meta_init(&empty);
				rc = put_meta(w, &empty, ch, &j->spec);
				rv_meta_release(&empty);
				ch->seen_meta = 1;
				if (rc < 0) {
					rv_warn("%s", rv_errmsg());
					break;
				}
			}
			add_slot(j, &rec, rv_reader_name(r), recno, 0);
			break;
		default:
			/* epoch ends, and kinds of later versions */
			add_slot(j, &rec, rv_reader_name(r), recno, 1);
			break;
		}
		if (rc == 0 && (j->n == j->cap || j->bytes >= CHUNK_BYTES))
			rc = run_chunk(j, pool, w, written);
		rv_progress_tick(prog, *written);
	}
	if (rc == 0 && got < 0) {
		rv_warn("%s", rv_errmsg());
		rc = -1;
	}
	/* slots name this reader: finish them while it is open */
	if (rc == 0)
		rc = run_chunk(j, pool, w, written);
	rv_reader_close(r);
	return rc;
}

int
main(int argc, char *argv[])
{
	struct augment_opts o;
	struct rv_out out;
	struct rv_writer *w = NULL;
	struct rv_pool *pool = NULL;
	struct rv_progress prog;
	struct job job;
	struct chain ch = { 0, NULL, 0 };
	uint64_t written = 0;
	size_t i;
	int k, nw, status = 1;
	double t0;

	rv_setprogname(argv[0]);
	parse_args(argc, argv, &o);
	memset(&job, 0, sizeof(job));
	job.o = &o;
	if (rv_spec_parse(o.spec_text, 0, &job.spec) < 0) {
		rv_warn("%s", rv_errmsg());
		exit(2);
	}
	if (rv_out_open(&out, o.output, 1) < 0)
		rv_die(1, "%s", rv_errmsg());
	rv_progress_init(&prog, o.c.quiet, "samples");
	t0 = rv_now();
	o.level = rv_stream_level_fd(rv_stream_level(o.c.level), out.fd);
	w = rv_writer_new(out.fd, rv_out_name(&out), o.level);
	if (!w) {
		rv_warn("%s", rv_errmsg());
		goto out;
	}
	nw = rv_common_jobs(&o.c);
	pool = rv_pool_new(nw, worker_start, worker_stop, &o);
	job.cap = (size_t)CHUNK_PER_THREAD * (size_t)nw;
	job.slots = xcalloc(job.cap, sizeof(*job.slots));
	for (k = 0; k < o.ninputs; k++)
		if (run_input(o.inputs[k], &job, &ch, pool, w, &prog,
		    &written) < 0)
			goto out;
	if (rv_writer_flush(w) < 0) {
		rv_warn("%s", rv_errmsg());
		goto out;
	}
	status = 0;
out:
	rv_progress_done(&prog);
	if (status == 0 && o.c.verbose) {
		double dt = rv_now() - t0;
		rv_warn("%llu samples (%llu decoded), %zu op%s, %.2f s, "
		    "%.0f samples/s", (unsigned long long)written,
		    (unsigned long long)job.decoded, job.spec.n,
		    job.spec.n == 1 ? "" : "s", dt,
		    dt > 0 ? (double)written / dt : 0.0);
	}
	if (rv_writer_close(w) < 0 && status == 0) {
		rv_warn("%s", rv_errmsg());
		status = 1;
	}
	if (job.slots) {
		for (i = 0; i < job.cap; i++) {
			rv_buf_release(&job.slots[i].in);
			rv_buf_release(&job.slots[i].frame);
		}
	}
	free(job.slots);
	rv_pool_free(pool);
	rv_spec_release(&job.spec);
	free(ch.spec);
	if (rv_out_finish(&out, status == 0) < 0) {
		rv_warn("%s", rv_errmsg());
		status = 1;
	}
	return status;
}
