/*
 * One rv record: a fixed little-endian header followed by a payload.
 * man/rv-stream.5 is the normative description; this file implements it.
 * The header starts with its magic, version and its own length, so later
 * versions can append fields and old readers skip them.
 */
#ifndef RV_RECORD_H
#define RV_RECORD_H

#include <stddef.h>
#include <stdint.h>

#define RV_MAGIC	0x31525652u	/* "RVR1" little-endian */
#define RV_VERSION	1
#define RV_HDR_LEN	64		/* bytes written by this version */

enum rv_kind {
	RV_SAMPLE = 1,		/* one sample: pixels or encoded bytes */
	RV_BATCH = 2,		/* N samples of one shape, collated */
	RV_EPOCH_END = 3,	/* marks the end of an epoch */
	RV_META = 4,		/* key=value text, stream metadata */
};

enum rv_dtype {
	RV_DT_NONE = 0,		/* no pixels (epoch end, metadata) */
	RV_DT_U8 = 1,		/* H x W x C interleaved u8 pixels */
	RV_DT_JPEG = 2,		/* encoded JPEG bytes, decode later */
	RV_DT_PNG = 3,		/* encoded PNG bytes, decode later */
};

/* flags: what has happened to a sample on its way */
#define RV_F_PARTIAL	0x0001u	/* partial augmentation applied */
#define RV_F_FINAL	0x0002u	/* final augmentation applied */
#define RV_F_CACHED	0x0004u	/* partial served from a cache */
#define RV_F_SCORED	0x0008u	/* score field was set by an assistant */
#define RV_F_REWEIGHTED	0x0010u	/* weight was changed by shrinking */
#define RV_F_ALL	0x001fu	/* flags known to this version */

/*
 * The decoded header.  For a batch, id/label/weight are unused in the header
 * (they travel in the payload, one per sample) and count is N.  For an
 * epoch end, epoch is the epoch that ended and count the samples it held.
 */
struct rv_rec {
	uint16_t version;
	uint16_t hdr_len;
	uint8_t kind;
	uint8_t dtype;
	uint16_t flags;
	uint32_t epoch;
	uint64_t id;
	int32_t label;		/* -1: none */
	uint32_t height, width, channels;
	uint32_t count;		/* samples in a batch; 1 for a sample */
	uint32_t uses;		/* times a cached partial has been served */
	float weight;		/* importance weight, 1.0 by default */
	float score;		/* assistant score, NaN if none */
	uint64_t payload_len;
	/* Payload, borrowed: valid until the next read on its reader. */
	const unsigned char *payload;
};

/* A header with the defaults (label -1, weight 1, score NaN, count 1). */
void rv_rec_init(struct rv_rec *r, enum rv_kind kind);

/* Encode r's header into buf (RV_HDR_LEN bytes). */
void rv_rec_encode(const struct rv_rec *r, unsigned char *buf);

/*
 * Decode and validate a header from buf (avail bytes, at least 12).  Checks
 * magic, version, kind, dtype, the length arithmetic (payload against
 * shape and count) and payload_len <= max_payload, all before anyone
 * allocates.  Returns 0, or -1 with rv_errmsg() set to a reason.
 */
int rv_rec_decode(struct rv_rec *r, const unsigned char *buf, size_t avail,
    uint64_t max_payload);

/* The payload size a u8 sample or batch of this shape must have, or 0 on
 * overflow. */
uint64_t rv_rec_pixels_len(const struct rv_rec *r);

/* Batch payload layout: ids[N] u64, labels[N] i32, weights[N] f32, pixels. */
size_t rv_batch_pixels_off(uint32_t n);

/* "sample", "batch", ... for messages; "?" for unknown. */
const char *rv_kind_name(int kind);
const char *rv_dtype_name(int dtype);

/* Little-endian helpers shared by the stream code. */
static inline uint32_t
rv_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
}

static inline uint64_t
rv_le64(const unsigned char *p)
{
	return (uint64_t)rv_le32(p) | (uint64_t)rv_le32(p + 4) << 32;
}

static inline void
rv_put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

static inline void
rv_put64(unsigned char *p, uint64_t v)
{
	rv_put32(p, (uint32_t)v);
	rv_put32(p + 4, (uint32_t)(v >> 32));
}

#endif
