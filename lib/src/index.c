/*
 * rv-index(5): parsing and formatting the dataset index, the checksum of
 * a shard's ends, and paths relative to the index.  The format, a line
 * each, fields split by tabs:
 *
 *	rv-index	1
 *	samples	N
 *	shards	K
 *	classes	C
 *	class	I	NAME		(I = 0, 1, ... in order)
 *	shard	SAMPLES	BYTES	MTIME	CHECK	KIND	LABELS	NAMES	PATH
 *
 * Lines starting with '#' are comments.  NAME and PATH escape backslash,
 * tab, newline and the other control bytes (\\, \t, \n, \r, \xHH).
 */
#include "src/index.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "base/err.h"
#include "base/io.h"
#include "base/opt.h"
#include "base/xmem.h"

#define CHECK_SPAN	4096	/* bytes at each end the checksum reads */
#define MAX_FIELDS	10
/* Class numbers all the shard lines may name together, ranges expanded
 * (a hostile index of a few ranges must not buy gigabytes). */
#define MAX_NAMED	((size_t)1 << 26)


int
rv_index_sniff(const void *p, size_t n)
{
	size_t m = sizeof(RV_INDEX_MAGIC) - 1;

	return n >= m && memcmp(p, RV_INDEX_MAGIC, m) == 0;
}

void
rv_index_release(struct rv_index *ix)
{
	size_t i;

	for (i = 0; i < ix->nnames; i++)
		free(ix->names[i]);
	free(ix->names);
	for (i = 0; i < ix->nshards; i++) {
		free(ix->shard[i].path);
		free(ix->shard[i].names);
	}
	free(ix->shard);
	memset(ix, 0, sizeof(*ix));
}

/* ---- escaping ---- */

static void
put_escaped(struct rv_buf *b, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p;

	for (p = (const unsigned char *)s; *p; p++) {
		char e[4] = { '\\', 0, 0, 0 };
		size_t n = 2;

		if (*p == '\\')
			e[1] = '\\';
		else if (*p == '\t')
			e[1] = 't';
		else if (*p == '\n')
			e[1] = 'n';
		else if (*p == '\r')
			e[1] = 'r';
		else if (*p < 0x20 || *p == 0x7f) {
			e[1] = 'x';
			e[2] = hex[*p >> 4];
			e[3] = hex[*p & 15];
			n = 4;
		} else {
			rv_buf_append(b, p, 1);
			continue;
		}
		rv_buf_append(b, e, n);
	}
}

static int
hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Undo put_escaped() in place; a NUL, a bad escape or an empty result is
 * an error. */
static int
unescape(char *s, const char *what)
{
	char *w = s, *r = s;

	if (*s == '\0')
		return rv_seterr("empty %s", what);
	while (*r) {
		int hi, lo;

		if (*r != '\\') {
			*w++ = *r++;
			continue;
		}
		switch (r[1]) {
		case '\\': *w++ = '\\'; r += 2; break;
		case 't': *w++ = '\t'; r += 2; break;
		case 'n': *w++ = '\n'; r += 2; break;
		case 'r': *w++ = '\r'; r += 2; break;
		case 'x':
			if ((hi = hexval((unsigned char)r[2])) < 0 ||
			    (lo = hexval((unsigned char)r[3])) < 0)
				return rv_seterr("%s: a \\x escape needs two hex "
				    "digits", what);
			if (hi == 0 && lo == 0)
				return rv_seterr("%s: \\x00: a name holds no NUL",
				    what);
			*w++ = (char)(hi << 4 | lo);
			r += 4;
			break;
		default:
			return rv_seterr("%s: unknown escape '\\%c'", what,
			    r[1] ? r[1] : ' ');
		}
	}
	*w = '\0';
	return 0;
}

/* ---- formatting ---- */

/* Ascending indices as ranges: 0-3,7 */
static void
put_ranges(struct rv_buf *b, const uint32_t *v, size_t n)
{
	size_t i = 0, j;
	char t[32];

	while (i < n) {
		for (j = i; j + 1 < n && v[j + 1] == v[j] + 1; j++)
			continue;
		if (j == i)
			snprintf(t, sizeof(t), "%s%" PRIu32, i ? "," : "", v[i]);
		else
			snprintf(t, sizeof(t), "%s%" PRIu32 "-%" PRIu32,
			    i ? "," : "", v[i], v[j]);
		rv_buf_append(b, t, strlen(t));
		i = j + 1;
	}
}

