/*
 * rv-inspect: look at an rv stream.  A summary (or a TSV line per record
 * with --dump) on stdout, and optionally the samples as PNG files or one
 * contact sheet, so a person can see what a pipeline produces.  The
 * counting and drawing live in lib/inspect/inspect.c; this file wires them up.
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
#include "base/xmem.h"
#include "codec/codec.h"
#include "inspect/inspect.h"
#include "stream/stream.h"

static const char usage[] =
    "usage: rv-inspect [-qv] [--dump] [--png DIR] [--grid FILE] [-k K]\n"
    "                  [--cols C] [--scale S | --tile N] [-o FILE]\n"
    "                  [file ...]\n"
    "  -o, --output FILE  write the report to FILE (default stdout)\n"
    "      --dump         one TSV line per record instead of the summary\n"
    "      --png DIR      write samples as DIR/eEPOCH-idID[-lLABEL].png\n"
    "      --grid FILE    draw the first K samples as one contact sheet\n"
    "  -k, --first K      --png and --grid take the first K samples\n"
    "                     (default: all for --png, 64 for --grid)\n"
    "      --cols C       contact-sheet columns (default ceil(sqrt(K)))\n"
    "      --scale S      contact-sheet tile magnification, 1..64\n"
    "                     (default: tiles of at least 64 pixels)\n"
    "      --tile N       contact-sheet tiles of at most N pixels a\n"
    "                     side, 16..512: larger samples are reduced\n"
    "  -j, --jobs N       accepted, no effect (one thread)\n"
    "      --seed S       accepted, no effect\n"
    "      --level L      accepted, no effect\n"
    "  -q, --quiet        no progress\n"
    "  -v, --verbose      list every epoch, shape and class; a final\n"
    "                     line on stderr\n"
    "  -h, --help         print this help\n"
    "  -V, --version      print the version\n";

enum {
	OPT_COLS = RV_OPT_FIRST_PRIVATE,
	OPT_DUMP,
	OPT_GRID,
	OPT_PNG,
	OPT_SCALE,
	OPT_TILE,
};

#define GRID_DEFAULT_K	64
#define TILE_MIN	16	/* two digits of label still fit */
#define FLUSH_AT	(64u << 10)

struct inspect_opts {
	struct rv_common c;
	const char *png;
	const char *grid;
	int dump;
	uint64_t k;		/* 0: not given */
	uint32_t cols, scale;	/* 0: automatic */
	uint32_t tile;		/* 0: the default */
};

static void
parse_args(int argc, char *argv[], struct inspect_opts *o)
{
	static const struct option longopts[] = {
		RV_COMMON_LONGOPTS,
		{ "cols", required_argument, NULL, OPT_COLS },
		{ "dump", no_argument, NULL, OPT_DUMP },
		{ "first", required_argument, NULL, 'k' },
		{ "grid", required_argument, NULL, OPT_GRID },
		{ "png", required_argument, NULL, OPT_PNG },
		{ "scale", required_argument, NULL, OPT_SCALE },
		{ "tile", required_argument, NULL, OPT_TILE },
		{ NULL, 0, NULL, 0 }
	};
	int ch;

	memset(o, 0, sizeof(*o));
	rv_common_init(&o->c);
	opterr = 0;
	while ((ch = getopt_long(argc, argv, RV_COMMON_SHORTOPTS "k:",
	    longopts, NULL)) != -1) {
		if (rv_common_opt(&o->c, ch, optarg, usage))
			continue;
		switch (ch) {
		case 'k':
			o->k = rv_opt_u64("-k", optarg, 1, 1u << 24, usage);
			break;
		case OPT_COLS:
			o->cols = (uint32_t)rv_opt_u64("--cols", optarg, 1,
			    4096, usage);
			break;
		case OPT_DUMP:
			o->dump = 1;
			break;
		case OPT_GRID:
			o->grid = optarg;
			break;
		case OPT_PNG:
			o->png = optarg;
			break;
		case OPT_SCALE:
			o->scale = (uint32_t)rv_opt_u64("--scale", optarg, 1,
			    64, usage);
			break;
		case OPT_TILE:
			o->tile = (uint32_t)rv_opt_u64("--tile", optarg,
			    TILE_MIN, RV_SHEET_MAX_SIDE, usage);
			break;
		default:
			rv_usage_error(argv, usage);
		}
	}
	if (o->k && !o->png && !o->grid)
		rv_usage_die(usage, "-k needs --png or --grid");
	if ((o->cols || o->scale || o->tile) && !o->grid)
		rv_usage_die(usage, "%s needs --grid", o->cols ? "--cols" :
		    o->scale ? "--scale" : "--tile");
	if (o->scale && o->tile)
		rv_usage_die(usage, "--scale and --tile: give one");
	if (o->png && !*o->png)
		rv_usage_die(usage, "--png: empty directory name");
	if (o->grid && !*o->grid)
		rv_usage_die(usage, "--grid: empty file name");
	if (rv_common_operands(&o->c, argc, argv, optind) == 0 &&
	    isatty(STDIN_FILENO))
		rv_usage_die(usage, "no input: give a file or pipe a stream in");
}

