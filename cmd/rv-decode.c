/*
 * rv-decode: turn a dataset (archives, image folders, IDX, CIFAR batches)
 * into an rv sample stream.  Decoding runs on -j threads over chunks of
 * the epoch's order (par.h); each worker also compresses its frames, and
 * the main thread writes them in order, so the bytes do not depend on -j.
 * A stored frame of decoded pixels is not copied: the worker keeps the
 * frame's shell (headers and checksum) and hands its pixel buffer to the
 * item's slot, and the main thread writes the shell around the pixels.
 * Ids are the samples' positions in the sorted listing (src.h).
 */
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "base/io.h"
#include "base/opt.h"
#include "base/progress.h"
#include "base/rng.h"
#include "base/xmem.h"
#include "codec/codec.h"
#include "codec/coder.h"
#include "src/index.h"
#include "src/shard.h"
#include "src/src.h"
#include "src/src_warn.h"
#include "stream/meta.h"
#include "stream/par.h"
#include "stream/stream.h"

static const char usage[] =
    "usage: rv-decode [-qv] [-j N] [-o FILE] [--channels 1|3] [--classes N]\n"
    "                 [--class-level N] [--encoded] [--epochs E]\n"
    "                 [--even pad|drop|none] [--index FILE]\n"
    "                 [--resume E:N:K[,K...]|E:@FILE]\n"
    "                 [--cache-dir DIR | --hold] [--limit N]\n"
    "                 [--max-held SIZE]\n"
    "                 [--max-pixels N]\n"
    "                 [--max-side N] [--seed S]\n"
    "                 [--shard I/N|auto] [--shuffle] [--strict] [--level L]\n"
    "                 input ...\n"
    "       rv-decode --index-out FILE [-qv] [--class-level N] [--strict]\n"
    "                 shard ... | index ...\n"
    "  -o, --output FILE    write the stream to FILE (default stdout)\n"
    "  -j, --jobs N         decoding threads (default: all cores)\n"
    "      --channels 1|3   output grey or RGB (default: 3 for images,\n"
    "                       the source's own for IDX and CIFAR)\n"
    "      --class-level N  in an archive, a sample without a label sidecar\n"
    "                       is in the class of the directory N levels above\n"
    "                       its image (default 1, the parent; 2 for\n"
    "                       train/<wnid>/images/x.JPEG)\n"
    "      --classes N      the dataset has N classes (default: from the\n"
    "                       class names, else the highest label + 1)\n"
    "      --encoded        pass JPEG/PNG bytes through, decode later: use it\n"
    "                       when rv-augment or rv-refurbish comes next (a\n"
    "                       crop then decodes only its window), not before\n"
    "                       rv-batch, rv-score or rv-train-gpu\n"
    "      --epochs E       write E epochs (default 1)\n"
    "      --even MODE      equal shards: pad (repeat samples), drop or\n"
    "                       none (default: pad with --shard auto, else none)\n"
    "      --index FILE     read the shards the index FILE names (no input\n"
    "                       operands); with --shard, only this shard's\n"
    "      --index-out FILE write the index of the shards given (or merge\n"
    "                       the indexes given) to FILE, and nothing else\n"
    "      --limit N        use only the first N samples of the listing\n"
    "      --resume E:N:K   with --index: start at epoch E, of which each\n"
    "                       rank of the N-rank job before served its first\n"
    "                       K samples (or K0,K1,...: rank by rank); the\n"
    "                       rest of E, shared over this job's ranks\n"
    "      --resume E:@FILE the same, the samples of E trained listed in\n"
    "                       FILE, an id a line (any pipeline before)\n"
    "      --cache-dir DIR  write the images a compressed archive or a\n"
    "                       pipe would hold in memory to a file in DIR\n"
    "                       (removed at exit), read back by offset\n"
    "      --hold           hold archives' images in memory, even those\n"
    "                       read from the file by offset\n"
    "      --max-held SIZE  archives' images held in memory, at most\n"
    "                       (K, M, G suffixes; default half the memory)\n"
    "      --max-pixels N   refuse images larger than N pixels\n"
    "      --max-side N     reduce images so the longer side is <= N\n"
    "      --seed S         seed for --shuffle (default 0)\n"
    "      --shard I/N      write only shard I of N (0 <= I < N): its share\n"
    "                       of the files when there are N or more\n"
    "      --shard auto     I/N from RANK/WORLD_SIZE, SLURM_PROCID/SLURM_NTASKS,\n"
    "                       OMPI_COMM_WORLD_RANK/_SIZE or PMI_RANK/PMI_SIZE\n"
    "      --shuffle        a new deterministic order every epoch\n"
    "      --strict         a bad image is fatal instead of skipped\n"
    "      --level L        zstd level -7..19, 0 stores (default: $RV_LEVEL,\n"
    "                       else 0 to a pipe, -1 to a file)\n"
    "  -q, --quiet          no progress\n"
    "  -v, --verbose        list ignored files, print a summary at the end\n"
    "  -h, --help           print this help\n"
    "  -V, --version        print the version\n";

enum {
	OPT_CHANNELS = RV_OPT_FIRST_PRIVATE,
	OPT_CLASS_LEVEL,
	OPT_CLASSES,
	OPT_ENCODED,
	OPT_EPOCHS,
	OPT_EVEN,
	OPT_INDEX,
	OPT_INDEX_OUT,
	OPT_CACHE_DIR,
	OPT_HOLD,
	OPT_LIMIT,
	OPT_MAX_HELD,
	OPT_MAX_PIXELS,
	OPT_MAX_SIDE,
	OPT_RESUME,
	OPT_SHARD,
	OPT_SHUFFLE,
	OPT_STRICT,
};

struct decode_opts {
	struct rv_common c;
	uint32_t channels;	/* 0: natural */
	uint32_t classes;	/* 0: from the dataset */
	int class_level;	/* archives: directory class this far up */
	int encoded;
	uint32_t epochs;
	const char *index;	/* --index: the shards */
	const char *index_out;	/* --index-out: write it, nothing else */
	uint64_t limit;
	uint64_t max_held;	/* 0: the default */
	int hold;		/* --hold */
	const char *cache_dir;	/* --cache-dir */
	uint64_t max_pixels;
	uint32_t max_side;
	/* --resume: the job before had resume_n ranks, rank r of which had
	 * served resume_k[r] samples of epoch resume_epoch; or (resume_n 0)
	 * the ids it had trained are listed in resume_ids */
	const char *resume;
	uint32_t resume_epoch, resume_n;
	uint64_t *resume_k;
	const char *resume_ids;
	uint32_t shard_i, shard_n;
	int shard_auto;
	int even;		/* enum even; EVEN_UNSET until resolved */
	int level;		/* resolved against the output */
	int shuffle;
	int strict;
};

/* How the shards of a job are made equal (DistributedSampler's drop_last
 * is drop; its default is pad). */
enum even {
	EVEN_UNSET = -1,
	EVEN_NONE,
	EVEN_PAD,
	EVEN_DROP,
};

static const char *const even_names[] = { "none", "pad", "drop" };