void
rv_index_format(const struct rv_index *ix, struct rv_buf *out)
{
	char t[256];
	size_t i;

	snprintf(t, sizeof(t), RV_INDEX_MAGIC "%d\n# rv-index(5): the "
	    "shards of a dataset, for rv-decode --index\nsamples\t%" PRIu64
	    "\nshards\t%zu\nclasses\t%" PRIu64 "\n", RV_INDEX_VERSION,
	    ix->samples, ix->nshards, ix->classes);
	rv_buf_append(out, t, strlen(t));
	for (i = 0; i < ix->nnames; i++) {
		snprintf(t, sizeof(t), "class\t%zu\t", i);
		rv_buf_append(out, t, strlen(t));
		put_escaped(out, ix->names[i]);
		rv_buf_append(out, "\n", 1);
	}
	for (i = 0; i < ix->nshards; i++) {
		const struct rv_index_shard *s = &ix->shard[i];
		int64_t sec = s->mtime_ns / 1000000000;
		int64_t ns = s->mtime_ns % 1000000000;

		if (ns < 0) {
			ns += 1000000000;
			sec--;
		}
		snprintf(t, sizeof(t), "shard\t%" PRIu64 "\t%" PRIu64 "\t%"
		    PRId64 ".%09" PRId64 "\t%016" PRIx64 "\t%s\t%" PRIu32 "\t",
		    s->samples, s->size, sec, ns, s->check, s->kind, s->labels);
		rv_buf_append(out, t, strlen(t));
		if (s->names_kind == RV_INDEX_NAMES_FIXED)
			rv_buf_append(out, "f", 1);
		else if (s->names_kind == RV_INDEX_NAMES_SOME && s->nnames)
			put_ranges(out, s->names, s->nnames);
		else
			rv_buf_append(out, "-", 1);
		rv_buf_append(out, "\t", 1);
		put_escaped(out, s->path);
		rv_buf_append(out, "\n", 1);
	}
}

/* ---- parsing ---- */

static int
num(const char *s, uint64_t max, uint64_t *v, const char *what)
{
	if (rv_parse_u64(s, 0, max, v) < 0)
		return rv_seterr("%s '%s' is not a number up to %" PRIu64, what,
		    s, max);
	return 0;
}

/* SEC.NNNNNNNNN */
static int
parse_mtime(const char *s, int64_t *ns)
{
	const char *dot = strchr(s, '.');
	char sec[32];
	long long v;
	uint64_t frac;
	size_t n;

	/* As rv_index_format writes it: no '+', no "-0", 9 digits. */
	if (!dot || (n = (size_t)(dot - s)) == 0 || n >= sizeof(sec) ||
	    strlen(dot + 1) != 9 || s[0] == '+' ||
	    (s[0] == '-' && s[1] == '0'))
		return rv_seterr("time '%s' is not SECONDS.NANOSECONDS", s);
	memcpy(sec, s, n);
	sec[n] = '\0';
	if (rv_parse_i64(sec, -RV_INDEX_MAX_SEC, RV_INDEX_MAX_SEC, &v) < 0 ||
	    rv_parse_u64(dot + 1, 0, 999999999, &frac) < 0)
		return rv_seterr("time '%s' is not SECONDS.NANOSECONDS", s);
	*ns = (int64_t)v * 1000000000 + (int64_t)frac;
	return 0;
}

static int
parse_hex64(const char *s, uint64_t *v)
{
	size_t i;

	*v = 0;
	if (strlen(s) != 16)
		return rv_seterr("checksum '%s' is not 16 hex digits", s);
	for (i = 0; i < 16; i++) {
		int d = hexval((unsigned char)s[i]);
		if (d < 0)
			return rv_seterr("checksum '%s' is not 16 hex digits",
			    s);
		*v = *v << 4 | (uint64_t)d;
	}
	return 0;
}

