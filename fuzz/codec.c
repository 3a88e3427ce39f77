/*
 * libFuzzer harness for the decode path of every format (lib/codec*.c,
 * lib/codec/img.c): JPEG, PNG, WebP, GIF, TIFF and rv's own BMP parser.  Byte 0 picks the options (channels, --max-side, pixel cap,
 * PNG CRCs recomputed), the rest is the image.  The header read, a decode and a second decode
 * with other options on the same codec must agree with each other, and
 * every output pixel is read so that a short buffer shows.  A JPEG also
 * goes through the fused crop's window decode (rv_codec_decode_window) with
 * a window and DCT scale drawn from its length, whose region must cover
 * the window.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "base/err.h"
#include "codec/codec.h"
#include "stream/record.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Small enough for libFuzzer's memory limit with room to spare. */
#define MAX_PIXELS	((uint64_t)1 << 22)

static const uint32_t sides[8] = { 0, 1, 2, 7, 16, 33, 64, 255 };

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	rv_setprogname("fuzz-codec");
	return 0;
}

static unsigned
touch(const struct rv_img *im)
{
	size_t n = (size_t)im->h * im->w * im->c, i;
	unsigned s = 0;

	if (n > im->cap)
		abort();
	for (i = 0; i < n; i++)
		s += im->data[i];
	return s;
}

/* Decode with o; on success check the result's shape against the info. */
static int
decode(struct rv_codec *c, const uint8_t *p, size_t n,
    const struct rv_decode_opts *o, int ok_info, uint32_t h, uint32_t w,
    struct rv_img *im)
{
	uint32_t th, tw;

	if (rv_codec_decode(c, p, n, o, im) != 0) {
		if (rv_errmsg()[0] == '\0')
			abort();
		return -1;
	}
	/* A decode never succeeds where the header read failed. */
	if (!ok_info)
		abort();
	rv_fit_max_side(h, w, o->max_side, &th, &tw);
	if (im->h != th || im->w != tw || im->c != o->channels)
		abort();
	(void)touch(im);
	return 0;
}

static uint32_t
be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3];
}

/*
 * Rewrite every PNG chunk's CRC to match its bytes.  A mutated PNG
 * otherwise never gets past the CRC check to libpng; the option bit that
 * asks for this leaves the CRC error path fuzzed too.
 */
static void
fix_png_crcs(uint8_t *p, size_t n)
{
	size_t off = 8;

	while (n - off >= 12) {
		uint32_t len = be32(p + off), crc;

		if (len > n - off - 12)
			break;
		crc = (uint32_t)crc32(0, p + off + 4, len + 4);
		p[off + 8 + len] = (uint8_t)(crc >> 24);
		p[off + 9 + len] = (uint8_t)(crc >> 16);
		p[off + 10 + len] = (uint8_t)(crc >> 8);
		p[off + 11 + len] = (uint8_t)crc;
		off += 12 + (size_t)len;
	}
}

static uint32_t
div_up(uint32_t a, uint32_t b)
{
	return (uint32_t)(((uint64_t)a + b - 1) / b);
}

/* The window decode of the fused crop, on a JPEG whose header reads. */
static void
window(struct rv_codec *c, const uint8_t *p, size_t n,
    const struct rv_decode_opts *o, uint32_t h, uint32_t w)
{
	struct rv_img im = { 0 };
	uint32_t win[4], org[2], full[2];
	unsigned denom = 1u << (n % 4);
	int rc;

	win[0] = (uint32_t)(n * 7 % h);
	win[1] = (uint32_t)(n * 13 % w);
	win[2] = 1 + (uint32_t)(n * 3 % (h - win[0]));
	win[3] = 1 + (uint32_t)(n * 5 % (w - win[1]));
	rc = rv_codec_decode_window(c, p, n, o, denom, win, &im, org, full);
	if (rc < 0 && rv_errmsg()[0] == '\0')
		abort();
	if (rc == 1) {
		if (full[0] != h || full[1] != w || im.c != o->channels)
			abort();
		if ((uint64_t)org[0] * denom > win[0] ||
		    (uint64_t)org[1] * denom > win[1] ||
		    org[0] + im.h < div_up(win[0] + win[2], denom) ||
		    org[1] + im.w < div_up(win[1] + win[3], denom) ||
		    org[0] + im.h > div_up(h, denom) ||
		    org[1] + im.w > div_up(w, denom))
			abort();
		(void)touch(&im);
	}
	rv_img_release(&im);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rv_decode_opts o = { 0 }, o2;
	struct rv_img im = { 0 };
	struct rv_codec *c;
	uint32_t h = 0, w = 0, ch = 0;
	int dtype, ok_info;
	uint8_t opt, *copy = NULL;

	if (size < 1)
		return 0;
	opt = data[0];
	o.channels = opt & 1 ? 1 : 3;
	o.max_side = sides[opt >> 1 & 7];
	o.max_pixels = opt & 0x10 ? MAX_PIXELS : MAX_PIXELS / 64;
	data++;
	size--;
	if (opt & 0x40 && rv_sniff(data, size) == RV_DT_PNG) {
		copy = malloc(size);
		if (!copy)
			abort();
		memcpy(copy, data, size);
		fix_png_crcs(copy, size);
		data = copy;
	}

	c = rv_codec_new();
	ok_info = rv_codec_info(c, data, size, &dtype, &h, &w, &ch) == 0;
	if (dtype != rv_sniff(data, size))
		abort();
	/* Only a recognised format has a header to read. */
	if (ok_info && rv_codec_format(data, size) == NULL)
		abort();
	if (ok_info && (h == 0 || w == 0 || (ch != 1 && ch != 3)))
		abort();
	if (decode(c, data, size, &o, ok_info, h, w, &im) == 0) {
		/* the same codec and image buffer, other options */
		o2 = o;
		o2.channels = o.channels == 1 ? 3 : 1;
		o2.max_side = opt & 0x20 ? 0 : 5;
		if (decode(c, data, size, &o2, ok_info, h, w, &im) != 0)
			abort();
	} else if (ok_info) {
		/* a failed decode leaves the codec usable */
		(void)decode(c, data, size, &o, ok_info, h, w, &im);
	}
	if (ok_info && rv_sniff(data, size) == RV_DT_JPEG)
		window(c, data, size, &o, h, w);
	rv_img_release(&im);
	rv_codec_free(c);
	free(copy);
	return 0;
}
