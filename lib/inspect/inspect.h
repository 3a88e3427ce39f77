/*
 * What rv-inspect shows of a stream, kept out of the program so it can be
 * unit tested: a view of each sample inside SAMPLE and BATCH records, the
 * summary accumulator and its text, the --dump TSV lines, the --png
 * directory writer and the --grid contact sheet.  Nothing here prints;
 * text is appended to a struct rv_buf.  Objects are single-threaded.
 */
#ifndef RV_INSPECT_H
#define RV_INSPECT_H

#include <stddef.h>
#include <stdint.h>

#include "codec/codec.h"
#include "stream/meta.h"
#include "stream/record.h"
#include "stream/stream.h"

/* ---- samples inside records ---- */

/*
 * One sample of a SAMPLE or BATCH record.  data is borrowed from the
 * record's payload (valid as long as the record).  For a batch member,
 * id, label and weight come from the batch payload; epoch, flags, uses
 * and score from the batch header.
 */
struct rv_view {
	uint32_t epoch;
	uint64_t id;
	int32_t label;
	float weight, score;
	uint16_t flags;
	uint32_t uses;
	int dtype;
	uint32_t h, w, c;
	const unsigned char *data;
	size_t len;
};

/* Samples in r: 1 for a sample, count for a batch, 0 otherwise. */
uint32_t rv_rec_nsamples(const struct rv_rec *r);
/* Sample i (< rv_rec_nsamples(r)) of a validated record. */
void rv_rec_view(const struct rv_rec *r, uint32_t i, struct rv_view *v);

/* Pixels to look at: borrowed from the view or from an rv_img. */
struct rv_pix {
	const unsigned char *px;
	uint32_t h, w, c;
};

/*
 * The pixels of v: u8 data as they are; JPEG or PNG bytes decoded with
 * codec into img (reused), to the record's channel count when that is 1
 * or 3, else to RGB.  Returns 0, or -1 with rv_errmsg() set to
 * "id N: reason".
 */
int rv_view_pixels(const struct rv_view *v, struct rv_codec *codec,
    struct rv_img *img, struct rv_pix *out);

/* ---- summary ---- */

/*
 * Everything the default report shows, accumulated record by record:
 * records by kind, samples per epoch, labels, shapes, dtypes, flags,
 * weights, scores, byte counts and the merged metadata.  Memory grows with
 * the number of distinct epochs, labels and shapes, not with samples.
 */
struct rv_summary;

struct rv_summary *rv_summary_new(void);
/* NULL is a no-op. */
void rv_summary_free(struct rv_summary *s);
/* Account one validated record.  -1 with rv_errmsg() set if a META
 * record's payload does not parse. */
int rv_summary_add(struct rv_summary *s, const struct rv_rec *r);
/* Add compressed input bytes (what a reader consumed). */
void rv_summary_add_input(struct rv_summary *s, uint64_t bytes);
/*
 * Append the report (see rv-inspect(1)): deterministic text, one fact per
 * line, aligned.  Long lists (epochs past 10, classes past 32, shapes and
 * dtypes past 8) are cut short unless verbose.
 */
void rv_summary_format(const struct rv_summary *s, int verbose,
    struct rv_buf *out);
/* The metadata merged from every META record (borrowed). */
const struct rv_meta *rv_summary_meta(const struct rv_summary *s);
/* Records of a kind (RV_SAMPLE ...), or of all kinds for kind 0. */
uint64_t rv_summary_records(const struct rv_summary *s, int kind);
/* Compressed input bytes added so far. */
uint64_t rv_summary_input(const struct rv_summary *s);
/* Samples, batch members included. */
uint64_t rv_summary_samples(const struct rv_summary *s);
/* Samples with this label (-1: unlabelled). */
uint64_t rv_summary_label(const struct rv_summary *s, int32_t label);
/* Samples in this epoch. */
uint64_t rv_summary_epoch(const struct rv_summary *s, uint32_t epoch);