/* "0-3,7": ascending, below nnames. */
static int
parse_ranges(char *s, size_t nnames, struct rv_index_shard *sh,
    size_t *named)
{
	size_t cap = 0;
	char *tok, *next;

	if (s[0] == '\0')
		return rv_seterr("classes: empty (write - for none)");
	if (s[0] == ',' || s[strlen(s) - 1] == ',' || strstr(s, ",,"))
		return rv_seterr("classes: '%s': an empty item", s);
	for (tok = s; tok; tok = next) {
		char *dash, item[48];
		uint64_t lo, hi, k;

		if ((next = strchr(tok, ',')) != NULL)
			*next++ = '\0';
		snprintf(item, sizeof(item), "%s", tok);
		if ((dash = strchr(tok, '-')) != NULL)
			*dash = '\0';
		if (rv_parse_u64(tok, 0, UINT32_MAX, &lo) < 0 ||
		    (dash && rv_parse_u64(dash + 1, 0, UINT32_MAX, &hi) < 0))
			return rv_seterr("classes: '%s' is not a class "
			    "number or range", item);
		if (!dash)
			hi = lo;
		if (hi < lo || hi >= nnames)
			return rv_seterr("classes: %" PRIu64 "-%" PRIu64 " is "
			    "not a range of the %zu class lines", lo, hi,
			    nnames);
		if (sh->nnames > 0 && lo <= sh->names[sh->nnames - 1])
			return rv_seterr("classes: not ascending at %" PRIu64,
			    lo);
		if (hi - lo + 1 > MAX_NAMED - *named)
			return rv_seterr("classes: over %zu named in all",
			    MAX_NAMED);
		*named += (size_t)(hi - lo + 1);
		for (k = lo; k <= hi; k++) {
			if (sh->nnames == cap) {
				cap = cap ? 2 * cap : 16;
				sh->names = xreallocarray(sh->names, cap,
				    sizeof(*sh->names));
			}
			sh->names[sh->nnames++] = (uint32_t)k;
		}
	}
	if (sh->nnames == 0)
		return rv_seterr("classes: empty (write - for none)");
	return 0;
}

static int
parse_shard(char **f, size_t nf, struct rv_index *ix, uint64_t *total,
    size_t *named)
{
	struct rv_index_shard sh;
	uint64_t v;

	memset(&sh, 0, sizeof(sh));
	if (nf != 9)
		return rv_seterr("a shard line has 9 fields, not %zu", nf);
	if (num(f[1], UINT64_MAX, &sh.samples, "samples") < 0 ||
	    num(f[2], UINT64_MAX, &sh.size, "size") < 0 ||
	    parse_mtime(f[3], &sh.mtime_ns) < 0 ||
	    parse_hex64(f[4], &sh.check) < 0 ||
	    num(f[6], UINT32_MAX, &v, "labels") < 0)
		return -1;
	sh.labels = (uint32_t)v;
	if (f[5][0] == '\0' || strlen(f[5]) >= sizeof(sh.kind) ||
	    strspn(f[5], "abcdefghijklmnopqrstuvwxyz_") != strlen(f[5]))
		return rv_seterr("kind '%s' is not a reader's name", f[5]);
	strcpy(sh.kind, f[5]);
	if (*total > UINT64_MAX - sh.samples)
		return rv_seterr("too many samples");
	if (strcmp(f[7], "-") == 0)
		sh.names_kind = RV_INDEX_NAMES_NONE;
	else if (strcmp(f[7], "f") == 0)
		sh.names_kind = RV_INDEX_NAMES_FIXED;
	else {
		sh.names_kind = RV_INDEX_NAMES_SOME;
		if (parse_ranges(f[7], ix->nnames, &sh, named) < 0) {
			free(sh.names);
			return -1;
		}
	}
	if (unescape(f[8], "path") < 0) {
		free(sh.names);
		return -1;
	}
	sh.path = xstrdup(f[8]);
	*total += sh.samples;
	ix->shard[ix->nshards++] = sh;
	return 0;
}

/* The header's numbers, and which of them were seen. */
struct head {
	uint64_t samples, shards, classes;
	uint64_t maxshards;	/* more lines than the text can hold */
	size_t named;		/* class numbers of the shard lines */
	int seen;	/* bits: 1 samples, 2 shards, 4 classes */
};

