/*
 * The input of rv-refurbish: one epoch of samples, read once, then fetched
 * again by position whenever a partial must be computed.  A regular file
 * is indexed where it lies (each sample's frame offset and size); a pipe
 * cannot be read twice, so its samples are first copied (spilled) into a
 * temporary file, then indexed the same way.  Fetching takes a batch of
 * positions, sorts them by offset and reads neighbouring frames with one
 * pread, so a chunk of misses costs a few syscalls, never an open or a
 * seek per sample; the frames are decoded afterwards, on any thread.
 */
#ifndef RV_REFSRC_H
#define RV_REFSRC_H

#include <stddef.h>
#include <stdint.h>

#include "aug/aug.h"
#include "codec/coder.h"
#include "stream/meta.h"
#include "stream/record.h"
#include "stream/stream.h"

/* The zstd level of a spilled pipe: fast, as the file lives one run. */
#define RV_REFSRC_SPILL_LEVEL	(-1)

/* What the index keeps of each sample (40 bytes). */
struct rv_refsrc_item {
	uint64_t id;
	uint64_t off;		/* the frame's offset in the file read back
				 * (the input, or the spill file) */
	uint64_t len;		/* the frame's bytes */
	uint64_t recno;		/* record index in the input, from 0 */
	int32_t label;
	float weight;
};

struct rv_refsrc;

/*
 * Read path ("-": standard input) up to its first epoch-end record, or to
 * its end.  Samples become positions 0..N-1 in input order; metadata
 * records are merged; records of unknown kinds are ignored; a batch
 * record is an error ("'in': record 3 is a batch; refurbish before
 * rv-batch"), so is a sample without 1 or 3 channels of pixels.
 *
 * A regular file (standard input included, when redirected from one) is
 * only indexed, and read again later through its own descriptor.  Any
 * other input is spilled to a file made with mkstemp(3) in spill_dir (NULL:
 * $TMPDIR, else /tmp) and removed at once, so it never outlives the
 * process, not even after kill -9: each sample record is written again as
 * one frame at RV_REFSRC_SPILL_LEVEL.
 *
 * Returns NULL with rv_errmsg() set: the reader's own message for a
 * corrupt or truncated input ("'in': record N at byte B: reason"), or
 * "'in': record N (id I): reason" for a sample that cannot be augmented.
 */
struct rv_refsrc *rv_refsrc_open(const char *path, const char *spill_dir);
/* Closes the files.  NULL is a no-op. */
void rv_refsrc_free(struct rv_refsrc *s);

/* N, the samples of the epoch read. */
uint64_t rv_refsrc_count(const struct rv_refsrc *s);
/* Position pos's entry (pos < N).  Borrowed, valid until _free. */
const struct rv_refsrc_item *rv_refsrc_item(const struct rv_refsrc *s,
    uint64_t pos);
/* The merged metadata of the input.  Borrowed. */
const struct rv_meta *rv_refsrc_meta(const struct rv_refsrc *s);
/* The input's name for messages ("<stdin>" for standard input). */
const char *rv_refsrc_name(const struct rv_refsrc *s);
/* 1 if the input was spilled (a pipe), 0 if it is read where it lies. */
int rv_refsrc_spilled(const struct rv_refsrc *s);

/*
 * A batch of frames read for a list of positions: owned by its caller,
 * made once and reused (its buffers only grow).  Fields are private but
 * for the counters.
 */
struct rv_refsrc_req;
struct rv_refsrc_batch {
	unsigned char *buf;	/* the runs read, one after the other */
	size_t cap;
	struct rv_refsrc_req *req;	/* sort scratch */
	uint64_t *pos;		/* request i's position */
	uint64_t *at;		/* its frame's offset in buf */
	size_t n, capn;
	uint64_t preads;	/* pread calls so far */
	uint64_t bytes;		/* bytes they read */
};
void rv_refsrc_batch_init(struct rv_refsrc_batch *b);
void rv_refsrc_batch_release(struct rv_refsrc_batch *b);

/*
 * Read the frames of pos[0..k) (any order, no position twice) into b: the
 * requests are sorted by offset and cut into runs of frames less than
 * 8 KiB apart and at most 8 MiB long (a longer frame alone); the kernel
 * is told of every run of 32 KiB or more first (POSIX_FADV_WILLNEED, so
 * the reads of a cold disk overlap); then each run is read with one pread.
 * Request i is then decoded with rv_refsrc_decode(.., b, i, ..).
 *
 * Any thread may call it, for its own batch: the source is only read.
 * Returns 0, or -1 with rv_errmsg() set (I/O error, or a file that shrank).
 */
int rv_refsrc_load(const struct rv_refsrc *s, const uint64_t *pos, size_t k,
    struct rv_refsrc_batch *b);

/*
 * A decoder of loaded frames: one per thread (it holds a zstd context and
 * the record's buffer), never shared.  Free it before its source.
 */
struct rv_refsrc_reader;
struct rv_refsrc_reader *rv_refsrc_reader_new(const struct rv_refsrc *s);
void rv_refsrc_reader_free(struct rv_refsrc_reader *rd);

/*
 * Decode request i of batch b (filled by rv_refsrc_load, which must not run
 * on b meanwhile) into *rec: the sample record as the input held it, its
 * payload borrowed from rd until its next decode.  Several readers may
 * decode different requests of one batch at the same time.  Returns 0, or
 * -1 with rv_errmsg() set ("'in': record N at byte B: reason"; a frame
 * that is no longer the sample indexed there means the input changed while
 * it was read).
 */
int rv_refsrc_decode(struct rv_refsrc_reader *rd,
    const struct rv_refsrc_batch *b, size_t i, struct rv_rec *rec);
/*
 * Move the payload of rec, which rv_refsrc_decode() just gave, into *dst
 * without a copy (rv_reader_take): dst->data[0..payload_len) is the
 * payload, and rd keeps dst's old buffer for its next decode.
 */
void rv_refsrc_take(struct rv_refsrc_reader *rd, struct rv_rec *rec,
    struct rv_buf *dst);

/*
 * The sample rec, which rv_refsrc_decode() just gave, into k->img with
 * spec applied, its numbers drawn from (seed, stage, epoch, id): a
 * decoded record's payload is taken as the image's buffer (no copy, so a
 * big sample is held once, not twice); an encoded one is decoded with a
 * leading crop fused (rv_spec_decode_apply, rv-augment(1) explains it).
 * The partial of rv-refurbish, and the final of --from-partials.  0, or
 * -1 with rv_errmsg() set (a sample that does not decode).
 */
/*
 * *out: the header of the sample of item src made into img (u8 pixels):
 * its id and label, and the fields given.  The records rv-refurbish
 * writes, served or stored.
 */
void rv_refsrc_rec(struct rv_rec *out, const struct rv_img *img,
    const struct rv_refsrc_item *src, uint16_t flags, uint32_t epoch,
    float weight, float score, uint32_t uses);

int rv_refsrc_apply(struct rv_refsrc_reader *rd, struct rv_coder *k,
    struct rv_aug_ctx *ctx, const struct rv_spec *spec, struct rv_rec *rec,
    uint64_t seed, uint32_t stage, uint32_t epoch, uint64_t id);

#endif
