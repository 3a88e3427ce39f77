/*
 * Dataset sources for rv-decode: the operands (archives, directories, IDX
 * files, CIFAR batches) become one listing of N samples with stable ids:
 * each operand's samples in sorted order, operands in the order given, id =
 * position in that listing (the same in every run and every shard).
 *
 * After rv_dataset_open() the dataset is read-only and rv_dataset_fetch()
 * may be called from many threads at once, each with its own scratch.
 */
#ifndef RV_SRC_H
#define RV_SRC_H

#include <stddef.h>
#include <stdint.h>

#include "stream/meta.h"
#include "stream/stream.h"

struct rv_progress;

struct rv_src_opts {
	int strict;		/* a bad member is fatal, not skipped */
	int quiet;		/* no warnings for skipped members */
	uint64_t max_pixels;	/* raw pixel sources (IDX, CIFAR) whose
				 * images are larger are refused before
				 * their data is read; 0 means
				 * RV_MAX_PIXELS_DEFAULT (codec.h) */
	/* Archives: a sample without a label sidecar is labelled by the
	 * directory this many levels above its image (0 or 1: the parent;
	 * 2: the grandparent, as in train/<wnid>/images/x.JPEG). */
	int class_level;
	/* Archives' image bytes the dataset may hold in memory, all inputs
	 * together (an archive is read once, the images it cannot leave
	 * in the file kept encoded); past it the open fails naming the
	 * input.  0: half the machine's memory (rv_src_max_held_default). */
	uint64_t max_held;
	/* Archives: hold every image in memory, even those a fetch could
	 * read from the file by offset (src_archive.c). */
	int hold;
	/* Archives: the images that would be held (a compressed archive's,
	 * a pipe's) are written to an unlinked file in this directory as
	 * they are listed, and read from it by offset; NULL: held.  Not
	 * with hold. */
	const char *cache_dir;
	/* Ticked with the operands opened so far (of their total), for a
	 * progress line while a dataset of many files is opened or listed;
	 * NULL: none. */
	struct rv_progress *prog;
};

/* The default bound on the image bytes held: half the physical memory
 * (sysconf), at least 256 MiB. */
uint64_t rv_src_max_held_default(void);

/* One sample's raw material, as fetched. */
struct rv_item {
	uint64_t id;
	int32_t label;		/* -1 if the source has none */
	int dtype;		/* RV_DT_U8: raw pixels; else encoded bytes
				 * for rv_codec_decode(): RV_DT_JPEG/PNG,
				 * or RV_DT_NONE for WebP, GIF, BMP, TIFF
				 * (no stream dtype) */
	uint32_t h, w, c;	/* for RV_DT_U8 */
	const unsigned char *data;	/* borrowed: scratch or dataset memory */
	size_t len;
	char name[512];		/* "operand: member" for messages */
};

struct rv_dataset;

/*
 * Open and list every operand ("-" is an archive on stdin).  Members that
 * cannot be used (no image, unreadable) are warned about and counted in
 * *skipped (unless strict: then -1); the other members that become no
 * sample are counted too (rv_dataset_counts).  Returns NULL with
 * rv_errmsg() set ("'path': reason") on failure.
 */
struct rv_dataset *rv_dataset_open(char *const paths[], int n,
    const struct rv_src_opts *o, uint64_t *skipped);
uint64_t rv_dataset_count(const struct rv_dataset *d);

/*
 * What became of the files and members that are no sample, counted at
 * open.  skipped: samples lost (a bad or unreadable member, an image in a
 * format rv does not read, a sidecar without its image, a label that is
 * not one class number...), each with a warning, and fatal under strict.
 * sidecars: archive members that belong to a sample beside its image
 * (labels, captions, metadata, other images of the key).  ignored: files
 * and members that are no sample and belong to none (text files, hidden
 * files, links and special files not named as images), each with a note.
 */
struct rv_src_counts {
	uint64_t skipped;
	uint64_t sidecars;
	uint64_t ignored;
};
void rv_dataset_counts(const struct rv_dataset *d, struct rv_src_counts *c);
/*
 * Class names and source description (keys classes, class.N, source).
 * classes is the number of class names, or, where labels are numbers
 * (sidecars, IDX, CIFAR), the highest label over every operand plus one
 * (the format's class count for CIFAR), whichever is larger.
 */
