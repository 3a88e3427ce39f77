/*
 * Error reporting.  The library never prints: a failing lib function
 * returns -1 and leaves one message in a thread-local buffer, read back
 * with rv_errmsg().  Programs (cmd/) print it once with rv_warn/rv_die.
 */
#ifndef RV_ERR_H
#define RV_ERR_H

#include <stdarg.h>

/* Set the program name used as the prefix of every message (argv[0] ok). */
void rv_setprogname(const char *argv0);
const char *rv_progname(void);

/*
 * Store a message in this thread's buffer and return -1, so a caller can
 * write "return rv_seterr(...)".  A trailing ':' in fmt appends strerror(errno)
 * as sbase's eprintf does.
 */
int rv_seterr(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prefix the current message with "context: " (e.g. a file name). */
int rv_preferr(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The last message set on this thread ("" if none).  Borrowed. */
const char *rv_errmsg(void);

/* cmd only: print "prog: message" to stderr. */
void rv_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* cmd only: rv_warn, then exit(status). */
void rv_die(int status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));

#endif