/* ---- --dump ---- */

/* The TSV header line, then one line per record (see rv-inspect(1)). */
void rv_dump_header(struct rv_buf *out);
void rv_dump_line(const struct rv_rec *r, uint64_t index, uint64_t offset,
    struct rv_buf *out);

/* ---- --png ---- */

/*
 * A directory receiving one PNG per sample, named
 * e<epoch>-id<id>[-l<label>][-n<k>].png (epoch 3 digits and id 6 digits
 * at least; -l only when labelled; -n<k> for the k-th time, k >= 2, the
 * same epoch and id come by in one run).  Each file is written atomically.
 */
struct rv_pngdir;

/* Create dir if missing (its parent must exist).  NULL with rv_errmsg()
 * set on failure. */
struct rv_pngdir *rv_pngdir_new(const char *dir);
/* Write v's pixels (decoded with codec if encoded).  0 or -1. */
int rv_pngdir_put(struct rv_pngdir *d, const struct rv_view *v,
    struct rv_codec *codec);
uint64_t rv_pngdir_count(const struct rv_pngdir *d);
void rv_pngdir_free(struct rv_pngdir *d);
/* The file name (no directory) for the k-th (k >= 1) occurrence. */
void rv_png_name(char *buf, size_t size, uint32_t epoch, uint64_t id,
    int32_t label, uint64_t k);

/* ---- --grid ---- */

#define RV_SHEET_GAP		2	/* pixels between, around tiles */
#define RV_SHEET_BAND		10	/* label band under the tiles */
#define RV_SHEET_AUTO_SIDE	64	/* auto scale: tiles >= this */
#define RV_SHEET_MAX_AUTO	16	/* largest automatic scale */
#define RV_SHEET_MAX_SIDE	512	/* larger samples are reduced */
#define RV_SHEET_MAX_DIM	32768	/* largest sheet side */

/*
 * A contact sheet: the first max_tiles samples given to it, copied (grey
 * or RGB, reduced to RV_SHEET_MAX_SIDE), laid out on an RGB grid with the
 * class name or number under each labelled tile.
 */
struct rv_sheet;

struct rv_sheet *rv_sheet_new(uint32_t max_tiles);
void rv_sheet_free(struct rv_sheet *s);
/* Copy v in as the next tile; a no-op once full.  0 or -1. */
int rv_sheet_add(struct rv_sheet *s, const struct rv_view *v,
    struct rv_codec *codec);
uint32_t rv_sheet_count(const struct rv_sheet *s);
int rv_sheet_full(const struct rv_sheet *s);
/*
 * Tiles of at most tile pixels a side (1 to RV_SHEET_MAX_SIDE; larger is
 * RV_SHEET_MAX_SIDE): rv_sheet_add reduces larger samples by area
 * averaging to fit, aspect kept, and scale 0 renders at the largest whole
 * factor that keeps the largest tile within it.  0 (the default):
 * samples reduced to RV_SHEET_MAX_SIDE, scale 0 as below.  Labels keep
 * the font's own size.  Call before the first rv_sheet_add.
 */
void rv_sheet_set_tile(struct rv_sheet *s, uint32_t tile);
/*
 * Render into out (RGB, reusing its buffer).  cols 0: ceil(sqrt(n)); cols
 * above n become n.  scale 0: the smallest integer making the largest
 * tile at least RV_SHEET_AUTO_SIDE pixels (1 to RV_SHEET_MAX_AUTO), or
 * with rv_sheet_set_tile() the largest within the tile size.  Class
 * names come from meta's class.N keys when they fit under the tile.  -1
 * with rv_errmsg() set when empty or larger than RV_SHEET_MAX_DIM.
 */
int rv_sheet_render(const struct rv_sheet *s, uint32_t cols, uint32_t scale,
    const struct rv_meta *meta, struct rv_img *out);

#endif
