/*
 * Raw I/O helpers: full reads and writes over fds, bigger pipes, and
 * output files that appear only when complete (temp file + rename).
 * All functions return 0 / -1 with rv_errmsg() set, unless noted.
 */
#ifndef RV_IO_H
#define RV_IO_H

#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

/* Read up to n bytes; short only at EOF.  Returns bytes read or -1. */
ssize_t rv_read_full(int fd, void *buf, size_t n);
/* Write all n bytes (retrying on EINTR / short writes). */
int rv_write_full(int fd, const void *buf, size_t n);
/*
 * Write all of iov[0..n) with writev, as many calls as it takes: a short
 * write (a pipe, a signal) goes on from where it stopped, EINTR is
 * retried, and EAGAIN (a non-blocking fd) waits in poll() for room.
 * iov is consumed: its entries are advanced past what was written.
 */
int rv_writev_full(int fd, struct iovec *iov, int n);
/* pread all n bytes at off; a short file is an error. */
int rv_pread_full(int fd, void *buf, size_t n, off_t off);
/* pread up to n bytes at off; short only at the end of the file.  Returns
 * the bytes read or -1. */
ssize_t rv_pread_upto(int fd, void *buf, size_t n, off_t off);
/* Grow a pipe's buffer to 1 MiB when fd is a pipe and the system allows. */
void rv_pipe_grow(int fd);

/*
 * A temporary file in dir, named prefix.XXXXXX and unlinked at once, so it
 * cannot outlive the process (not even a kill -9); close-on-exec.  The fd,
 * or -1 with rv_errmsg() "'dir': create file: reason".
 */
int rv_anon_file(const char *dir, const char *prefix);

/* Read a whole file (path, or "-" for stdin) into a fresh buffer. */
int rv_slurp(const char *path, unsigned char **buf, size_t *len);

/*
 * An output destination: stdout, or a file written as a hidden temp file
 * next to its final path and renamed into place by rv_out_commit().  A
 * binary stream is never written to a terminal.  rv_out_abort() removes
 * the temp file, so a failed run leaves nothing that looks complete.
 * A SIGINT, SIGTERM or SIGHUP removes the temp files of the outputs still
 * open, then kills the process as the signal would (status 128 + sig):
 * the first rv_out_open() with a temp file installs handlers for those of
 * the three whose action is the default (see io.c).  Open, commit and
 * abort may be called from any thread; up to 16 outputs are covered at
 * once.  kill -9 leaves the temp file (hidden, named .NAME.tmp.XXXXXX).
 */
struct rv_out {
	int fd;
	char *path;	/* final path, NULL for stdout */
	char *tmp;	/* temp path; NULL for stdout and devices/FIFOs */
};

/* path NULL or "-" means stdout.  binary: refuse a terminal. */
int rv_out_open(struct rv_out *o, const char *path, int binary);
/* Close (checking errors) and rename into place.  Frees everything. */
int rv_out_commit(struct rv_out *o);
/* Close and unlink the temp file.  Frees everything.  Never fails. */
void rv_out_abort(struct rv_out *o);
/*
 * End a program's output.  ok: commit it (for stdout, close fd 1 so that a
 * late write error is seen); returns 0, or -1 with rv_errmsg() set.  Not ok:
 * abort it (the temp file goes) and return 0.
 */
int rv_out_finish(struct rv_out *o, int ok);
/* The name to use in messages: the path, or "<stdout>". */
const char *rv_out_name(const struct rv_out *o);

#endif
