/*
 * A growable byte buffer, owned by whoever holds it: records being read
 * or built, encoded frames, text being assembled.  Growth doubles (from
 * 4 KiB); a size that cannot be had is an allocation failure (xmem.h:
 * the program exits), never a wrap-around.
 */
#ifndef RV_BUF_H
#define RV_BUF_H

#include <stddef.h>

struct rv_buf {
	unsigned char *data;
	size_t len, cap;
};
/* Room for extra more bytes after len. */
void rv_buf_reserve(struct rv_buf *b, size_t extra);
/* Append n bytes (p may be NULL when n is 0). */
void rv_buf_append(struct rv_buf *b, const void *p, size_t n);
/* Free the bytes and zero the struct; it can be used again. */
void rv_buf_release(struct rv_buf *b);

#endif
