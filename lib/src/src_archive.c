/*
 * Archives (tar, tar.gz, tar.zst, zip, ... whatever libarchive reads, from
 * a file or stdin) in the WebDataset convention: a sample is every member
 * sharing a key (the path up to the first dot of the base name), its
 * image the member in a format the codec reads (src_image_ext), its label
 * from a sidecar or from the parent directory.  The archive is read once,
 * at open.  An image member whose bytes lie in a regular file as they are
 * stored, in the file's first archive, is kept as its offset and size,
 * and a fetch reads it with pread, as the folder reader reads its files:
 * the dataset costs its listing, not its bytes.  A tar or cpio member is
 * taken where its header puts it (stored()), its data never read at open
 * but for its magic and, past PREALLOC, its image header (read_head());
 * a member of another format (a zip's stored ones) is read through and
 * compared with the file (in_file()).  Any other (a compressed archive, a
 * pipe, a member libarchive decodes) is kept in memory, still encoded,
 * and a fetch is a pointer into it; so is every member when the caller
 * asks for memory (rv_src_opts.hold).  The file is held open for the
 * fetches while the dataset's budget of descriptors lasts, and a fetch
 * that finds its size or modification time changed fails.
 *
 * An input may hold several archives one after the other (cat a.tar
 * b.tar.gz c.zip, on a pipe or in a file), each compressed or not: they
 * are read through, one libarchive reader each, from where the last one
 * ended (unz.h decodes gzip, zstd, xz and bzip2 itself, so that where a
 * stream ends is exact; a tar ends where the reader meets a block that is
 * no tar header after its end-of-archive blocks, a zip after its central
 * directory).  Where no next archive can be found (data that is no
 * archive, a compressed stream that is corrupt), the input is refused: an
 * error naming the byte, never data left unread in silence.
 *
 * Every member is accounted for: the image of a sample, a sidecar of
 * one (counted), a skipped sample (warned, counted, fatal under strict)
 * or ignored (noted, counted); see struct rv_src_counts.
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/err.h"
#include "base/io.h"
#include "base/xmem.h"
#include "codec/codec.h"
#include "src/src_impl.h"
#include "src/unz.h"

/* Image bytes are packed into chunks of this size (bigger ones alone),
 * the samples' names into chunks of NAMES_CHUNK. */
#define CHUNK		((size_t)8 << 20)
#define NAMES_CHUNK	((size_t)64 << 10)
/* Sidecars larger than these are not labels (captions, metadata); a
 * .cls may hold a list, so it gets the room of a .json. */
#define MAX_TXT		64
#define MAX_JSON	((size_t)64 << 10)
/* Bytes of a bad label quoted in its warning. */
#define SNIP		40
/* A member's buffer is sized from its header up to this, then grows. */
#define PREALLOC	((size_t)1 << 20)
/* Damaged headers in a row before we give up on the archive, past the
 * blocks of the largest member taken (its data, read as headers). */
#define MAX_RETRY	100
/* Bytes read of an image member before its magic is checked, and kept
 * of one that has none (for the decoder to say so). */
#define MAGIC		16
/* Bytes looked at a time for data after a damaged archive. */
#define READ_PEEK	((size_t)64 << 10)
/* Links followed from one member before it is taken for a loop. */
#define MAX_HOPS	16
/* An image member over this many bytes a pixel of the pixel limit (plus
 * SLACK for metadata) holds no image within it: refused unread. */
#define BYTES_PER_PIXEL	8
#define SLACK		((size_t)16 << 20)
/* No zip64 end record is this big (its extensible data is unused). */
#define MAX_RECORD	((uint64_t)1 << 30)
/* Bytes compared at a time where a member is checked against the file. */
#define CMP_CHUNK	((size_t)64 << 10)
/* A 7-zip archive's first bytes. */
#define SEVEN_MAGIC	"7z\xbc\xaf\x27\x1c"

enum link { LK_NONE, LK_HARD, LK_SYM };

/* Where a member's image bytes are: held in the arena, or at an offset. */
enum { BY_HELD, BY_FILE, BY_SPILL };

enum role {
	R_OTHER,	/* no role: a sidecar if the key has an image */
	R_UNSUP,	/* an image in a format rv does not read */
	R_IMAGE,
	R_CLS,
	R_TXT,
	R_JSON,
};

/* What a sidecar says of the label. */
enum lab {
	L_NONE,		/* nothing: a caption, metadata, null */
	L_OK,		/* one class number */
	L_MULTI,	/* a list of several: multi-label */
	L_BAD,		/* a label that is no class number */
};

struct member {
	char *key;		/* owned */
	char *path;		/* owned: the stored path, for messages */
	char *snip;		/* owned: L_MULTI/L_BAD's text, sanitized */
	const unsigned char *data;	/* image bytes, in the arena */
	size_t len;
	uint64_t off;		/* byoff: where they lie in the file */
	size_t seq;		/* order in the archive */
	int32_t label;		/* sidecar's label, if L_OK */
	unsigned char role;
	unsigned char primary;	/* the whole extension is the role's */
	unsigned char bad;	/* unreadable: the sample is dropped */
	unsigned char lab;	/* enum lab */
	unsigned char ltype;	/* enum link: data is the target's */
	unsigned char byoff;	/* the bytes are read at off: from the file
				 * (BY_FILE) or the spill file (BY_SPILL) */
	char *link;		/* owned: the link's target, as stored */
};

/* A sample, 32 bytes and its name: an archive of millions of samples
 * costs tens of MB, not its images. */
struct asample {
	union {
		const unsigned char *data;	/* BY_HELD: in the arena */
		uint64_t off;	/* BY_FILE, BY_SPILL: where they lie */
	} at;
	const char *path;	/* the image member's, in the names */
	uint32_t len;		/* <= SRC_MAX_MEMBER */
	int32_t label;
	unsigned char by;	/* BY_HELD, BY_FILE or BY_SPILL */
	unsigned char derived;	/* label is a local directory class */
};

struct chunk {
	unsigned char *p;
	size_t len, cap;
};

struct arch {
	struct chunk *chunk;	/* the arena of image bytes */
	size_t nchunk;
	struct chunk *names;	/* the samples' member names */
	size_t nnames;
	struct asample *v;
	size_t n;
	/* The file the samples read by offset lie in, as it was listed:
	 * a fetch finds it so or fails.  It is held open (fd) while the
	 * dataset's budget of descriptors lasts, else opened by path. */
	const char *file;	/* the source's path, borrowed */
	int fd;			/* -1: not held */
	/* The dataset's spill file, where the images of a compressed
	 * archive or a pipe go under a cache directory; borrowed. */
	const struct src_spill *spill;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
};

/* State of one open. */
struct reader {
	struct src_ctx *c;
	struct src *s;
	struct arch *ar;
	struct archive *a;	/* the archive being read */
	struct unz *unz;	/* the input, through its compression */
	int fd;
	int seekable;		/* a regular file */
	int fdmode;		/* libarchive reads the file itself (the
				 * first archive of a file that is not
				 * compressed: it can seek, as zip wants) */
	uint64_t base;		/* raw offset of the archive's first byte */
	int has_next;		/* the archive ended where another starts, */
	uint64_t next;		/* at this raw offset */
	size_t parts;		/* archives begun */
	size_t entries;		/* members, over all the archives */
	size_t part_entries;	/* members of this archive */
	size_t images;		/* image members read: the samples so far */
	int any;		/* the input was not empty */
	int spent;		/* the reader met the input's end too soon */
	struct src_tally tally;
	struct member *m;
	size_t nm, capm;
	struct rv_buf buf;	/* one member's data, reused */
	unsigned char *cmp;	/* CMP_CHUNK bytes: a member read again */
	struct stat sb;		/* the input, when seekable */
	size_t byoff;		/* image members read by offset */
	struct rv_codec *codec;	/* reads image headers; made when needed */
	uint64_t max_held;	/* the dataset's bound on image bytes held */
	int filters;		/* la_support's in-process filters, a bit
				 * each; -1 until probed */
	uint32_t nlabels;	/* highest sidecar label + 1 */
	char err[256];
};

/* n bytes from the last of the chunks *v (*nv of them), a new one of
 * size (or n, if more) when it has no room. */
static unsigned char *
chunk_alloc(struct chunk **v, size_t *nv, size_t n, size_t size)
{
	struct chunk *k = *nv ? &(*v)[*nv - 1] : NULL;
	unsigned char *p;

	if (!k || k->cap - k->len < n) {
		*v = xreallocarray(*v, *nv + 1, sizeof(**v));
		k = &(*v)[(*nv)++];
		k->cap = n > size ? n : size;
		k->p = xmalloc(k->cap);
		k->len = 0;
	}
	p = k->p + k->len;
	k->len += n;
	return p;
}

static unsigned char *
arena_alloc(struct arch *ar, size_t n)
{
	return chunk_alloc(&ar->chunk, &ar->nchunk, n, CHUNK);
}

/* A copy of the name s among the samples' names. */
static const char *
name_dup(struct arch *ar, const char *s)
{
	size_t n = strlen(s) + 1;

	return memcpy(chunk_alloc(&ar->names, &ar->nnames, n, NAMES_CHUNK), s,
	    n);
}

/*
 * The samples' names, chunk by chunk as they came, into one block of
 * their size: a shard's names fill a fraction of a chunk, and a dataset of
 * many shards would otherwise hold each one's slack.  name_dup took them
 * in the samples' order, so they are copied in it.
 */
static void
pack_names(struct arch *ar)
{
	struct chunk k = { NULL, 0, 0 };
	size_t i;

	if (ar->nnames == 0 || (ar->nnames == 1 &&
	    ar->names[0].len == ar->names[0].cap))
		return;
	for (i = 0; i < ar->nnames; i++)
		k.cap += ar->names[i].len;
	k.p = xmalloc(k.cap);
	for (i = 0; i < ar->n; i++) {
		size_t n = strlen(ar->v[i].path) + 1;

		ar->v[i].path = memcpy(k.p + k.len, ar->v[i].path, n);
		k.len += n;
	}
	for (i = 0; i < ar->nnames; i++)
		free(ar->names[i].p);
	ar->names = xreallocarray(ar->names, 1, sizeof(*ar->names));
	ar->names[0] = k;
	ar->nnames = 1;
}

