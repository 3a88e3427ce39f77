/*
 * Thumbnails of encoded samples (lib/shrink/thumb.c): what the assistant
 * sees of a JPEG or PNG is the 8x8 area average of the whole image (exact
 * for a PNG up to the rounding of two averaging passes; close for a JPEG,
 * whose 1/8 DCT scaling is not a decode at full size); a thumbnail is made
 * once per id and served from the cache after; the least recently used
 * goes first when the cache is full; a file that does not decode gives
 * NULL and the codec's reason, and is tried again.
 * Fixtures: $RV_FIXTURES, else tests/fixtures/img.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "codec/codec.h"
#include "shrink/assist.h"
#include "shrink/thumb.h"
#include "unit.h"

#define G	RV_FEAT_GRID

static const char *fixdir;

/* The whole fixture, or NULL (and a failure). */
static unsigned char *
slurp(const char *name, size_t *len)
{
	char path[4096];
	unsigned char *buf;
	long n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", fixdir, name);
	if ((f = fopen(path, "rb")) == NULL || fseek(f, 0, SEEK_END) != 0 ||
	    (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
		printf("# cannot read '%s'\n", path);
		unit_st.cur_failed = 1;
		if (f != NULL)
			fclose(f);
		return NULL;
	}
	buf = malloc((size_t)n + 1);
	if (buf == NULL || fread(buf, 1, (size_t)n, f) != (size_t)n)
		abort();
	fclose(f);
	*len = (size_t)n;
	return buf;
}

/* The largest difference between two thumbnails, and their mean one. */
static int
maxdiff(const uint8_t *a, const uint8_t *b, size_t n, double *mean)
{
	int m = 0, d;
	double s = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		d = abs((int)a[i] - (int)b[i]);
		s += d;
		if (d > m)
			m = d;
	}
	*mean = s / (double)n;
	return m;
}

/* The 8x8 area average of the full decode, the reference. */
static void
reference(const unsigned char *p, size_t n, uint32_t ch, uint8_t *out)
{
	struct rv_codec *c = rv_codec_new();
	struct rv_img im = { 0 };
	struct rv_decode_opts o = { ch, 0, 0 };

	EXPECT(rv_codec_decode(c, p, n, &o, &im) == 0);
	rv_img_resize_area(im.data, im.h, im.w, im.c, out, G, G);
	rv_img_release(&im);
	rv_codec_free(c);
}

static void
test_png_is_the_area_average(void)
{
	/* a 200x120 PNG of gradients and a bright square, made here */
	uint32_t h = 120, w = 200, x, y;
	uint8_t *px = malloc((size_t)h * w * 3), ref[G * G * 3];
	struct rv_buf png = { 0 };
	struct rv_thumbs *t = rv_thumbs_new(3, 16);
	const uint8_t *th;
	double mean;

	for (y = 0; y < h; y++)
		for (x = 0; x < w; x++) {
			uint8_t *q = px + ((size_t)y * w + x) * 3;
			int sq = x >= 40 && x < 90 && y >= 30 && y < 70;

			q[0] = (uint8_t)(x * 255 / w);
			q[1] = (uint8_t)(y * 255 / h);
			q[2] = sq ? 250 : 10;
		}
	EXPECT(rv_png_encode(px, h, w, 3, &png) == 0);
	rv_img_resize_area(px, h, w, 3, ref, G, G);
	th = rv_thumbs_get(t, 7, png.data, png.len);
	EXPECT(th != NULL);
	if (th != NULL)
		EXPECT(maxdiff(th, ref, sizeof(ref), &mean) <= 2);
	rv_thumbs_free(t);
	rv_buf_release(&png);
	free(px);
}

static void
test_jpeg_reduced_close(void)
{
	const char *names[] = { "rgb.jpg", "big.jpg" };
	uint8_t ref[G * G * 3];
	struct rv_thumbs *t = rv_thumbs_new(3, 16);
	struct rv_thumb_stats st;
	const uint8_t *th;
	unsigned char *p;
	double mean;
	size_t n, i;
	int m;

	for (i = 0; i < 2; i++) {
		if ((p = slurp(names[i], &n)) == NULL)
			continue;
		reference(p, n, 3, ref);
		th = rv_thumbs_get(t, i, p, n);
		EXPECT(th != NULL);
		if (th != NULL) {
			m = maxdiff(th, ref, sizeof(ref), &mean);
			if (m > 24 || mean > 4)
				printf("# %s: max %d mean %.2f\n", names[i],
				    m, mean);
			EXPECT(m <= 24 && mean <= 4);
		}
		free(p);
	}
	rv_thumbs_stats(t, &st);
	EXPECT_EQ(st.decoded, 2);
	EXPECT_EQ(st.hits, 0);
	rv_thumbs_free(t);
}