const struct rv_meta *rv_dataset_meta(const struct rv_dataset *d);
/*
 * Fetch sample id's raw bytes.  scratch is the calling thread's buffer
 * (reused); it->data may point into it or into the dataset.  Thread-safe
 * (loads and unloads are not: they happen between fetches).  -1 with
 * rv_errmsg() set on an I/O error or a malformed member, or for an id of
 * a source not loaded or past the samples it read; RV_FETCH_BAD (below)
 * for a sample to skip.
 */
int rv_dataset_fetch(struct rv_dataset *d, uint64_t id, struct rv_buf *scratch,
    struct rv_item *it);
/*
 * What rv_dataset_fetch() returns for a sample bad on its own while the
 * dataset is sound: a folder's file gone, unreadable, no longer a regular
 * file or over the size limit since the listing.  it->name is set and
 * rv_errmsg() holds the reason alone: the caller skips the sample as it
 * does an image that does not decode (fatal under strict), naming it.
 */
#define RV_FETCH_BAD	(-2)
void rv_dataset_free(struct rv_dataset *d);

/*
 * Sharding by files.  rv_dataset_list() lists every operand as
 * rv_dataset_open() does, with the same ids, class names and counts, but
 * keeps no sample data: an archive's image members are skipped over
 * (seeked past in a file), not read.  A source (an operand; an IDX pair
 * is one) is then read with rv_dataset_load() before its samples are
 * fetched, and dropped with rv_dataset_unload(), so that a rank holds
 * only its own files.  Every operand must be a file or directory that
 * can be opened twice (not "-" or a pipe: rv_dataset_relistable()).
 * The listing's warnings and counts are discarded: a load warns about
 * its own source and adds to the counts.
 */
int rv_dataset_relistable(char *const paths[], int n);
struct rv_dataset *rv_dataset_list(char *const paths[], int n,
    const struct rv_src_opts *o);
size_t rv_dataset_nsources(const struct rv_dataset *d);
/* Source k's first id and its sample count in the listing. */
void rv_dataset_source(const struct rv_dataset *d, size_t k, uint64_t *base,
    uint64_t *n);
/* Read source k's data (a no-op when loaded).  Returns the samples read,
 * which may be fewer than listed (a member the listing counted turned
 * out unreadable: the ids past the last one read cannot be fetched), or
 * -1 with rv_errmsg() set (the file is gone, changed since it was listed,
 * or, with strict, bad). */
int64_t rv_dataset_load(struct rv_dataset *d, size_t k);
void rv_dataset_unload(struct rv_dataset *d, size_t k);
/* Forget the warnings and notes kept so far (after printing them). */
void rv_dataset_clear_msgs(struct rv_dataset *d);

/*
 * Indexes (rv-index(5)).  rv_dataset_scan() lists the operands as
 * rv_dataset_list() does but keeps the listing's warnings and counts
 * (*skipped: the members lost), for an index that says what it found.
 * rv_dataset_write_index() writes the index of a listed or indexed
 * dataset to path, atomically: each source must be one regular file (an
 * archive, a CIFAR batch, an IDX file without labels); paths are written
 * relative to the index's folder.  rv_dataset_from_index() makes the
 * dataset of the indexes at paths[0..n) (their shards in that order)
 * without opening a shard: its sources are as rv_dataset_list() makes
 * them, the same ids, counts and class names, and each shard is checked
 * against its line (size, time or the checksum of its ends, reader,
 * sample count, classes) when rv_dataset_load() reads it.  NULL or -1
 * with rv_errmsg() naming the file.
 */
struct rv_dataset *rv_dataset_scan(char *const paths[], int n,
    const struct rv_src_opts *o, uint64_t *skipped);
int rv_dataset_write_index(const struct rv_dataset *d, const char *path);
struct rv_dataset *rv_dataset_from_index(char *const paths[], int n,
    const struct rv_src_opts *o);
/* The index a dataset was made from (sanitized), or NULL. */
const char *rv_dataset_index_name(const struct rv_dataset *d);

#endif