/*
 * The member just read, b, into the arena, held once: a big one's buffer
 * becomes a chunk of its own (b is left empty), a small one is copied.
 */
static const unsigned char *
arena_take(struct arch *ar, struct rv_buf *b)
{
	struct chunk k;
	unsigned char *p;

	if (b->len < CHUNK / 2) {
		p = arena_alloc(ar, b->len);
		if (b->len)
			memcpy(p, b->data, b->len);
		return p;
	}
	k.p = xrealloc(b->data, b->len);
	k.len = k.cap = b->len;
	b->data = NULL;
	b->len = b->cap = 0;
	ar->chunk = xreallocarray(ar->chunk, ar->nchunk + 1,
	    sizeof(*ar->chunk));
	ar->chunk[ar->nchunk++] = k;
	/* The chunk being filled stays last. */
	if (ar->nchunk > 1) {
		ar->chunk[ar->nchunk - 1] = ar->chunk[ar->nchunk - 2];
		ar->chunk[ar->nchunk - 2] = k;
	}
	return k.p;
}

/* The first bytes are those of an image the codec reads. */
static int
image_magic(const unsigned char *p, size_t n)
{
	return rv_sniff(p, n) != RV_DT_NONE ||
	    rv_codec_format(p, n) != NULL;
}

/* The largest image member read: BYTES_PER_PIXEL bytes a pixel of the
 * pixel limit and SLACK, at most SRC_MAX_MEMBER. */
static size_t
image_cap(const struct src_ctx *c)
{
	uint64_t px = c->o->max_pixels ? c->o->max_pixels :
	    RV_MAX_PIXELS_DEFAULT;

	if (px > (SRC_MAX_MEMBER - SLACK) / BYTES_PER_PIXEL)
		return SRC_MAX_MEMBER;
	return (size_t)px * BYTES_PER_PIXEL + SLACK;
}

/* libarchive's last message, first letter lowered unless an acronym. */
static const char *
la_err(struct reader *r)
{
	const char *m = archive_error_string(r->a);

	if (!m)
		m = "unknown libarchive error";
	/* Its messages may quote member names: those are sanitized too. */
	src_sanitize(r->err, sizeof(r->err), m, strlen(m));
	if (r->err[0] >= 'A' && r->err[0] <= 'Z' &&
	    !(r->err[1] >= 'A' && r->err[1] <= 'Z'))
		r->err[0] = (char)(r->err[0] - 'A' + 'a');
	return r->err;
}

/* The compression is ours and has failed: the data cannot be read on. */
static int
broken(const struct reader *r)
{
	enum unz_state st = unz_state(r->unz);

	return !r->fdmode && (st == UNZ_CORRUPT || st == UNZ_IOERR);
}

/* The archive is a run of compressed streams, decoded by unz. */
static int
in_run(const struct reader *r)
{
	return !r->fdmode && unz_kind(r->unz) != UNZ_NONE;
}

/*
 * The raw offset the archive has been read to: what libarchive's reader
 * took of the input, or, in a compressed run, where the decoder is.
 */
static uint64_t
raw_at(const struct reader *r)
{
	int64_t k;

	if (in_run(r))
		return unz_pos(r->unz);
	k = archive_filter_bytes(r->a, -1);
	return r->base + (k > 0 ? (uint64_t)k : 0);
}

/* Where no next archive can be found, at raw offset off: the input is
 * refused, since what follows would be lost. */
static int
refuse(const struct reader *r, uint64_t off, const char *why)
{
	return rv_seterr("'%s': byte %" PRIu64 ": %s; the input cannot be "
	    "read on from there, so it is refused (%zu sample%s read before "
	    "it %s lost)", r->s->name, off, why, r->images,
	    r->images == 1 ? "" : "s", r->images == 1 ? "is" : "are");
}

/* The same, why being the error just set (rv_errmsg). */
static int
refuse_err(const struct reader *r, uint64_t off)
{
	char why[256];

	snprintf(why, sizeof(why), "%s", rv_errmsg());
	return refuse(r, off, why);
}

/*
 * A sidecar's text as a label: a decimal integer, white space around it,
 * -1 (no label) up to INT32_MAX.  Anything else is no label (a caption).
 */
static int
parse_label(const char *p, size_t n, int32_t *v)
{
	const char *e = p + n;
	int64_t x = 0;
	int neg = 0, digits = 0;

	while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	if (p < e && *p == '-') {
		neg = 1;
		p++;
	}
	for (; p < e && *p >= '0' && *p <= '9'; p++, digits++) {
		x = x * 10 + (*p - '0');
		if (x > INT32_MAX)
			return 0;
	}
	while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	if (p != e || digits == 0 || (neg && x != 1))
		return 0;
	*v = neg ? -1 : (int32_t)x;
	return 1;
}

