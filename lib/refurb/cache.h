/*
 * The refurbishing cache: one entry per position, the partially augmented
 * u8 image compressed (zstd, fast level), held in memory up to a byte
 * budget and beyond it on disk under a directory.  Entries are replaced
 * when a position's partial is recomputed.  The disk tier appends entries
 * to a file and reads them back in batches (rv_cache_get_many sorts the
 * requests by file offset and reads runs with one pread each), not one
 * syscall per tiny sample.  When neither tier can take an entry, it is
 * dropped and counted; rv_cache_get_many then says "absent" and the caller
 * recomputes it (the partial's randomness is keyed by its refresh epoch,
 * so the recomputation gives the same bytes).
 *
 * Which tier: a put first releases the position's old entry, then goes to
 * memory if it fits the budget, else to disk if there is a disk tier, else
 * it is dropped.  Entries never migrate between tiers, so where an entry
 * lives depends only on the sequence of puts (deterministic, testable).
 *
 * Memory accounting: an entry in memory counts its buffer's capacity plus
 * RV_CACHE_ENTRY_OVERHEAD against conf->mem, and the sum never exceeds
 * conf->mem.  A buffer is reused in place when a replacement fits it and
 * wastes at most a quarter of it, else freed and made anew with 1/16
 * slack, so replacements of varying sizes neither fragment nor hoard.
 * Outside the budget: a table of 32 bytes per position, made by
 * rv_cache_new, and the disk tier's buffers (1 MiB write buffer, a read
 * buffer as large as the largest rv_cache_get_many asks for).
 *
 * Disk tier: one file made with mkstemp(3) in conf->dir and unlinked at
 * once, so it never outlives the process, not even after kill -9; its
 * space returns when rv_cache_free closes it.  Entries are appended
 * through a 1 MiB write buffer (one write per buffer, not per entry); a
 * replaced entry leaves its old bytes as garbage, and when the garbage
 * exceeds both the live bytes and conf->compact_min (64 MiB by default),
 * the live entries are copied to a fresh file, so the file stays under
 * twice the live bytes plus compact_min (a compaction that fails, for
 * want of space, keeps the old file and is retried after another
 * compact_min of garbage).  The copy runs inside the rv_cache_put that
 * tips the balance, in 4 MiB reads and 1 MiB writes.
 * rv_cache_get_many reads neighbouring requested entries (gaps under
 * 64 KiB) with one pread into a reused read buffer.
 *
 * Errors: an I/O failure returns -1 with rv_errmsg() set, such as
 * "cache: '/dir': write: No space left on device".  After a failed write
 * the disk tier is switched off: the entries that were waiting in the
 * write buffer become absent (counted as dropped), entries already on disk
 * stay readable, and later puts that miss the memory budget are dropped,
 * so a caller may warn once and carry on (recomputing absent entries).
 *
 * Thread safety: rv_cache_put and rv_cache_get_many are called by one
 * thread (the program's main thread, between parallel steps); decoding the
 * entries (rv_cache_unpack) may run on any thread, each with its own
 * struct rv_cache_scratch.
 */
#ifndef RV_CACHE_H
#define RV_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "codec/codec.h"

/* The zstd level to use for entries unless told otherwise. */
#define RV_CACHE_LEVEL		(-1)
/* Images of at most this many bytes are cached raw (plus one tag byte):
 * compressing them costs about as much as the augmentation that made them. */
#define RV_CACHE_RAW_MAX	4096
/* Bytes counted per memory entry beyond its buffer: glibc malloc's chunk
 * header, as buffer capacities are multiples of 16. */
#define RV_CACHE_ENTRY_OVERHEAD	16
/* Largest compressed entry the cache stores; bigger ones are dropped. */
#define RV_CACHE_MAX_ENTRY	((size_t)1 << 30)

struct rv_cache_conf {
	uint64_t n;		/* positions */
	uint64_t mem;		/* memory budget for entries, bytes */
	const char *dir;	/* disk tier directory, NULL: none */
	int level;		/* zstd level for entries: what the caller
				 * gives rv_cache_scratch_new (the cache only
				 * stores entries already packed) */
	uint64_t compact_min;	/* garbage bytes in the disk file before a
				 * compaction; 0: 64 MiB */
};

struct rv_cache_stats {
	uint64_t mem_entries, disk_entries, dropped;
	uint64_t mem_bytes, disk_bytes;	/* compressed bytes held */
	uint64_t raw_bytes;		/* their uncompressed size */
	uint64_t disk_reads;		/* pread calls */
	/* dropped counts puts not stored plus entries lost to a failed
	 * write; the fields below were added with the implementation */
	uint64_t mem_used;		/* counted against conf->mem */
	uint64_t disk_file_bytes;	/* file size, garbage included */
	uint64_t disk_writes;		/* pwrite calls */
	uint64_t compactions;
};

