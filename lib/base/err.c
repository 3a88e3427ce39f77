/*
 * Messages: "prog: context: reason".  The library side keeps one message
 * per thread so worker threads can fail independently; the program side
 * prints.  The program name is set once at start-up, before any thread.
 */
#include "base/err.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ERRLEN 1024

static _Thread_local char errbuf[ERRLEN];
/* Written once by rv_setprogname() before threads start; read-only after. */
static const char *progname = "rv";

void
rv_setprogname(const char *argv0)
{
	const char *p = strrchr(argv0, '/');

	progname = p ? p + 1 : argv0;
}

const char *
rv_progname(void)
{
	return progname;
}

/*
 * Format into buf; a trailing ':' in fmt appends strerror(saved).  The
 * arguments may point into buf itself (rv_seterr("%s", rv_errmsg()) is a
 * natural thing to write), so format into a scratch buffer first.
 */
static void
vformat(char *buf, size_t len, const char *fmt, va_list ap, int saved)
{
	char tmp[ERRLEN];
	size_t n, used;

	vsnprintf(tmp, sizeof(tmp), fmt, ap);
	n = strlen(fmt);
	if (n > 0 && fmt[n - 1] == ':') {
		used = strlen(tmp);
		if (used + 2 < sizeof(tmp)) {
			tmp[used++] = ' ';
			if (strerror_r(saved, tmp + used,
			    sizeof(tmp) - used) != 0)
				snprintf(tmp + used, sizeof(tmp) - used,
				    "error %d", saved);
		}
	}
	snprintf(buf, len, "%s", tmp);
}

int
rv_seterr(const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	va_start(ap, fmt);
	vformat(errbuf, sizeof(errbuf), fmt, ap, saved);
	va_end(ap);
	errno = saved;
	return -1;
}

/* dst = a ": " b, truncated to fit len bytes with its NUL. */
static void
join(char *dst, size_t len, const char *a, const char *b)
{
	size_t n = 0, k;

	k = strnlen(a, len - 1);
	memcpy(dst, a, k);
	n = k;
	k = len - 1 - n < 2 ? len - 1 - n : 2;
	memcpy(dst + n, ": ", k);
	n += k;
	k = strnlen(b, len - 1 - n);
	memcpy(dst + n, b, k);
	n += k;
	dst[n] = '\0';
}

int
rv_preferr(const char *fmt, ...)
{
	char old[ERRLEN], pre[ERRLEN];
	int saved = errno;
	va_list ap;

	memcpy(old, errbuf, sizeof(old));
	va_start(ap, fmt);
	vsnprintf(pre, sizeof(pre), fmt, ap);
	va_end(ap);
	join(errbuf, sizeof(errbuf), pre, old);
	errno = saved;
	return -1;
}

const char *
rv_errmsg(void)
{
	return errbuf;
}

void
rv_warn(const char *fmt, ...)
{
	char buf[ERRLEN];
	int saved = errno;
	va_list ap;

	va_start(ap, fmt);
	vformat(buf, sizeof(buf), fmt, ap, saved);
	va_end(ap);
	fprintf(stderr, "%s: %s\n", progname, buf);
}

void
rv_die(int status, const char *fmt, ...)
{
	char buf[ERRLEN];
	int saved = errno;
	va_list ap;

	va_start(ap, fmt);
	vformat(buf, sizeof(buf), fmt, ap, saved);
	va_end(ap);
	fprintf(stderr, "%s: %s\n", progname, buf);
	exit(status);
}