static int
space(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

/*
 * Integers separated by commas or white space, "3 7", "3,7", or in
 * brackets, "[3, 7]", as multi-label sidecars hold them.  The count (the
 * first in *v), or -1 if a token is no integer.
 */
static long
int_list(const char *p, size_t n, int32_t *v)
{
	const char *e = p + n;
	long count = 0;

	while (p < e && space(*p))
		p++;
	while (e > p && space(e[-1]))
		e--;
	if (p < e && *p == '[') {
		if (e[-1] != ']')
			return -1;
		p++;
		e--;
	}
	while (p < e) {
		const char *t;
		int32_t x;

		while (p < e && (space(*p) || *p == ','))
			p++;
		if (p == e)
			break;
		for (t = p; t < e && !space(*t) && *t != ','; t++)
			continue;
		if (!parse_label(p, (size_t)(t - p), &x))
			return -1;
		if (count++ == 0)
			*v = x;
		p = t;
	}
	return count;
}

/* m->snip: the text, sanitized, cut to SNIP bytes. */
static void
set_snip(struct member *m, const char *p, size_t n)
{
	char buf[4 * SNIP + 8];

	while (n > 0 && space(*p)) {
		p++;
		n--;
	}
	while (n > 0 && space(p[n - 1]))
		n--;
	src_sanitize(buf, sizeof(buf), p, n < SNIP ? n : SNIP);
	if (n > SNIP)
		strcat(buf, "...");
	free(m->snip);
	m->snip = xstrdup(buf);
}

/* A label or a list of them, as a .cls holds it. */
static void
list_label(struct member *m, const char *p, size_t n)
{
	long k = int_list(p, n, &m->label);

	if (k == 1) {
		m->lab = L_OK;
		return;
	}
	/* "[]": no class, said explicitly. */
	m->lab = k == 0 ? L_NONE : k > 1 ? L_MULTI : L_BAD;
	if (m->lab != L_NONE)
		set_snip(m, p, n);
}

/*
 * A JSON sidecar's "label" (else "cls") member of the top-level object.
 * A scan, not a parser: strings and nesting are followed, so a "label"
 * deeper down (a detection's, say) is metadata, not the sample's label.
 * Its value: an integer, or a list of them (a single one is that label),
 * or null (no label); a string, a float or anything else is a label that
 * is no class number.  Without either key, a document that is a bare
 * integer or list is read as a .cls; anything else is metadata.
 */
static int
json_key(struct member *m, const char *p, size_t n, const char *key)
{
	size_t k = strlen(key), i = 0, j, end;
	int depth = 0;

	while (i < n) {
		if (p[i] == '{' || p[i] == '[')
			depth++;
		else if (p[i] == '}' || p[i] == ']')
			depth--;
		if (p[i] != '"') {
			i++;
			continue;
		}
		for (j = i + 1; j < n && p[j] != '"'; j += p[j] == '\\' ? 2 : 1)
			continue;
		if (j >= n)
			return 0;
		if (depth != 1 || j - i - 1 != k || memcmp(p + i + 1, key,
		    k) != 0) {
			i = j + 1;
			continue;
		}
		for (i = j + 1; i < n && space(p[i]); i++)
			continue;
		if (i >= n || p[i] != ':')
			continue;	/* a value, not a key */
		for (j = i + 1; j < n && space(p[j]); j++)
			continue;
		if (n - j >= 4 && memcmp(p + j, "null", 4) == 0) {
			m->lab = L_NONE;
			return 1;
		}
		if (j < n && p[j] == '[') {
			for (end = j; end < n && p[end] != ']'; end++)
				continue;
			list_label(m, p + j, end < n ? end + 1 - j : n - j);
			return 1;
		}
		for (end = j; end < n && p[end] != ',' && p[end] != '}' &&
		    !space(p[end]); end++)
			continue;
		if (end > j && parse_label(p + j, end - j, &m->label)) {
			m->lab = L_OK;
			return 1;
		}
		/* A string runs to its closing quote. */
		if (j < n && p[j] == '"')
			for (end = j + 1; end < n && p[end] != '"'; end++)
				continue;
		m->lab = L_BAD;
		set_snip(m, p + j, (end < n ? end + 1 : n) - j);
		return 1;
	}
	return 0;
}

static void
json_label(struct member *m, const char *p, size_t n)
{
	size_t i = 0;

	if (json_key(m, p, n, "label") || json_key(m, p, n, "cls"))
		return;
	while (i < n && space(p[i]))
		i++;
	if (i < n && (p[i] == '[' || p[i] == '-' || (p[i] >= '0' &&
	    p[i] <= '9')))
		list_label(m, p, n);
}

/*
 * The bytes an image member may hold once its header is read: those of
 * its own pixels, BYTES_PER_PIXEL each, and SLACK (a 300 MB member that
 * says it is an 8x8 PNG is no image).  Asked of the first bytes read
 * (the header may be late: a JPEG's comes after its metadata), at each
 * doubling from PREALLOC on, so a member of the usual size pays nothing.
 * Returns max when the header cannot be read yet.
 */
static size_t
own_cap(struct reader *r, size_t max, uint32_t *h, uint32_t *w)
{
	int dt;
	uint32_t ch;
	uint64_t cap;

	if (!r->codec)
		r->codec = rv_codec_new();
	if (rv_codec_info(r->codec, r->buf.data, r->buf.len, &dt, h, w,
	    &ch) < 0)
		return max;
	cap = (uint64_t)*h * *w;
	if (cap > (uint64_t)(max - SLACK) / BYTES_PER_PIXEL)
		return max;
	cap = cap * BYTES_PER_PIXEL + SLACK;
	return cap < max ? (size_t)cap : max;
}

/* Why a member over max bytes was left: 1. */
static int
too_big(struct reader *r, size_t max, uint32_t h, uint32_t w)
{
	if (h == 0)
		snprintf(r->err, sizeof(r->err), "member is over the "
		    "%zu-byte limit for an image (%d bytes a pixel of the "
		    "pixel limit)", max, BYTES_PER_PIXEL);
	else
		snprintf(r->err, sizeof(r->err), "member holds over %zu "
		    "bytes, too many for the %" PRIu32 "x%" PRIu32 " image "
		    "its header says (%d bytes a pixel and %zu MiB)", max, w,
		    h, BYTES_PER_PIXEL, SLACK >> 20);
	return 1;
}

/*
 * Read the current member's data into r->buf, at most max bytes.  With
 * magic, the first MAGIC bytes must be an image's, else the rest is left
 * unread (libarchive skips it) and only those are kept; past PREALLOC,
 * own_cap() bounds it by its own header's size.  Returns 0, 1 if the
 * member is bigger than max (r->err says why), 2 if it has no image
 * magic, or a negative libarchive status (ARCHIVE_FATAL: the archive is
 * spent) with r->err set.
 */
static int
read_member(struct reader *r, struct archive_entry *e, size_t max,
    int magic)
{
	int64_t size = archive_entry_size_is_set(e) ?
	    archive_entry_size(e) : -1;
	size_t check = magic ? PREALLOC : SIZE_MAX;
	uint32_t h = 0, w = 0;

	r->buf.len = 0;
	if (size > (int64_t)max)
		return too_big(r, max, 0, 0);
	/* The header's size is a claim: a 512-byte tar header saying 1 GiB
	 * must not cost 1 GiB.  Beyond PREALLOC the buffer grows with the
	 * data that actually arrives. */
	if (size > 0)
		rv_buf_reserve(&r->buf, size < (int64_t)PREALLOC ?
		    (size_t)size : PREALLOC);
	for (;;) {
		la_ssize_t got;

		if (r->buf.cap - r->buf.len < 4096)
			rv_buf_reserve(&r->buf, 65536);
		got = archive_read_data(r->a, r->buf.data + r->buf.len,
		    r->buf.cap - r->buf.len);
		if (got < 0) {
			la_err(r);
			return got == ARCHIVE_FATAL ? ARCHIVE_FATAL :
			    ARCHIVE_FAILED;
		}
		if (got == 0)
			break;
		r->buf.len += (size_t)got;
		if (r->buf.len >= check && check < max) {
			size_t own = own_cap(r, max, &h, &w);

			check = own < max ? SIZE_MAX : check * 2;
			if (own == max)
				h = w = 0;
			max = own;
		}
		if (r->buf.len > max)
			return too_big(r, max, h, w);
		if (magic && r->buf.len >= MAGIC) {
			magic = 0;
			if (!image_magic(r->buf.data, r->buf.len)) {
				r->buf.len = MAGIC;
				return 2;
			}
		}
	}
	if (size >= 0 && r->buf.len != (size_t)size) {
		snprintf(r->err, sizeof(r->err), "member holds %zu bytes, "
		    "its header says %" PRId64, r->buf.len, size);
		return ARCHIVE_FAILED;
	}
	return 0;
}

static struct member *
new_member(struct reader *r)
{
	struct member *m;

	if (r->nm == r->capm) {
		r->capm = r->capm ? r->capm * 2 : 256;
		r->m = xreallocarray(r->m, r->capm, sizeof(*r->m));
	}
	m = &r->m[r->nm];
	memset(m, 0, sizeof(*m));
	m->seq = r->nm++;
	return m;
}

/* A member's name: leading "./" and "/" dropped; its base and first
 * dot (NULL for a hidden file or one with no extension). */
static const char *
member_name(const char *path, const char **base, const char **dot)
{
	const char *p = path;

	while (p[0] == '.' && p[1] == '/')
		p += 2;
	while (p[0] == '/')
		p++;
	*base = strrchr(p, '/');
	*base = *base ? *base + 1 : p;
	*dot = (*base)[0] == '.' ? NULL : strchr(*base, '.');
	return p;
}

/* Note that a member is ignored, and why. */
static void
ignore(struct reader *r, const char *path, const char *why)
{
	char *q = src_sanitized(path);

	src_ignore(r->c, "'%s': '%s': %s (ignored)", r->s->name, q, why);
	free(q);
}

/*
 * n more bytes of images held by the dataset: refused, naming the input,
 * past the bound on them all (--max-held).
 */
static int
hold(struct reader *r, size_t n)
{
	uint64_t max = r->max_held;

	if (!r->c->held)
		return 0;
	if (n > max || *r->c->held > max - n) {
		int k = max >= (uint64_t)1 << 30 ? 30 : max >= 1 << 20 ? 20 :
		    10;

		return rv_seterr("'%s': byte %" PRIu64 ": the archives' "
		    "images held in memory would pass %.1f %s, %s (rv-decode "
		    "holds the images of a compressed archive, of a pipe, or "
		    "all under --hold, encoded), after %zu samples",
		    r->s->name, raw_at(r),
		    (double)max / (double)((uint64_t)1 << k), k == 30 ?
		    "GiB" : k == 20 ? "MiB" : "KiB", r->c->o->max_held ?
		    "the bound --max-held set" : "half the memory "
		    "(--max-held moves the bound)", r->images);
	}
	*r->c->held += n;
	r->s->mem += n;
	return 0;
}

/*
 * Do the n bytes of p lie in the input at raw offset off, as stored?  Then
 * a fetch can read them there: compared, not assumed, so that a member
 * libarchive decodes (compressed in a zip, sparse in a tar) is never
 * taken for its stored bytes.  A read that fails is a no: the member is
 * then held as before.
 */
static int
in_file(struct reader *r, uint64_t off, const unsigned char *p, size_t n)
{
	size_t done = 0;

	if (off > (uint64_t)r->sb.st_size ||
	    (uint64_t)r->sb.st_size - off < n)
		return 0;
	if (!r->cmp)
		r->cmp = xmalloc(CMP_CHUNK);
	while (done < n) {
		size_t k = n - done < CMP_CHUNK ? n - done : CMP_CHUNK;

		if (rv_pread_full(r->fd, r->cmp, k, (off_t)(off + done)) < 0 ||
		    memcmp(r->cmp, p + done, k) != 0)
			return 0;
		done += k;
	}
	return 1;
}

/*
 * Of a member that may be read by offset (the first archive of a file,
 * not --hold): is its data its bytes as stored in the file from raw
 * offset at, which a fetch can read there unchecked?  A tar or cpio
 * member, not sparse, not encrypted, that lies within the file.  Its
 * data is then never read through libarchive, which seeks past it.
 */
static int
stored(struct reader *r, struct archive_entry *e, uint64_t at)
{
	int fmt = archive_format(r->a) & ARCHIVE_FORMAT_BASE_MASK;
	int64_t size;

	if ((fmt != ARCHIVE_FORMAT_TAR &&
	    fmt != ARCHIVE_FORMAT_CPIO) || !archive_entry_size_is_set(e) ||
	    archive_entry_sparse_count(e) > 0 ||
	    archive_entry_is_encrypted(e))
		return 0;
	size = archive_entry_size(e);
	return size >= 0 && (uint64_t)size <= SRC_MAX_MEMBER &&
	    at <= (uint64_t)r->sb.st_size &&
	    (uint64_t)size <= (uint64_t)r->sb.st_size - at;
}

/* r->buf: the first n bytes of a stored member at raw offset at. */
static int
head_to(struct reader *r, uint64_t at, size_t n)
{
	if (r->buf.len >= n)
		return 0;
	rv_buf_reserve(&r->buf, n - r->buf.len);
	if (rv_pread_full(r->fd, r->buf.data + r->buf.len, n - r->buf.len,
	    (off_t)(at + r->buf.len)) < 0) {
		snprintf(r->err, sizeof(r->err), "%s", rv_errmsg());
		return -1;
	}
	r->buf.len = n;
	return 0;
}

/*
 * read_member() for a stored member of size bytes at raw offset at: its
 * checks, on what they read of it.  The first MAGIC bytes must be an
 * image's (else they alone are kept, 2); past PREALLOC its own header
 * bounds it (own_cap), at each doubling; over max bytes it is refused
 * (1).  r->buf holds what was read, not the member: 0 leaves the member
 * to be read by offset.
 */
static int
read_head(struct reader *r, uint64_t at, size_t size, size_t max)
{
	size_t check = PREALLOC;
	uint32_t h = 0, w = 0;

	r->buf.len = 0;
	if (size > max)
		return too_big(r, max, 0, 0);
	if (head_to(r, at, size < MAGIC ? size : MAGIC) < 0)
		return ARCHIVE_FAILED;
	if (r->buf.len >= MAGIC && !image_magic(r->buf.data, r->buf.len)) {
		r->buf.len = MAGIC;
		return 2;
	}
	while (size > check && check < max) {
		size_t own;

		if (head_to(r, at, check) < 0)
			return ARCHIVE_FAILED;
		own = own_cap(r, max, &h, &w);
		check = own < max ? SIZE_MAX : check * 2;
		if (own == max)
			h = w = 0;
		max = own;
		if (size > max)
			return too_big(r, max, h, w);
	}
	return 0;
}

/*
 * One regular member: find its key and role, read what the role needs.
 * Returns 0, 1 when the archive is spent (truncated), -1 to fail.
 */
static int
take_member(struct reader *r, struct archive_entry *e)
{
	const char *path = archive_entry_pathname(e), *p, *base, *dot, *last;
	struct member *m;
	size_t max = 0;
	uint64_t at = 0;
	char *q;
	int st, whole, offable, direct;

	if (!path || !*path)
		return src_skip(r->c, "'%s': member %zu: unreadable name",
		    r->s->name, r->nm);
	p = member_name(path, &base, &dot);
	src_tally(&r->tally, p, dot && src_image_ext(strrchr(base, '.') +
	    1));
	/* As in WebDataset, a name needs a stem and an extension; hidden
	 * files (macOS's ._x.jpg among them) are not data. */
	if (!dot) {
		ignore(r, path, base[0] == '.' ? "hidden" : "no extension");
		return 0;
	}
	last = strrchr(base, '.');
	m = new_member(r);
	m->key = xstrndup(p, (size_t)(dot - p));
	m->path = xstrdup(path);
	m->primary = dot == last;
	if (src_image_ext(last + 1)) {
		m->role = R_IMAGE;
		max = image_cap(r->c);
		r->images += m->primary;
	} else if (src_lower_eq(dot + 1, "cls")) {
		m->role = R_CLS;
		max = MAX_JSON;
	} else if (src_lower_eq(dot + 1, "txt")) {
		m->role = R_TXT;
		max = MAX_TXT;
	} else if (src_lower_eq(dot + 1, "json")) {
		m->role = R_JSON;
		max = MAX_JSON;
	} else {
		m->role = src_unsupported_ext(last + 1) ? R_UNSUP : R_OTHER;
		return 0;	/* read on: libarchive skips its data */
	}
	if (m->role == R_IMAGE && r->c->list &&
	    !(archive_entry_size_is_set(e) &&
	    archive_entry_size(e) > (int64_t)max))
		return 0;	/* listing: libarchive seeks past the bytes */
	/* where the member's bytes begin, if they lie in the file as
	 * stored: libarchive has read its header and no byte of it */
	offable = m->role == R_IMAGE && r->fdmode && !r->c->o->hold;
	if (offable)
		at = raw_at(r);
	direct = offable && stored(r, e, at);
	if (direct)
		st = read_head(r, at, (size_t)archive_entry_size(e), max);
	else
		st = read_member(r, e, max, m->role == R_IMAGE);
	whole = st == 0;
	if (st == 1 && m->role != R_IMAGE) {
		m->role = R_OTHER;	/* too long to be a label */
		return 0;
	}
	/* No image's magic: its first bytes are the sample, which the
	 * decoder refuses (the listing counted it: it stays a sample). */
	if (st == 2)
		st = 0;
	if (st != 0) {
		/* Compressed data that is corrupt: no end to read on from. */
		if (st == ARCHIVE_FATAL && broken(r))
			return refuse(r, unz_pos(r->unz), unz_error(r->unz));
		if (st == ARCHIVE_FATAL)
			snprintf(r->err + strlen(r->err), sizeof(r->err) -
			    strlen(r->err), " at byte %" PRIu64 " of the "
			    "input; kept the members before it", raw_at(r));
		r->spent |= st == ARCHIVE_FATAL;
		q = src_sanitized(path);
		m->bad = 1;
		st = src_bad(r->c, "'%s': '%s': %s", r->s->name, q, r->err) <
		    0 ? -1 : st == ARCHIVE_FATAL;
		free(q);
		return st;
	}
	if (offable && whole && (direct ||
	    in_file(r, at, r->buf.data, r->buf.len))) {
		m->byoff = BY_FILE;
		m->off = at;
		m->len = direct ? (size_t)archive_entry_size(e) : r->buf.len;
		r->byoff++;
	} else if (m->role == R_IMAGE && r->c->spill) {
		/* written to the cache directory, not held */
		if (src_spill_put(r->c->spill, r->buf.data, r->buf.len,
		    &m->off) < 0) {
			char why[256];

			snprintf(why, sizeof(why), "%s", rv_errmsg());
			return rv_seterr("'%s': byte %" PRIu64 ": %s",
			    r->s->name, raw_at(r), why);
		}
		m->byoff = BY_SPILL;
		m->len = r->buf.len;
		r->ar->spill = r->c->spill;
	} else if (m->role == R_IMAGE) {
		if (hold(r, r->buf.len) < 0)
			return -1;
		m->len = r->buf.len;
		m->data = arena_take(r->ar, &r->buf);
	} else if (m->role == R_JSON) {
		json_label(m, (char *)r->buf.data, r->buf.len);
	} else if (m->role == R_CLS) {
		list_label(m, (char *)r->buf.data, r->buf.len);
	} else if (parse_label((char *)r->buf.data, r->buf.len, &m->label)) {
		m->lab = L_OK;	/* a .txt: a number, else a caption */
	}
	return 0;
}

/*
 * A member that is no regular file.  A directory is structure, not data.
 * A hard or symbolic link named as an image is a sample whose bytes are
 * its target's, found once every member is read (resolve_links); as in
 * the folder input, its own name gives its key and label.  A link named
 * otherwise, or a device, is ignored; a device named as an image is a
 * sample lost.
 */
static int
take_other(struct reader *r, struct archive_entry *e)
{
	const char *path = archive_entry_pathname(e), *p, *base, *dot, *why;
	const char *hard = archive_entry_hardlink(e);
	unsigned type = archive_entry_filetype(e);
	const char *sym = type == AE_IFLNK ? archive_entry_symlink(e) : NULL;
	struct member *m;
	char *q;
	int st;

	if (type == AE_IFDIR || !path || !*path)
		return 0;
	if (hard)
		why = "hard link";
	else if (type == AE_IFLNK)
		why = "symbolic link";
	else
		why = "not a regular file";
	p = member_name(path, &base, &dot);
	src_tally(&r->tally, p, dot && src_image_ext(strrchr(base, '.') +
	    1));
	if (!dot || !src_image_ext(strrchr(base, '.') + 1)) {
		ignore(r, path, why);
		return 0;
	}
	r->images += dot == strrchr(base, '.');
	if ((hard && *hard) || (sym && *sym)) {
		m = new_member(r);
		m->key = xstrndup(p, (size_t)(dot - p));
		m->path = xstrdup(path);
		m->primary = dot == strrchr(base, '.');
		m->role = R_IMAGE;
		m->ltype = hard ? LK_HARD : LK_SYM;
		m->link = xstrdup(hard ? hard : sym);
		return 0;
	}
	q = src_sanitized(path);
	st = src_skip(r->c, "'%s': '%s': %s", r->s->name, q, why);
	free(q);
	return st;
}

/*
 * path taken from the directory dir (dlen bytes; "" for the archive's
 * root), with "./", "//" and "." dropped and ".." applied: a fresh
 * string, or NULL if it climbs out of the archive.
 */
static char *
norm_path(const char *dir, size_t dlen, const char *path)
{
	size_t n = dlen + strlen(path) + 2, o = 0;
	char *in = xmalloc(n), *out = xmalloc(n);
	const char *p = in, *q;

	memcpy(in, dir, dlen);
	in[dlen] = '/';
	memcpy(in + dlen + 1, path, strlen(path) + 1);
	while (*p) {
		while (*p == '/')
			p++;
		for (q = p; *q && *q != '/'; q++)
			continue;
		if (q == p || (q - p == 1 && p[0] == '.')) {
			p = q;
			continue;
		}
		if (q - p == 2 && p[0] == '.' && p[1] == '.') {
			if (o == 0) {
				free(in);
				free(out);
				return NULL;
			}
			while (o > 0 && out[o - 1] != '/')
				o--;
			if (o > 0)
				o--;
		} else {
			if (o > 0)
				out[o++] = '/';
			memcpy(out + o, p, (size_t)(q - p));
			o += (size_t)(q - p);
		}
		p = q;
	}
	out[o] = '\0';
	free(in);
	return out;
}

struct pidx {
	char *path;		/* normalized, owned */
	size_t i;		/* member index (= its seq, before sorting) */
};

static int
cmp_pidx(const void *a, const void *b)
{
	const struct pidx *x = a, *y = b;
	int c = strcmp(x->path, y->path);

	if (c)
		return c;
	return x->i < y->i ? -1 : x->i > y->i;
}

/*
 * The member named path: of those of that name, the last one before
 * member before (a hard link names an earlier member: tar's rule when a
 * name is reused), else the first after it.  NULL if none.
 */
static struct member *
find_path(struct reader *r, const struct pidx *v, size_t n,
    const char *path, size_t before)
{
	size_t lo = 0, hi = n, first, end;

	/* Three binary searches, never a walk over the members of that
	 * name: an archive may hold 40,000 of one name and as many links
	 * to it. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(v[mid].path, path) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == n || strcmp(v[lo].path, path) != 0)
		return NULL;
	first = lo;
	for (hi = n; lo < hi;) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(v[mid].path, path) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	end = lo;
	/* [first, end) is in member order: the first at or after before. */
	for (lo = first, hi = end; lo < hi;) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].i < before)
			lo = mid + 1;
		else
			hi = mid;
	}
	return &r->m[v[lo > first ? lo - 1 : first].i];
}