struct worker {
	struct rv_coder k;	/* decoder, encoder, image */
	struct rv_buf scratch;
	struct rv_buf png;	/* --encoded: a WebP, GIF, BMP or TIFF as PNG */
};

struct job {
	const struct decode_opts *o;
	struct rv_dataset *ds;
	struct rv_decode_opts dopts;
	uint64_t *ids;		/* the id of each slot of the chunk */
	unsigned char *bad;	/* ids skipped once, not tried again */
	uint32_t epoch;
	uint64_t skipped;
	uint64_t n;		/* samples in the listing used (--limit) */
	int by_files;		/* each rank reads only its files */
	uint64_t *count;	/* by_files: each source's samples used */
	size_t nsrc;
	uint64_t target;	/* samples an epoch with --even pad or drop */
	int resumed;		/* --resume with samples served: its epoch is
				 * epoch_resumed()'s */
	uint64_t *trained;	/* --resume E:@FILE: its ids, sorted */
	size_t ntrained;
	uint64_t resume_target;	/* that epoch's samples */
	/* Per slot: pixels whose frame shell is in the slot (shell[i]),
	 * traded with the worker's image buffer, so buffers are reused. */
	struct rv_img *pix;
	unsigned char *shell;
	size_t hold;		/* the last sample's bytes (rv_par_add) */
	struct rv_writer *w;
};

/* Smaller decoded images are framed whole: the copy is cheap, and it is
 * made on the workers. */
#define SHELL_MIN	((size_t)64 << 10)
/*
 * A chunk's frames and pixels: small enough that the buffers a worker
 * decodes into come back while still in the last-level cache (measured on
 * the inet set, bench/README.md: 64 MB chunks made the decoder's stores
 * miss, and cost more than the copy the shells save), at least 4 items a
 * thread all the same (par.h).
 */
#define CHUNK_BUDGET	((size_t)4 << 20)

/* --resume E:N:K or E:N:K0,K1,...,K(N-1) */
static int
parse_resume(struct decode_opts *o)
{
	char *t = xstrdup(o->resume), *e, *n, *k, *tok, *save = NULL;
	uint64_t v, w;
	uint32_t r = 0;
	int rc = -1;

	e = t;
	if (!(n = strchr(e, ':'))) {
		rv_seterr("not of the form E:N:K or E:@FILE");
		goto out;
	}
	*n++ = '\0';
	if (*n == '@') {
		/* E:@FILE: the ids trained; FILE may hold ':' */
		if (rv_parse_u64(e, 0, 1000000, &v) < 0 || n[1] == '\0') {
			rv_seterr("not of the form E:@FILE");
			goto out;
		}
		o->resume_epoch = (uint32_t)v;
		o->resume_ids = o->resume + (n + 1 - t);
		rc = 0;
		goto out;
	}
	if (!(k = strchr(n, ':'))) {
		rv_seterr("not of the form E:N:K or E:@FILE");
		goto out;
	}
	*k++ = '\0';
	if (rv_parse_u64(e, 0, 1000000, &v) < 0 ||
	    rv_parse_u64(n, 1, 1 << 20, &w) < 0) {
		rv_seterr("not of the form E:N:K (an epoch, a rank count)");
		goto out;
	}
	o->resume_epoch = (uint32_t)v;
	o->resume_n = (uint32_t)w;
	o->resume_k = xcalloc(o->resume_n, sizeof(*o->resume_k));
	for (tok = strtok_r(k, ",", &save); tok; tok = strtok_r(NULL, ",",
	    &save)) {
		if (r == o->resume_n) {
			rv_seterr("more than %u counts", o->resume_n);
			goto out;
		}
		if (rv_parse_u64(tok, 0, UINT64_MAX, &o->resume_k[r++]) < 0) {
			rv_seterr("'%s' is not a sample count", tok);
			goto out;
		}
	}
	if (r == 1)
		for (; r < o->resume_n; r++)
			o->resume_k[r] = o->resume_k[0];
	if (r != o->resume_n) {
		rv_seterr("%u counts for %u ranks: give one, or one a rank", r,
		    o->resume_n);
		goto out;
	}
	rc = 0;
out:
	free(t);
	return rc;
}

