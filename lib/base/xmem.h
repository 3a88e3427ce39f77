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

#endif
