/*
 * What the readers (src_*.c) and the dataset (src.c) share: the warnings
 * and notes an open collects, names made safe to print, the file
 * extensions a folder or an archive member is judged by, class-name files.
 * Nothing here knows the readers or the dataset's layout.
 */
#include "src/src.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/err.h"
#include "base/io.h"
#include "base/xmem.h"
#include "codec/codec.h"
#include "src/src_impl.h"

/* Messages kept for the caller; past this only a count is kept. */
#define MAX_WARNINGS	1000
/* A file of class names bigger than this is not one. */
#define MAX_NAMES_FILE	((off_t)1 << 20)

/* ---- messages and warnings ---- */

void
src_msgs_add(struct src_msgs *m, const char *msg)
{
	if (m->n == MAX_WARNINGS) {
		m->dropped++;
		return;
	}
	if (m->n == m->cap) {
		m->cap = m->cap ? m->cap * 2 : 16;
		m->v = xreallocarray(m->v, m->cap, sizeof(*m->v));
	}
	m->v[m->n++] = xstrdup(msg);
}

/* The last message says how many more there were. */
void
src_msgs_close(struct src_msgs *m, const char *what)
{
	char buf[64];

	if (m->dropped == 0)
		return;
	m->n--;
	m->dropped++;
	free(m->v[m->n]);
	snprintf(buf, sizeof(buf), "%" PRIu64 " more %s", m->dropped, what);
	src_msgs_add(m, buf);
}

void
src_msgs_free(struct src_msgs *m)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		free(m->v[i]);
	free(m->v);
}

static int
vwarn(struct src_ctx *c, int fatal, int count, const char *fmt, va_list ap)
{
	char buf[1024];

	vsnprintf(buf, sizeof(buf), fmt, ap);
	if (fatal && c->o->strict)
		return rv_seterr("%s", buf);
	/* A sample lost says so, as rv-decode's decode-time warnings do. */
	if (fatal)
		snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf),
		    " (skipped)");
	src_msgs_add(c->warn, buf);
	if (count)
		c->skipped++;
	return 0;
}

int
src_skip(struct src_ctx *c, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vwarn(c, 1, 1, fmt, ap);
	va_end(ap);
	return r;
}

int
src_bad(struct src_ctx *c, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vwarn(c, 1, 0, fmt, ap);
	va_end(ap);
	return r;
}

void
src_note(struct src_ctx *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vwarn(c, 0, 0, fmt, ap);
	va_end(ap);
}

void
src_count(struct src_ctx *c)
{
	c->skipped++;
}

void
src_ignore(struct src_ctx *c, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	src_msgs_add(c->note, buf);
	c->ignored++;
}

/* ---- what an input held ---- */

void
src_tally(struct src_tally *t, const char *name, int image)
{
	const char *base = strrchr(name, '/'), *dot;
	char ext[sizeof(t->ext[0].ext)];
	size_t i, k;

	t->files++;
	if (image) {
		t->images++;
		return;
	}
	base = base ? base + 1 : name;
	dot = strrchr(base, '.');
	if (base[0] == '.')
		snprintf(ext, sizeof(ext), "(hidden)");
	else if (!dot)
		snprintf(ext, sizeof(ext), "(no extension)");
	else {
		for (k = 0; k < sizeof(ext) - 1 && dot[k]; k++)
			ext[k] = (char)(dot[k] >= 'A' && dot[k] <= 'Z' ?
			    dot[k] - 'A' + 'a' : dot[k]);
		ext[k] = '\0';
	}
	for (i = 0; i < t->next; i++)
		if (strcmp(t->ext[i].ext, ext) == 0)
			break;
	if (i == t->next && t->next == SRC_TALLY_EXTS) {
		t->other++;
		return;
	}
	if (i == t->next)
		memcpy(t->ext[t->next++].ext, ext, sizeof(ext));
	t->ext[i].n++;
}