static int
parse_line(char **f, size_t nf, struct rv_index *ix, struct head *h,
    uint64_t *total)
{
	uint64_t v;

	if (strcmp(f[0], "shard") == 0) {
		if (h->seen != 7)
			return rv_seterr("a shard line before the samples, "
			    "shards and classes lines");
		if (ix->nshards == h->shards)
			return rv_seterr("more shard lines than the %" PRIu64
			    " the index says", h->shards);
		return parse_shard(f, nf, ix, total, &h->named);
	}
	if (strcmp(f[0], "class") == 0) {
		if (nf != 3)
			return rv_seterr("a class line has 3 fields, not %zu",
			    nf);
		if (ix->nshards > 0)
			return rv_seterr("a class line after the shards");
		if (num(f[1], UINT32_MAX, &v, "class") < 0)
			return -1;
		if (v != ix->nnames)
			return rv_seterr("class %" PRIu64 " where class %zu "
			    "comes next", v, ix->nnames);
		if (unescape(f[2], "class name") < 0)
			return -1;
		ix->names = xreallocarray(ix->names, ix->nnames + 1,
		    sizeof(*ix->names));
		ix->names[ix->nnames++] = xstrdup(f[2]);
		return 0;
	}
	if (nf != 2)
		return rv_seterr("'%s': not a line of an index", f[0]);
	if (strcmp(f[0], "samples") == 0 && !(h->seen & 1)) {
		h->seen |= 1;
		return num(f[1], UINT64_MAX, &h->samples, "samples");
	}
	if (strcmp(f[0], "shards") == 0 && !(h->seen & 2)) {
		h->seen |= 2;
		if (num(f[1], UINT32_MAX, &h->shards, "shards") < 0)
			return -1;
		if (h->shards > h->maxshards)
			return rv_seterr("%" PRIu64 " shards: more than its "
			    "lines can hold", h->shards);
		ix->shard = xcalloc((size_t)h->shards + 1,
		    sizeof(*ix->shard));
		return 0;
	}
	if (strcmp(f[0], "classes") == 0 && !(h->seen & 4)) {
		h->seen |= 4;
		return num(f[1], UINT32_MAX, &h->classes, "classes");
	}
	return rv_seterr("'%s': %s", f[0], (strcmp(f[0], "samples") == 0 ||
	    strcmp(f[0], "shards") == 0 || strcmp(f[0], "classes") == 0) ?
	    "given twice" : "not a line of an index");
}

int
rv_index_parse(const char *text, size_t len, const char *name,
    struct rv_index *ix)
{
	struct head h = { 0 };
	char *buf, *line, *end, *f[MAX_FIELDS];
	uint64_t total = 0, lineno = 0;
	size_t nl;

	memset(ix, 0, sizeof(*ix));
	if (!rv_index_sniff(text, len))
		return rv_seterr("'%s': not an rv index (its first line is not "
		    "'rv-index<TAB>%d')", name, RV_INDEX_VERSION);
	if (len > RV_INDEX_MAX)
		return rv_seterr("'%s': over %zu bytes", name, RV_INDEX_MAX);
	if (len == 0 || text[len - 1] != '\n')
		return rv_seterr("'%s': cut short (no newline at its end)",
		    name);
	if (memchr(text, '\0', len))
		return rv_seterr("'%s': holds a NUL byte: not an index", name);
	/* Every shard line holds at least 17 bytes. */
	h.maxshards = len / 17 + 1;
	buf = xmalloc(len + 1);
	memcpy(buf, text, len);
	buf[len] = '\0';
	for (line = buf; *line; line = end + 1) {
		char *p;

		end = strchr(line, '\n');
		*end = '\0';
		lineno++;
		if (lineno == 1) {
			const char *v = line + sizeof(RV_INDEX_MAGIC) - 1;
			uint64_t ver;

			if (strcmp(v, "1") != 0) {
				if (rv_parse_u64(v, 2, UINT32_MAX, &ver) == 0)
					rv_seterr("version '%s': this rv reads "
					    "version %d: a newer rv wrote it", v,
					    RV_INDEX_VERSION);
				else
					rv_seterr("version '%s': not a version",
					    v);
				goto fail;
			}
			continue;
		}
		if (line[0] == '#')
			continue;
		for (nl = 0, p = line; nl < MAX_FIELDS; nl++) {
			f[nl] = p;
			if ((p = strchr(p, '\t')) == NULL) {
				nl++;
				break;
			}
			*p++ = '\0';
		}
		if (p != NULL) {
			rv_seterr("too many fields");
			goto fail;
		}
		if (parse_line(f, nl, ix, &h, &total) < 0)
			goto fail;
	}
	free(buf);
	if (h.seen != 7) {
		rv_seterr("'%s': no %s line", name, !(h.seen & 1) ?
		    "samples" : !(h.seen & 2) ? "shards" : "classes");
		rv_index_release(ix);
		return -1;
	}
	if (ix->nshards != h.shards) {
		rv_seterr("'%s': %zu shard lines, but it says %" PRIu64
		    " (cut short?)", name, ix->nshards, h.shards);
		rv_index_release(ix);
		return -1;
	}
	if (total != h.samples) {
		rv_seterr("'%s': its shards hold %" PRIu64 " samples, but it "
		    "says %" PRIu64, name, total, h.samples);
		rv_index_release(ix);
		return -1;
	}
	ix->samples = h.samples;
	ix->classes = h.classes;
	return 0;
fail:
	rv_preferr("'%s': line %" PRIu64, name, lineno);
	free(buf);
	rv_index_release(ix);
	return -1;
}