/*
 * Give every link member its target's bytes (in a listing, none: only
 * that the target is an image member).  A target is followed through
 * links to a regular member; a symbolic link's target is taken from its
 * own directory.  A link to no member of the archive, to an unreadable
 * one or to one that is no image is a sample lost.  No bytes are copied:
 * the link's sample points at its target's.
 */
static int
resolve_links(struct reader *r)
{
	struct pidx *v;
	size_t i, nl = 0, nv = 0;
	int st = 0;

	for (i = 0; i < r->nm; i++)
		nl += r->m[i].ltype != LK_NONE;
	if (nl == 0)
		return 0;
	v = xcalloc(r->nm, sizeof(*v));
	/* a member outside the archive (../x) or at its root is no target */
	for (i = 0; i < r->nm; i++) {
		char *p = norm_path("", 0, r->m[i].path);

		if (p == NULL || *p == '\0') {
			free(p);
			continue;
		}
		v[nv].path = p;
		v[nv++].i = i;
	}
	qsort(v, nv, sizeof(*v), cmp_pidx);
	for (i = 0; i < r->nm && st == 0; i++) {
		struct member *m = &r->m[i], *t = m;
		const char *why = NULL;
		int hops = 0;
		char *q, *qt;

		if (m->ltype == LK_NONE)
			continue;
		while (t && t->ltype != LK_NONE && hops++ < MAX_HOPS) {
			char *own = norm_path("", 0, t->path), *to = NULL;
			const char *slash = own ? strrchr(own, '/') : NULL;

			if (t->ltype == LK_HARD)
				to = norm_path("", 0, t->link);
			else if (own && t->link[0] != '/')
				to = norm_path(own, slash ? (size_t)(slash -
				    own) : 0, t->link);
			t = to && *to ? find_path(r, v, nv, to, t->ltype ==
			    LK_HARD ? t->seq : SIZE_MAX) : NULL;
			free(own);
			free(to);
		}
		if (!t)
			why = "no member of the archive";
		else if (t->ltype != LK_NONE)
			why = "a loop or a chain of more than 16 links";
		else if (t->bad)
			why = "an unreadable member";
		else if (t->role != R_IMAGE)
			why = "no image member";
		if (!why) {
			m->data = t->data;
			m->len = t->len;
			m->off = t->off;
			m->byoff = t->byoff;
			continue;
		}
		m->bad = 1;
		q = src_sanitized(m->path);
		qt = src_sanitized(m->link);
		if (src_bad(r->c, "'%s': '%s': %s link to '%s', %s",
		    r->s->name, q, m->ltype == LK_HARD ? "hard" : "symbolic",
		    qt, why) < 0)
			st = -1;
		free(q);
		free(qt);
	}
	for (i = 0; i < nv; i++)
		free(v[i].path);
	free(v);
	return st;
}