char *
src_tally_held(const struct src_tally *t, const char *what)
{
	size_t order[SRC_TALLY_EXTS], i, j, k, shown;
	struct rv_buf b = { 0 };
	char line[160], q[64];

	const char *s = t->files == 1 ? "" : "s";

	if (t->files == 0)
		return xasprintf("no %ss", what);
	if (t->images > 0)
		return xasprintf("%" PRIu64 " %s%s, %" PRIu64 " of them "
		    "images, all skipped", t->files, what, s, t->images);
	/* The extensions by count, the commonest first (ties: first seen). */
	for (i = 0; i < t->next; i++) {
		for (j = i; j > 0 && t->ext[order[j - 1]].n < t->ext[i].n; j--)
			order[j] = order[j - 1];
		order[j] = i;
	}
	snprintf(line, sizeof(line), "%" PRIu64 " %s%s, none an image (",
	    t->files, what, s);
	rv_buf_append(&b, line, strlen(line));
	shown = t->next < 3 ? t->next : 3;
	for (k = 0; k < shown; k++) {
		src_sanitize(q, sizeof(q), t->ext[order[k]].ext,
		    strlen(t->ext[order[k]].ext));
		snprintf(line, sizeof(line), "%s%s %" PRIu64, k ? ", " : "", q,
		    t->ext[order[k]].n);
		rv_buf_append(&b, line, strlen(line));
	}
	if (shown < t->next || t->other > 0)
		rv_buf_append(&b, ", ...", 5);
	rv_buf_append(&b, ")", 2);
	return (char *)b.data;
}

/* Forget the messages after the first n (unless some were dropped). */
void
src_msgs_drop(struct src_msgs *m, size_t n)
{
	if (m->dropped)
		return;
	while (m->n > n)
		free(m->v[--m->n]);
}

void
src_msgs_clear(struct src_msgs *m)
{
	src_msgs_free(m);
	memset(m, 0, sizeof(*m));
}

/* ---- names, extensions, labels ---- */

/* Length of the valid UTF-8 sequence at p (at most n bytes), else 0. */
static size_t
utf8_seq(const unsigned char *p, size_t n)
{
	size_t k, i;
	unsigned char lo = 0x80, hi = 0xbf;

	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		k = 2;
	else if (p[0] >= 0xe0 && p[0] <= 0xef) {
		k = 3;
		if (p[0] == 0xe0)
			lo = 0xa0;
		else if (p[0] == 0xed)
			hi = 0x9f;	/* no surrogates */
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		k = 4;
		if (p[0] == 0xf0)
			lo = 0x90;
		else if (p[0] == 0xf4)
			hi = 0x8f;
	} else
		return 0;
	if (n < k || p[1] < lo || p[1] > hi)
		return 0;
	for (i = 2; i < k; i++)
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
	/* C1 controls (U+0080..U+009F) move terminals too. */
	if (k == 2 && p[0] == 0xc2 && p[1] < 0xa0)
		return 0;
	return k;
}

void
src_sanitize(char *dst, size_t len, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t o = 0, i = 0;

	if (len == 0)
		return;
	while (i < n) {
		char esc[5];
		const char *piece = esc;
		size_t plen, k;

		if (u[i] >= 0x20 && u[i] < 0x7f) {
			piece = s + i;
			plen = 1;
		} else if (u[i] == '\n' || u[i] == '\t') {
			esc[0] = '\\';
			esc[1] = u[i] == '\n' ? 'n' : 't';
			plen = 2;
		} else if (u[i] >= 0x80 && (k = utf8_seq(u + i, n - i)) > 0) {
			piece = s + i;
			plen = k;
		} else {
			snprintf(esc, sizeof(esc), "\\x%02x", u[i]);
			plen = 4;
		}
		if (o + plen >= len)
			break;
		memcpy(dst + o, piece, plen);
		o += plen;
		i += piece == esc ? 1 : plen;
	}
	dst[o] = '\0';
}

char *
src_sanitized(const char *s)
{
	size_t n = strlen(s), len = 4 * n + 1;
	char *p = xmalloc(len);

	src_sanitize(p, len, s, n);
	return p;
}

void
src_item_name(struct rv_item *it, const struct src *s, const char *member)
{
	size_t n;
	/* "'archive': 'member'", but "'file': record N" for record indices */
	int quote = strncmp(member, "record ", 7) != 0;

	snprintf(it->name, sizeof(it->name), "'%s': %s", s->name,
	    quote ? "'" : "");
	n = strlen(it->name);
	src_sanitize(it->name + n, sizeof(it->name) - n - 1, member,
	    strlen(member));
	if (quote)
		strcat(it->name, "'");
}

static const char *
extension(const char *path)
{
	const char *slash = strrchr(path, '/');
	const char *dot = strrchr(slash ? slash + 1 : path, '.');

	return dot ? dot + 1 : "";
}

int
src_lower_eq(const char *a, const char *b)
{
	for (; *a && *b; a++, b++) {
		char ca = *a >= 'A' && *a <= 'Z' ? (char)(*a - 'A' + 'a') : *a;
		if (ca != *b)
			return 0;
	}
	return *a == *b;
}

static int
ext_in(const char *ext, const char *const *list)
{
	for (; *list; list++)
		if (src_lower_eq(ext, *list))
			return 1;
	return 0;
}

