/*
 * What the assistant sees of an encoded sample (rv-score on the stream of
 * rv-decode --encoded): a thumbnail of RV_FEAT_GRID x RV_FEAT_GRID pixels,
 * each the area average of its cell of the whole image, made by a reduced
 * decode and kept by id, so that a sample is decoded for scoring once a
 * run, never at full size where the format can help it.
 *
 * The reduced decode: a JPEG through libjpeg-turbo's DCT scaling at 1/8
 * (codec.h's rv_codec_decode_window() with the whole image for window: a
 * 480x360 JPEG of quality 90 decodes to 60x45 in about 0.55 of a full
 * decode's time, the entropy decoding being what no scale skips), then
 * one area average to the grid; PNG, which has no reduced
 * decode, and the JPEGs that path does not take (CMYK, no EOI marker:
 * the full decode then reports a cut file), decoded whole, then
 * averaged.  On that grid rv_feat() gives each cell's own average, so the
 * assistant's features are those of the image as it was stored, before
 * augmentation.
 *
 * Hence the cache: a thumbnail served from it costs about 2% of a full
 * decode.  It holds at most max_ids thumbnails, the least recently used
 * forgotten first (made again, at the same cost, when their id comes
 * back): max_ids * (RV_FEAT_GRID^2 * channels + 28) bytes at most, touched
 * only as ids arrive.  Ids name samples: a stream whose different images
 * share an id gets the first one's thumbnail for all of them.
 */
#ifndef RV_THUMB_H
#define RV_THUMB_H

#include <stddef.h>
#include <stdint.h>

struct rv_thumbs;

struct rv_thumb_stats {
	uint64_t decoded;	/* reduced decodes (failed ones included) */
	uint64_t hits;		/* thumbnails served from the cache */
	uint64_t failed;	/* decodes that failed */
};

/* For thumbnails of channels (1 or 3) channels, at most max_ids kept
 * (>= 1).  NULL with rv_errmsg() for other values. */
struct rv_thumbs *rv_thumbs_new(uint32_t channels, size_t max_ids);
void rv_thumbs_free(struct rv_thumbs *t);

/*
 * The thumbnail of sample id, whose encoded image (JPEG, PNG) is p[0..n):
 * RV_FEAT_GRID^2 * channels u8 bytes, HWC, borrowed until the next call.
 * From the cache when id is there, else decoded and kept.  NULL with
 * rv_errmsg() set to the codec's reason when the decode fails (nothing
 * is kept, so the next call for id tries again).
 */
const uint8_t *rv_thumbs_get(struct rv_thumbs *t, uint64_t id,
    const unsigned char *p, size_t n);

/*
 * The thumbnail of id when the cache holds it (counted as a hit), else
 * NULL: for a caller that reads the encoded image only when it must
 * (rv-refurbish --score).
 */
const uint8_t *rv_thumbs_peek(struct rv_thumbs *t, uint64_t id);

void rv_thumbs_stats(const struct rv_thumbs *t, struct rv_thumb_stats *st);

#endif
