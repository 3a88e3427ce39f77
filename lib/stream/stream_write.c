/*
 * Writing the stream: records through one encoder into a buffer flushed
 * to the file descriptor every FLUSH_AT bytes, large stored payloads
 * written around their shell (a gathered write, no copy).
 */
#include "stream/stream.h"

#include <stdlib.h>
#include <sys/uio.h>

#include "base/err.h"
#include "base/io.h"
#include "base/xmem.h"
#include "stream/stream_impl.h"

#define FLUSH_AT	(256u << 10)

/* A payload under this goes through the writer's buffer: a copy costs
 * less than the system calls of a gathered write. */
#define SHELL_COPY_MAX	(64u << 10)

/*
 * rv_writer_put writes a stored payload of this size or more around its
 * shell.  Its callers' payloads are hot (just read or collated), so the
 * copy is cheap below the cache's size: rv-score's 150 KB samples written
 * around shells cost 15% more CPU (a gathered write each, against one
 * write per 256 KiB), while rv-batch's 38 MB batches cost 22% less.
 */
#define PUT_SHELL_MIN	(1u << 20)

struct rv_writer {
	char *name;
	int fd;
	struct rv_enc *enc;
	struct rv_buf out;
	struct iovec *iov;	/* rv_writer_put_shell's pieces */
	size_t niov;
	struct rv_buf shell;	/* rv_writer_put's shell of a large payload */
	uint64_t bytes, nrec;
	int failed;
};

struct rv_writer *
rv_writer_new(int fd, const char *name, int level)
{
	struct rv_writer *w = xcalloc(1, sizeof(*w));

	w->enc = rv_enc_new(rv_stream_level_fd(level, fd));
	if (!w->enc) {
		free(w);
		return NULL;
	}
	w->name = xstrdup(name);
	w->fd = fd;
	/* sized once for a full flush of small records: no growth later */
	rv_buf_reserve(&w->out, FLUSH_AT + (64u << 10));
	return w;
}

int
rv_writer_flush(struct rv_writer *w)
{
	if (w->failed)
		return -1;
	if (w->out.len == 0)
		return 0;
	if (rv_write_full(w->fd, w->out.data, w->out.len) < 0) {
		w->failed = 1;
		return rv_preferr("'%s'", w->name);
	}
	w->bytes += w->out.len;
	w->out.len = 0;
	return 0;
}

int
rv_writer_put(struct rv_writer *w, const struct rv_rec *rec,
    const void *payload)
{
	if (w->failed)
		return -1;
	/*
	 * A large stored payload is written from where it lies, around its
	 * frame's shell: the same bytes without the copy into the buffer
	 * (rv-batch's batches of large images).
	 */
	if (rec->payload_len >= PUT_SHELL_MIN &&
	    rv_enc_level(w->enc) == RV_LEVEL_STORED) {
		w->shell.len = 0;
		if (rv_enc_shell(w->enc, rec, payload, &w->shell) < 0)
			return rv_preferr("'%s': record %llu", w->name,
			    (unsigned long long)w->nrec);
		return rv_writer_put_shell(w, w->shell.data, w->shell.len,
		    payload, (size_t)rec->payload_len);
	}
	if (rv_enc_frame(w->enc, rec, payload, &w->out) < 0)
		return rv_preferr("'%s': record %llu", w->name,
		    (unsigned long long)w->nrec);
	w->nrec++;
	return w->out.len >= FLUSH_AT ? rv_writer_flush(w) : 0;
}

int
rv_writer_put_frames(struct rv_writer *w, const void *p, size_t n,
    uint64_t nrec)
{
	struct iovec iov[2];

	if (w->failed)
		return -1;
	w->nrec += nrec;
	if (w->out.len + n < FLUSH_AT) {
		rv_buf_append(&w->out, p, n);
		return 0;
	}
	/* what was queued and these frames in one gathered write: the
	 * frames are not copied into the buffer first */
	iov[0] = (struct iovec){ w->out.data, w->out.len };
	iov[1] = (struct iovec){ (void *)p, n };
	if (rv_writev_full(w->fd, iov, 2) < 0) {
		w->failed = 1;
		return rv_preferr("'%s'", w->name);
	}
	w->bytes += w->out.len + n;
	w->out.len = 0;
	return 0;
}

/*
 * The pieces of a shell's frame, in order, into iov (room for
 * 2 * (shell_more(plen) + 1) + 1): shell, payload, shell, ...  Returns
 * how many.
 */
static size_t
shell_iov(const unsigned char *shell, const unsigned char *payload,
    size_t plen, struct iovec *iov)
{
	size_t n = 0, b, left;

	iov[n++] = (struct iovec){ (void *)shell, shell_head(plen) };
	shell += shell_head(plen);
	b = shell_first(plen);
	for (left = plen; left > 0; left -= b) {
		if (n > 1) {
			b = left < RAW_BLOCK ? left : RAW_BLOCK;
			iov[n++] = (struct iovec){ (void *)shell, 3 };
			shell += 3;
		}
		iov[n++] = (struct iovec){ (void *)payload, b };
		payload += b;
	}
	iov[n++] = (struct iovec){ (void *)shell, 4 };
	return n;
}

int
rv_writer_put_shell(struct rv_writer *w, const void *shell, size_t n,
    const void *payload, size_t plen)
{
	size_t need, k, i;
	uint64_t total;

	if (w->failed)
		return -1;
	if (plen > MAX_PAYLOAD_CAP || n != shell_len(plen) ||
	    (plen && !payload))
		return rv_seterr("'%s': record %llu: invalid frame shell",
		    w->name, (unsigned long long)w->nrec);
	need = 2 * (shell_more(plen) + 1) + 2;
	if (need > w->niov) {
		w->iov = xreallocarray(w->iov, need, sizeof(*w->iov));
		w->niov = need;
	}
	k = shell_iov(shell, payload, plen, w->iov + 1);
	w->nrec++;
	if (plen < SHELL_COPY_MAX) {
		for (i = 1; i <= k; i++)
			rv_buf_append(&w->out, w->iov[i].iov_base,
			    w->iov[i].iov_len);
		return w->out.len >= FLUSH_AT ? rv_writer_flush(w) : 0;
	}
	/* what was queued goes first, in the same call */
	w->iov[0] = (struct iovec){ w->out.data, w->out.len };
	total = w->out.len + n + plen;
	if (rv_writev_full(w->fd, w->iov, (int)k + 1) < 0) {
		w->failed = 1;
		return rv_preferr("'%s'", w->name);
	}
	w->bytes += total;
	w->out.len = 0;
	return 0;
}

uint64_t
rv_writer_bytes(const struct rv_writer *w)
{
	return w->bytes + w->out.len;
}

uint64_t
rv_writer_records(const struct rv_writer *w)
{
	return w->nrec;
}

int
rv_writer_close(struct rv_writer *w)
{
	int rc;

	if (!w)
		return 0;
	rc = rv_writer_flush(w);
	rv_enc_free(w->enc);
	rv_buf_release(&w->out);
	rv_buf_release(&w->shell);
	free(w->iov);
	free(w->name);
	free(w);
	return rc;
}