/* Does a 7-zip archive start where this archive was to? */
static int
seven_at(struct reader *r)
{
	unsigned char m[6];

	return unz_kind(r->unz) == UNZ_NONE &&
	    unz_peek(r->unz, r->base, m, sizeof(m)) == (ssize_t)sizeof(m) &&
	    memcmp(m, SEVEN_MAGIC, 6) == 0;
}

/* The archive cannot be read at all: say what we looked for. */
static int
no_archive(struct reader *r)
{
	char why[sizeof(r->err) + 64];

	if (broken(r))
		return r->parts > 1 ? refuse(r, unz_pos(r->unz),
		    unz_error(r->unz)) : rv_seterr("'%s': %s, before any "
		    "member could be read", r->s->name, unz_error(r->unz));
	if (r->parts > 1) {
		snprintf(why, sizeof(why), "no archive starts there "
		    "(libarchive: %s)", la_err(r));
		return refuse(r, r->base, why);
	}
	/* libarchive's ARCHIVE_ERRNO_FILE_FORMAT is private: EFTYPE where
	 * the system has it, else EILSEQ. */
#ifdef EFTYPE
	if (archive_errno(r->a) == EFTYPE)
#else
	if (archive_errno(r->a) == EILSEQ)
#endif
		return rv_seterr("'%s': not a directory, archive, IDX file or "
		    "CIFAR batch (libarchive: %s)", r->s->name, la_err(r));
	/* A compressed archive cut or damaged before its first member
	 * (bzip2 decodes whole blocks of up to 900 kB): nothing to keep. */
	return rv_seterr("'%s': %s, before any member could be read",
	    r->s->name, la_err(r));
}

static la_ssize_t
unz_cb(struct archive *a, void *cd, const void **out)
{
	struct reader *r = cd;
	ssize_t k = unz_read(r->unz, out);

	if (k < 0) {
		archive_set_error(a, EIO, "%s", unz_error(r->unz));
		return ARCHIVE_FATAL;
	}
	return k;
}

static int
all_zero(const unsigned char *p, size_t n)
{
	while (n > 0 && p[n - 1] == 0)
		n--;
	return n == 0;
}

static uint32_t
le16(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8;
}

