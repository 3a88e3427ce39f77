/*
 * Stream metadata: an ordered list of key=value pairs carried in a META
 * record (payload: "key=value\n" lines, UTF-8, no NUL).  Keys are listed in
 * rv-stream(5): producer, source, classes, class.N, mean, std, ...
 * Readers merge every META record they meet (concatenation repeats them).
 *
 * Caps (stream.h): an rv_meta never holds more than RV_META_MAX_KEYS keys
 * or more than RV_META_MAX bytes as rv_meta_encode() writes them, so a
 * reader's memory for merged metadata is bounded and what it holds can be
 * written as one record.  rv_meta_set(), rv_meta_parse() and
 * rv_meta_merge() refuse a pair that would go over, with "metadata over
 * the limit of N keys" or "... of N bytes", and mark m: rv_meta_put()
 * then refuses m (it lacks what it was given), so that a caller that
 * ignores a refusal still never writes cut metadata.  Merging costs time
 * linear in the pairs merged: the key index lives in m and grows with it.
 */
#ifndef RV_META_H
#define RV_META_H

#include <stddef.h>
#include <stdint.h>

#include "base/hash.h"
#include "stream/record.h"
#include "stream/stream.h"

struct rv_meta {
	size_t n, cap;
	char **key, **val;	/* owned */
	/* Private to meta.c: the key index (open addressing, position + 1,
	 * 0 empty, at most half full, keyed by a secret of its own), the
	 * encoded bytes, and whether a pair was refused for the caps. */
	size_t *slot, mask;
	struct rv_hkey hkey;	/* the index's secret */
	size_t bytes;
	int refused;
};

void rv_meta_init(struct rv_meta *m);
void rv_meta_release(struct rv_meta *m);
/* Set (replacing an existing key).  Keys: [A-Za-z0-9._-]+; values: no
 * newline or NUL.  Returns 0, or -1 (a bad pair, or over the caps) with m
 * unchanged. */
int rv_meta_set(struct rv_meta *m, const char *key, const char *val);
/* Set key to v in decimal, as rv_meta_set. */
int rv_meta_set_u64(struct rv_meta *m, const char *key, uint64_t v);
/* Borrowed value, or NULL. */
const char *rv_meta_get(const struct rv_meta *m, const char *key);
/* Merge a META record's payload into m.  Returns 0, or -1 (a bad line,
 * or over the caps) with m holding the lines before it. */
int rv_meta_parse(struct rv_meta *m, const unsigned char *p, size_t len);
/* Serialise m into out (appended): m->bytes bytes. */
void rv_meta_encode(const struct rv_meta *m, struct rv_buf *out);
/* Write m as one META record; -1 if m had a pair refused for the caps. */
int rv_meta_put(struct rv_writer *w, const struct rv_meta *m);
/* Copy every pair of src into dst: all of them, or (over the caps) none,
 * returning -1 with dst marked as refused; a mark on src carries over. */
int rv_meta_merge(struct rv_meta *dst, const struct rv_meta *src);
/*
 * The one strict reading of metadata values, for every C reader: the key's
 * value as a decimal integer in [min, max] (digits only: no sign, space or
 * suffix, so "10abc" is refused), or as 1 to maxn decimal numbers
 * separated by commas, each finite and in [lo, hi] (lo excluded when
 * lo_open).  Return 1 with the value(s) in *out or v (the count in *n), 0
 * if the key is absent, or -1 with "metadata 'key=value': reason".
 */
int rv_meta_u64(const struct rv_meta *m, const char *key, uint64_t min,
    uint64_t max, uint64_t *out);
int rv_meta_floats(const struct rv_meta *m, const char *key, double lo,
    int lo_open, double hi, float *v, int maxn, int *n);
/* The "total" key, the samples the whole stream is to hold, for
 * progress: 0 when absent, empty (a stage that drops samples) or not a
 * number. */
uint64_t rv_meta_total(const struct rv_meta *m);
/*
 * The samples of a stream's first epoch and of each later one, as its
 * head's metadata m says them (rv-stream(5), "kept"): kept-first and
 * kept when a stage wrote them, else rv-decode's resume-samples (after
 * --resume) and samples.  RV_META_UNKNOWN where m cannot say: a key
 * absent, empty (a stage dropped samples it could not count ahead) or
 * not a number.
 */
#define RV_META_UNKNOWN UINT64_MAX
void rv_meta_epoch_counts(const struct rv_meta *m, uint64_t *first,
    uint64_t *rest);
/* Set kept-first and kept to first and rest (RV_META_UNKNOWN: empty). */
int rv_meta_set_kept(struct rv_meta *m, uint64_t first, uint64_t rest);
/*
 * Check the keys whose form rv-stream(5) fixes and that readers act on:
 * classes and samples (decimal integers), mean (1 to 4 numbers in [0, 1])
 * and std (1 to 4 numbers in (0, 1000]), the ranges of rv-train-gpu's
 * --mean and --std.  0, or -1 with the message above.
 */
int rv_meta_check(const struct rv_meta *m);
/* Its parts: classes and samples; and mean or std (key), as
 * rv_meta_floats() with their ranges, at most 4 values into v. */
int rv_meta_counts(const struct rv_meta *m);
int rv_meta_stats(const struct rv_meta *m, const char *key, float v[4],
    int *n);

#endif
