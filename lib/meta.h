/*
 * Stream metadata: an ordered list of key=value pairs carried in a META
 * record (payload: "key=value\n" lines, UTF-8, no NUL).  Keys are listed in
 * rv-stream(5): producer, source, classes, class.N, mean, std, ...
 * Readers merge every META record they meet (concatenation repeats them).
 */
#ifndef RV_META_H
#define RV_META_H

#include <stddef.h>

#include "record.h"
#include "stream.h"

struct rv_meta {
	size_t n, cap;
	char **key, **val;	/* owned */
};

void rv_meta_init(struct rv_meta *m);
void rv_meta_release(struct rv_meta *m);
/* Set (replacing an existing key).  Keys: [A-Za-z0-9._-]+; values: no
 * newline or NUL.  Returns 0 or -1. */
int rv_meta_set(struct rv_meta *m, const char *key, const char *val);
/* Borrowed value, or NULL. */
const char *rv_meta_get(const struct rv_meta *m, const char *key);
/* Merge a META record's payload into m.  Returns 0 or -1 (bad line). */
int rv_meta_parse(struct rv_meta *m, const unsigned char *p, size_t len);
/* Serialise m into out (appended). */
void rv_meta_encode(const struct rv_meta *m, struct rv_buf *out);
/* Write m as one META record. */
int rv_meta_put(struct rv_writer *w, const struct rv_meta *m);
/* Copy every pair of src into dst. */
void rv_meta_merge(struct rv_meta *dst, const struct rv_meta *src);
/* Set producer=prog version and argv=joined arguments (shell-quoted). */
void rv_meta_producer(struct rv_meta *m, int argc, char *const argv[]);

#endif
