/*
 * Allocation that cannot fail: on exhaustion print "prog: out of memory"
 * and exit 1.  The one place the library may exit (as redis and sbase do).
 */
#ifndef RV_XMEM_H
#define RV_XMEM_H

#include <stddef.h>

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
/* xrealloc(p, n * size) with overflow checked. */
void *xreallocarray(void *p, size_t n, size_t size);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/* printf into a fresh buffer owned by the caller. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/*
 * For a program whose memory must stay flat in its input's size: blocks
 * of 128 KiB and more get pages of their own, handed back when freed.
 * glibc's default raises that bound to the largest block freed, so that a
 * reader's 4 MiB buffer, once freed, sends every later big buffer into
 * the heap, where the small records a dataset keeps pin them.  A no-op
 * elsewhere.  Call from main before the first allocation.
 */
void rv_malloc_flat(void);

#endif