/* Everything a run holds; released at the one exit. */
struct run {
	struct rv_out out;
	int out_open;
	struct rv_buf text;
	struct rv_summary *sum;
	struct rv_pngdir *pngdir;
	struct rv_sheet *sheet;
	struct rv_codec *codec;
	struct rv_img img;
	struct rv_progress prog;
	uint64_t taken;		/* samples offered to --png / --grid */
	uint64_t limit;		/* how many they take */
};

static int
flush_text(struct run *u)
{
	if (rv_write_full(u->out.fd, u->text.data, u->text.len) < 0)
		return rv_preferr("'%s'", rv_out_name(&u->out));
	u->text.len = 0;
	return 0;
}

/* Hand a record's samples to --png and --grid, up to the limit. */
static int
take_samples(struct run *u, const struct rv_rec *rec)
{
	uint32_t i, n = rv_rec_nsamples(rec);

	for (i = 0; i < n && u->taken < u->limit; i++, u->taken++) {
		struct rv_view v;

		rv_rec_view(rec, i, &v);
		if (u->pngdir && rv_pngdir_put(u->pngdir, &v, u->codec) < 0)
			return -1;
		if (u->sheet && rv_sheet_add(u->sheet, &v, u->codec) < 0)
			return -1;
	}
	return 0;
}

/* Read one input to its end.  0, or -1 with rv_errmsg() set. */
static int
inspect_one(struct run *u, const struct inspect_opts *o, const char *path)
{
	struct rv_reader *r;
	struct rv_rec rec;
	int rc;

	if (!(r = rv_reader_open(path)))
		return -1;
	/* every record as it lies; the summary joins epochs itself */
	rv_reader_set_raw(r, 1);
	while ((rc = rv_reader_next(r, &rec)) == 1) {
		uint64_t idx = rv_reader_records(r) - 1;
		uint64_t off = rv_reader_offset(r);

		if (rv_summary_add(u->sum, &rec) < 0 ||
		    take_samples(u, &rec) < 0) {
			rv_preferr("'%s': record %llu at byte %llu",
			    rv_reader_name(r), (unsigned long long)idx,
			    (unsigned long long)off);
			rc = -1;
			break;
		}
		if (o->dump) {
			rv_dump_line(&rec, idx, off, &u->text);
			if (u->text.len >= FLUSH_AT && flush_text(u) < 0) {
				rc = -1;
				break;
			}
		}
		rv_progress_tick(&u->prog, rv_summary_records(u->sum, 0));
	}
	rv_summary_add_input(u->sum, rv_reader_bytes(r));
	rv_reader_close(r);
	return rc < 0 ? -1 : 0;
}

