/*
 * Record header encoding and validation.  Validation is strict because a
 * header is the first thing a hostile stream controls: every size is
 * checked against the others and against a cap before any allocation.
 */
#include "stream/record.h"

#include <math.h>
#include <string.h>

#include "base/err.h"

/*
 * Header layout (all little-endian):
 *   0 u32 magic      4 u16 version   6 u16 hdr_len   8 u8 kind  9 u8 dtype
 *  10 u16 flags     12 u32 epoch    16 u64 id       24 i32 label
 *  28 u32 height    32 u32 width    36 u32 channels 40 u32 count
 *  44 u32 uses      48 f32 weight   52 f32 score    56 u64 payload_len
 */

static uint32_t
f2u(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	return u;
}

static float
u2f(uint32_t u)
{
	float f;

	memcpy(&f, &u, 4);
	return f;
}

void
rv_rec_init(struct rv_rec *r, enum rv_kind kind)
{
	memset(r, 0, sizeof(*r));
	r->version = RV_VERSION;
	r->hdr_len = RV_HDR_LEN;
	r->kind = (uint8_t)kind;
	r->label = -1;
	r->count = kind == RV_SAMPLE ? 1 : 0;
	r->weight = 1.0f;
	r->score = NAN;
}

void
rv_rec_encode(const struct rv_rec *r, unsigned char *b)
{
	rv_put32(b, RV_MAGIC);
	b[4] = RV_VERSION & 0xff;
	b[5] = RV_VERSION >> 8;
	b[6] = RV_HDR_LEN & 0xff;
	b[7] = RV_HDR_LEN >> 8;
	b[8] = r->kind;
	b[9] = r->dtype;
	b[10] = (unsigned char)r->flags;
	b[11] = (unsigned char)(r->flags >> 8);
	rv_put32(b + 12, r->epoch);
	rv_put64(b + 16, r->id);
	rv_put32(b + 24, (uint32_t)r->label);
	rv_put32(b + 28, r->height);
	rv_put32(b + 32, r->width);
	rv_put32(b + 36, r->channels);
	rv_put32(b + 40, r->count);
	rv_put32(b + 44, r->uses);
	rv_put32(b + 48, f2u(r->weight));
	rv_put32(b + 52, f2u(r->score));
	rv_put64(b + 56, r->payload_len);
}

uint64_t
rv_rec_pixels_len(const struct rv_rec *r)
{
	/* Each factor is < 2^32; check the products stay below 2^63. */
	unsigned __int128 n = (unsigned __int128)r->height * r->width;

	n *= r->channels;
	if (r->kind == RV_BATCH)
		n *= r->count;
	if (n >= (unsigned __int128)1 << 62)
		return 0;
	return (uint64_t)n;
}

size_t
rv_batch_pixels_off(uint32_t n)
{
	return (size_t)n * (8 + 4 + 4);
}

const char *
rv_kind_name(int kind)
{
	switch (kind) {
	case RV_SAMPLE: return "sample";
	case RV_BATCH: return "batch";
	case RV_EPOCH_END: return "epoch-end";
	case RV_META: return "meta";
	default: return "?";
	}
}

const char *
rv_dtype_name(int dtype)
{
	switch (dtype) {
	case RV_DT_NONE: return "none";
	case RV_DT_U8: return "u8";
	case RV_DT_JPEG: return "jpeg";
	case RV_DT_PNG: return "png";
	default: return "?";
	}
}

int
rv_rec_decode(struct rv_rec *r, const unsigned char *b, size_t avail,
    uint64_t max_payload)
{
	uint64_t want;

	if (avail < 8)
		return rv_seterr("short record header (%zu bytes)", avail);
	if (rv_le32(b) != RV_MAGIC)
		return rv_seterr("not an rv record (bad magic 0x%08x)",
		    rv_le32(b));
	r->version = (uint16_t)(b[4] | b[5] << 8);
	r->hdr_len = (uint16_t)(b[6] | b[7] << 8);
	if (r->version != RV_VERSION)
		return rv_seterr("unsupported record version %u",
		    (unsigned)r->version);
	if (r->hdr_len < RV_HDR_LEN)
		return rv_seterr("record header length %u below %u",
		    (unsigned)r->hdr_len, RV_HDR_LEN);
	if (avail < r->hdr_len)
		return rv_seterr("short record header (%zu of %u bytes)",
		    avail, (unsigned)r->hdr_len);
	r->kind = b[8];
	r->dtype = b[9];
	r->flags = (uint16_t)(b[10] | b[11] << 8);
	r->epoch = rv_le32(b + 12);
	r->id = rv_le64(b + 16);
	r->label = (int32_t)rv_le32(b + 24);
	r->height = rv_le32(b + 28);
	r->width = rv_le32(b + 32);
	r->channels = rv_le32(b + 36);
	r->count = rv_le32(b + 40);
	r->uses = rv_le32(b + 44);
	r->weight = u2f(rv_le32(b + 48));
	r->score = u2f(rv_le32(b + 52));
	r->payload_len = rv_le64(b + 56);
	r->payload = NULL;

	if (r->payload_len > max_payload)
		return rv_seterr("record declares a %llu-byte payload, over "
		    "the %llu-byte limit", (unsigned long long)r->payload_len,
		    (unsigned long long)max_payload);
	switch (r->kind) {
	case RV_SAMPLE:
		if (r->count != 1)
			return rv_seterr("sample record with count %u",
			    r->count);
		break;
	case RV_BATCH:
		if (r->count == 0)
			return rv_seterr("empty batch record");
		if (r->dtype != RV_DT_U8)
			return rv_seterr("batch record with dtype %s",
			    rv_dtype_name(r->dtype));
		break;
	case RV_EPOCH_END:
	case RV_META:
		if (r->dtype != RV_DT_NONE)
			return rv_seterr("%s record with dtype %s",
			    rv_kind_name(r->kind), rv_dtype_name(r->dtype));
		if (r->kind == RV_EPOCH_END && r->payload_len != 0)
			return rv_seterr("epoch-end record with a payload");
		return 0;
	default:
		return rv_seterr("unknown record kind %u", (unsigned)r->kind);
	}
	switch (r->dtype) {
	case RV_DT_U8:
		if (r->height == 0 || r->width == 0 || r->channels == 0)
			return rv_seterr("%s record with empty shape "
			    "%ux%ux%u", rv_kind_name(r->kind), r->height,
			    r->width, r->channels);
		if (r->channels > 4)
			return rv_seterr("%u channels (at most 4)",
			    r->channels);
		want = rv_rec_pixels_len(r);
		if (want == 0)
			return rv_seterr("shape %ux%ux%u overflows",
			    r->height, r->width, r->channels);
		if (r->kind == RV_BATCH)
			want += rv_batch_pixels_off(r->count);
		if (r->payload_len != want)
			return rv_seterr("payload is %llu bytes, shape "
			    "needs %llu",
			    (unsigned long long)r->payload_len,
			    (unsigned long long)want);
		break;
	case RV_DT_JPEG:
	case RV_DT_PNG:
		if (r->payload_len == 0)
			return rv_seterr("empty encoded sample");
		break;
	default:
		return rv_seterr("unknown dtype %u", (unsigned)r->dtype);
	}
	return 0;
}
