/*
 * An archive input read through its compression, one archive after
 * another, as zcat reads concatenated gzip members: the raw bytes of a
 * file or pipe, where each archive is either compressed (gzip, zstd, xz,
 * bzip2: known by its magic, decoded here, so that where its stream ends
 * is exact) or not (given as it is, for libarchive to read and say where
 * it stopped).  Compressed streams one after the other are one run, read
 * as the concatenation of what they hold (a.tgz then b.tar.zst read as
 * a.tar then b.tar, which the tar reader reads through); a run ends at the
 * first data that is not a compressed stream, where the next archive
 * starts.  Zero bytes between archives are padding.
 *
 * The raw bytes of an archive that is not compressed are kept back some
 * way (UNZ_TAIL) behind the reading position, so that a pipe can be read
 * on from where libarchive, which reads ahead, found the archive to end.  Every function that can fail sets
 * rv_errmsg(); the decoders' own failures are told by unz_state().
 */
#ifndef RV_UNZ_H
#define RV_UNZ_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Raw bytes kept behind the reading position of an archive that is not
 * compressed (a pipe cannot seek): twice what is given to libarchive at
 * once, which is what it may hold unconsumed. */
#define UNZ_TAIL	((size_t)256 << 10)

enum unz_kind { UNZ_NONE, UNZ_GZIP, UNZ_ZSTD, UNZ_XZ, UNZ_BZIP2 };

enum unz_state {
	UNZ_OK,
	UNZ_TRUNCATED,	/* the input ended inside a compressed stream */
	UNZ_CORRUPT,	/* a decoder refused its data */
	UNZ_IOERR,	/* reading failed */
};

struct unz;

/* Read fd (a regular file when seekable, else a pipe, FIFO or device)
 * from its current offset, taken as raw offset 0 of an unseekable one. */
struct unz *unz_new(int fd, int seekable);
void unz_free(struct unz *u);

/*
 * Begin the archive at raw offset off, skipping the zero bytes there:
 * 1 when one starts (unz_kind, unz_base say how and where), 0 at the end
 * of the input, -1 if off can no longer be read (a pipe past its tail)
 * or reading fails.
 */
int unz_start(struct unz *u, uint64_t off);
enum unz_kind unz_kind(const struct unz *u);
uint64_t unz_base(const struct unz *u);

/*
 * libarchive's read callback: the archive's next bytes, decoded when it
 * is compressed, in a buffer valid until the next call.  Returns their
 * count, 0 at the end of the archive (for a compressed run: where data
 * that is no compressed stream starts, unz_end), -1 when a decoder fails
 * or reading does (unz_state).
 */
ssize_t unz_read(struct unz *u, const void **p);

/* The raw offset reached: the next byte to give or to decode. */
uint64_t unz_pos(const struct unz *u);
/* Where a compressed run that unz_read ended stopped: the offset of the
 * next archive, or the input's end. */
uint64_t unz_end(const struct unz *u);
enum unz_state unz_state(const struct unz *u);
/* What went wrong, for messages ("truncated gzip input", ...). */
const char *unz_error(const struct unz *u);

/*
 * Copy the n raw bytes at off into buf, reading on as needed: the count
 * copied (fewer at the end of the input), or -1 when off is behind what
 * a pipe still holds or reading fails.  A peek past the reading position
 * of a pipe moves it there (what lies between is dropped); unz_start()
 * says where the next archive begins.
 */
ssize_t unz_peek(struct unz *u, uint64_t off, void *buf, size_t n);

/* Does the input end before raw offset off?  1 or 0; -1 when reading
 * fails.  A pipe is read on to off (what lies before it is dropped). */
int unz_ends_before(struct unz *u, uint64_t off);

/* The kind of compressed stream whose magic starts p[0..n): UNZ_NONE if
 * none (or too few bytes to tell). */
enum unz_kind unz_detect(const unsigned char *p, size_t n);
/* "gzip", "zstd", "xz", "bzip2" or "none". */
const char *unz_name(enum unz_kind k);

#endif