static int
write_grid(struct run *u, const struct inspect_opts *o)
{
	if (rv_sheet_render(u->sheet, o->cols, o->scale,
	    rv_summary_meta(u->sum), &u->img) < 0)
		return rv_preferr("'%s'", o->grid);
	return rv_png_write(o->grid, u->img.data, u->img.h, u->img.w, 3);
}

/*
 * Summarise, dump, or draw every record of the inputs, read as one stream.
 * An error stops the run: --dump to stdout keeps the lines of the records
 * before it, the summary is not printed, -o FILE and --grid leave no file,
 * PNG files written so far stay (each complete).
 */
int
main(int argc, char *argv[])
{
	struct inspect_opts o;
	struct run u;
	int i, status = 1;

	rv_setprogname(argv[0]);
	parse_args(argc, argv, &o);
	memset(&u, 0, sizeof(u));
	rv_progress_init(&u.prog, o.c.quiet, "records");
	u.sum = rv_summary_new();
	u.limit = o.k ? o.k : o.grid && !o.png ? GRID_DEFAULT_K : UINT64_MAX;
	if (rv_out_open(&u.out, o.c.output, 0) < 0) {
		rv_warn("%s", rv_errmsg());
		goto out;
	}
	u.out_open = 1;
	if (o.png || o.grid) {
		if (!(u.codec = rv_codec_new())) {
			rv_warn("%s", rv_errmsg());
			goto out;
		}
	}
	if (o.png && !(u.pngdir = rv_pngdir_new(o.png))) {
		rv_warn("%s", rv_errmsg());
		goto out;
	}
	if (o.grid) {
		u.sheet = rv_sheet_new((uint32_t)(o.k ? o.k : GRID_DEFAULT_K));
		rv_sheet_set_tile(u.sheet, o.tile);
	}
	if (o.dump)
		rv_dump_header(&u.text);
	for (i = 0; i < o.c.ninputs; i++) {
		if (inspect_one(&u, &o, o.c.inputs[i]) < 0) {
			char msg[1024];
			/* the lines before the bad record, for a post-mortem */
			snprintf(msg, sizeof(msg), "%s", rv_errmsg());
			rv_progress_done(&u.prog);
			if (o.dump && !u.out.path)
				(void)flush_text(&u);
			rv_warn("%s", msg);
			goto out;
		}
	}
	rv_progress_done(&u.prog);
	if (o.grid && write_grid(&u, &o) < 0) {
		rv_warn("%s", rv_errmsg());
		goto out;
	}
	if (!o.dump)
		rv_summary_format(u.sum, o.c.verbose, &u.text);
	if (flush_text(&u) < 0) {
		rv_warn("%s", rv_errmsg());
		goto out;
	}
	/* committed or, on failure, already removed */
	u.out_open = 0;
	if (rv_out_commit(&u.out) < 0) {
		rv_warn("%s", rv_errmsg());
		goto out;
	}
	if (o.c.verbose) {
		fprintf(stderr, "%s: %llu records, %llu samples, %llu bytes "
		    "read", rv_progname(),
		    (unsigned long long)rv_summary_records(u.sum, 0),
		    (unsigned long long)rv_summary_samples(u.sum),
		    (unsigned long long)rv_summary_input(u.sum));
		if (u.pngdir)
			fprintf(stderr, ", %llu PNG files",
			    (unsigned long long)rv_pngdir_count(u.pngdir));
		if (u.sheet)
			fprintf(stderr, ", a %ux%u sheet of %u", u.img.w,
			    u.img.h, rv_sheet_count(u.sheet));
		fprintf(stderr, "\n");
	}
	status = 0;
out:
	if (u.out_open)
		rv_out_abort(&u.out);
	rv_buf_release(&u.text);
	rv_summary_free(u.sum);
	rv_pngdir_free(u.pngdir);
	rv_sheet_free(u.sheet);
	rv_codec_free(u.codec);
	rv_img_release(&u.img);
	return status;
}