struct rv_cache;

/*
 * A cache for positions 0..conf->n-1 (conf is copied; conf->dir too).
 * With a disk tier, the file is made here, so an unusable directory fails
 * now: NULL with rv_errmsg() set ("cache: '/dir': create file: ...").
 */
struct rv_cache *rv_cache_new(const struct rv_cache_conf *conf);
/* Frees the entries and closes the disk tier's file, whose name was
 * removed when it was made: nothing stays behind.  NULL is a no-op. */
void rv_cache_free(struct rv_cache *c);

/*
 * A compressed entry made by rv_cache_pack (on a worker thread) from an
 * image; then handed to rv_cache_put by the main thread.
 */
struct rv_cache_entry {
	uint32_t h, w, c;
	struct rv_buf data;	/* compressed pixels, owned */
};
/* Free e->data (an entry is meant to be reused: pack overwrites it). */
void rv_cache_entry_release(struct rv_cache_entry *e);
/*
 * One thread's compression state (a ZSTD_CCtx and a ZSTD_DCtx, made once).
 * level is zstd's (negative: faster; 0: zstd's default, 3), normally
 * RV_CACHE_LEVEL.  NULL with rv_errmsg() set if zstd cannot make them.
 */
struct rv_cache_scratch;
struct rv_cache_scratch *rv_cache_scratch_new(int level);
/*
 * Keep images of up to bytes (never fewer than RV_CACHE_RAW_MAX) raw
 * instead of compressed.  rv_cache_raw_share(mem, n) is the largest image
 * size for which n raw entries fit a budget of mem bytes: a cache whose
 * budget holds everything raw then spends no time compressing.
 */
void rv_cache_scratch_raw_max(struct rv_cache_scratch *s, size_t bytes);
size_t rv_cache_raw_share(uint64_t mem, uint64_t n);
/* NULL is a no-op. */
void rv_cache_scratch_free(struct rv_cache_scratch *s);
/*
 * Compress img (h x w x c u8) into e, reusing e->data's buffer: a raw zstd
 * frame without checksum, the shape kept in e.  0, or -1 with rv_errmsg().
 */
int rv_cache_pack(struct rv_cache_scratch *s, const struct rv_img *img,
    struct rv_cache_entry *e);
/* Decompress entry bytes (h, w, c known) into img (its buffer reused).
 * 0, or -1 with rv_errmsg() set ("cache: corrupt entry: ..."). */
int rv_cache_unpack(struct rv_cache_scratch *s, uint32_t h, uint32_t w,
    uint32_t c, const void *p, size_t n, struct rv_img *img);

/*
 * Store e for pos, replacing any older entry.  e->data is copied.
 * Returns 1 when stored (memory or disk), 0 when dropped (no room in
 * either tier, or larger than RV_CACHE_MAX_ENTRY; pos is then absent),
 * -1 on an I/O error with rv_errmsg() set (pos and the other entries that
 * were waiting in the write buffer are then absent; see "Errors" above)
 * or when pos >= n.  Invalidates the pointers from rv_cache_get_many.
 */
int rv_cache_put(struct rv_cache *c, uint64_t pos,
    const struct rv_cache_entry *e);
/* 1 if pos has an entry. */
int rv_cache_has(const struct rv_cache *c, uint64_t pos);
/*
 * Write out the disk tier's buffered entries (puts and reads never need
 * this; it is for a caller about to sit idle, and for tests).  0, or -1
 * on a write error, with the consequences of a failed put.
 */
int rv_cache_flush(struct rv_cache *c);

/*
 * Fetch the entries of pos[0..k): for each i, shape and a pointer to its
 * compressed bytes, valid until the next rv_cache_get_many or put (memory
 * entries point into the cache, disk entries into a read buffer filled
 * with as few preads as the layout allows).  found[i] = 0 for an absent
 * entry.  Returns 0 or -1 (I/O error, or a position >= n).
 */
struct rv_cache_ref {
	uint32_t h, w, c;
	const unsigned char *p;
	size_t n;
};
int rv_cache_get_many(struct rv_cache *c, const uint64_t *pos, size_t k,
    struct rv_cache_ref *out, unsigned char *found);

/* Counters, kept up to date; valid until rv_cache_free. */
const struct rv_cache_stats *rv_cache_stats(const struct rv_cache *c);

#endif
