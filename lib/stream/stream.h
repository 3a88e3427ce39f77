/*
 * The rv stream: a sequence of zstd frames, one record per frame, with
 * skippable frames allowed anywhere and ignored (see rv-stream(5)).
 *
 * struct rv_reader reads records from a file, a pipe or memory; it owns a
 * buffer that holds the current record, so a record's payload is borrowed
 * and valid until the next rv_reader_next() on the same reader.  Errors read
 * "'name': record N at byte B: reason", N counting records from 0 and B the
 * offset of the record's first byte in the input.  A reader is used by one
 * thread at a time.
 *
 * struct rv_enc compresses records into frames (one per thread);
 * struct rv_writer buffers frames and writes them to an fd in order.
 */
#ifndef RV_STREAM_H
#define RV_STREAM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/buf.h"
#include "stream/record.h"

/*
 * Compression levels: -7..19 as zstd's, except 0, which stores the record
 * in raw zstd blocks (no compression: a copy and a checksum).  Without
 * --level or $RV_LEVEL the level follows the output (rv-stream(5) has the
 * measurements): a pipe, socket or device gets RV_LEVEL_PIPE, a regular
 * file RV_LEVEL_FILE.
 */
#define RV_LEVEL_STORED		0
#define RV_LEVEL_PIPE		RV_LEVEL_STORED
#define RV_LEVEL_FILE		(-1)
#define RV_LEVEL_AUTO		1000	/* resolve from the output */
/* Default cap on one record's payload; RV_MAX_RECORD overrides. */
#define RV_MAX_PAYLOAD		((uint64_t)2 << 30)
/*
 * Default cap on one sample's bytes, in a sample record or in each sample
 * of a batch: rv-decode's --max-pixels default (RV_MAX_PIXELS_DEFAULT,
 * Pillow's bomb threshold) of 4 channels, 715827880 bytes, so whatever
 * rv-decode writes by default is read.  RV_MAX_SAMPLE overrides.
 */
#define RV_MAX_SAMPLE		((uint64_t)178956970 * 4)
/*
 * Caps on metadata (rv-stream(5), "Metadata"), fixed, not configurable:
 * RV_META_MAX bounds one META record's payload, refused from its header
 * before any memory is allocated for it, and the bytes of the metadata a
 * reader merges from all its records (rv_meta_encode()'s output);
 * RV_META_MAX_KEYS bounds the distinct keys it merges.  Real metadata is a
 * few hundred bytes plus one class.N line a class: ImageNet-21k's 21841
 * names take about 1 MiB, and 16 MiB holds a million short ones.  One cap
 * for a record and for a merge means that what a reader keeps can always
 * be written again as one record that every reader accepts.
 */
#define RV_META_MAX		((uint64_t)16 << 20)
#define RV_META_MAX_KEYS	((size_t)1 << 20)

/* The compression level asked for: opt if in -7..19 (an explicit --level),
 * else $RV_LEVEL if set and valid, else RV_LEVEL_AUTO. */
int rv_stream_level(int opt);
/* level, or for RV_LEVEL_AUTO the level for output fd: RV_LEVEL_PIPE when
 * fd is not a regular file, else RV_LEVEL_FILE. */
int rv_stream_level_fd(int level, int fd);
/* Payload cap: $RV_MAX_RECORD (bytes, K/M/G suffixes) or RV_MAX_PAYLOAD. */
uint64_t rv_stream_max_payload(void);
/* Sample cap: $RV_MAX_SAMPLE (bytes, K/M/G suffixes) or RV_MAX_SAMPLE. */
uint64_t rv_stream_max_sample(void);

/* ---- reading ---- */
struct rv_reader;

/* Open path ("-" is stdin).  NULL with rv_errmsg() set on failure. */
struct rv_reader *rv_reader_open(const char *path);
/*
 * Read the inputs paths[0..n) one after another as one stream, as `cat`
 * would join them (n == 0: stdin).  paths are borrowed and must outlive
 * the reader; messages name the input being read, and every name that
 * rv_reader_name() returned stays valid until rv_reader_close().
 */
struct rv_reader *rv_reader_open_list(char *const *paths, int n);
/* Read from fd (not closed by the reader); name is used in messages. */
struct rv_reader *rv_reader_fdopen(int fd, const char *name);
/* Read from memory (borrowed, must outlive the reader). */
struct rv_reader *rv_reader_mem(const void *buf, size_t len,
    const char *name);
/*
 * Read the next record into *rec (payload borrowed).  Returns 1 for a
 * record, 0 at a clean end of input, -1 on error with rv_errmsg() set.
 * After an error the reader is spent: further calls return -1.
 * A sample over rv_stream_max_sample() bytes (each sample of a batch
 * counts) is an error "sample of X bytes is over the limit of Y
 * (RV_MAX_SAMPLE to raise)", found from the record header before any
 * memory is allocated for its payload; so is a metadata record over
 * RV_META_MAX bytes: "metadata record of X bytes is over the limit of Y".
 *
 * Epochs are as rv-stream(5) defines them for every reader: consecutive
 * epoch-ends of the same epoch number, with only metadata or samples and
 * batches of that epoch between them, are one epoch.  The reader returns
 * one epoch-end for them, the last, with their counts summed (metadata
 * read between them comes first), so `cat` of shards is one epoch.  A
 * sample or batch whose epoch differs from the samples before it with no
 * epoch-end between, or an epoch-end of another epoch than the samples it
 * ends, is an error.
 */
