/*
 * fd-level I/O.  This is the one file that needs _GNU_SOURCE, for
 * F_SETPIPE_SZ: bigger pipes mean fewer context switches between the
 * stages of a pipeline.  It also holds the table of live output temp
 * files that a SIGINT, SIGTERM or SIGHUP removes before the process dies.
 */
#define _GNU_SOURCE
#include "base/io.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/err.h"
#include "base/xmem.h"

ssize_t
rv_read_full(int fd, void *buf, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = read(fd, (char *)buf + got, n - got);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return rv_seterr("read:");
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

/* A write would block: wait for room (a non-blocking fd).  0 or -1. */
static int
wait_room(int fd)
{
	struct pollfd pf = { .fd = fd, .events = POLLOUT };

	while (poll(&pf, 1, -1) < 0)
		if (errno != EINTR)
			return rv_seterr("poll:");
	return 0;
}

int
rv_write_full(int fd, const void *buf, size_t n)
{
	size_t put = 0;

	while (put < n) {
		ssize_t w = write(fd, (const char *)buf + put, n - put);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				if (wait_room(fd) < 0)
					return -1;
				continue;
			}
			return rv_seterr("write:");
		}
		put += (size_t)w;
	}
	return 0;
}

int
rv_writev_full(int fd, struct iovec *iov, int n)
{
	while (n > 0) {
		ssize_t w;
		size_t k;

		if (iov->iov_len == 0) {
			iov++;
			n--;
			continue;
		}
		w = writev(fd, iov, n < IOV_MAX ? n : IOV_MAX);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				if (wait_room(fd) < 0)
					return -1;
				continue;
			}
			return rv_seterr("write:");
		}
		/* skip what went out; the rest of a piece goes next */
		for (k = (size_t)w; n > 0 && k >= iov->iov_len; iov++, n--)
			k -= iov->iov_len;
		if (n > 0) {
			iov->iov_base = (char *)iov->iov_base + k;
			iov->iov_len -= k;
		}
	}
	return 0;
}

ssize_t
rv_pread_upto(int fd, void *buf, size_t n, off_t off)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = pread(fd, (char *)buf + got, n - got,
		    off + (off_t)got);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return rv_seterr("read:");
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

int
rv_pread_full(int fd, void *buf, size_t n, off_t off)
{
	ssize_t got = rv_pread_upto(fd, buf, n, off);

	if (got < 0)
		return -1;
	if ((size_t)got < n)
		return rv_seterr("unexpected end of file");
	return 0;
}

void
rv_pipe_grow(int fd)
{
	struct stat st;

	if (fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode))
		(void)fcntl(fd, F_SETPIPE_SZ, 1 << 20);
}

int
rv_anon_file(const char *dir, const char *prefix)
{
	char *path = xasprintf("%s/%s.XXXXXX", dir, prefix);
	int fd;

	if ((fd = mkstemp(path)) < 0) {
		rv_seterr("'%s': create file:", dir);
		free(path);
		return -1;
	}
	if (unlink(path) < 0) {
		rv_seterr("'%s': remove file:", path);
		close(fd);
		free(path);
		return -1;
	}
	free(path);
	(void)fcntl(fd, F_SETFD, FD_CLOEXEC);
	return fd;
}