static void
parse_args(int argc, char *argv[], struct decode_opts *o)
{
	static const struct option longopts[] = {
		RV_COMMON_LONGOPTS,
		{ "channels", required_argument, NULL, OPT_CHANNELS },
		{ "class-level", required_argument, NULL, OPT_CLASS_LEVEL },
		{ "classes", required_argument, NULL, OPT_CLASSES },
		{ "encoded", no_argument, NULL, OPT_ENCODED },
		{ "epochs", required_argument, NULL, OPT_EPOCHS },
		{ "even", required_argument, NULL, OPT_EVEN },
		{ "index", required_argument, NULL, OPT_INDEX },
		{ "index-out", required_argument, NULL, OPT_INDEX_OUT },
		{ "cache-dir", required_argument, NULL, OPT_CACHE_DIR },
		{ "hold", no_argument, NULL, OPT_HOLD },
		{ "limit", required_argument, NULL, OPT_LIMIT },
		{ "max-held", required_argument, NULL, OPT_MAX_HELD },
		{ "max-pixels", required_argument, NULL, OPT_MAX_PIXELS },
		{ "max-side", required_argument, NULL, OPT_MAX_SIDE },
		{ "resume", required_argument, NULL, OPT_RESUME },
		{ "shard", required_argument, NULL, OPT_SHARD },
		{ "shuffle", no_argument, NULL, OPT_SHUFFLE },
		{ "strict", no_argument, NULL, OPT_STRICT },
		{ NULL, 0, NULL, 0 }
	};
	int ch;

	memset(o, 0, sizeof(*o));
	rv_common_init(&o->c);
	o->epochs = 1;
	o->limit = UINT64_MAX;
	o->max_pixels = RV_MAX_PIXELS_DEFAULT;
	o->shard_n = 1;
	o->even = EVEN_UNSET;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, RV_COMMON_SHORTOPTS,
	    longopts, NULL)) != -1) {
		if (rv_common_opt(&o->c, ch, optarg, usage))
			continue;
		switch (ch) {
		case OPT_CHANNELS:
			o->channels = (uint32_t)rv_opt_u64("--channels", optarg,
			    1, 3, usage);
			if (o->channels == 2)
				rv_usage_die(usage, "--channels: '2': use 1 "
				    "or 3");
			break;
		case OPT_CLASS_LEVEL:
			o->class_level = (int)rv_opt_u64("--class-level",
			    optarg, 1, 64, usage);
			break;
		case OPT_CLASSES:
			o->classes = (uint32_t)rv_opt_u64("--classes", optarg,
			    1, INT32_MAX, usage);
			break;
		case OPT_ENCODED:
			o->encoded = 1;
			break;
		case OPT_EPOCHS:
			o->epochs = (uint32_t)rv_opt_u64("--epochs", optarg,
			    1, 1000000, usage);
			break;
		case OPT_EVEN:
			for (o->even = EVEN_NONE; o->even <= EVEN_DROP &&
			    strcmp(optarg, even_names[o->even]) != 0;
			    o->even++)
				continue;
			if (o->even > EVEN_DROP)
				rv_usage_die(usage, "--even: '%s': use pad, "
				    "drop or none", optarg);
			break;
		case OPT_INDEX:
			o->index = optarg;
			break;
		case OPT_INDEX_OUT:
			o->index_out = optarg;
			break;
		case OPT_LIMIT:
			o->limit = rv_opt_u64("--limit", optarg, 1,
			    UINT64_MAX, usage);
			break;
		case OPT_HOLD:
			o->hold = 1;
			break;
		case OPT_CACHE_DIR:
			if (!*optarg)
				rv_usage_die(usage, "--cache-dir: an empty "
				    "directory name");
			o->cache_dir = optarg;
			break;
		case OPT_MAX_HELD:
			if (rv_parse_size(optarg, &o->max_held) < 0)
				rv_usage_die(usage, "--max-held: %s",
				    rv_errmsg());
			if (o->max_held == 0)
				rv_usage_die(usage, "--max-held: '%s': must "
				    "be over 0", optarg);
			break;
		case OPT_MAX_PIXELS:
			o->max_pixels = rv_opt_u64("--max-pixels", optarg, 1,
			    UINT64_MAX, usage);
			break;
		case OPT_MAX_SIDE:
			o->max_side = (uint32_t)rv_opt_u64("--max-side",
			    optarg, 1, 1 << 20, usage);
			break;
		case OPT_RESUME:
			o->resume = optarg;
			break;
		case OPT_SHARD:
			o->shard_auto = strcmp(optarg, "auto") == 0;
			if (!o->shard_auto && rv_parse_shard(optarg,
			    &o->shard_i, &o->shard_n) < 0)
				rv_usage_die(usage, "--shard: %s",
				    rv_errmsg());
			break;
		case OPT_SHUFFLE:
			o->shuffle = 1;
			break;
		case OPT_STRICT:
			o->strict = 1;
			break;
		default:
			rv_usage_error(argv, usage);
		}
	}
	if (o->resume && parse_resume(o) < 0)
		rv_usage_die(usage, "--resume: '%s': %s", o->resume,
		    rv_errmsg());
	if (o->resume && !o->index)
		rv_usage_die(usage, "--resume needs --index (a job's shares "
		    "are laid out by the index)");
	if (o->resume && o->resume_epoch >= o->epochs)
		rv_usage_die(usage, "--resume: epoch %u: the run has %u "
		    "(--epochs)", o->resume_epoch, o->epochs);
	if (o->index && o->index_out)
		rv_usage_die(usage, "--index-out merges the indexes given as "
		    "operands; --index is for reading the shards");
	if (o->index && optind < argc)
		rv_usage_die(usage, "--index '%s' names the shards: give no "
		    "input operands", o->index);
	if (!o->index && optind >= argc)
		rv_usage_die(usage, "no input given");
	if (o->index_out && (o->shard_n > 1 || o->shard_auto || o->shuffle ||
	    o->epochs != 1 || o->encoded || o->even != EVEN_UNSET ||
	    o->limit != UINT64_MAX || o->max_side || o->channels ||
	    o->classes || o->c.output))
		rv_usage_die(usage, "--index-out writes an index and no "
		    "stream: -o, --shard, --shuffle, --epochs, --even, --limit, "
		    "--encoded, --channels, --classes and --max-side belong to "
		    "the runs that read it (rv-decode --index FILE)");
	if (o->encoded && o->max_side)
		rv_usage_die(usage, "--max-side needs decoding; it cannot be "
		    "combined with --encoded");
	if (o->hold && o->cache_dir)
		rv_usage_die(usage, "--hold keeps the archives' images in "
		    "memory, --cache-dir '%s' on disk: give one", o->cache_dir);
	rv_common_operands(&o->c, argc, argv, optind);
	if (o->shard_auto) {
		const char *from;

		if (rv_shard_from_env(&o->shard_i, &o->shard_n, &from) < 0)
			rv_die(2, "--shard auto: %s", rv_errmsg());
		if (o->c.verbose)
			rv_warn("shard %u/%u%s%s", o->shard_i, o->shard_n,
			    from ? " from " : " (no launcher's rank in the "
			    "environment)", from ? from : "");
	}
	/* A rank of a job that trains together needs the same steps as the
	 * others; a part of a job whose outputs are concatenated needs each
	 * sample once. */
	if (o->even == EVEN_UNSET)
		o->even = o->shard_auto ? EVEN_PAD : EVEN_NONE;
	if (o->shard_n == 1)
		o->even = EVEN_NONE;
}

static void
worker_stop(void *state)
{
	struct worker *w = state;

	if (!w)
		return;
	rv_coder_release(&w->k);
	rv_buf_release(&w->scratch);
	rv_buf_release(&w->png);
	free(w);
}

static void *
worker_start(void *arg)
{
	const struct decode_opts *o = arg;
	struct worker *w = xcalloc(1, sizeof(*w));

	if (rv_coder_init(&w->k, o->level, o->strict) < 0) {
		worker_stop(w);
		return NULL;
	}
	return w;
}

/* Decode an encoded image into w->k.img at the output's channels (3 when
 * --channels is not given). */
static int
decode_img(struct worker *w, const struct job *j, const struct rv_item *it)
{
	struct rv_decode_opts d = j->dopts;

	if (!d.channels)
		d.channels = 3;
	return rv_codec_decode(w->k.codec, it->data, it->len, &d, &w->k.img);
}