static uint64_t
le64(const unsigned char *p)
{
	uint64_t v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/*
 * Do the 8 bytes at p begin an archive of another format than tar (a zip,
 * cpio in its four forms, 7-zip, ar, RAR)?  No tar header begins so that
 * is not one: only a block that failed as a header is asked.
 */
static int
other_magic(const unsigned char *p)
{
	static const char *const magic[] = {
		"PK\3\4", "PK\5\6", "070701", "070702", "070707",
		SEVEN_MAGIC, "!<arch>\n", "Rar!\x1a\x07",
	};
	size_t i;

	for (i = 0; i < sizeof(magic) / sizeof(magic[0]); i++)
		if (memcmp(p, magic[i], strlen(magic[i])) == 0)
			return 1;
	/* binary cpio, either byte order */
	return (p[0] == 0xc7 && p[1] == 0x71) || (p[0] == 0x71 &&
	    p[1] == 0xc7);
}

/*
 * A tar block that is no header (retry: read whole; else a short block
 * at the end, left unread), in a tar that is not compressed (a compressed
 * run is decoded through to its end): the next archive starts there when
 * the block begins a compressed stream or a zip (a tar cut between
 * members may lack its end-of-archive blocks), or when the header was
 * looked for from the end-of-archive blocks (1024 zero bytes from where
 * the last member's data ended: no member's data is ever read as
 * headers).  What starts there may be no archive: the input is refused
 * then.
 */
static int
boundary(struct reader *r, int retry)
{
	unsigned char b[1024];
	uint64_t x = raw_at(r), hp;
	ssize_t k;

	if (archive_filter_count(r->a) != 1 ||
	    (archive_format(r->a) & ARCHIVE_FORMAT_BASE_MASK) !=
	    ARCHIVE_FORMAT_TAR || in_run(r))
		return 0;
	if (retry)
		x -= 512;
	k = unz_peek(r->unz, x, b, 16);
	if (k >= 8 && (unz_detect(b, (size_t)k) != UNZ_NONE ||
	    other_magic(b)))
		goto next;
	hp = r->base + (uint64_t)archive_read_header_position(r->a);
	if (x < hp + sizeof(b) || unz_peek(r->unz, hp, b, sizeof(b)) !=
	    (ssize_t)sizeof(b) || !all_zero(b, sizeof(b)))
		return 0;
next:
	r->next = x;
	r->has_next = 1;
	return 1;
}

/* Is a byte that is not zero in the input from raw offset off on?  1 or
 * 0; -1 when it cannot be read (a failure is no answer: an input whose
 * rest cannot be read is not taken to end there). */
static int
data_from(struct reader *r, uint64_t off)
{
	unsigned char *b;
	ssize_t k;
	int data = 0;

	/* nothing there: the usual end of a file, told without a read (a
	 * listing of 8,192 tars reads no padding) */
	if ((k = unz_ends_before(r->unz, off + 1)) != 0)
		return k < 0 ? -1 : 0;
	b = xmalloc(READ_PEEK);
	while (!data && (k = unz_peek(r->unz, off, b, READ_PEEK)) > 0) {
		data = !all_zero(b, (size_t)k);
		off += (uint64_t)k;
	}
	free(b);
	return !data && k < 0 ? -1 : data;
}

/*
 * The end of a zip read as a stream, from at (where libarchive stopped,
 * at its central directory): past the directory's headers, the zip64
 * records and the end record with its comment.
 */
static uint64_t
zip_end(struct reader *r, uint64_t at)
{
	unsigned char q[56];

	for (;;) {
		ssize_t n = unz_peek(r->unz, at, q, sizeof(q));
		uint64_t k;

		if (n >= 46 && memcmp(q, "PK\1\2", 4) == 0)
			k = 46 + (uint64_t)le16(q + 28) + le16(q + 30) +
			    le16(q + 32);
		else if (n >= 56 && memcmp(q, "PK\6\6", 4) == 0)
			/* The record's size counts what follows its first 12
			 * bytes; a claim near 2^64 would wrap the sum (and
			 * leave at where it is, for ever). */
			k = le64(q + 4) < 44 || le64(q + 4) > MAX_RECORD ? 0 :
			    le64(q + 4) + 12;
		else if (n >= 20 && memcmp(q, "PK\6\7", 4) == 0)
			k = 20;
		else if (n >= 22 && memcmp(q, "PK\5\6", 4) == 0)
			return at + 22 + le16(q + 20);
		else
			return at;
		if (k == 0 || k > MAX_RECORD)
			return at;	/* no record is this big */
		at += k;
	}
}

static uint32_t
le32(const unsigned char *p)
{
	return le16(p) | le16(p + 2) << 16;
}

/*
 * Does the file end with a zip's end record, and is it then one zip from
 * its first byte to its last, so that libarchive's seeking reader, which
 * reads the central directory found at the file's end, reads every member
 * of it and nothing else?  0: no end record ends the file; 1: one does,
 * and the directory it names (through the zip64 records when it says so)
 * lies where it says, right before the end records, so nothing precedes
 * the zip; 2: one does, but something precedes the zip (cat a.zip b.zip
 * has a's members before b's directory, which names only b's; a
 * self-extracting zip has a program).  Only a 1 is read by seeking; a zip
 * is otherwise read as a stream, from its first local header on, as on a
 * pipe.
 */
static int
zip_tail(struct reader *r)
{
	unsigned char *p, q[56];
	struct stat st;
	uint64_t size, eocd = 0, cdoff, cdlen, z64;
	size_t n, i;
	int found = 0;

	if (fstat(r->fd, &st) < 0 || st.st_size < 22)
		return 0;
	size = (uint64_t)st.st_size;
	n = size < 22 + 65535 ? (size_t)size : 22 + 65535;
	p = xmalloc(n);
	if (unz_peek(r->unz, size - n, p, n) == (ssize_t)n)
		for (i = n - 22 + 1; i-- > 0 && !found;)
			if (memcmp(p + i, "PK\5\6", 4) == 0 &&
			    i + 22 + le16(p + i + 20) == n) {
				found = 1;
				eocd = size - n + i;
				cdlen = le32(p + i + 12);
				cdoff = le32(p + i + 16);
			}
	free(p);
	if (!found)
		return 0;
	if (cdlen != 0xffffffff && cdoff != 0xffffffff)
		return cdoff + cdlen == eocd ? 1 : 2;
	/* zip64: the locator, 20 bytes before the end record, names the
	 * zip64 end record, which names the directory. */
	if (eocd < 20 || unz_peek(r->unz, eocd - 20, q, 20) != 20 ||
	    memcmp(q, "PK\6\7", 4) != 0)
		return 2;
	z64 = le64(q + 8);
	if (z64 > eocd - 20 || unz_peek(r->unz, z64, q, 56) != 56 ||
	    memcmp(q, "PK\6\6", 4) != 0)
		return 2;
	cdlen = le64(q + 40);
	cdoff = le64(q + 48);
	return cdlen <= z64 && cdoff == z64 - cdlen ? 1 : 2;
}

/*
 * Where a 7-zip archive that starts at the input's first byte ends: its
 * signature header says where its header is (after the packed streams),
 * and the header ends the archive.  0 if it says nothing sound.
 */
static uint64_t
seven_end(struct reader *r)
{
	unsigned char q[32];
	uint64_t off, len;

	if (unz_peek(r->unz, 0, q, sizeof(q)) != (ssize_t)sizeof(q) ||
	    memcmp(q, SEVEN_MAGIC, 6) != 0)
		return 0;
	off = le64(q + 12);
	len = le64(q + 20);
	if (off > ((uint64_t)1 << 62) || len > ((uint64_t)1 << 62))
		return 0;
	return 32 + off + len;
}

/* After a compressed run: what libarchive left of it (a format that
 * stops before the data's end, or an archive given up on as damaged)
 * must be padding; the next archive starts where the run ended. */
static int
run_end(struct reader *r, uint64_t *off)
{
	const void *p;
	ssize_t k;
	int data = 0;

	while (!data && (k = unz_read(r->unz, &p)) > 0)
		data = !all_zero(p, (size_t)k);
	if (!data && k < 0 && unz_state(r->unz) == UNZ_TRUNCATED)
		return r->spent ? 0 : src_skip(r->c, "'%s': %s at byte %"
		    PRIu64 " of the input; kept what came before",
		    r->s->name, unz_error(r->unz), unz_pos(r->unz));
	if (!data && k < 0)
		return refuse(r, unz_pos(r->unz), unz_error(r->unz));
	if (data && r->spent)
		return refuse(r, unz_pos(r->unz), "the archive in this "
		    "compressed stream is damaged, and the rest of the stream "
		    "cannot be read");
	if (data) {
		const char *fmt = archive_format_name(r->a);

		src_sanitize(r->err, sizeof(r->err), fmt ? fmt : "unknown",
		    strlen(fmt ? fmt : "unknown"));
		return rv_seterr("'%s': more data after the end of the "
		    "archive (%s) in its %s stream, which would go unread",
		    r->s->name, r->err, unz_name(unz_kind(r->unz)));
	}
	*off = unz_end(r->unz);
	return 1;
}

/*
 * Where the archive just read ended: 1 with *off where the next may
 * start (unz_start skips the zeros there and finds if one does), 0 when
 * it took the input to its end, -1 to refuse the input.
 */
static int
part_end(struct reader *r, uint64_t *off)
{
	int fmt = archive_format(r->a) & ARCHIVE_FORMAT_BASE_MASK, d;

	if (r->has_next) {
		*off = r->next;
		return 1;
	}
	if (in_run(r))
		return run_end(r, off);
	/* Given up on as damaged: kept only at the input's end (a cut). */
	if (r->spent) {
		if ((d = data_from(r, raw_at(r) + 512)) < 0)
			return refuse_err(r, raw_at(r));
		return d ? refuse(r, raw_at(r), "the archive is damaged "
		    "there") : 0;
	}
	if (archive_filter_count(r->a) > 1) {
		/* Compressed in a way libarchive decodes (lz4, lzip, .Z). */
		*off = raw_at(r);
		return 1;
	}
	if (fmt == ARCHIVE_FORMAT_EMPTY)
		return 0;	/* an empty file */
	if (fmt == ARCHIVE_FORMAT_TAR) {
		/* Read through to the end of the input, unless it stopped
		 * at a block too short to be a header: a short archive of
		 * another kind (a 461-byte 7-zip) may start there. */
		if ((d = data_from(r, raw_at(r))) < 0)
			return refuse_err(r, raw_at(r));
		*off = raw_at(r);
		return d;
	}
	if (fmt == ARCHIVE_FORMAT_ZIP) {
		if (r->fdmode)
			return 0;	/* zip_tail() said so */
		*off = zip_end(r, raw_at(r));
		return 1;
	}
	if (r->fdmode && fmt == ARCHIVE_FORMAT_7ZIP) {
		/* Read on after it, as after any other archive. */
		if ((*off = seven_end(r)) == 0)
			return refuse(r, 0, "a 7-zip archive whose end cannot "
			    "be found");
		return 1;
	}
	/* A RAR or ISO 9660 image in a file is read by seeking, and where
	 * it ends is not known: it must be the whole file (documented). */
	if (r->fdmode && (fmt == ARCHIVE_FORMAT_RAR ||
	    fmt == ARCHIVE_FORMAT_RAR_V5 || fmt == ARCHIVE_FORMAT_ISO9660))
		return 0;
	/* cpio, ar and the rest are read in order, in a file as on a pipe:
	 * the next archive starts where the reader stopped.  A reader that
	 * stopped past the input's end (its last member said to be longer
	 * than what is left) met a cut: nothing follows to be lost. */
	*off = raw_at(r);
	if ((d = unz_ends_before(r->unz, *off)) < 0)
		return refuse_err(r, *off);
	if (d)
		return src_skip(r->c, "'%s': archive cut short: its reader "
		    "stopped at byte %" PRIu64 ", past the input's end; kept "
		    "what came before", r->s->name, *off) < 0 ? -1 : 0;
	return 1;
}

/* Read every member of the archive.  Returns 0 or -1. */
static int
read_all(struct reader *r)
{
	struct archive_entry *e;
	int retries = 0;
	char last[sizeof(r->err)] = "";

	for (;;) {
		int st = archive_read_next_header(r->a, &e);

		if (st == ARCHIVE_EOF)
			return 0;
		if (st == ARCHIVE_FATAL) {
			if (broken(r))
				return refuse(r, unz_pos(r->unz),
				    unz_error(r->unz));
			if (boundary(r, 0))
				return 0;
			/* Nothing read of it: no archive, unless a later one
			 * cut short at the end of the input. */
			if (r->part_entries == 0 && !(r->parts > 1 &&
			    !r->fdmode && unz_state(r->unz) == UNZ_TRUNCATED))
				return no_archive(r);
			r->spent = 1;
			return src_skip(r->c, "'%s': %s at byte %" PRIu64
			    " of the input, after %zu members; kept what came "
			    "before", r->s->name, la_err(r), raw_at(r),
			    r->entries);
		}
		if (st == ARCHIVE_RETRY || st == ARCHIVE_FAILED) {
			uint64_t at;

			if (boundary(r, 1))
				return 0;
			/* A damaged tar header is retried a block at a
			 * time until a good one: one member lost, one
			 * warning for the run of the same message. */
			la_err(r);
			at = in_run(r) ? unz_pos(r->unz) : r->base +
			    (uint64_t)archive_read_header_position(r->a);
			if ((retries == 0 || strcmp(last, r->err) != 0) &&
			    src_skip(r->c, "'%s': %s at byte %" PRIu64
			    "; read on at the next good header", r->s->name,
			    r->err, at) < 0)
				return -1;
			memcpy(last, r->err, sizeof(last));
			/* No good header within the largest member taken:
			 * the blocks since are no tar. */
			if ((uint64_t)++retries * 512 > image_cap(r->c) +
			    (uint64_t)MAX_RETRY * 512)
				return refuse(r, raw_at(r), "too damaged (no "
				    "good tar header in the largest member's "
				    "size)");
			continue;
		}
		retries = 0;
		last[0] = '\0';
		r->entries++;
		r->part_entries++;
		/* Links, directories and devices are not images (a hard
		 * link that carries data, as pax may write, is a file). */
		if (archive_entry_filetype(e) != AE_IFREG ||
		    (archive_entry_hardlink(e) != NULL &&
		    !(archive_entry_size_is_set(e) &&
		    archive_entry_size(e) > 0))) {
			if (take_other(r, e) < 0)
				return -1;
			continue;
		}
		if ((st = take_member(r, e)) != 0)
			return st < 0 ? -1 : 0;
	}
}

/*
 * What libarchive may read, by name: never its _all, which lets the data
 * choose an external program (an input that begins "LRZI" would have it
 * run lrzip from PATH).  A filter is taken only where libarchive decodes
 * it in this process, as the probe on a reader of its own tells (where it
 * would run a program instead it warns); gzip, bzip2, xz and zstd are
 * decoded by unz.h before libarchive sees them, but a filter libarchive
 * finds inside another one is still its own.  The formats are every one
 * libarchive reads but mtree, a list of paths on this machine, not an
 * archive of their bytes; zip is read by seeking (seek_zip) or as a
 * stream.
 */
static void
la_support(struct reader *r, int seek_zip)
{
	static int (*const filters[])(struct archive *) = {
		archive_read_support_filter_bzip2,
		archive_read_support_filter_compress,
		archive_read_support_filter_gzip,
		archive_read_support_filter_lz4,
		archive_read_support_filter_lzip,
		archive_read_support_filter_lzma,
		archive_read_support_filter_lzop,
		archive_read_support_filter_rpm,
		archive_read_support_filter_uu,
		archive_read_support_filter_xz,
		archive_read_support_filter_zstd,
	};
	/* In the order of libarchive's own _all, tar first: a bidder that
	 * scans for a self-extracting archive (7-zip, cab, RAR) does not
	 * when a better bid came before it, which saves a listing of a tar
	 * 48 KiB of reads. */
	static int (*const formats[])(struct archive *) = {
		archive_read_support_format_tar,
		archive_read_support_format_ar,
		archive_read_support_format_cpio,
		archive_read_support_format_empty,
		archive_read_support_format_lha,
		archive_read_support_format_xar,
		archive_read_support_format_warc,
		archive_read_support_format_7zip,
		archive_read_support_format_cab,
		archive_read_support_format_rar,
		archive_read_support_format_rar5,
		archive_read_support_format_iso9660,
	};
	struct archive *a = r->a;
	size_t i;

	/* probed once for the input, not once for each of its archives */
	if (r->filters < 0) {
		r->filters = 0;
		for (i = 0; i < sizeof(filters) / sizeof(filters[0]); i++) {
			struct archive *probe = archive_read_new();

			if (probe && filters[i](probe) == ARCHIVE_OK)
				r->filters |= 1 << i;
			archive_read_free(probe);
		}
	}
	for (i = 0; i < sizeof(filters) / sizeof(filters[0]); i++)
		if (r->filters & 1 << i)
			(void)filters[i](a);
	for (i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		(void)formats[i](a);
	/* The seeking zip reader takes any file whose tail looks like a
	 * zip's: it is given only one that is a zip, whole (zip_tail). */
	if (seek_zip)
		(void)archive_read_support_format_zip_seekable(a);
	else
		(void)archive_read_support_format_zip_streamable(a);
	/* cat a.tar b.tar: read on past the first end-of-archive blocks,
	 * as tar --ignore-zeros does (the tar reader must be in first). */
	(void)archive_read_set_options(a, "tar:read_concatenated_archives");
}

/* Begin the archive at raw offset off (the first: the input's start):
 * 1, 0 when the input holds no more, -1. */
static int
open_part(struct reader *r, uint64_t off)
{
	int st;

	r->has_next = 0;
	r->part_entries = 0;
	r->fdmode = 0;
	if (!(r->a = archive_read_new()))
		return rv_seterr("'%s': out of memory", r->s->name);
	if (r->parts == 0 && r->seekable) {
		unsigned char m[16];
		ssize_t k = unz_peek(r->unz, 0, m, sizeof(m));
		int pk, whole;

		if (k < 0)
			return rv_seterr("'%s': %s", r->s->name,
			    unz_error(r->unz));
		/* A zip is read by seeking only when it is the whole file;
		 * else as a stream, as on a pipe (zip_tail); any other
		 * file gets only the zip reader that streams.  A file that
		 * begins with zero bytes is read as a stream too, which
		 * skips them as padding (libarchive's reader would not). */
		pk = k >= 2 && m[0] == 'P' && m[1] == 'K';
		whole = pk && zip_tail(r) == 1;

		if (k > 0 && m[0] != 0 && unz_detect(m, (size_t)k) ==
		    UNZ_NONE && (!pk || whole)) {
			la_support(r, whole);
			/* libarchive's own reader: it can seek (zip), and
			 * a listing reads a header and seeks past the
			 * member: a kilobyte or two a member, not 64 KiB
			 * of its image.  So does a reading that leaves the
			 * stored members in the file (stored()): 4 KiB at
			 * a time, what the others read through, is the
			 * page cache's page. */
			r->fdmode = 1;
			r->base = 0;
			r->parts++;
			r->any = k > 0;
			st = archive_read_open_fd(r->a, r->fd,
			    r->c->list ? 1024 : r->c->o->hold ? 1 << 16 :
			    4096);
			return st == ARCHIVE_OK ? 1 : no_archive(r);
		}
	}
	la_support(r, 0);
	if ((st = unz_start(r->unz, off)) < 0)
		return refuse_err(r, off);
	r->any |= st == 1 || unz_pos(r->unz) > 0;	/* zeros, at least */
	if (st == 0)
		return 0;
	r->parts++;
	r->base = unz_base(r->unz);
	/* libarchive reads 7-zip by seeking to its header at the end: as
	 * a stream it finds no member, and says nothing. */
	if (seven_at(r)) {
		char why[160];

		snprintf(why, sizeof(why), "a 7-zip archive%s, which is read "
		    "by seeking: %s", r->parts > 1 ? " starts there" : "",
		    r->seekable ? "give it as a file of its own" :
		    "give it as a file, not on a pipe");
		return r->parts > 1 ? refuse(r, r->base, why) :
		    rv_seterr("'%s': %s", r->s->name, why);
	}
	st = archive_read_open(r->a, r, NULL, unz_cb, NULL);
	return st == ARCHIVE_OK ? 1 : no_archive(r);
}

/* Read the archives of the input one after the other.  0 or -1. */
static int
read_input(struct reader *r)
{
	uint64_t off = 0;
	int st;

	for (;;) {
		if ((st = open_part(r, off)) == 1 &&
		    (st = read_all(r)) == 0 && (st = part_end(r, &off)) == 1 &&
		    off <= r->base)	/* it would be read again, and again */
			st = refuse(r, r->base, "where the archive that starts "
			    "there ends cannot be found");
		archive_read_free(r->a);
		r->a = NULL;
		if (st <= 0)
			return st;
	}
}

static int
cmp_member(const void *a, const void *b)
{
	const struct member *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	if (c)
		return c;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * The name of the directory level levels above a key (0 and 1: the
 * parent, "a/cat/x" -> "cat"; 2: "t/n01/images/x" -> "n01"), or NULL if
 * the key has no directory that high.
 */
static char *
parent_name(const char *key, int level)
{
	const char *end = key + strlen(key), *p;
	int k;

	for (k = 0; k < (level > 1 ? level : 1); k++) {
		while (end > key && end[-1] != '/')
			end--;
		if (end == key)
			return NULL;
		end--;		/* the slash */
	}
	for (p = end; p > key && p[-1] != '/'; p--)
		continue;
	if (p == end || (end - p == 1 && *p == '.') ||
	    (end - p == 2 && p[0] == '.' && p[1] == '.'))
		return NULL;
	return xstrndup(p, (size_t)(end - p));
}

/* Warn about member m of the sample being grouped; -1 under strict. */
static int
skip_member(struct reader *r, const struct member *m, const char *fmt,
    const char *arg)
{
	char *q = src_sanitized(m->path ? m->path : m->key);
	int st;

	st = src_skip(r->c, fmt, r->s->name, q, arg);
	free(q);
	return st;
}

/*
 * One key's members, m[0..n) in archive order, as a sample a (its label
 * from a sidecar; *par the parent directory's name when none has one).
 * Returns 1 for a sample, 0 when the key is skipped or ignored, -1 to
 * fail (strict).
 */
static int
one_key(struct reader *r, struct member *m, size_t n, struct asample *a,
    char **par)
{
	struct member *img = NULL, *unsup = NULL, *lab[R_JSON + 1] = { 0 };
	size_t i, k, side = 0;
	int sidecars = 0;

	for (i = 0; i < n; i++) {
		if (m[i].bad) {
			/* warned about when it was read */
			src_count(r->c);
			return 0;
		}
		if (m[i].role == R_IMAGE &&
		    (!img || m[i].primary >= img->primary))
			img = &m[i];
		if (m[i].role == R_UNSUP && !unsup)
			unsup = &m[i];
		if (m[i].role >= R_CLS && m[i].lab != L_NONE)
			sidecars = 1;
		if (m[i].role >= R_CLS && m[i].lab != L_NONE)
			lab[m[i].role] = &m[i];
	}
	if (!img) {
		if (unsup)
			return skip_member(r, unsup, "'%s': '%s': unsupported "
			    "image format%s", "; rv reads JPEG, PNG, WebP, "
			    "GIF, BMP and TIFF") < 0 ? -1 : 0;
		/* A label without its image is a sample lost; a README,
		 * metadata or a caption alone belongs to no sample. */
		if (sidecars) {
			char *q = src_sanitized(m[0].key);
			int st = src_skip(r->c, "'%s': '%s': no image member",
			    r->s->name, q);
			free(q);
			return st < 0 ? -1 : 0;
		}
		/* Members of no sample: a README, a .npy without an
		 * image. */
		for (i = 0; i < n; i++)
			ignore(r, m[i].path, "not an image");
		return 0;
	}
	/* Another image as good as the one taken came earlier: replaced,
	 * as tar's append does, or two archives concatenated that reuse a
	 * key.  Either way a sample's image is lost: say so. */
	for (i = 0; i < n; i++) {
		if (&m[i] == img || m[i].role != R_IMAGE ||
		    m[i].primary != img->primary) {
			side += &m[i] != img;
			continue;
		}
		if (strcmp(m[i].path, img->path) == 0) {
			if (skip_member(r, &m[i], "'%s': '%s': replaced by a "
			    "later member of the same name%s", "") < 0)
				return -1;
		} else {
			char *q = src_sanitized(img->path);
			int st = skip_member(r, &m[i], "'%s': '%s': replaced "
			    "by '%s', a later image of the same key", q);
			free(q);
			if (st < 0)
				return -1;
		}
	}
	/* The label: the first of .cls, .txt, .json that says anything. */
	a->label = -1;
	for (k = R_CLS; k <= R_JSON && !lab[k]; k++)
		continue;
	if (k <= R_JSON && lab[k]->lab == L_MULTI)
		return skip_member(r, lab[k], "'%s': '%s': multi-label "
		    "'%s': an rv sample carries one class label",
		    lab[k]->snip) < 0 ? -1 : 0;
	if (k <= R_JSON && lab[k]->lab == L_BAD)
		return skip_member(r, lab[k], "'%s': '%s': label '%s' is not "
		    "a class number", lab[k]->snip) < 0 ? -1 : 0;
	r->c->sidecars += side;
	a->by = img->byoff;
	if (a->by == BY_HELD)
		a->at.data = img->data;
	else
		a->at.off = img->off;
	a->len = (uint32_t)img->len;
	a->path = name_dup(r->ar, img->path);
	if (k <= R_JSON) {
		a->label = lab[k]->label;
		if (a->label >= 0 && (uint32_t)a->label >= r->nlabels)
			r->nlabels = (uint32_t)a->label + 1;
	} else if ((*par = parent_name(img->key,
	    r->c->o->class_level)) != NULL) {
		a->derived = 1;
	}
	return 1;
}

/*
 * Every sample fell in one directory class: if the directories above
 * those differ (train/<wnid>/images/x.JPEG labelled "images"), the class
 * is likely one level too low: say so.
 */
static void
one_class(struct reader *r, const char *name)
{
	const struct arch *ar = r->ar;
	char *first = NULL, *other = NULL, *q1, *q2, *q3;
	int level = r->c->o->class_level > 1 ? r->c->o->class_level : 1;
	size_t i;

	for (i = 0; i < ar->n && !other; i++) {
		char *k, *g;

		if (!ar->v[i].derived)
			continue;
		k = norm_path("", 0, ar->v[i].path);
		g = k ? parent_name(k, level + 1) : NULL;
		free(k);
		if (!g)
			continue;
		if (!first)
			first = g;
		else if (strcmp(first, g) != 0)
			other = g;
		else
			free(g);
	}
	if (other) {
		q1 = src_sanitized(name);
		q2 = src_sanitized(first);
		q3 = src_sanitized(other);
		src_note(r->c, "'%s': every sample is in class '%s', the "
		    "directory %d level%s above it, though the directories "
		    "above differ ('%s', '%s'): is --class-level %d meant?",
		    r->s->name, q1, level, level > 1 ? "s" : "", q2, q3,
		    level + 1);
		free(q1);
		free(q2);
		free(q3);
	}
	free(first);
	free(other);
}

/*
 * Group the members by key into samples.  Within a key the image is the
 * member whose whole extension is an image one (abc.jpg over abc.seg.png),
 * else the last; a later member replaces an earlier one, as tar's append
 * does (with a warning: the earlier image is lost).  The label comes from
 * the sample's own sidecar (.cls, else .txt, else .json) and only failing
 * that from its parent directory, per sample: an archive that mixes both
 * keeps the sidecar numbers as they are and gives directory classes their
 * index among the directory names, so mixing the two is only sound when
 * they agree.
 */
static int
group(struct reader *r)
{
	struct arch *ar = r->ar;
	char **par, **names = NULL;
	size_t i, j, nnames = 0;

	if (resolve_links(r) < 0)
		return -1;
	if (r->nm > 0)
		qsort(r->m, r->nm, sizeof(*r->m), cmp_member);
	ar->v = xcalloc(r->nm ? r->nm : 1, sizeof(*ar->v));
	par = xcalloc(r->nm ? r->nm : 1, sizeof(*par));
	for (i = 0; i < r->nm; i = j) {
		int st;

		for (j = i; j < r->nm && strcmp(r->m[j].key, r->m[i].key) == 0;
		    j++)
			continue;
		st = one_key(r, &r->m[i], j - i, &ar->v[ar->n], &par[ar->n]);
		if (st < 0)
			goto fail;
		ar->n += (size_t)st;
	}
	r->s->nlabels = r->nlabels;
	/* The directory classes: sorted distinct parent names. */
	for (i = 0; i < ar->n; i++)
		if (par[i]) {
			names = xreallocarray(names, nnames + 1,
			    sizeof(*names));
			names[nnames++] = par[i];
		}
	if (nnames > 0) {
		qsort(names, nnames, sizeof(*names), cmp_str);
		for (i = j = 0; i < nnames; i++)
			if (j == 0 || strcmp(names[j - 1], names[i]) != 0)
				names[j++] = xstrdup(names[i]);
		nnames = j;
		/* A class a few samples each: the room of one a sample
		 * goes back. */
		names = xreallocarray(names, nnames, sizeof(*names));
		for (i = 0; i < ar->n; i++) {
			char **f;

			if (!par[i])
				continue;
			f = bsearch(&par[i], names, nnames, sizeof(*names),
			    cmp_str);
			ar->v[i].label = (int32_t)(f - names);
		}
		r->s->names = names;
		r->s->nnames = nnames;
		r->s->names_kind = SRC_NAMES_DERIVED;
		if (nnames == 1)
			one_class(r, names[0]);
	}
	for (i = 0; i < ar->n; i++)
		free(par[i]);
	free(par);
	pack_names(ar);
	return 0;
fail:
	for (i = 0; i < ar->n; i++)
		free(par[i]);
	free(par);
	return -1;
}

/* "12 bytes" or "modified 2026-12-07 10:00:01.5 UTC" */
static void
file_state(char *buf, size_t len, off_t size, const struct timespec *t)
{
	struct tm tm;
	char when[32];

	if (!t) {
		snprintf(buf, len, "%lld bytes", (long long)size);
		return;
	}
	if (gmtime_r(&t->tv_sec, &tm) == NULL ||
	    strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm) == 0)
		snprintf(when, sizeof(when), "%lld s", (long long)t->tv_sec);
	snprintf(buf, len, "modified %s.%09ld UTC", when, (long)t->tv_nsec);
}

/*
 * Sample a's bytes, read at its offset from the file as it was listed
 * into p (a->len bytes).  A file gone, replaced, grown, shrunk or
 * modified since fails the run: what the listing said of it no longer
 * holds, and the samples read so far may already mix two versions.
 */
static int
read_at(const struct src *s, const struct arch *ar,
    const struct asample *a, unsigned char *p)
{
	char was[64], now[64], why[256];
	struct stat st;
	int fd = ar->fd, rc = -1;

	/* O_NONBLOCK: a FIFO put in the file's place must not hang us. */
	if (fd < 0 && (fd = open(ar->file, O_RDONLY | O_NONBLOCK |
	    O_CLOEXEC)) < 0)
		return rv_seterr("'%s': cannot open it again to read '%s' "
		    "(byte %" PRIu64 "):", s->name, a->path, a->at.off);
	if (fstat(fd, &st) < 0) {
		rv_seterr("'%s': cannot stat:", s->name);
	} else if (st.st_dev != ar->dev || st.st_ino != ar->ino ||
	    !S_ISREG(st.st_mode)) {
		rv_seterr("'%s': replaced by another file since it was "
		    "listed: '%s' (byte %" PRIu64 ") cannot be read as "
		    "listed", s->name, a->path, a->at.off);
	} else if (st.st_size != ar->size ||
	    st.st_mtim.tv_sec != ar->mtime.tv_sec ||
	    st.st_mtim.tv_nsec != ar->mtime.tv_nsec) {
		int sz = st.st_size != ar->size;

		file_state(was, sizeof(was), ar->size, sz ? NULL : &ar->mtime);
		file_state(now, sizeof(now), st.st_size, sz ? NULL :
		    &st.st_mtim);
		rv_seterr("'%s': changed since it was listed (%s, now %s): "
		    "'%s' (byte %" PRIu64 ") cannot be read as listed",
		    s->name, was, now, a->path, a->at.off);
	} else if (rv_pread_full(fd, p, a->len, (off_t)a->at.off) < 0) {
		snprintf(why, sizeof(why), "%s", rv_errmsg());
		rv_seterr("'%s': byte %" PRIu64 ": reading '%s': %s", s->name,
		    a->at.off, a->path, why);
	} else {
		rc = 0;
	}
	if (fd != ar->fd)
		close(fd);
	return rc;
}

/* Sample a's bytes, read back from the spill file into p. */
static int
read_spill(const struct src *s, const struct arch *ar,
    const struct asample *a, unsigned char *p)
{
	char why[256];

	if (rv_pread_full(ar->spill->fd, p, a->len, (off_t)a->at.off) < 0) {
		snprintf(why, sizeof(why), "%s", rv_errmsg());
		return rv_seterr("'%s': '%s': reading it back from --cache-dir "
		    "'%s': %s", s->name, a->path, ar->spill->dir, why);
	}
	return 0;
}

static int
arch_fetch(const struct src *s, uint64_t i, struct rv_buf *scratch,
    struct rv_item *it)
{
	const struct arch *ar = s->priv;
	const struct asample *a = &ar->v[i];

	src_item_name(it, s, a->path);
	if (a->by == BY_HELD) {
		it->data = a->at.data;
	} else {
		scratch->len = 0;
		rv_buf_reserve(scratch, a->len + 1);
		if ((a->by == BY_SPILL ? read_spill(s, ar, a, scratch->data) :
		    read_at(s, ar, a, scratch->data)) < 0)
			return -1;
		scratch->len = a->len;
		it->data = scratch->data;
	}
	it->len = a->len;
	it->dtype = src_encoded_dtype(it->data, a->len, a->path);
	it->label = a->derived ? src_label(s, a->label) : a->label;
	return 0;
}

static void
arch_free(struct src *s)
{
	struct arch *ar = s->priv;
	size_t i;

	if (!ar)
		return;
	free(ar->v);
	for (i = 0; i < ar->nchunk; i++)
		free(ar->chunk[i].p);
	free(ar->chunk);
	for (i = 0; i < ar->nnames; i++)
		free(ar->names[i].p);
	free(ar->names);
	if (ar->fd >= 0 && ar->fd != STDIN_FILENO)
		close(ar->fd);
	free(ar);
}

static const struct src_ops archive_ops = { arch_fetch, arch_free };

/* path "-" is stdin. */
static int
archive_open(struct src_ctx *c, struct src *s)
{
	const char *path = s->path[0];
	struct reader r;
	struct stat sb;
	size_t i;
	int st;

	memset(&r, 0, sizeof(r));
	r.c = c;
	r.s = s;
	r.ar = xcalloc(1, sizeof(*r.ar));
	r.ar->fd = -1;
	s->priv = r.ar;
	s->ops = &archive_ops;
	s->desc = xasprintf("archive:%s", s->name);
	/* the default bound asks the system once an input, not a member */
	r.max_held = c->o->max_held ? c->o->max_held :
	    rv_src_max_held_default();
	r.filters = -1;
	r.fd = strcmp(path, "-") == 0 ? STDIN_FILENO :
	    open(path, O_RDONLY | O_CLOEXEC);
	if (r.fd < 0)
		return rv_seterr("'%s': cannot open:", s->name);
	r.seekable = fstat(r.fd, &r.sb) == 0 && S_ISREG(r.sb.st_mode);
	r.unz = unz_new(r.fd, r.seekable);
	st = read_input(&r);
	unz_free(r.unz);
	if (st == 0 && r.byoff > 0) {
		r.ar->file = path;
		r.ar->dev = r.sb.st_dev;
		r.ar->ino = r.sb.st_ino;
		r.ar->size = r.sb.st_size;
		r.ar->mtime = r.sb.st_mtim;
		/* changed while it was read: the listing may mix versions */
		if (fstat(r.fd, &sb) < 0 || sb.st_size != r.sb.st_size ||
		    sb.st_mtim.tv_sec != r.sb.st_mtim.tv_sec ||
		    sb.st_mtim.tv_nsec != r.sb.st_mtim.tv_nsec)
			st = rv_seterr("'%s': changed while it was listed",
			    s->name);
		/* held open while the budget lasts: a pread a fetch;
		 * standard input (a file given as '< a.tar') always, as
		 * it has no name to be opened by again, and uncounted,
		 * as it is open anyway */
		if (st == 0 && r.fd == STDIN_FILENO) {
			r.ar->fd = r.fd;
		} else if (st == 0 && c->fds && *c->fds < src_fd_budget()) {
			r.ar->fd = r.fd;
			r.fd = -1;
			(*c->fds)++;
			s->fds = 1;
		}
	}
	if (r.fd >= 0 && r.fd != STDIN_FILENO)
		close(r.fd);
	free(r.cmp);
	rv_buf_release(&r.buf);
	rv_codec_free(r.codec);
	if (st == 0)
		st = group(&r);
	for (i = 0; i < r.nm; i++) {
		free(r.m[i].key);
		free(r.m[i].path);
		free(r.m[i].snip);
		free(r.m[i].link);
	}
	free(r.m);
	s->n = r.ar->n;
	if (st == 0 && s->n == 0)
		s->held = r.any ? src_tally_held(&r.tally, "member") :
		    xstrdup("empty");
	return st;
}

/* Last in the list: whatever no other reader took. */
static int
archive_probe(const char *path, const char *qname, const struct stat *st,
    struct src_probe *pr)
{
	return 1;
}

const struct src_reader src_reader_archive = {
	"archive", archive_probe, archive_open
};