int
rv_slurp(const char *path, unsigned char **buf, size_t *len)
{
	int fd = STDIN_FILENO, own = strcmp(path, "-") != 0;
	size_t cap = 1 << 16, n = 0;
	unsigned char *p;
	struct stat st;

	if (own && (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return rv_seterr("'%s':", path);
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
		cap = (size_t)st.st_size + 1;
	p = xmalloc(cap);
	for (;;) {
		ssize_t r;
		if (n == cap)
			p = xrealloc(p, cap *= 2);
		r = read(fd, p + n, cap - n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			rv_seterr("'%s': read:", path);
			free(p);
			if (own)
				close(fd);
			return -1;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (own)
		close(fd);
	*buf = p;
	*len = n;
	return 0;
}

/*
 * Temp files of open outputs, removed by a fatal signal.  This is the
 * library's only global state, and it has to be: a signal handler can
 * reach nothing but statics.  The handler may run at any moment, so it
 * touches only this table (no malloc, no locks): a slot is free (0),
 * claimed by a thread that is creating its temp file (1: the handler
 * waits for it), or live (2).  The handler unlinks the live paths, restores the default action and raises
 * the signal again, so the process still dies of it (status 128 + sig).
 * The handlers are installed once, at the first temp file, and only for a
 * signal whose action is the default: an ignored SIGHUP (nohup) stays
 * ignored and a program's own handler stays in place.  A path longer than
 * a slot, or a 17th output open at once, is not registered and can be left
 * behind by a signal, as before; a relative path is resolved against the
 * current directory when the signal comes.
 */
#define OUT_SLOTS	16

static _Atomic int out_slot_state[OUT_SLOTS];
static char out_slot_path[OUT_SLOTS][PATH_MAX];
static _Atomic int out_sig_done;
static const int out_sigs[] = { SIGINT, SIGTERM, SIGHUP };

static void
out_on_signal(int sig)
{
	int i, saved = errno;
	long spin;

	/*
	 * Another thread may be between mkstemp() and making its slot live
	 * (it blocks these signals meanwhile, so the signal came here): its
	 * file exists or is about to.  Wait for it, boundedly: it has a
	 * few instructions left and runs on, since only this thread is held.
	 */
	for (i = 0; i < OUT_SLOTS; i++)
		for (spin = 0; spin < 100000000L &&
		    atomic_load(&out_slot_state[i]) == 1; spin++)
			;
	for (i = 0; i < OUT_SLOTS; i++)
		if (atomic_load(&out_slot_state[i]) == 2)
			(void)unlink(out_slot_path[i]);
	errno = saved;
	/* SA_RESETHAND restored SIG_DFL; the signal is blocked until this
	 * handler returns, and then kills the process. */
	(void)raise(sig);
}

static void
out_sig_install(void)
{
	struct sigaction sa, old;
	size_t i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = out_on_signal;
	sa.sa_flags = SA_RESETHAND;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < sizeof(out_sigs) / sizeof(out_sigs[0]); i++)
		(void)sigaddset(&sa.sa_mask, out_sigs[i]);
	for (i = 0; i < sizeof(out_sigs) / sizeof(out_sigs[0]); i++)
		if (sigaction(out_sigs[i], NULL, &old) == 0 &&
		    !(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_DFL)
			(void)sigaction(out_sigs[i], &sa, NULL);
}

/* Claim a slot before the temp file exists: -1 if none is free. */
static int
out_claim(void)
{
	int i;

	for (i = 0; i < OUT_SLOTS; i++) {
		int want = 0;
		if (atomic_compare_exchange_strong(&out_slot_state[i],
		    &want, 1))
			return i;
	}
	return -1;
}

/* Make a claimed slot live with tmp, or free it (tmp NULL or too long). */
static void
out_publish(int i, const char *tmp)
{
	size_t len;

	if (i < 0)
		return;
	if (tmp == NULL || (len = strlen(tmp)) >= PATH_MAX) {
		atomic_store(&out_slot_state[i], 0);
		return;
	}
	memcpy(out_slot_path[i], tmp, len + 1);
	atomic_store(&out_slot_state[i], 2);
}

static void
out_unregister(const char *tmp)
{
	int i;

	for (i = 0; i < OUT_SLOTS; i++)
		if (atomic_load(&out_slot_state[i]) == 2 &&
		    strcmp(out_slot_path[i], tmp) == 0) {
			atomic_store(&out_slot_state[i], 0);
			return;
		}
}

int
rv_out_open(struct rv_out *o, const char *path, int binary)
{
	memset(o, 0, sizeof(*o));
	o->fd = -1;
	if (!path || strcmp(path, "-") == 0) {
		if (binary && isatty(STDOUT_FILENO))
			return rv_seterr("refusing to write a binary stream "
			    "to a terminal; redirect it or use -o FILE");
		o->fd = STDOUT_FILENO;
		rv_pipe_grow(o->fd);
		return 0;
	}
	{
		/* A device or FIFO (/dev/null, a named pipe) is written in
		 * place: renaming a temp file over it would replace the
		 * node. */
		struct stat st;
		if (stat(path, &st) == 0 && !S_ISREG(st.st_mode) &&
		    !S_ISDIR(st.st_mode)) {
			o->fd = open(path, O_WRONLY | O_CLOEXEC);
			if (o->fd < 0)
				return rv_seterr("'%s':", path);
			if (binary && isatty(o->fd)) {
				close(o->fd);
				o->fd = -1;
				return rv_seterr("'%s': refusing to write a "
				    "binary stream to a terminal", path);
			}
			o->path = xstrdup(path);
			return 0;
		}
	}
	{
		const char *slash = strrchr(path, '/');
		int dirlen = slash ? (int)(slash - path + 1) : 0;
		o->tmp = xasprintf("%.*s.%s.tmp.XXXXXX", dirlen, path,
		    path + dirlen);
	}
	/* No pthread_once: <pthread.h> would pull in lib/refurb/sched.h.  Two
	 * threads racing to their first output may each get here before the
	 * handlers are in; the loser's file is covered a moment later. */
	if (atomic_exchange(&out_sig_done, 1) == 0)
		out_sig_install();
	{
		/* A signal between mkstemp and publishing the slot would
		 * leave the file: hold the three signals off this thread
		 * meanwhile, and claim the slot first, so that a handler
		 * running on another thread waits for it. */
		sigset_t set, old;
		size_t i;
		int e, slot;

		sigemptyset(&set);
		for (i = 0; i < sizeof(out_sigs) / sizeof(out_sigs[0]); i++)
			(void)sigaddset(&set, out_sigs[i]);
		(void)pthread_sigmask(SIG_BLOCK, &set, &old);
		slot = out_claim();
		o->fd = mkstemp(o->tmp);
		e = errno;
		if (o->fd >= 0)
			(void)fcntl(o->fd, F_SETFD, FD_CLOEXEC);
		out_publish(slot, o->fd >= 0 ? o->tmp : NULL);
		(void)pthread_sigmask(SIG_SETMASK, &old, NULL);
		errno = e;
	}
	if (o->fd < 0) {
		const char *slash = strrchr(path, '/');
		struct stat dst;
		int e = errno, dl = slash ? (int)(slash - path) : 0;
		char *dir = dl > 0 ? xasprintf("%.*s", dl, path) : NULL;

		/* the usual mistake: a folder not made yet (-o 'epochs/%03d') */
		if (e == ENOENT && dir && stat(dir, &dst) < 0 &&
		    errno == ENOENT)
			rv_seterr("'%s': no folder '%s' to write it in (make "
			    "it first: mkdir -p '%s')", path, dir, dir);
		else {
			errno = e;
			rv_seterr("'%s':", path);
		}
		free(dir);
		free(o->tmp);
		o->tmp = NULL;
		return -1;
	}
	{
		mode_t m = umask(0);
		umask(m);
		(void)fchmod(o->fd, 0666 & ~m);
	}
	o->path = xstrdup(path);
	return 0;
}

static void
out_free(struct rv_out *o)
{
	free(o->path);
	free(o->tmp);
	o->path = o->tmp = NULL;
	o->fd = -1;
}

int
rv_out_commit(struct rv_out *o)
{
	int rc = 0;

	if (!o->path) {
		/* stdout: the caller closes it with its own checks */
		out_free(o);
		return 0;
	}
	if (close(o->fd) != 0) {
		rv_seterr("'%s': close:", o->path);
		o->fd = -1;
		rv_out_abort(o);
		return -1;
	}
	o->fd = -1;
	if (o->tmp && rename(o->tmp, o->path) != 0) {
		rc = rv_seterr("'%s': rename:", o->path);
		unlink(o->tmp);
	}
	if (o->tmp)
		out_unregister(o->tmp);
	out_free(o);
	return rc;
}

void
rv_out_abort(struct rv_out *o)
{
	if (o->path) {
		if (o->fd >= 0)
			close(o->fd);
		if (o->tmp) {
			unlink(o->tmp);
			out_unregister(o->tmp);
		}
	}
	out_free(o);
}

int
rv_out_finish(struct rv_out *o, int ok)
{
	int to_stdout = o->path == NULL && o->fd == STDOUT_FILENO;

	if (!ok) {
		rv_out_abort(o);
		return 0;
	}
	if (rv_out_commit(o) < 0)
		return -1;
	if (to_stdout && close(STDOUT_FILENO) != 0)
		return rv_seterr("'<stdout>': close:");
	return 0;
}

const char *
rv_out_name(const struct rv_out *o)
{
	return o->path ? o->path : "<stdout>";
}
