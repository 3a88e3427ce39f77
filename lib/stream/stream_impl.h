/*
 * Private to the stream files: stream.c (levels, size limits),
 * stream_read.c (the reader), stream_enc.c (one record to one zstd
 * frame) and stream_write.c (the writer, through an encoder).
 */
#ifndef RV_STREAM_IMPL_H
#define RV_STREAM_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "stream/record.h"

/* The first four bytes of every zstd frame, little-endian. */
#define ZSTD_MAGIC	0xFD2FB528u
/* No record is larger than this, whatever RV_MAX_RECORD says: sizes stay
 * far from overflow in every sum in the stream files. */
#define MAX_PAYLOAD_CAP	((uint64_t)1 << 48)
/* The largest stored (raw) block of a level-0 frame: 128 KiB. */
#define RAW_BLOCK	(128u << 10)

/*
 * A stored frame in pieces (rv_enc_shell): the frame header and the first
 * block's header, the record header, then the header of each further
 * block, then the checksum.  The first block holds the record header and
 * up to RAW_BLOCK - RV_HDR_LEN payload bytes, each further one RAW_BLOCK
 * bytes but the last: the layout stored_frame() writes.
 */
static inline size_t
shell_first(size_t plen)
{
	return plen < RAW_BLOCK - RV_HDR_LEN ? plen : RAW_BLOCK - RV_HDR_LEN;
}

/* Blocks after the first. */
static inline size_t
shell_more(size_t plen)
{
	return (plen - shell_first(plen) + RAW_BLOCK - 1) / RAW_BLOCK;
}

static inline size_t
shell_head(size_t plen)
{
	return (RV_HDR_LEN + plen > UINT32_MAX ? 14 : 10) + 3 + RV_HDR_LEN;
}

static inline size_t
shell_len(size_t plen)
{
	return shell_head(plen) + 3 * shell_more(plen) + 4;
}

#endif