/* Fetch, decode and frame one sample into its slot. */
static int
decode_one(void *state, size_t i, struct rv_par_slot *s, void *ctx)
{
	struct worker *w = state;
	const struct job *j = ctx;
	struct rv_item it;
	struct rv_rec rec;
	const void *payload;
	struct rv_img t;
	int r;

	j->shell[i] = 0;

	r = rv_dataset_fetch(j->ds, j->ids[i], &w->scratch, &it);
	if (r == RV_FETCH_BAD)
		goto skip;	/* that file gone or unreadable: that sample */
	if (r < 0)
		return RV_PAR_FATAL;
	rv_rec_init(&rec, RV_SAMPLE);
	rec.id = it.id;
	rec.label = it.label;
	rec.epoch = j->epoch;
	if (it.dtype == RV_DT_U8) {
		if (rv_img_from_pixels(it.data, it.h, it.w, it.c, &(struct
		    rv_decode_opts){ j->dopts.channels ? j->dopts.channels :
		    it.c, j->dopts.max_side, j->dopts.max_pixels },
		    &w->k.img) < 0)
			goto skip;
	} else if (j->o->encoded) {
		int dt;
		uint32_t h, wd, ch;
		if (rv_codec_info(w->k.codec, it.data, it.len, &dt, &h, &wd,
		    &ch) < 0)
			goto skip;
		if (dt == RV_DT_NONE) {
			/* The stream carries only JPEG and PNG encoded: a
			 * WebP, GIF, BMP or TIFF becomes a PNG of its
			 * pixels, lossless, at the output's channels. */
			if (decode_img(w, j, &it) < 0)
				goto skip;
			w->png.len = 0;
			if (rv_png_encode(w->k.img.data, w->k.img.h, w->k.img.w,
			    w->k.img.c, &w->png) < 0)
				goto skip;
			rec.dtype = RV_DT_PNG;
			rec.height = w->k.img.h;
			rec.width = w->k.img.w;
			rec.channels = w->k.img.c;
			rec.payload_len = w->png.len;
			payload = w->png.data;
			goto frame;
		}
		if ((uint64_t)h * wd > j->dopts.max_pixels) {
			rv_seterr("image is %ux%u, over the %llu-pixel limit",
			    wd, h, (unsigned long long)j->dopts.max_pixels);
			goto skip;
		}
		rec.dtype = (uint8_t)dt;
		rec.height = h;
		rec.width = wd;
		rec.channels = j->dopts.channels ? j->dopts.channels : 3;
		rec.payload_len = it.len;
		payload = it.data;
		goto frame;
	} else if (decode_img(w, j, &it) < 0) {
		goto skip;
	}
	rec.dtype = RV_DT_U8;
	rec.height = w->k.img.h;
	rec.width = w->k.img.w;
	rec.channels = w->k.img.c;
	rec.payload_len = (uint64_t)w->k.img.h * w->k.img.w * w->k.img.c;
	payload = w->k.img.data;
	if (rec.payload_len >= SHELL_MIN &&
	    rv_enc_level(w->k.enc) == RV_LEVEL_STORED) {
		if (rv_enc_shell(w->k.enc, &rec, payload, &s->frame) < 0)
			return RV_PAR_FATAL;
		t = j->pix[i];
		j->pix[i] = w->k.img;
		w->k.img = t;
		j->shell[i] = 1;
		return RV_PAR_OK;
	}
frame:
	return rv_enc_frame(w->k.enc, &rec, payload, &s->frame) < 0 ?
	    RV_PAR_FATAL : RV_PAR_OK;
skip:
	rv_preferr("%s", it.name);
	return RV_PAR_SKIP;
}

/*
 * Each sample, in order: its frame is written, around its pixels for a
 * shell.  A bad one is fatal with --strict, else skipped for good.
 */
static int
decode_done(void *ctx, size_t i, const struct rv_par_slot *s)
{
	struct job *j = ctx;
	const struct rv_img *im = &j->pix[i];

	if (s->status == RV_PAR_OK && s->frame.len > 0) {
		if (!j->shell[i])
			return rv_writer_put_frames(j->w, s->frame.data,
			    s->frame.len, 1);
		j->hold = (size_t)im->h * im->w * im->c;
		return rv_writer_put_shell(j->w, s->frame.data, s->frame.len,
		    im->data, j->hold);
	}
	if (s->status != RV_PAR_SKIP)
		return 0;
	if (j->o->strict)
		return rv_seterr("%s", s->msg);
	rv_warn("%s (skipped)", s->msg);
	j->bad[j->ids[i]] = 1;
	j->skipped++;
	return 0;
}

/* The ids this rank takes from an epoch's order, sharding samples: the
 * positions I, I+N, ... of the (shuffled) listing.  Returns how many. */
static size_t
epoch_samples(const struct job *j, uint32_t epoch, uint64_t *all,
    uint64_t *mine)
{
	const struct decode_opts *o = j->o;
	uint64_t i;
	size_t k = 0;

	for (i = 0; i < j->n; i++)
		all[i] = i;
	if (o->shuffle) {
		struct rv_rng rng;
		rv_rng_init(&rng, o->c.seed, RV_STAGE_DECODE_ORDER, 0, epoch,
		    0);
		rv_rng_shuffle_u64(&rng, all, (size_t)j->n);
	}
	/* k <= i: mine may be all. */
	for (i = o->shard_i; i < j->n; i += o->shard_n)
		mine[k++] = all[i];
	return k;
}

/* Print the dataset's warnings (and, with -v, its notes) and forget
 * them. */
static void
flush_msgs(const struct decode_opts *o, struct rv_dataset *ds)
{
	size_t k;

	for (k = 0; k < rv_dataset_nwarnings(ds); k++)
		rv_warn("%s", rv_dataset_warning(ds, k));
	for (k = 0; o->c.verbose && k < rv_dataset_nnotes(ds); k++)
		rv_warn("%s", rv_dataset_note(ds, k));
	rv_dataset_clear_msgs(ds);
}

/* The inputs that yield no sample, unless -q: a line each, once (a rank
 * of a job that lists every file leaves them to rank 0). */
