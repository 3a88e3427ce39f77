/*
 * Feedback: the trainer's per-sample report to rv-score, one text line a
 * trained sample (man/rv-feedback.5 is normative):
 *
 *     id <TAB> epoch <TAB> step <TAB> loss <TAB> gradnorm <LF>
 *
 * id, epoch and step decimal unsigned integers; loss and gradnorm finite
 * non-negative decimals ("%.6g" when written, anything strtod takes when
 * read).  A line is at most RV_FB_LINE_MAX bytes, well under PIPE_BUF, so
 * a write of whole lines to a FIFO is atomic.
 *
 * The writer never blocks training: lines go into a bounded in-memory
 * queue; rv_fb_flush() writes what the fd takes without blocking (whole
 * lines only), keeps the rest, and when the queue is full drops the
 * oldest lines and counts them.  A FIFO is opened O_WRONLY|O_NONBLOCK,
 * which fails with ENXIO while no reader has it open; the writer then keeps queueing (dropping oldest) and retries
 * the open at most every RV_FB_REOPEN_MS, so a reader may come late, go,
 * and come back.  EPIPE (SIGPIPE must be ignored by the program) means
 * the reader went away: the fd is closed and reopening starts over.
 *
 * The reader never blocks either: rv_fb_poll() reads what is there
 * (O_NONBLOCK), hands back complete lines, keeps a partial last line for
 * the next call, and reports a malformed line as an error naming its
 * line number.  For a FIFO it opens O_RDONLY|O_NONBLOCK (which succeeds
 * with no writer) and treats end-of-file as "no writer now", not as the
 * end: a trainer may start later or restart.
 */
#ifndef RV_FEEDBACK_H
#define RV_FEEDBACK_H

#include <stddef.h>
#include <stdint.h>

#define RV_FB_LINE_MAX		128
#define RV_FB_REOPEN_MS		200
#define RV_FB_QUEUE_DEFAULT	(1u << 16)	/* lines */

struct rv_fb_line {
	uint64_t id;
	uint32_t epoch;
	uint64_t step;
	float loss;
	float gradnorm;
};

/* Format one line (with its '\n') into buf; returns its length. */
size_t rv_fb_format(const struct rv_fb_line *l, char *buf);
/* Parse one line (without its '\n'); 0, or -1 with rv_errmsg() set. */
int rv_fb_parse(const char *s, size_t len, struct rv_fb_line *l);

struct rv_fb_writer;

/*
 * A writer to path: a FIFO (opened as above), or a regular file created
 * or truncated now (then writes are ordinary and complete; the queue only
 * smooths them).  queue_lines >= 1.  NULL with rv_errmsg() on failure to
 * create a regular file; a FIFO with no reader is not a failure.
 */
struct rv_fb_writer *rv_fb_writer_open(const char *path, size_t queue_lines);
/* The same; with RV_FB_APPEND a regular file is appended to, not
 * truncated (a resumed run continues its feedback file). */
#define RV_FB_APPEND	1
struct rv_fb_writer *rv_fb_writer_openf(const char *path, size_t queue_lines,
    int flags);
/* Queue one line, dropping the oldest if full; then rv_fb_flush(). */
void rv_fb_put(struct rv_fb_writer *w, const struct rv_fb_line *l);
/* Write what can be written now without blocking.  Returns 0, or -1 with
 * rv_errmsg() on an error other than EAGAIN/EPIPE/ENXIO (EIO, ENOSPC on a
 * regular file). */
int rv_fb_flush(struct rv_fb_writer *w);
/* Lines written, dropped (queue overflow or reader gone), queued now. */
uint64_t rv_fb_written(const struct rv_fb_writer *w);
uint64_t rv_fb_dropped(const struct rv_fb_writer *w);
size_t rv_fb_queued(const struct rv_fb_writer *w);
/*
 * Try for up to timeout_ms to write what is queued (a last flush at the
 * end of training), then close.  Lines still queued are counted dropped.
 * Returns 0, or -1 with rv_errmsg() if a regular file failed.  The final
 * counts go to *written and *dropped when not NULL.  NULL w is a no-op
 * (counts 0).
 */
int rv_fb_writer_close(struct rv_fb_writer *w, int timeout_ms,
    uint64_t *written, uint64_t *dropped);

struct rv_fb_reader;

/* A reader of path (FIFO or regular file).  NULL with rv_errmsg(). */
struct rv_fb_reader *rv_fb_reader_open(const char *path);
/*
 * Read what is available now and parse up to max complete lines into
 * out.  Returns the number parsed (0 when nothing is ready), or -1 with
 * rv_errmsg() "'PATH': line N: reason" for a malformed line (the line is
 * consumed: the caller may warn and poll again).  Never blocks.
 */
int rv_fb_poll(struct rv_fb_reader *r, struct rv_fb_line *out, int max);
/*
 * A FIFO's writers: rv_fb_reader_left() counts the times a writer that
 * had sent bytes closed its end (seen by rv_fb_poll() as end-of-file),
 * rv_fb_reader_connected() is 1 from a writer's first bytes to its
 * leaving.  Both 0 for a regular file.
 */
int rv_fb_reader_connected(const struct rv_fb_reader *r);
uint64_t rv_fb_reader_left(const struct rv_fb_reader *r);
/* 1 if a regular file has been read to its end (a FIFO never ends). */
int rv_fb_reader_eof(const struct rv_fb_reader *r);
/* Lines parsed so far. */
uint64_t rv_fb_lines(const struct rv_fb_reader *r);
void rv_fb_reader_close(struct rv_fb_reader *r);

#endif
