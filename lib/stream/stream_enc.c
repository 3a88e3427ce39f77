/*
 * Encoding one record as one zstd frame (its header and payload, the
 * content size in the frame header, XXH64 checksum on): compressed at the
 * encoder's level, or at level 0 as a frame of stored blocks written
 * around the payload (a shell), so that a large payload is never copied.
 */
#include "stream/stream.h"

#include <stdlib.h>
#include <string.h>

#include <xxhash.h>
#include <zstd.h>

#include "base/err.h"
#include "base/xmem.h"
#include "stream/stream_impl.h"

struct rv_enc {
	ZSTD_CCtx *cctx;
	XXH64_state_t *xxh;
	int level;
};

struct rv_enc *
rv_enc_new(int level)
{
	struct rv_enc *e = xcalloc(1, sizeof(*e));

	e->cctx = ZSTD_createCCtx();
	if (!e->cctx) {
		free(e);
		rv_seterr("cannot create a zstd context");
		return NULL;
	}
	e->xxh = XXH64_createState();
	if (!e->xxh) {
		ZSTD_freeCCtx(e->cctx);
		free(e);
		rv_seterr("cannot create a hash state");
		return NULL;
	}
	e->level = level == RV_LEVEL_AUTO ? RV_LEVEL_FILE : level;
	return e;
}

void
rv_enc_free(struct rv_enc *e)
{
	if (!e)
		return;
	ZSTD_freeCCtx(e->cctx);
	XXH64_freeState(e->xxh);
	free(e);
}

/*
 * Level 0: a standard zstd frame of raw (stored) blocks, RFC 8878 3.1.1:
 * magic, a descriptor with a 4- or 8-byte content size and the checksum
 * flag, a 128 KiB window, blocks of at most 128 KiB, then the low 32 bits
 * of XXH64 of the content.  Any zstd decoder reads it; writing it costs a
 * copy and a hash, about 10x less than the fastest compression.  Its
 * block size, RAW_BLOCK, and the layout of a shell: stream_impl.h.
 */

static void
raw_blocks(unsigned char **pp, const unsigned char *src, size_t n, int last)
{
	unsigned char *p = *pp;

	while (n > 0) {
		size_t k = n < RAW_BLOCK ? n : RAW_BLOCK;
		uint32_t bh = (uint32_t)k << 3 | (last && k == n);
		p[0] = (unsigned char)bh;
		p[1] = (unsigned char)(bh >> 8);
		p[2] = (unsigned char)(bh >> 16);
		memcpy(p + 3, src, k);
		p += 3 + k;
		src += k;
		n -= k;
	}
	*pp = p;
}

static void
stored_frame(struct rv_enc *e, const unsigned char *hdr, const void *payload,
    size_t plen, struct rv_buf *out)
{
	size_t total = RV_HDR_LEN + plen;
	size_t nblocks = (total + RAW_BLOCK - 1) / RAW_BLOCK + 1;
	int big = total > UINT32_MAX;
	unsigned char *p, *start;
	uint32_t sum;

	rv_buf_reserve(out, 4 + 2 + 8 + 3 * nblocks + total + 4);
	start = p = out->data + out->len;
	rv_put32(p, ZSTD_MAGIC);
	p[4] = big ? 0xC4 : 0x84;	/* FCS 8 or 4 bytes, checksum */
	p[5] = (17 - 10) << 3;		/* window 2^17 */
	p += 6;
	if (big) {
		rv_put64(p, total);
		p += 8;
	} else {
		rv_put32(p, (uint32_t)total);
		p += 4;
	}
	/* The header rides in the first block with the payload's start, so
	 * a small record is one block. */
	if (plen == 0) {
		raw_blocks(&p, hdr, RV_HDR_LEN, 1);
	} else {
		size_t first = plen < RAW_BLOCK - RV_HDR_LEN ? plen :
		    RAW_BLOCK - RV_HDR_LEN;
		uint32_t bh = (uint32_t)(RV_HDR_LEN + first) << 3 |
		    (first == plen);
		p[0] = (unsigned char)bh;
		p[1] = (unsigned char)(bh >> 8);
		p[2] = (unsigned char)(bh >> 16);
		memcpy(p + 3, hdr, RV_HDR_LEN);
		memcpy(p + 3 + RV_HDR_LEN, payload, first);
		p += 3 + RV_HDR_LEN + first;
		raw_blocks(&p, (const unsigned char *)payload + first,
		    plen - first, 1);
	}
	XXH64_reset(e->xxh, 0);
	XXH64_update(e->xxh, hdr, RV_HDR_LEN);
	if (plen)
		XXH64_update(e->xxh, payload, plen);
	sum = (uint32_t)XXH64_digest(e->xxh);
	rv_put32(p, sum);
	p += 4;
	out->len += (size_t)(p - start);
}

