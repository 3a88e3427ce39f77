/*
 * The growable byte buffer of buf.h.
 */
#include "base/buf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/xmem.h"

void
rv_buf_reserve(struct rv_buf *b, size_t extra)
{
	size_t need, cap;

	/* an impossible size is an allocation failure, not a wrap-around */
	if (extra > SIZE_MAX / 2 - b->len)
		(void)xreallocarray(NULL, SIZE_MAX, 2);
	need = b->len + extra;
	if (need <= b->cap)
		return;
	cap = b->cap ? b->cap : 4096;
	while (cap < need)
		cap *= 2;
	b->data = xrealloc(b->data, cap);
	b->cap = cap;
}

void
rv_buf_append(struct rv_buf *b, const void *p, size_t n)
{
	rv_buf_reserve(b, n);
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
}

void
rv_buf_release(struct rv_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}
