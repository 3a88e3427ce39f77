/*
 * Samples encoded for storage (rv-encode(1)): u8 pixels to the stream's
 * jpeg or png dtype.  One rv_encoder a thread, beside the thread's
 * rv_coder (whose decoder and image it borrows), never shared; the bytes
 * depend only on the sample and the configuration.
 */
#ifndef RV_ENCODE_H
#define RV_ENCODE_H

#include "base/buf.h"
#include "codec/coder.h"
#include "stream/record.h"

struct rv_encode_conf {
	int dtype;		/* RV_DT_JPEG or RV_DT_PNG */
	int quality;		/* JPEG quality, 1..100 (PNG: unused) */
	int subsample;		/* JPEG chroma: 420 (also 0, the default)
				 * or 444 (full resolution); grey has none */
};

struct rv_encoder {
	struct rv_encode_conf conf;
	void *tj;		/* TurboJPEG's compressor, for jpeg */
};

/* "jpeg" (or "jpg") or "png" to its dtype.  0, or -1 with rv_errmsg(). */
int rv_encode_format(const char *s, int *dtype);

/* "420" or "444" to 420 or 444.  0, or -1 with rv_errmsg(). */
int rv_encode_subsample(const char *s, int *subsample);

/* 0, or -1 with rv_errmsg() set and nothing held. */
int rv_encoder_init(struct rv_encoder *e, const struct rv_encode_conf *c);
/* Free what e holds; a zeroed or released e is fine. */
void rv_encoder_release(struct rv_encoder *e);

/*
 * Encode the sample rec (payload: its bytes) into out (emptied first),
 * with hdr its record header: rec's, with the dtype, the image's size
 * and the payload length of the encoding.  u8 pixels of 1 or 3 channels
 * (PNG: 1 to 4) are encoded; a sample of the other encoded dtype is
 * decoded first by k's decoder into k's image, at full size, grey kept
 * grey.  Returns 0; 1 when rec
 * already has the dtype asked (to be written as it came: hdr and out
 * untouched); -1 with rv_errmsg() for a sample that cannot be encoded
 * (no pixels, a payload of the wrong size, a channel count the format
 * cannot hold, an encoded sample that does not decode).
 */
int rv_encode_sample(struct rv_encoder *e, struct rv_coder *k,
    const struct rv_rec *rec, const unsigned char *payload,
    struct rv_rec *hdr, struct rv_buf *out);

#endif
