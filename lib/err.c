/*
 * Messages: "prog: context: reason".  The library side keeps one message
 * per thread so worker threads can fail independently; the program side
 * prints.  The program name is set once at start-up, before any thread.
 */
#include "err.h"

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

static void
vformat(char *buf, size_t len, const char *fmt, va_list ap, int saved)
{
	size_t n;

	vsnprintf(buf, len, fmt, ap);
	n = strlen(fmt);
	if (n > 0 && fmt[n - 1] == ':') {
		size_t used = strlen(buf);
		snprintf(buf + used, len - used, " %s", strerror(saved));
	}
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

int
rv_preferr(const char *fmt, ...)
{
	char old[ERRLEN];
	size_t n;
	va_list ap;

	memcpy(old, errbuf, sizeof(old));
	va_start(ap, fmt);
	vsnprintf(errbuf, sizeof(errbuf), fmt, ap);
	va_end(ap);
	n = strlen(errbuf);
	if (n + 2 < sizeof(errbuf)) {
		memcpy(errbuf + n, ": ", 2);
		n += 2;
		memcpy(errbuf + n, old, sizeof(errbuf) - n - 1);
		errbuf[sizeof(errbuf) - 1] = '\0';
	}
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