int
rv_index_load(const char *path, struct rv_index *ix)
{
	unsigned char *p;
	struct stat st;
	size_t n, cap;
	ssize_t got;
	int r, fd;

	memset(ix, 0, sizeof(*ix));
	/* Read once, through one descriptor, whatever it is: a file, or a
	 * pipe or FIFO (--index /dev/stdin, <(...)), which a second open
	 * would not read again.  A file given by mistake (a shard) is
	 * refused from its first bytes, not read whole, and no index is
	 * read past RV_INDEX_MAX bytes, whatever it is. */
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return rv_seterr("'%s': cannot open:", path);
	if (fstat(fd, &st) < 0) {
		close(fd);
		return rv_seterr("'%s': cannot stat:", path);
	}
	if (S_ISREG(st.st_mode) && (uint64_t)st.st_size > RV_INDEX_MAX) {
		close(fd);
		return rv_seterr("'%s': not an rv index (%" PRIu64 " bytes, "
		    "over %zu)", path, (uint64_t)st.st_size, RV_INDEX_MAX);
	}
	cap = (size_t)1 << 16;
	if (S_ISREG(st.st_mode) && (size_t)st.st_size >= cap)
		cap = (size_t)st.st_size + 1;
	p = xmalloc(cap);
	if ((got = rv_read_full(fd, p, sizeof(RV_INDEX_MAGIC) - 1)) < 0)
		goto ioerr;
	if (!rv_index_sniff(p, (size_t)got)) {
		rv_seterr("'%s': not an rv index (its first line is not "
		    "'rv-index<TAB>%d')", path, RV_INDEX_VERSION);
		goto fail;
	}
	n = (size_t)got;
	for (;;) {
		if (n == cap) {
			cap = cap * 2 > RV_INDEX_MAX + 1 ? RV_INDEX_MAX + 1 :
			    cap * 2;
			p = xrealloc(p, cap);
		}
		if ((got = rv_read_full(fd, p + n, cap - n)) < 0)
			goto ioerr;
		/* Text, checked as it comes: a FIFO of zeros is refused
		 * at its first bytes, not after a GiB of them. */
		if (memchr(p + n, '\0', (size_t)got) != NULL) {
			rv_seterr("'%s': holds a NUL byte: not an index", path);
			goto fail;
		}
		n += (size_t)got;
		if (n > RV_INDEX_MAX) {
			rv_seterr("'%s': not an rv index (over %zu bytes)",
			    path, RV_INDEX_MAX);
			goto fail;
		}
		if (n < cap)
			break;	/* rv_read_full stops short only at the end */
	}
	close(fd);
	r = rv_index_parse((const char *)p, n, path, ix);
	free(p);
	/* /dev/stdin and /dev/fd/N may name a regular file too: it has no
	 * folder of its own here either. */
	if (r == 0)
		ix->piped = !S_ISREG(st.st_mode) ||
		    strncmp(path, "/dev/", 5) == 0 ||
		    strncmp(path, "/proc/", 6) == 0;
	return r;
ioerr:
	rv_preferr("'%s'", path);
fail:
	close(fd);
	free(p);
	return -1;
}

