/*
 * Thumbnails of encoded samples for the assistant (thumb.h).
 */
#include "shrink/thumb.h"

#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/xmem.h"
#include "codec/codec.h"
#include "shrink/assist.h"
#include "shrink/idmap.h"

#define G	RV_FEAT_GRID

struct rv_thumbs {
	uint32_t channels;
	size_t len;		/* bytes a thumbnail */
	struct rv_idmap map;
	uint8_t *px;		/* len bytes a slot */
	uint8_t *out;		/* the one just made */
	struct rv_codec *codec;
	struct rv_img img;
	struct rv_thumb_stats st;
};

struct rv_thumbs *
rv_thumbs_new(uint32_t channels, size_t max_ids)
{
	struct rv_thumbs *t;

	if (channels != 1 && channels != 3) {
		rv_seterr("thumbnails: %u channels, not 1 or 3", channels);
		return NULL;
	}
	if (max_ids < 1 || max_ids > ((size_t)1 << 30)) {
		rv_seterr("thumbnails: %zu ids, not 1 to 2^30", max_ids);
		return NULL;
	}
	t = xcalloc(1, sizeof(*t));
	t->codec = rv_codec_new();
	t->channels = channels;
	t->len = (size_t)G * G * channels;
	rv_idmap_init(&t->map, max_ids);
	t->px = xcalloc(max_ids, t->len);
	return t;
}

void
rv_thumbs_free(struct rv_thumbs *t)
{
	if (t == NULL)
		return;
	rv_idmap_release(&t->map);
	free(t->px);
	rv_codec_free(t->codec);
	rv_img_release(&t->img);
	free(t);
}

/*
 * The reduced decode into t->img: a JPEG at DCT scale 1/8, whole (the
 * fused-crop path of codec.h with the whole image for its window); what
 * that path does not take (another format, CMYK, a file without its EOI
 * marker, which the full decode then reports) at full size.
 */
static int
reduced(struct rv_thumbs *t, const unsigned char *p, size_t n)
{
	struct rv_decode_opts o = { t->channels, 0, 0 };
	uint32_t win[4] = { 0, 0, 0, 0 }, org[2], full[2], ch;
	int dt, r;

	if (rv_codec_info(t->codec, p, n, &dt, &win[2], &win[3], &ch) < 0)
		return -1;
	r = rv_codec_decode_window(t->codec, p, n, &o, 8, win, &t->img, org,
	    full);
	if (r != 0)
		return r < 0 ? -1 : 0;
	return rv_codec_decode(t->codec, p, n, &o, &t->img);
}

const uint8_t *
rv_thumbs_get(struct rv_thumbs *t, uint64_t id, const unsigned char *p,
    size_t n)
{
	uint32_t slot = rv_idmap_find(&t->map, id);
	uint8_t *dst;

	if (slot != RV_IDMAP_NIL) {
		rv_idmap_touch(&t->map, slot);
		t->st.hits++;
		return t->px + (size_t)slot * t->len;
	}
	t->st.decoded++;
	if (reduced(t, p, n) < 0) {
		t->st.failed++;
		return NULL;
	}
	slot = rv_idmap_insert(&t->map, id);
	dst = t->px + (size_t)slot * t->len;
	rv_img_resize_area(t->img.data, t->img.h, t->img.w, t->img.c, dst, G,
	    G);
	return dst;
}

const uint8_t *
rv_thumbs_peek(struct rv_thumbs *t, uint64_t id)
{
	uint32_t slot = rv_idmap_find(&t->map, id);

	if (slot == RV_IDMAP_NIL)
		return NULL;
	rv_idmap_touch(&t->map, slot);
	t->st.hits++;
	return t->px + (size_t)slot * t->len;
}

void
rv_thumbs_stats(const struct rv_thumbs *t, struct rv_thumb_stats *st)
{
	*st = t->st;
}