static void
test_grey(void)
{
	uint8_t ref[G * G];
	struct rv_thumbs *t = rv_thumbs_new(1, 4);
	const uint8_t *th;
	unsigned char *p;
	double mean;
	size_t n;

	/* a colour image to grey, and a grey one as it is */
	if ((p = slurp("rgb.png", &n)) != NULL) {
		reference(p, n, 1, ref);
		th = rv_thumbs_get(t, 1, p, n);
		EXPECT(th != NULL && maxdiff(th, ref, sizeof(ref), &mean) <= 2);
		free(p);
	}
	if ((p = slurp("grey.jpg", &n)) != NULL) {
		reference(p, n, 1, ref);
		th = rv_thumbs_get(t, 2, p, n);
		EXPECT(th != NULL && maxdiff(th, ref, sizeof(ref), &mean) <= 24);
		free(p);
	}
	rv_thumbs_free(t);
}

static void
test_cache_and_lru(void)
{
	uint8_t first[G * G * 3];
	struct rv_thumbs *t = rv_thumbs_new(3, 2);
	struct rv_thumb_stats st;
	const uint8_t *th;
	unsigned char *a, *b;
	size_t na, nb;

	a = slurp("rgb.jpg", &na);
	b = slurp("rgb.png", &nb);
	if (a == NULL || b == NULL)
		goto out;
	th = rv_thumbs_get(t, 1, a, na);
	EXPECT(th != NULL);
	if (th == NULL)
		goto out;
	memcpy(first, th, sizeof(first));
	/* the id is the key: other bytes under it get its thumbnail */
	th = rv_thumbs_get(t, 1, b, nb);
	EXPECT(th != NULL && memcmp(th, first, sizeof(first)) == 0);
	rv_thumbs_stats(t, &st);
	EXPECT_EQ(st.decoded, 1);
	EXPECT_EQ(st.hits, 1);
	/* room for two: 2 fills the cache; 1 used again, so 3 evicts 2 */
	EXPECT(rv_thumbs_get(t, 2, b, nb) != NULL);
	EXPECT(rv_thumbs_get(t, 1, a, na) != NULL);	/* a hit: 2 is oldest */
	EXPECT(rv_thumbs_get(t, 3, b, nb) != NULL);	/* evicts 2 */
	EXPECT(rv_thumbs_get(t, 1, a, na) != NULL);	/* still there */
	EXPECT(rv_thumbs_get(t, 2, b, nb) != NULL);	/* made again */
	rv_thumbs_stats(t, &st);
	EXPECT_EQ(st.decoded, 4);
	EXPECT_EQ(st.hits, 3);
out:
	free(a);
	free(b);
	rv_thumbs_free(t);
}

static void
test_bad_input(void)
{
	struct rv_thumbs *t = rv_thumbs_new(3, 4);
	struct rv_thumb_stats st;
	unsigned char *p, junk[64];
	size_t n;

	if ((p = slurp("truncated.jpg", &n)) != NULL) {
		EXPECT(rv_thumbs_get(t, 5, p, n) == NULL);
		EXPECT_STR(rv_errmsg(), "truncated JPEG data");
		/* not kept: tried again */
		EXPECT(rv_thumbs_get(t, 5, p, n) == NULL);
		free(p);
	}
	memset(junk, 0x5a, sizeof(junk));
	EXPECT(rv_thumbs_get(t, 6, junk, sizeof(junk)) == NULL);
	EXPECT(rv_thumbs_get(t, 6, junk, 0) == NULL);
	rv_thumbs_stats(t, &st);
	EXPECT_EQ(st.decoded, 4);
	EXPECT_EQ(st.failed, 4);
	EXPECT_EQ(st.hits, 0);
	rv_thumbs_free(t);
	EXPECT(rv_thumbs_new(2, 4) == NULL);
	EXPECT(rv_thumbs_new(3, 0) == NULL);
}

int
main(void)
{
	fixdir = getenv("RV_FIXTURES");
	if (fixdir == NULL || *fixdir == '\0')
		fixdir = "tests/fixtures/img";
	RUN(test_png_is_the_area_average);
	RUN(test_jpeg_reduced_close);
	RUN(test_grey);
	RUN(test_cache_and_lru);
	RUN(test_bad_input);
	return UNIT_DONE();
}