/* ---- checksum ---- */

int
rv_index_checksum(int fd, uint64_t size, uint64_t *sum)
{
	unsigned char buf[2 * CHECK_SPAN];
	size_t head = size < 2 * CHECK_SPAN ? (size_t)size : CHECK_SPAN;
	size_t tail = size < 2 * CHECK_SPAN ? 0 : CHECK_SPAN;

	if (rv_pread_full(fd, buf, head, 0) < 0 ||
	    (tail && rv_pread_full(fd, buf + head, tail,
	    (off_t)(size - tail)) < 0))
		return -1;
	*sum = XXH64(buf, head + tail, size);
	return 0;
}

/* ---- paths ---- */

/* path normalised lexically: no "." segments, no empty ones, and a ".."
 * takes away the segment before it where there is one (at the root of an
 * absolute path it is dropped; a relative path keeps its leading ".."). */
static char *
lexical(const char *path)
{
	char *t = xstrdup(path), *out, *seg, *save = NULL;
	int abs = path[0] == '/';
	size_t n = 0, depth = 0;	/* depth: segments that ".." may take */

	out = xmalloc(strlen(path) + 2);
	out[0] = '\0';
	for (seg = strtok_r(t, "/", &save); seg; seg = strtok_r(NULL, "/",
	    &save)) {
		if (strcmp(seg, ".") == 0)
			continue;
		if (strcmp(seg, "..") == 0 && depth > 0) {
			char *slash = strrchr(out, '/');
			n = slash ? (size_t)(slash - out) : 0;
			out[n] = '\0';
			depth--;
			continue;
		}
		if (strcmp(seg, "..") == 0 && abs)
			continue;
		if (strcmp(seg, "..") != 0)
			depth++;
		if (n > 0 || abs)
			out[n++] = '/';
		strcpy(out + n, seg);
		n += strlen(seg);
	}
	if (n == 0)
		strcpy(out, abs ? "/" : ".");
	free(t);
	return out;
}

/* path made absolute (on the current directory) and normalised; NULL
 * when the current directory is not to be had. */
static char *
absolute(const char *path)
{
	char *cwd = NULL, *joined, *out;
	size_t cap = 256;

	if (path[0] == '/')
		return lexical(path);
	for (;;) {
		cwd = xrealloc(cwd, cap);
		if (getcwd(cwd, cap))
			break;
		if (errno != ERANGE) {
			free(cwd);
			return NULL;
		}
		cap *= 2;
	}
	joined = xasprintf("%s/%s", cwd, path);
	out = lexical(joined);
	free(cwd);
	free(joined);
	return out;
}

char *
rv_index_resolve(const char *index_path, const char *written)
{
	const char *slash = strrchr(index_path, '/');
	char *joined, *out;

	if (written[0] == '/' || !slash)
		return lexical(written);
	joined = xasprintf("%.*s/%s", (int)(slash - index_path), index_path,
	    written);
	out = lexical(joined);
	free(joined);
	return out;
}

char *
rv_index_relative(const char *index_path, const char *path)
{
	char *ix = absolute(index_path), *p = absolute(path), *slash, *r;
	struct rv_buf b = { 0 };
	size_t common = 0, i;

	if (!ix || !p) {
		free(ix);
		free(p);
		rv_seterr("cannot tell the current directory:");
		return NULL;
	}
	/* The index's folder: drop its name. */
	slash = strrchr(ix, '/');
	slash[slash == ix ? 1 : 0] = '\0';
	if (strcmp(ix, "/") == 0)
		ix[0] = '\0';
	/* The longest common prefix of whole segments. */
	for (i = 0; ix[i] && ix[i] == p[i]; i++)
		if (ix[i] == '/')
			common = i;
	if (ix[i] == '\0' && (p[i] == '/' || p[i] == '\0'))
		common = i;
	for (i = common; ix[i]; i++)
		if (ix[i] == '/')
			rv_buf_append(&b, "../", 3);
	rv_buf_append(&b, p + common + (p[common] == '/'),
	    strlen(p + common + (p[common] == '/')) + 1);
	r = (char *)b.data;
	free(ix);
	free(p);
	return r;
}
