/*
 * The dataset index, rv-index(5): a text file of one line a shard (its
 * path, size, modification time, a checksum of its ends, its sample count
 * and the classes it holds) and the dataset's class names, so that a rank
 * of a data-parallel job knows every shard's share of the samples without
 * opening the shards it does not read.  This file is the format alone:
 * parsing (strict: any line that is not the format is an error naming the
 * line), formatting, the checksum and the paths relative to the index;
 * src.c turns an index into a dataset and a listing into an index.
 */
#ifndef RV_INDEX_H
#define RV_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

#define RV_INDEX_MAGIC		"rv-index\t"
#define RV_INDEX_VERSION	1
/* No index larger than this is read (a hostile file guard): 1 GiB holds
 * ten million shards. */
#define RV_INDEX_MAX		((size_t)1 << 30)
/* Modification times an index holds: seconds either side of the epoch
 * (some 285 years), so that their nanoseconds fit an int64_t. */
#define RV_INDEX_MAX_SEC	9000000000LL

/* How a shard names its classes (src_impl.h's enum src_names). */
enum {
	RV_INDEX_NAMES_NONE,	/* "-": no class names */
	RV_INDEX_NAMES_FIXED,	/* "f": the index's names, by its format */
	RV_INDEX_NAMES_SOME,	/* "0-3,7": these of the index's names */
};

struct rv_index_shard {
	char *path;		/* as written: relative to the index's
				 * folder, or absolute; owned */
	uint64_t samples;
	uint64_t size;		/* bytes */
	int64_t mtime_ns;	/* modification time, ns since the epoch */
	uint64_t check;		/* rv_index_checksum() */
	char kind[16];		/* the reader that read it: archive, cifar,
				 * idx */
	uint32_t labels;	/* numbered labels are below this; 0: none */
	int names_kind;		/* RV_INDEX_NAMES_* */
	uint32_t *names;	/* SOME: ascending indices into the index's
				 * names; owned */
	size_t nnames;
};

struct rv_index {
	uint64_t samples;	/* the sum of the shards' */
	uint64_t classes;	/* the dataset's class count (src.h) */
	char **names;		/* the dataset's class names, owned */
	size_t nnames;
	struct rv_index_shard *shard;	/* owned */
	size_t nshards;
	int piped;		/* rv_index_load read it from no regular
				 * file (a pipe, a FIFO) or through /dev or
				 * /proc (/dev/stdin): it has no folder, its
				 * relative paths are the working
				 * directory's */
};

/*
 * Parse text[0..len) (name for messages).  0, or -1 with rv_errmsg()
 * "'NAME': line N: reason".  ix is filled only on success (released
 * otherwise).
 */
int rv_index_parse(const char *text, size_t len, const char *name,
    struct rv_index *ix);
/* Read and parse the index at path, once, whatever it is (a file, a pipe
 * or FIFO), at most RV_INDEX_MAX bytes. */
int rv_index_load(const char *path, struct rv_index *ix);
/* Is this the start of an index (its magic line)? */
int rv_index_sniff(const void *p, size_t n);
/* The index as text, appended to out. */
void rv_index_format(const struct rv_index *ix, struct rv_buf *out);
void rv_index_release(struct rv_index *ix);

/*
 * The checksum of a shard's ends: XXH64 of its first and last 4 KiB (all
 * of it when smaller), seeded with its size.  Cheap enough to compute for
 * every shard when indexing, it tells a copied shard (a new time, the same
 * bytes) from a rewritten one.  0, or -1 with rv_errmsg() set.
 */
int rv_index_checksum(int fd, uint64_t size, uint64_t *sum);

/*
 * Paths, lexically (symbolic links are not followed): a shard's path as
 * written in an index at index_path resolved for opening (its folder
 * joined to a relative one), and a path written relative to the folder of
 * the index at index_path ("../" where it must climb; NULL with
 * rv_errmsg() when the current directory cannot be had).  Fresh strings.
 */
char *rv_index_resolve(const char *index_path, const char *written);
char *rv_index_relative(const char *index_path, const char *path);

#endif