int rv_reader_next(struct rv_reader *r, struct rv_rec *rec);
/*
 * Move the payload of rec, the record the last rv_reader_next() returned,
 * into *dst without copying it: the reader's buffer and *dst trade
 * places, so the reader reuses dst's old memory.  On return
 * dst->data[0..dst->len) is the payload (moved to the buffer's start) and
 * rec->payload points at it.  A payload that is not in the reader's buffer
 * (today only an empty one) is copied instead.  dst is
 * owned by the caller; release it with rv_buf_release().
 */
void rv_reader_take(struct rv_reader *r, struct rv_rec *rec,
    struct rv_buf *dst);
/* How many epoch-end records of the input the last epoch-end returned
 * stands for (0 after any other record). */
uint64_t rv_reader_merged(const struct rv_reader *r);
/* raw: every record as it lies in the input, epoch-ends unjoined and
 * epochs unchecked (rv-inspect --dump). */
void rv_reader_set_raw(struct rv_reader *r, int raw);
/* Offset in the input of the first byte of the last record returned. */
uint64_t rv_reader_offset(const struct rv_reader *r);
/* Records returned so far. */
uint64_t rv_reader_records(const struct rv_reader *r);
/*
 * At the end of input: 0 if the last sample or batch read was followed by
 * an epoch-end record (or none was read), else -1 with "'name': record N
 * at byte B: truncated stream: K sample records after the last epoch-end".
 * Every epoch ends with an epoch-end (rv-stream(5)), so this catches a
 * stream cut exactly between two records, which frames alone cannot.
 */
int rv_reader_check_end(const struct rv_reader *r);
/* Bytes consumed from the input so far. */
uint64_t rv_reader_bytes(const struct rv_reader *r);
/* 1 if the input is a regular file that rv_reader_seek() can use. */
int rv_reader_seekable(const struct rv_reader *r);
/* Continue reading at byte off (a record start); record index becomes n. */
int rv_reader_seek(struct rv_reader *r, uint64_t off, uint64_t n);
const char *rv_reader_name(const struct rv_reader *r);
/* Close (the fd too, if rv_reader_open opened it).  NULL is a no-op. */
void rv_reader_close(struct rv_reader *r);

/* ---- encoding ---- */
struct rv_enc;

/* level: -7..19 (0 stores); RV_LEVEL_AUTO means RV_LEVEL_FILE. */
struct rv_enc *rv_enc_new(int level);
/* Append one frame holding rec's header and payload (rec->payload_len
 * bytes) to out.  Returns 0 or -1. */
int rv_enc_frame(struct rv_enc *e, const struct rv_rec *rec,
    const void *payload, struct rv_buf *out);
/*
 * The stored frame (level 0) of rec without its payload: what
 * rv_enc_frame() would append, less the payload bytes, so that the payload
 * can stay where it is and be written around (rv_writer_put_shell).  The
 * shell is the frame header, the first block's header, the record header,
 * the header of every further block and the checksum, whose hash covers
 * the payload: hash it while it is hot.  The bytes written from a shell and
 * its payload are those of rv_enc_frame().  Returns 0, or -1 (the record
 * is invalid, or e does not store).
 */
int rv_enc_shell(struct rv_enc *e, const struct rv_rec *rec,
    const void *payload, struct rv_buf *out);
/* The level frames are made at (RV_LEVEL_AUTO resolved). */
int rv_enc_level(const struct rv_enc *e);
void rv_enc_free(struct rv_enc *e);

/* ---- writing ---- */
struct rv_writer;

/* Write to fd (not closed by the writer); name is used in messages.
 * RV_LEVEL_AUTO picks the level from fd (rv_stream_level_fd). */
struct rv_writer *rv_writer_new(int fd, const char *name, int level);
/* Encode and queue one record; a stored payload of 1 MiB or more goes
 * out at once, from where it lies, around its frame's shell. */
int rv_writer_put(struct rv_writer *w, const struct rv_rec *rec,
    const void *payload);
/* Queue frames already encoded with rv_enc_frame() (p borrowed for the
 * call only): once queue and frames reach the flush size, both go out in
 * one gathered write, the frames from where they lie. */
int rv_writer_put_frames(struct rv_writer *w, const void *p, size_t n,
    uint64_t nrec);
/*
 * Write the stored frame of a shell (rv_enc_shell, n bytes) around its
 * payload (plen bytes, borrowed for the call only): a large payload goes
 * to the fd from where it lies, with the shell's pieces between its
 * blocks, in one gathered write after whatever was queued; a small one is
 * queued as rv_writer_put_frames() would queue the whole frame.
 * Returns 0, or -1 (a shell that does not fit plen, a write error).
 */
int rv_writer_put_shell(struct rv_writer *w, const void *shell, size_t n,
    const void *payload, size_t plen);
/* Write out everything queued. */
int rv_writer_flush(struct rv_writer *w);
/* Bytes handed to the fd so far (after compression). */
uint64_t rv_writer_bytes(const struct rv_writer *w);
uint64_t rv_writer_records(const struct rv_writer *w);
/* Flush and free.  Returns the flush result.  NULL is a no-op (0). */
int rv_writer_close(struct rv_writer *w);

#endif