int
src_image_ext(const char *ext)
{
	return rv_format_by_ext(ext) != NULL;
}

int
src_unsupported_ext(const char *ext)
{
	static const char *const other[] = { "heic", "heif", "avif", "jxl",
	    "jp2", "j2k", "jpx", "jpf", "ppm", "pgm", "pbm", "pnm", "pam",
	    "pcx", "tga", "ico", "icns", "psd", "xcf", "svg", "svgz", "eps",
	    "exr", "hdr", "dds", "dng", "cr2", "cr3", "crw", "nef", "arw",
	    "orf", "rw2", "raf", "raw", NULL };

	return ext_in(ext, other);
}

int
src_encoded_dtype(const unsigned char *p, size_t n, const char *path)
{
	int t = rv_sniff(p, n);

	if (t != RV_DT_NONE)
		return t;
	/* A WebP, GIF, BMP or TIFF: no stream dtype of its own. */
	if (rv_codec_format(p, n) != NULL)
		return RV_DT_NONE;
	/* Let the decoder say what is wrong with it, by its name. */
	return src_lower_eq(extension(path), "png") ? RV_DT_PNG : RV_DT_JPEG;
}

int32_t
src_label(const struct src *s, int32_t local)
{
	if (local < 0 || !s->map)
		return local;
	return s->map[local];
}

void
src_free_names(char **names, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

int
src_read_names(const char *path, char ***names, size_t *n)
{
	struct stat st;
	char *buf, *p, *end;
	size_t cap = 0;
	int fd;

	*names = NULL;
	*n = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		return rv_seterr("cannot open:");
	}
	if (fstat(fd, &st) < 0) {
		close(fd);
		return rv_seterr("cannot stat:");
	}
	if (!S_ISREG(st.st_mode) || st.st_size > MAX_NAMES_FILE) {
		close(fd);
		return rv_seterr("not a short text file");
	}
	buf = xmalloc((size_t)st.st_size + 1);
	if (rv_pread_full(fd, buf, (size_t)st.st_size, 0) < 0) {
		free(buf);
		close(fd);
		return -1;
	}
	close(fd);
	buf[st.st_size] = '\0';
	for (p = buf, end = buf + st.st_size; p < end; ) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		char *e = nl ? nl : end;

		while (e > p && (e[-1] == '\r' || e[-1] == ' ' ||
		    e[-1] == '\t'))
			e--;
		if (e > p) {
			if (*n == cap) {
				cap = cap ? cap * 2 : 16;
				*names = xreallocarray(*names, cap,
				    sizeof(**names));
			}
			(*names)[(*n)++] = xstrndup(p, (size_t)(e - p));
		}
		p = nl ? nl + 1 : end;
	}
	free(buf);
	return (int)*n;
}

uint64_t
rv_src_max_held_default(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
	uint64_t half = pages > 0 && size > 0 ?
	    (uint64_t)pages * (uint64_t)size / 2 : 0;

	return half > ((uint64_t)256 << 20) ? half : (uint64_t)256 << 20;
}

int
src_spill_open(struct src_spill *sp, const char *dir)
{
	char *path = xasprintf("%s/.rv-decode-spill-XXXXXX", dir);
	int fd = mkstemp(path), e = errno;

	if (fd >= 0 && unlink(path) < 0) {
		e = errno;
		close(fd);
		fd = -1;
	}
	free(path);
	if (fd < 0) {
		char *q = src_sanitized(dir);

		errno = e;
		rv_seterr("--cache-dir '%s': cannot make a file there:", q);
		free(q);
		return -1;
	}
	(void)fcntl(fd, F_SETFD, FD_CLOEXEC);
	sp->fd = fd;
	sp->end = 0;
	sp->dir = src_sanitized(dir);
	return 0;
}

int
src_spill_put(struct src_spill *sp, const void *p, size_t n, uint64_t *off)
{
	const unsigned char *b = p;
	size_t done = 0;

	while (done < n) {
		ssize_t k = pwrite(sp->fd, b + done, n - done,
		    (off_t)(sp->end + done));

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			if (k == 0)
				errno = ENOSPC;
			return rv_seterr("--cache-dir '%s': writing %zu bytes "
			    "at byte %" PRIu64 " of its spill file:", sp->dir,
			    n, sp->end);
		}
		done += (size_t)k;
	}
	*off = sp->end;
	sp->end += n;
	return 0;
}

void
src_spill_close(struct src_spill *sp)
{
	if (!sp->dir)
		return;
	close(sp->fd);
	free(sp->dir);
	sp->dir = NULL;
}

uint64_t
src_fd_budget(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return 512;
	return (uint64_t)rl.rlim_cur / 2;
}