static void
put_bh(unsigned char *p, size_t k, int last)
{
	uint32_t bh = (uint32_t)k << 3 | (last != 0);

	p[0] = (unsigned char)bh;
	p[1] = (unsigned char)(bh >> 8);
	p[2] = (unsigned char)(bh >> 16);
}

/* Never write what a reader would refuse: a producer's bug shows up
 * here, at its source, not in the next program of the pipe. */
static int
enc_check(const struct rv_rec *rec, const void *payload, unsigned char *hdr)
{
	struct rv_rec chk;

	rv_rec_encode(rec, hdr);
	if (rv_rec_decode(&chk, hdr, RV_HDR_LEN, MAX_PAYLOAD_CAP) < 0)
		return rv_preferr("invalid record");
	if (rec->payload_len && !payload)
		return rv_seterr("invalid record: no payload");
	return 0;
}

int
rv_enc_shell(struct rv_enc *e, const struct rv_rec *rec, const void *payload,
    struct rv_buf *out)
{
	unsigned char hdr[RV_HDR_LEN], *p;
	size_t plen = (size_t)rec->payload_len, total = RV_HDR_LEN + plen;
	size_t more, k, left;

	if (e->level != RV_LEVEL_STORED)
		return rv_seterr("a frame shell needs level 0");
	if (enc_check(rec, payload, hdr) < 0)
		return -1;
	more = shell_more(plen);
	rv_buf_reserve(out, shell_len(plen));
	p = out->data + out->len;
	rv_put32(p, ZSTD_MAGIC);
	p[4] = total > UINT32_MAX ? 0xC4 : 0x84;
	p[5] = (17 - 10) << 3;
	p += 6;
	if (total > UINT32_MAX) {
		rv_put64(p, total);
		p += 8;
	} else {
		rv_put32(p, (uint32_t)total);
		p += 4;
	}
	put_bh(p, RV_HDR_LEN + shell_first(plen), more == 0);
	memcpy(p + 3, hdr, RV_HDR_LEN);
	p += 3 + RV_HDR_LEN;
	left = plen - shell_first(plen);
	for (k = 0; k < more; k++) {
		size_t b = left < RAW_BLOCK ? left : RAW_BLOCK;

		put_bh(p, b, k + 1 == more);
		p += 3;
		left -= b;
	}
	XXH64_reset(e->xxh, 0);
	XXH64_update(e->xxh, hdr, RV_HDR_LEN);
	if (plen)
		XXH64_update(e->xxh, payload, plen);
	rv_put32(p, (uint32_t)XXH64_digest(e->xxh));
	out->len += shell_len(plen);
	return 0;
}

int
rv_enc_level(const struct rv_enc *e)
{
	return e->level;
}

int
rv_enc_frame(struct rv_enc *e, const struct rv_rec *rec, const void *payload,
    struct rv_buf *out)
{
	unsigned char hdr[RV_HDR_LEN];
	size_t total, ret;
	ZSTD_inBuffer in;
	ZSTD_outBuffer ob;

	if (enc_check(rec, payload, hdr) < 0)
		return -1;
	total = RV_HDR_LEN + (size_t)rec->payload_len;
	if (e->level == RV_LEVEL_STORED) {
		stored_frame(e, hdr, payload, (size_t)rec->payload_len, out);
		return 0;
	}
	ZSTD_CCtx_reset(e->cctx, ZSTD_reset_session_only);
	ZSTD_CCtx_setParameter(e->cctx, ZSTD_c_compressionLevel, e->level);
	ZSTD_CCtx_setParameter(e->cctx, ZSTD_c_checksumFlag, 1);
	ZSTD_CCtx_setParameter(e->cctx, ZSTD_c_contentSizeFlag, 1);
	ZSTD_CCtx_setPledgedSrcSize(e->cctx, total);
	rv_buf_reserve(out, ZSTD_compressBound(total));

	in = (ZSTD_inBuffer){ hdr, sizeof(hdr), 0 };
	ob = (ZSTD_outBuffer){ out->data, out->cap, out->len };
	do {
		ret = ZSTD_compressStream2(e->cctx, &ob, &in,
		    rec->payload_len ? ZSTD_e_continue : ZSTD_e_end);
		if (ZSTD_isError(ret))
			goto zerr;
	} while (in.pos < in.size || (!rec->payload_len && ret != 0));
	if (rec->payload_len) {
		in = (ZSTD_inBuffer){ payload, (size_t)rec->payload_len, 0 };
		do {
			ret = ZSTD_compressStream2(e->cctx, &ob, &in,
			    ZSTD_e_end);
			if (ZSTD_isError(ret))
				goto zerr;
			if (ret != 0 && ob.pos == ob.size) {
				out->len = ob.pos;
				rv_buf_reserve(out, ret + 4096);
				ob.dst = out->data;
				ob.size = out->cap;
			}
		} while (ret != 0);
	}
	out->len = ob.pos;
	return 0;
zerr:
	return rv_seterr("zstd: %s", ZSTD_getErrorName(ret));
}