static void
say_empty(const struct decode_opts *o, const struct rv_dataset *ds)
{
	size_t k;

	for (k = 0; !o->c.quiet && o->shard_i == 0 &&
	    k < rv_dataset_nempty(ds); k++)
		rv_warn("%s", rv_dataset_empty(ds, k));
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* The sources of an epoch in the order they are laid end to end: those
 * with samples, as given or, with --shuffle, drawn from the seed and the
 * epoch.  Returns how many. */
static size_t
epoch_order(const struct job *j, uint32_t epoch, uint64_t *order)
{
	const struct decode_opts *o = j->o;
	size_t nord = 0, k;

	for (k = 0; k < j->nsrc; k++)
		if (j->count[k] > 0)
			order[nord++] = k;
	if (o->shuffle) {
		struct rv_rng rng;
		rv_rng_init(&rng, o->c.seed, RV_STAGE_DECODE_ORDER, 1, epoch,
		    0);
		rv_rng_shuffle_u64(&rng, order, nord);
	}
	return nord;
}

/*
 * Read the sources of seg[0..nseg) and drop the others; their samples'
 * ids go to mine, in order or, with --shuffle, permuted by (op, epoch,
 * rank).  Returns how many, or -1.
 */
static int64_t
read_segments(struct job *j, uint32_t epoch, uint32_t op,
    const struct rv_shard_seg *seg, size_t nseg, unsigned char *need,
    uint64_t *mine)
{
	const struct decode_opts *o = j->o;
	uint64_t i, m = 0;
	size_t k;

	memset(need, 0, j->nsrc);
	for (k = 0; k < nseg; k++)
		need[seg[k].src] = 1;
	/* Drop what this epoch does not read before reading the rest. */
	for (k = 0; k < j->nsrc; k++)
		if (!need[k])
			rv_dataset_unload(j->ds, k);
	for (k = 0; k < nseg; k++) {
		uint64_t base, listed;
		int64_t have = rv_dataset_load(j->ds, seg[k].src);

		flush_msgs(o, j->ds);
		if (have < 0)
			return -1;
		rv_dataset_source(j->ds, seg[k].src, &base, &listed);
		for (i = 0; i < seg[k].n; i++) {
			uint64_t id = base + seg[k].first + i;
			/* Listed, but the source read had fewer: skipped,
			 * as a bad image is. */
			if (seg[k].first + i >= (uint64_t)have)
				j->bad[id] = 1;
			mine[m++] = id;
		}
	}
	if (o->shuffle) {
		struct rv_rng rng;
		rv_rng_init(&rng, o->c.seed, RV_STAGE_DECODE_ORDER, op, epoch,
		    o->shard_i);
		rv_rng_shuffle_u64(&rng, mine, (size_t)m);
	}
	return (int64_t)m;
}

/*
 * Sharding files: lay the sources end to end, take this rank's
 * contiguous share, read the sources it touches and drop the others.
 */
static int64_t
epoch_files(struct job *j, uint32_t epoch, uint64_t *order,
    struct rv_shard_seg *seg, unsigned char *need, uint64_t *mine)
{
	size_t nord = epoch_order(j, epoch, order);
	size_t nseg = rv_shard_segments(j->count, order, nord, j->o->shard_i,
	    j->o->shard_n, seg);

	return read_segments(j, epoch, 2, seg, nseg, need, mine);
}

/*
 * The resumed epoch (--resume): its positions laid end to end as
 * epoch_files lays them, those the job before served marked
 * (rv_shard_served), and the rest shared out as a whole epoch is: this
 * rank's contiguous share of them, in position order, then with
 * --shuffle permuted by op 3.  *left: the samples not served.  With mine
 * NULL, only *left.  Returns the rank's samples, or -1.
 */
static int64_t
epoch_resumed(struct job *j, uint32_t epoch, uint64_t *order,
    unsigned char *need, uint64_t *mine, uint64_t *left)
{
	const struct decode_opts *o = j->o;
	size_t nord = epoch_order(j, epoch, order), nseg = 0, k;
	uint64_t total = 0, at = 0, u = 0, lo, hi, i, cut;
	unsigned char *served;
	struct rv_shard_seg *seg;
	int64_t m;

	for (k = 0; k < nord; k++)
		total += j->count[order[k]];
	served = xcalloc((size_t)total + 1, 1);
	if (o->resume_ids) {
		/* The ids the trainers trained, wherever they lay. */
		*left = total;
		for (k = 0; k < nord; k++) {
			uint64_t base, listed;

			rv_dataset_source(j->ds, (size_t)order[k], &base,
			    &listed);
			for (i = 0; i < j->count[order[k]]; i++, at++) {
				uint64_t id = base + i;

				if (bsearch(&id, j->trained, j->ntrained,
				    sizeof(id), cmp_u64)) {
					served[at] = 1;
					(*left)--;
				}
			}
		}
		at = 0;
	} else {
		cut = o->even == EVEN_DROP ? total / o->resume_n :
		    UINT64_MAX;
		*left = total - rv_shard_served(total, o->resume_n,
		    o->resume_k, cut, o->c.seed, epoch, o->shuffle, served);
	}
	if (!mine) {
		free(served);
		return 0;
	}
	rv_shard_range(*left, o->shard_i, o->shard_n, &lo, &hi);
	seg = xcalloc((size_t)(hi - lo) + 1, sizeof(*seg));
	for (k = 0; k < nord && u < hi; k++) {
		for (i = 0; i < j->count[order[k]] && u < hi; i++) {
			if (served[at + i])
				continue;
			if (u++ < lo)
				continue;
			if (nseg > 0 && seg[nseg - 1].src == order[k] &&
			    seg[nseg - 1].first + seg[nseg - 1].n == i) {
				seg[nseg - 1].n++;
				continue;
			}
			seg[nseg].src = (size_t)order[k];
			seg[nseg].first = i;
			seg[nseg].n = 1;
			nseg++;
		}
		at += j->count[order[k]];
	}
	free(served);
	m = read_segments(j, epoch, 3, seg, nseg, need, mine);
	free(seg);
	return m;
}

/* The samples the stream is to hold, every epoch written (bad ones found
 * on the way make it fewer): the metadata's total, and the progress's. */
static uint64_t
stream_total(const struct job *j, uint64_t per_epoch)
{
	const struct decode_opts *o = j->o;
	uint64_t epochs = o->epochs - (o->resume ? o->resume_epoch : 0);

	if (j->resumed)
		return j->resume_target + (epochs - 1) * per_epoch;
	return epochs * per_epoch;
}

static int
write_meta(struct rv_writer *w, const struct job *j, uint64_t per_epoch)
{
	const struct decode_opts *o = j->o;
	const struct rv_dataset *ds = j->ds;
	struct rv_meta m;
	char buf[256];
	int rc;

	/* The options that shape the output, not argv: the bytes must not
	 * depend on -j, -o or -q. */
	rv_meta_init(&m);
	rv_meta_set(&m, "producer", "rv-decode " RV_VERSION_STRING);
	rv_meta_merge(&m, rv_dataset_meta(ds));
	if (o->classes) {
		rv_meta_set_u64(&m, "classes", o->classes);
	}
	snprintf(buf, sizeof(buf), "channels=%u encoded=%d epochs=%u "
	    "limit=%llu max-side=%u shuffle=%d seed=%llu shard=%u/%u",
	    o->channels, o->encoded, o->epochs,
	    (unsigned long long)(o->limit == UINT64_MAX ? 0 : o->limit),
	    o->max_side, o->shuffle, (unsigned long long)o->c.seed,
	    o->shard_i, o->shard_n);
	rv_meta_set(&m, "decode", buf);
	rv_meta_set_u64(&m, "samples", per_epoch);
	/* Epochs written: from the one resumed at. */
	rv_meta_set_u64(&m, "epochs", o->epochs - (o->resume ?
	    o->resume_epoch : 0));
	rv_meta_set_u64(&m, "total", stream_total(j, per_epoch));
	if (o->resume) {
		rv_meta_set(&m, "resume", o->resume);
		rv_meta_set_u64(&m, "resume-samples", j->resumed ?
		    j->resume_target : per_epoch);
	}
	snprintf(buf, sizeof(buf), "%u/%u", o->shard_i, o->shard_n);
	rv_meta_set(&m, "shard", buf);
	if (rv_dataset_index_name(ds))
		rv_meta_set(&m, "index", rv_dataset_index_name(ds));
	if (o->shard_n > 1) {
		rv_meta_set(&m, "shard-by", j->by_files ? "files" :
		    "samples");
		rv_meta_set(&m, "shard-even", even_names[o->even]);
		rv_meta_set_u64(&m, "dataset-samples", j->n);
	}
	rc = rv_meta_put(w, &m);
	rv_meta_release(&m);
	return rc;
}

/* --resume E:@FILE: the ids trained, one a line (blank lines and '#'
 * comments skipped), sorted into j->trained. */
static int
read_trained(struct job *j)
{
	const char *path = j->o->resume_ids;
	unsigned char *buf;
	char *line, *end, *text;
	size_t len, cap = 0;
	uint64_t lineno = 0, id;

	if (rv_slurp(path, &buf, &len) < 0)
		return rv_preferr("--resume");
	text = xrealloc(buf, len + 1);	/* a C string */
	text[len] = '\0';
	for (line = text; line && *line; line = end) {
		if ((end = strchr(line, '\n')) != NULL)
			*end++ = '\0';
		lineno++;
		line[strcspn(line, "\r")] = '\0';
		if (line[0] == '\0' || line[0] == '#')
			continue;
		if (rv_parse_u64(line, 0, UINT64_MAX, &id) < 0 || id >= j->n) {
			rv_seterr("--resume: '%s': line %llu: '%.40s' is not a "
			    "sample id of the dataset (below %llu)", path,
			    (unsigned long long)lineno, line,
			    (unsigned long long)j->n);
			free(text);
			return -1;
		}
		if (j->ntrained == cap) {
			cap = cap ? 2 * cap : 1024;
			j->trained = xreallocarray(j->trained, cap,
			    sizeof(*j->trained));
		}
		j->trained[j->ntrained++] = id;
	}
	free(text);
	qsort(j->trained, j->ntrained, sizeof(*j->trained), cmp_u64);
	return 0;
}

/*
 * --resume: does the job before leave anything of its epoch served (else
 * the epoch is an ordinary one), and how many samples does this rank's
 * share of the rest hold?
 */
static int
plan_resume(struct job *j)
{
	const struct decode_opts *o = j->o;
	uint64_t *order, left, lo, hi;
	uint32_t r;

	if (o->resume_ids && read_trained(j) < 0)
		return -1;
	for (r = 0; r < o->resume_n && o->resume_k[r] == 0; r++)
		continue;
	if (o->resume_ids ? j->ntrained == 0 : r == o->resume_n)
		return 0;
	j->resumed = 1;
	order = xcalloc(j->nsrc + 1, sizeof(*order));
	epoch_resumed(j, o->resume_epoch, order, NULL, NULL, &left);
	free(order);
	if (left == 0 && o->resume_epoch + 1 == o->epochs)
		return rv_seterr("--resume %s: the job before served every "
		    "sample of epoch %u, the last: nothing is left to serve",
		    o->resume, o->resume_epoch);
	if (left == 0)
		return rv_seterr("--resume %s: the job before served every "
		    "sample of epoch %u: resume at epoch %u", o->resume,
		    o->resume_epoch, o->resume_epoch + 1);
	/* A rank with no share has nothing to pad its epoch with. */
	if (o->even != EVEN_NONE && left < o->shard_n)
		return rv_seterr("--resume %s: %llu samples of epoch %u left, "
		    "fewer than the %u ranks: resume at epoch %u, or with "
		    "--even none", o->resume, (unsigned long long)left,
		    o->resume_epoch, o->shard_n, o->resume_epoch + 1);
	rv_shard_range(left, o->shard_i, o->shard_n, &lo, &hi);
	j->resume_target = o->even == EVEN_PAD ? (left + o->shard_n - 1) /
	    o->shard_n : o->even == EVEN_DROP ? left / o->shard_n : hi - lo;
	if (o->c.verbose && o->resume_ids)
		rv_warn("resume at epoch %u: %llu of its %llu samples trained, "
		    "as '%s' lists; this shard %llu of the %llu left",
		    o->resume_epoch, (unsigned long long)(j->n - left),
		    (unsigned long long)j->n, o->resume_ids,
		    (unsigned long long)j->resume_target,
		    (unsigned long long)left);
	else if (o->c.verbose)
		rv_warn("resume at epoch %u: %llu of its %llu samples served "
		    "by %u ranks%s; this shard %llu of the %llu left",
		    o->resume_epoch, (unsigned long long)(j->n - left),
		    (unsigned long long)j->n, o->resume_n,
		    o->even == EVEN_DROP ? " or left out (--even drop)" : "",
		    (unsigned long long)j->resume_target,
		    (unsigned long long)left);
	return 0;
}

/* --classes N must cover the class names and labels the input has. */
static int
check_classes(const struct decode_opts *o, const struct rv_dataset *ds)
{
	const char *v = rv_meta_get(rv_dataset_meta(ds), "classes");
	unsigned long long have = v ? strtoull(v, NULL, 10) : 0;

	if (have > o->classes)
		return rv_seterr("--classes %u: the input has %llu classes "
		    "(class names, or labels up to %llu)", o->classes, have,
		    have - 1);
	return 0;
}

/* Queue ids[0..n) that are not known bad; flush.  Returns the samples
 * written, or -1. */
static int64_t
decode_ids(struct job *j, struct rv_par *par, const uint64_t *ids, size_t n)
{
	uint64_t before = rv_par_stats(par)->frames;
	size_t k, slot;

	for (k = 0; k < n; k++) {
		if (j->bad[ids[k]])
			continue;
		if (rv_par_add(par, j->hold, &slot) < 0)
			return -1;
		j->ids[slot] = ids[k];
	}
	if (rv_par_flush(par) < 0)
		return -1;
	return (int64_t)(rv_par_stats(par)->frames - before);
}

/*
 * Even shards: write samples of mine[0..k) again, in order, until the
 * epoch holds target (the share was short, or images were skipped).
 * Returns the samples written, or -1.
 */
static int64_t
pad_epoch(struct job *j, struct rv_par *par, const uint64_t *mine, size_t k,
    uint64_t got, uint64_t target)
{
	size_t at = 0;
	int some = got > 0;	/* a good sample in mine */

	while (got < target) {
		size_t n = k - at < target - got ? k - at :
		    (size_t)(target - got);
		int64_t w;

		if (n == 0) {
			if (!some)
				return rv_seterr("shard %u/%u: no sample to "
				    "pad the shard with (%s)", j->o->shard_i,
				    j->o->shard_n, k == 0 ? "fewer samples "
				    "than shards" : "every one was skipped");
			at = 0;
			continue;
		}
		if ((w = decode_ids(j, par, mine + at, n)) < 0)
			return -1;
		at += n;
		got += (uint64_t)w;
		some |= w > 0;
	}
	return (int64_t)got;
}

/* Decode every epoch's share of the samples, in order, on the pool. */
static int
run_epochs(struct job *j, struct rv_par *par, struct rv_writer *w)
{
	const struct decode_opts *o = j->o;
	uint64_t cap = j->by_files ? j->n / o->shard_n + 1 : j->n;
	uint64_t *all = j->by_files ? NULL : xcalloc((size_t)j->n,
	    sizeof(*all));
	/* Without by_files a rank's share is taken from the permutation in
	 * place (epoch_samples): one array of the samples, not two. */
	uint64_t *mine = all ? all : xcalloc((size_t)cap, sizeof(*mine));
	uint64_t *order = j->by_files ? xcalloc(j->nsrc, sizeof(*order)) :
	    NULL;
	struct rv_shard_seg *seg = j->by_files ? xcalloc(j->nsrc,
	    sizeof(*seg)) : NULL;
	unsigned char *need = j->by_files ? xcalloc(j->nsrc, 1) : NULL;
	uint32_t e;
	int rc = -1;

	for (e = o->resume ? o->resume_epoch : 0; e < o->epochs; e++) {
		struct rv_rec end;
		int64_t k, got;
		int resumed = j->resumed && e == o->resume_epoch;
		uint64_t target = resumed ? j->resume_target : j->target, left;

		j->epoch = e;
		k = resumed ? epoch_resumed(j, e, order, need, mine, &left) :
		    j->by_files ? epoch_files(j, e, order, seg, need, mine) :
		    (int64_t)epoch_samples(j, e, all, mine);
		if (k < 0)
			goto out;
		if (o->even == EVEN_DROP && (uint64_t)k > target)
			k = (int64_t)target;
		if ((got = decode_ids(j, par, mine, (size_t)k)) < 0)
			goto out;
		if (o->even != EVEN_NONE && (uint64_t)got < target &&
		    (got = pad_epoch(j, par, mine, (size_t)k,
		    (uint64_t)got, target)) < 0)
			goto out;
		rv_rec_init(&end, RV_EPOCH_END);
		end.epoch = e;
		end.count = (uint32_t)got;
		if (rv_writer_put(w, &end, NULL) < 0)
			goto out;
	}
	rc = 0;
out:
	if (mine != all)
		free(mine);
	free(all);
	free(order);
	free(seg);
	free(need);
	return rc;
}

/*
 * Open the dataset.  A job of several shards lists the files first and,
 * when there are at least as many files (sources with samples) as shards,
 * each rank reads only its own (by_files); else every rank reads every
 * file and takes every N-th sample.
 */
static struct rv_dataset *
open_dataset(struct job *j, const struct rv_src_opts *so)
{
	const struct decode_opts *o = j->o;
	struct rv_dataset *ds;
	size_t k, used = 0;
	char *ix[1] = { (char *)o->index };

	if (o->index)
		ds = rv_dataset_from_index(ix, 1, so);
	else if (o->shard_n == 1 || !rv_dataset_relistable(o->c.inputs,
	    o->c.ninputs))
		return rv_dataset_open(o->c.inputs, o->c.ninputs, so, NULL);
	else
		ds = rv_dataset_list(o->c.inputs, o->c.ninputs, so);
	if (ds == NULL)
		return NULL;
	j->nsrc = rv_dataset_nsources(ds);
	j->count = xcalloc(j->nsrc, sizeof(*j->count));
	for (k = 0; k < j->nsrc; k++) {
		uint64_t base, n;

		rv_dataset_source(ds, k, &base, &n);
		if (base < o->limit)
			j->count[k] = o->limit - base < n ? o->limit - base : n;
		used += j->count[k] > 0;
	}
	/* With an index a rank reads only its shards, or nothing. */
	if (used >= o->shard_n || (o->index && used == 0)) {
		j->by_files = 1;
		return ds;
	}
	if (o->index) {
		rv_seterr("'%s': %zu shards%s, fewer than the %u ranks: "
		    "rebuild the index over smaller shards, or decode the "
		    "shards without --index (each rank then reads every "
		    "shard)", rv_dataset_index_name(ds), used,
		    o->limit != UINT64_MAX ? " within --limit" : "",
		    o->shard_n);
		rv_dataset_free(ds);
		return NULL;
	}
	for (k = 0; k < j->nsrc; k++) {
		int64_t have = rv_dataset_load(ds, k);

		flush_msgs(o, ds);
		if (have < 0) {
			rv_dataset_free(ds);
			return NULL;
		}
		j->count[k] = (uint64_t)have;	/* for bad[] below */
	}
	return ds;
}

/*
 * No sample to write: the error names the inputs and why, what each
 * held or that its samples were all skipped (the first MAX_NAMED).
 */
#define MAX_NAMED	8
static void
no_samples(const struct job *j)
{
	struct rv_buf b = { 0 };
	size_t k, named = 0, more = 0;
	char line[1200];

	for (k = 0; j->ds && k < rv_dataset_nsources(j->ds); k++) {
		const char *held = rv_dataset_held(j->ds, k);
		uint64_t base, n, i, bad = 0;

		rv_dataset_source(j->ds, k, &base, &n);
		if (!held) {
			if (!j->bad || base >= j->n)
				continue;
			if (n > j->n - base)
				n = j->n - base;
			for (i = base; i < base + n; i++)
				bad += j->bad[i] != 0;
			if (bad < n)
				continue;	/* another rank's */
			snprintf(line, sizeof(line), "'%s': %llu samples, "
			    "all skipped", rv_dataset_source_name(j->ds, k),
			    (unsigned long long)n);
		} else {
			snprintf(line, sizeof(line), "'%s': %s",
			    rv_dataset_source_name(j->ds, k), held);
		}
		if (named == MAX_NAMED) {
			more++;
			continue;
		}
		rv_buf_append(&b, named ? "; " : ": ", 2);
		rv_buf_append(&b, line, strlen(line));
		named++;
	}
	if (more) {
		snprintf(line, sizeof(line), "; and %zu more", more);
		rv_buf_append(&b, line, strlen(line));
	}
	rv_buf_append(&b, "", 1);
	rv_seterr("no usable samples in the input%s", (char *)b.data);
	rv_buf_release(&b);
}

/* Mark the ids listed but not read (a source read had fewer) bad. */
static void
mark_unread(struct job *j)
{
	size_t k;
	uint64_t i;

	for (k = 0; !j->by_files && j->count && k < j->nsrc; k++) {
		uint64_t base, n;

		rv_dataset_source(j->ds, k, &base, &n);
		for (i = base + j->count[k]; i < base + n && i < j->n; i++)
			j->bad[i] = 1;
	}
}

/* Is the file at path an index (rv-index(5))? */
static int
is_index(const char *path)
{
	char head[sizeof(RV_INDEX_MAGIC)];
	int fd = open(path, O_RDONLY | O_CLOEXEC), r = 0;
	ssize_t n;

	if (fd < 0)
		return 0;
	n = rv_read_full(fd, head, sizeof(head) - 1);
	r = n > 0 && rv_index_sniff(head, (size_t)n);
	close(fd);
	return r;
}

/*
 * --index-out: list the shards given (their headers; image bytes are
 * seeked past) or merge the indexes given, and write the index.
 */
static int
build_index(const struct decode_opts *o, const struct rv_src_opts *so)
{
	struct rv_dataset *ds;
	struct rv_src_counts cnt = { 0 };
	uint64_t skipped = 0, rd, rss;
	int i, nidx = 0, rc = 1;
	double t0 = rv_now();

	for (i = 0; i < o->c.ninputs; i++)
		nidx += is_index(o->c.inputs[i]);
	if (nidx > 0 && nidx < o->c.ninputs)
		rv_die(2, "--index-out: %d of the %d operands are indexes: "
		    "merge indexes, or index shards, not both", nidx,
		    o->c.ninputs);
	ds = nidx ? rv_dataset_from_index(o->c.inputs, o->c.ninputs, so) :
	    rv_dataset_scan(o->c.inputs, o->c.ninputs, so, &skipped);
	rv_progress_done(so->prog);
	if (ds) {
		flush_msgs(o, ds);
		say_empty(o, ds);	/* an index may list them */
	}
	if (!ds)
		goto out;
	rv_dataset_counts(ds, &cnt);
	if (o->strict && cnt.skipped > 0) {
		rv_seterr("%llu members lost (--strict): no index written",
		    (unsigned long long)cnt.skipped);
		goto out;
	}
	if (rv_dataset_write_index(ds, o->index_out) < 0)
		goto out;
	rc = 0;
out:
	if (rc)
		rv_warn("%s", rv_errmsg());
	if (o->c.verbose) {
		const char *c = ds ? rv_meta_get(rv_dataset_meta(ds),
		    "classes") : NULL;

		rv_self_usage(&rd, &rss);
		rv_warn("%s: %s%zu shards, %llu samples, %s classes, %llu "
		    "lost, %.2f s, %.1f MB read", o->index_out,
		    rc ? "not written: " : "", ds ? rv_dataset_nsources(ds) :
		    0, (unsigned long long)(ds ? rv_dataset_count(ds) : 0),
		    c ? c : "no", (unsigned long long)cnt.skipped,
		    rv_now() - t0, (double)rd / 1e6);
	}
	rv_dataset_free(ds);
	return rc;
}

int
main(int argc, char *argv[])
{
	struct decode_opts o;
	struct rv_src_opts so = { 0 };
	struct rv_out out;
	struct rv_writer *w = NULL;
	struct rv_par *par = NULL;
	struct rv_progress prog, oprog;
	struct rv_src_counts cnt = { 0 };
	struct job job;
	uint64_t n, written = 0, lo, hi, share;
	size_t chunk;
	int status = 1, nw;
	double t0;

	rv_setprogname(argv[0]);
	rv_malloc_flat();
	parse_args(argc, argv, &o);
	memset(&job, 0, sizeof(job));
	job.o = &o;
	rv_progress_init(&prog, o.c.quiet, "samples");
	t0 = rv_now();
	so.strict = o.strict;
	so.quiet = o.c.quiet;
	so.max_pixels = o.max_pixels;
	so.max_held = o.max_held;
	so.hold = o.hold;
	so.cache_dir = o.cache_dir;
	so.class_level = o.class_level;
	/* Every input is read (or listed) before the first sample: a line
	 * of its own while that goes on. */
	oprog = prog;	/* RV_PROGRESS read once */
	oprog.unit = "inputs";
	rv_progress_total(&oprog, (uint64_t)o.c.ninputs);
	so.prog = &oprog;
	if (o.index_out)
		return build_index(&o, &so);
	if (rv_out_open(&out, o.c.output, 1) < 0)
		rv_die(1, "%s", rv_errmsg());
	job.ds = open_dataset(&job, &so);
	rv_progress_done(&oprog);
	if (job.ds == NULL)
		goto fail;
	flush_msgs(&o, job.ds);
	if (o.classes && check_classes(&o, job.ds) < 0)
		goto fail;
	n = rv_dataset_count(job.ds);
	if (n > o.limit)
		n = o.limit;
	if (n == 0) {
		no_samples(&job);	/* names the inputs */
		goto fail;
	}
	say_empty(&o, job.ds);
	job.n = n;
	rv_shard_range(n, o.shard_i, o.shard_n, &lo, &hi);
	share = job.by_files ? hi - lo : (n - o.shard_i + o.shard_n - 1) /
	    o.shard_n;
	job.target = o.even == EVEN_PAD ? (n + o.shard_n - 1) / o.shard_n :
	    o.even == EVEN_DROP ? n / o.shard_n : share;
	if (o.c.verbose && o.shard_n > 1)
		rv_warn("shard %u/%u: %s, %llu of %llu samples an epoch%s%s",
		    o.shard_i, o.shard_n, job.by_files ? "its share of the "
		    "files" : "every N-th sample of every file",
		    (unsigned long long)job.target, (unsigned long long)n,
		    o.even == EVEN_NONE ? "" : ", even by ",
		    o.even == EVEN_NONE ? "" : even_names[o.even]);
	if (o.resume && plan_resume(&job) < 0)
		goto fail;
	o.level = rv_stream_level_fd(rv_stream_level(o.c.level), out.fd);
	if ((w = rv_writer_new(out.fd, rv_out_name(&out), o.level)) == NULL)
		goto fail;
	job.dopts.channels = o.channels;
	job.dopts.max_side = o.max_side;
	job.dopts.max_pixels = o.max_pixels;
	job.bad = xcalloc((size_t)n, 1);
	mark_unread(&job);
	nw = rv_common_jobs(&o.c);
	chunk = (size_t)256 * (size_t)nw;
	if (chunk > n)
		chunk = (size_t)n;
	par = rv_par_new(&(struct rv_par_conf){
		.nthreads = nw, .max_items = chunk,
		.start = worker_start, .stop = worker_stop, .arg = &o,
		.budget = CHUNK_BUDGET,
		.item = decode_one, .each = decode_done, .ctx = &job,
		.prog = &prog });
	if (!par || write_meta(w, &job, job.target) < 0)
		goto fail;
	rv_progress_total(&prog, stream_total(&job, job.target));
	rv_progress_restart(&prog);	/* the rate is the samples' */
	job.ids = xcalloc(rv_par_max(par), sizeof(*job.ids));
	job.pix = xcalloc(rv_par_max(par), sizeof(*job.pix));
	job.shell = xcalloc(rv_par_max(par), 1);
	job.w = w;
	if (run_epochs(&job, par, w) < 0)
		goto fail;
	if ((written = rv_par_stats(par)->frames) == 0) {
		no_samples(&job);
		goto fail;
	}
	if (rv_writer_flush(w) < 0)
		goto fail;
	status = 0;
	goto out;
fail:
	rv_warn("%s", rv_errmsg());
out:
	rv_progress_done(&prog);
	if (job.ds)
		rv_dataset_counts(job.ds, &cnt);
	if (o.c.verbose) {
		double dt = rv_now() - t0;
		uint64_t rd, rss;

		if (par)
			written = rv_par_stats(par)->frames;

		rv_self_usage(&rd, &rss);
		rv_warn("%llu samples in %u epoch%s, %llu skipped, %llu "
		    "sidecars, %llu ignored, %.2f s, %.0f samples/s, %.1f MB "
		    "read, %.1f MB peak memory",
		    (unsigned long long)written, o.epochs,
		    o.epochs == 1 ? "" : "s", (unsigned long long)(job.skipped +
		    cnt.skipped),
		    (unsigned long long)cnt.sidecars,
		    (unsigned long long)cnt.ignored, dt,
		    dt > 0 ? (double)written / dt : 0.0, (double)rd / 1e6,
		    (double)rss / 1e6);
	}
	if (rv_writer_close(w) < 0 && status == 0) {
		rv_warn("%s", rv_errmsg());
		status = 1;
	}
	if (job.pix)
		for (chunk = 0; chunk < rv_par_max(par); chunk++)
			rv_img_release(&job.pix[chunk]);
	rv_par_free(par);
	free(job.pix);
	free(job.shell);
	free(job.ids);
	free(job.bad);
	free(job.count);
	free(o.resume_k);
	free(job.trained);
	rv_dataset_free(job.ds);
	if (rv_out_finish(&out, status == 0) < 0) {
		rv_warn("%s", rv_errmsg());
		status = 1;
	}
	return status;
}
