/*
 * The codec front: the list of formats (each one a struct rv_format in its
 * codec_<name>.c), recognising a format by its first bytes, one thread's
 * decoder state, and sending each image to its format's decoder.
 */
#include "codec/codec.h"

#include <stdio.h>
#include <stdlib.h>

#include "base/err.h"
#include "base/xmem.h"
#include "codec/codec_impl.h"
#include "stream/record.h"
#include "stream/stream.h"

_Static_assert(RV_MAX_SAMPLE == RV_MAX_PIXELS_DEFAULT * 4,
    "RV_MAX_SAMPLE is rv-decode's default pixel limit of 4 channels");

/* Every format rv reads: a new one is its file and one line here. */
#define FORMATS(X) X(jpeg) X(png) X(webp) X(gif) X(bmp) X(tiff)

#define DECLARE(name) extern const struct rv_format rv_format_##name;
FORMATS(DECLARE)
#define ENTRY(name) &rv_format_##name,
static const struct rv_format *const formats[] = { FORMATS(ENTRY) };
#define NFORMATS (sizeof(formats) / sizeof(formats[0]))

const struct rv_format *
rv_codec_format(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < NFORMATS; i++)
		if (formats[i]->sniff(p, n))
			return formats[i];
	return NULL;
}

int
rv_sniff(const unsigned char *p, size_t n)
{
	const struct rv_format *f = rv_codec_format(p, n);

	return f != NULL ? f->dtype : RV_DT_NONE;
}

/* a and b equal but for the case of a's ASCII letters (b is lowercase). */
static int
lower_eq(const char *a, const char *b)
{
	for (; *a && *b; a++, b++) {
		char ca = *a >= 'A' && *a <= 'Z' ? (char)(*a - 'A' + 'a') : *a;
		if (ca != *b)
			return 0;
	}
	return *a == *b;
}

const struct rv_format *
rv_format_by_ext(const char *ext)
{
	for (size_t i = 0; i < NFORMATS; i++)
		for (const char *const *e = formats[i]->ext; *e; e++)
			if (lower_eq(ext, *e))
				return formats[i];
	return NULL;
}

struct rv_codec *
rv_codec_new(void)
{
	/* Each format's state waits for its first image: PNG-only and
	 * raw-pixel workers never pay for a TurboJPEG handle. */
	return xcalloc(1, sizeof(struct rv_codec));
}

void
rv_codec_set_strict(struct rv_codec *c, int strict)
{
	c->strict = strict != 0;
}

void
rv_codec_free(struct rv_codec *c)
{
	if (c == NULL)
		return;
	for (size_t i = 0; i < NFORMATS; i++)
		if (formats[i]->release != NULL)
			formats[i]->release(c);
	rv_scratch_release(&c->pix);
	rv_scratch_release(&c->rows);
	rv_scratch_release(&c->rs);
	rv_scratch_release(&c->jpg);
	free(c);
}

/* "not a JPEG, PNG, ... or TIFF image", from the list. */
static int
not_image(size_t n)
{
	char msg[160];
	size_t k = 0;

	if (n == 0)
		return rv_seterr("empty image data");
	for (size_t i = 0; i < NFORMATS && k < sizeof(msg); i++)
		k += (size_t)snprintf(msg + k, sizeof(msg) - k, "%s%s",
		    i == 0 ? "" : i + 1 < NFORMATS ? ", " : " or ",
		    formats[i]->name);
	return rv_seterr("not a %s image", msg);
}

int
rv_codec_info(struct rv_codec *c, const unsigned char *p, size_t n,
    int *dtype, uint32_t *h, uint32_t *w, uint32_t *ch)
{
	const struct rv_format *f = rv_codec_format(p, n);

	*dtype = f != NULL ? f->dtype : RV_DT_NONE;
	if (f == NULL)
		return not_image(n);
	return f->info(c, p, n, h, w, ch);
}

int
rv_codec_decode(struct rv_codec *c, const unsigned char *p, size_t n,
    const struct rv_decode_opts *o, struct rv_img *out)
{
	const struct rv_format *f;

	if (o->channels != 1 && o->channels != 3)
		return rv_seterr("unsupported output channel count %u",
		    o->channels);
	if ((f = rv_codec_format(p, n)) == NULL)
		return not_image(n);
	return f->decode(c, p, n, o, out);
}
