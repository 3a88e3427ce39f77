/*
 * rv-inspect's engine: views of the samples inside records, the summary
 * accumulator and report, --dump lines, the --png directory and the --grid
 * contact sheet.  Counts live in small hash tallies keyed by what is
 * counted (epoch, label, shape), so memory follows the variety of a
 * stream, not its length.
 */
#include "inspect/inspect.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/err.h"
#include "base/hash.h"
#include "base/xmem.h"
#include "inspect/font.h"

static const char *const flag_names[] = {
	"partial", "final", "cached", "scored", "reweighted"
};
#define NFLAGS	5

static void bprintf(struct rv_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
bprintf(struct rv_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n <= 0)
		return;
	rv_buf_reserve(b, (size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

/* ---------------------------------------------------------------- tally */

struct tent {
	uint64_t a, b, v;
	int used;
};

/* Open addressing on (a, b); v is the caller's counter.  The pairs are
 * the stream's (epochs, ids, labels, shapes): hashed under the tally's
 * own secret (base/hash.h), so that pairs chosen to collide find no run
 * of slots to walk; only sorted copies of the entries are ever shown. */
struct tally {
	struct tent *e;
	size_t n, cap;
	struct rv_hkey key;
};

static size_t
tally_pos(const struct tally *t, uint64_t a, uint64_t b)
{
	uint64_t ab[2] = { a, b };
	size_t mask = t->cap - 1;
	size_t i = (size_t)rv_hash_bytes(&t->key, ab, sizeof(ab)) & mask;

	while (t->e[i].used && (t->e[i].a != a || t->e[i].b != b))
		i = (i + 1) & mask;
	return i;
}

static void
tally_grow(struct tally *t)
{
	struct tally nt;
	size_t i;

	nt.cap = t->cap ? t->cap * 2 : 16;
	nt.n = t->n;
	nt.key = t->key;
	if (t->cap == 0)
		rv_hkey_draw(&nt.key);
	nt.e = xcalloc(nt.cap, sizeof(*nt.e));
	for (i = 0; i < t->cap; i++)
		if (t->e[i].used)
			nt.e[tally_pos(&nt, t->e[i].a, t->e[i].b)] = t->e[i];
	free(t->e);
	*t = nt;
}

/* The counter for (a, b), created at 0. */
static uint64_t *
tally_slot(struct tally *t, uint64_t a, uint64_t b)
{
	size_t i;

	if ((t->n + 1) * 4 > t->cap * 3)
		tally_grow(t);
	i = tally_pos(t, a, b);
	if (!t->e[i].used) {
		t->e[i].used = 1;
		t->e[i].a = a;
		t->e[i].b = b;
		t->e[i].v = 0;
		t->n++;
	}
	return &t->e[i].v;
}

/* The counter for (a, b), or 0 if absent. */
static uint64_t
tally_get(const struct tally *t, uint64_t a, uint64_t b)
{
	size_t i;

	if (t->cap == 0)
		return 0;
	i = tally_pos(t, a, b);
	return t->e[i].used ? t->e[i].v : 0;
}

/* A sorted copy of the entries (caller frees). */
static struct tent *
tally_sorted(const struct tally *t, int (*cmp)(const void *, const void *))
{
	struct tent *v = xcalloc(t->n ? t->n : 1, sizeof(*v));
	size_t i, k = 0;

	for (i = 0; i < t->cap; i++)
		if (t->e[i].used)
			v[k++] = t->e[i];
	qsort(v, k, sizeof(*v), cmp);
	return v;
}

static void
tally_release(struct tally *t)
{
	free(t->e);
	memset(t, 0, sizeof(*t));
}

static int
by_key(const void *x, const void *y)
{
	const struct tent *p = x, *q = y;

	if (p->a != q->a)
		return p->a < q->a ? -1 : 1;
	if (p->b != q->b)
		return p->b < q->b ? -1 : 1;
	return 0;
}

/* Most frequent first, then by key: a stable order for the report. */
static int
by_count(const void *x, const void *y)
{
	const struct tent *p = x, *q = y;

	if (p->v != q->v)
		return p->v > q->v ? -1 : 1;
	return by_key(x, y);
}

/* -------------------------------------------------------------- views */

static float
u2f(uint32_t u)
{
	float f;

	memcpy(&f, &u, 4);
	return f;
}

uint32_t
rv_rec_nsamples(const struct rv_rec *r)
{
	switch (r->kind) {
	case RV_SAMPLE: return 1;
	case RV_BATCH: return r->count;
	default: return 0;
	}
}

void
rv_rec_view(const struct rv_rec *r, uint32_t i, struct rv_view *v)
{
	memset(v, 0, sizeof(*v));
	v->epoch = r->epoch;
	v->flags = r->flags;
	v->uses = r->uses;
	v->score = r->score;
	v->dtype = r->dtype;
	v->h = r->height;
	v->w = r->width;
	v->c = r->channels;
	if (r->kind == RV_BATCH) {
		uint32_t n = r->count;
		size_t px = (size_t)r->height * r->width * r->channels;
		const unsigned char *p = r->payload;

		v->id = rv_le64(p + (size_t)8 * i);
		v->label = (int32_t)rv_le32(p + (size_t)8 * n + (size_t)4 * i);
		v->weight = u2f(rv_le32(p + (size_t)12 * n + (size_t)4 * i));
		v->data = p + rv_batch_pixels_off(n) + px * i;
		v->len = px;
		return;
	}
	v->id = r->id;
	v->label = r->label;
	v->weight = r->weight;
	v->data = r->payload;
	v->len = (size_t)r->payload_len;
}

int
rv_view_pixels(const struct rv_view *v, struct rv_codec *codec,
    struct rv_img *img, struct rv_pix *out)
{
	struct rv_decode_opts o;

	switch (v->dtype) {
	case RV_DT_U8:
		out->px = v->data;
		out->h = v->h;
		out->w = v->w;
		out->c = v->c;
		return 0;
	case RV_DT_JPEG:
	case RV_DT_PNG:
		break;
	default:
		return rv_seterr("id %llu: no pixels in a %s sample",
		    (unsigned long long)v->id, rv_dtype_name(v->dtype));
	}
	if (!codec)
		return rv_seterr("id %llu: no decoder",
		    (unsigned long long)v->id);
	memset(&o, 0, sizeof(o));
	o.channels = v->c == 1 || v->c == 3 ? v->c : 3;
	o.max_pixels = RV_MAX_PIXELS_DEFAULT;
	if (rv_codec_decode(codec, v->data, v->len, &o, img) < 0)
		return rv_preferr("id %llu", (unsigned long long)v->id);
	out->px = img->data;
	out->h = img->h;
	out->w = img->w;
	out->c = img->c;
	return 0;
}

/* ------------------------------------------------------------ summary */

/*
 * One epoch as rv-stream(5) defines it: consecutive epoch-ends of one
 * epoch number, with only that epoch's samples between them, are one
 * epoch (the readers join them; the summary sees them as they lie).
 */
struct epoch {
	uint32_t epoch;
	int ended;		/* an epoch-end was read, perhaps not the last */
	uint64_t samples;
	uint64_t said;		/* the epoch-ends' counts, summed */
	uint64_t marks;		/* epoch-end records */
};

struct rv_summary {
	uint64_t records, kinds[5];	/* kinds[0]: unknown */
	uint64_t samples, input, payload;
	uint64_t dtypes[4];
	uint64_t flags[NFLAGS], flags_other;
	uint64_t id_min, id_max;
	float wmin, wmax;
	double wsum;
	uint64_t nscore;
	float smin, smax;
	double ssum;
	uint32_t uses_max;
	double uses_sum;
	struct epoch *ep;	/* the epochs in stream order */
	size_t nep, capep;
	struct tally labels;	/* ((u32)label, 0): samples */
	struct tally shapes;	/* (h << 32 | w, c): samples */
	struct rv_meta meta;
};

struct rv_summary *
rv_summary_new(void)
{
	struct rv_summary *s = xcalloc(1, sizeof(*s));

	rv_meta_init(&s->meta);
	return s;
}

void
rv_summary_free(struct rv_summary *s)
{
	if (!s)
		return;
	free(s->ep);
	tally_release(&s->labels);
	tally_release(&s->shapes);
	rv_meta_release(&s->meta);
	free(s);
}

/* The epoch a sample or an epoch-end of this number belongs to: the
 * last one if it has the number, else a new one. */
static struct epoch *
epoch_at(struct rv_summary *s, uint32_t epoch)
{
	struct epoch *e;

	if (s->nep > 0 && s->ep[s->nep - 1].epoch == epoch)
		return &s->ep[s->nep - 1];
	if (s->nep == s->capep) {
		s->capep = s->capep ? 2 * s->capep : 16;
		s->ep = xrealloc(s->ep, s->capep * sizeof(*s->ep));
	}
	e = &s->ep[s->nep++];
	memset(e, 0, sizeof(*e));
	e->epoch = epoch;
	return e;
}

static void
add_sample(struct rv_summary *s, const struct rv_view *v)
{
	struct epoch *e;
	int i;

	if (s->samples == 0) {
		s->id_min = s->id_max = v->id;
		s->wmin = s->wmax = v->weight;
	}
	s->samples++;
	if (v->id < s->id_min)
		s->id_min = v->id;
	if (v->id > s->id_max)
		s->id_max = v->id;
	if (v->weight < s->wmin)
		s->wmin = v->weight;
	if (v->weight > s->wmax)
		s->wmax = v->weight;
	s->wsum += v->weight;
	if (!isnan(v->score)) {
		if (s->nscore == 0 || v->score < s->smin)
			s->smin = v->score;
		if (s->nscore == 0 || v->score > s->smax)
			s->smax = v->score;
		s->ssum += v->score;
		s->nscore++;
	}
	if (v->uses > s->uses_max)
		s->uses_max = v->uses;
	s->uses_sum += v->uses;
	for (i = 0; i < NFLAGS; i++)
		if (v->flags & 1u << i)
			s->flags[i]++;
	if (v->flags & ~RV_F_ALL)
		s->flags_other++;
	if (v->dtype >= 0 && v->dtype < 4)
		s->dtypes[v->dtype]++;
	e = epoch_at(s, v->epoch);
	e->samples++;
	e->ended = 0;	/* open again until its next epoch-end */
	(*tally_slot(&s->labels, (uint32_t)v->label, 0))++;
	(*tally_slot(&s->shapes, (uint64_t)v->h << 32 | v->w, v->c))++;
}

int
rv_summary_add(struct rv_summary *s, const struct rv_rec *r)
{
	struct epoch *e;
	uint32_t i, n;

	s->records++;
	s->kinds[r->kind <= RV_META ? r->kind : 0]++;
	s->payload += r->payload_len;
	switch (r->kind) {
	case RV_META:
		return rv_meta_parse(&s->meta, r->payload,
		    (size_t)r->payload_len);
	case RV_EPOCH_END:
		e = epoch_at(s, r->epoch);
		e->said += r->count;
		e->marks++;
		e->ended = 1;
		return 0;
	default:
		break;
	}
	n = rv_rec_nsamples(r);
	for (i = 0; i < n; i++) {
		struct rv_view v;
		rv_rec_view(r, i, &v);
		add_sample(s, &v);
	}
	return 0;
}

void
rv_summary_add_input(struct rv_summary *s, uint64_t bytes)
{
	s->input += bytes;
}

const struct rv_meta *
rv_summary_meta(const struct rv_summary *s)
{
	return &s->meta;
}

uint64_t
rv_summary_records(const struct rv_summary *s, int kind)
{
	if (kind == 0)
		return s->records;
	return kind > 0 && kind <= RV_META ? s->kinds[kind] : 0;
}

uint64_t
rv_summary_input(const struct rv_summary *s)
{
	return s->input;
}

uint64_t
rv_summary_samples(const struct rv_summary *s)
{
	return s->samples;
}

uint64_t
rv_summary_label(const struct rv_summary *s, int32_t label)
{
	return tally_get(&s->labels, (uint32_t)label, 0);
}

uint64_t
rv_summary_epoch(const struct rv_summary *s, uint32_t epoch)
{
	uint64_t n = 0;
	size_t i;

	for (i = 0; i < s->nep; i++)
		if (s->ep[i].epoch == epoch)
			n += s->ep[i].samples;
	return n;
}

#define KEYW	"12"	/* width of the report's first column */
#define MAX_EPOCH_ROWS	10
#define MAX_CLASS_ROWS	32
#define MAX_LIST	8

static void
fmt_epoch_row(const struct epoch *e, struct rv_buf *o)
{
	char key[24];

	snprintf(key, sizeof(key), "%lu", (unsigned long)e->epoch);
	bprintf(o, "  %-10s %llu samples", key, (unsigned long long)e->samples);
	if (!e->ended)
		bprintf(o, ", no epoch-end\n");
	else if (e->marks == 1)
		bprintf(o, ", epoch-end %llu%s\n", (unsigned long long)e->said,
		    e->said != e->samples ? " (mismatch)" : "");
	else
		bprintf(o, ", epoch-end %llu in %llu records%s\n",
		    (unsigned long long)e->said, (unsigned long long)e->marks,
		    e->said != e->samples ? " (mismatch)" : "");
}

/* The epochs in stream order: `cat` of two runs lists epoch 0 twice. */
static void
fmt_epochs(const struct rv_summary *s, int verbose, struct rv_buf *o)
{
	uint64_t lo, hi, bad = 0, unended = 0;
	char key[48];
	size_t i;

	bprintf(o, "%-" KEYW "s %zu\n", "epochs", s->nep);
	if (s->nep <= MAX_EPOCH_ROWS || verbose) {
		for (i = 0; i < s->nep; i++)
			fmt_epoch_row(&s->ep[i], o);
		return;
	}
	/* one line, but an epoch that went wrong is still told */
	lo = hi = s->ep[0].samples;
	for (i = 0; i < s->nep; i++) {
		const struct epoch *e = &s->ep[i];

		if (e->samples < lo)
			lo = e->samples;
		if (e->samples > hi)
			hi = e->samples;
		if (!e->ended)
			unended++;
		else if (e->said != e->samples)
			bad++;
	}
	snprintf(key, sizeof(key), "%lu-%lu", (unsigned long)s->ep[0].epoch,
	    (unsigned long)s->ep[s->nep - 1].epoch);
	bprintf(o, "  %-10s %llu to %llu samples each", key,
	    (unsigned long long)lo, (unsigned long long)hi);
	if (unended)
		bprintf(o, ", %llu with no epoch-end",
		    (unsigned long long)unended);
	if (bad)
		bprintf(o, ", %llu mismatched", (unsigned long long)bad);
	bprintf(o, " (-v lists every epoch)\n");
}

static void
fmt_shapes(const struct rv_summary *s, int verbose, struct rv_buf *o)
{
	struct tent *v = tally_sorted(&s->shapes, by_count);
	size_t i;

	bprintf(o, "%-" KEYW "s", "shapes");
	if (s->shapes.n == 0)
		bprintf(o, " none");
	for (i = 0; i < s->shapes.n; i++) {
		if (i == MAX_LIST && !verbose) {
			bprintf(o, ", %zu more", s->shapes.n - i);
			break;
		}
		bprintf(o, "%s %llux%llux%llu %llu", i ? "," : "",
		    (unsigned long long)(v[i].a >> 32),
		    (unsigned long long)(v[i].a & 0xffffffffu),
		    (unsigned long long)v[i].b, (unsigned long long)v[i].v);
	}
	bprintf(o, "\n");
	free(v);
}

static void
fmt_classes(const struct rv_summary *s, int verbose, struct rv_buf *o)
{
	const struct rv_meta *m = &s->meta;
	struct tally cls;
	struct tent *v;
	uint64_t labelled = s->samples - rv_summary_label(s, -1);
	size_t i, shown;
	int lw = 1, nw = 0, cw = 1;

	/* labels seen, and classes the metadata names */
	memset(&cls, 0, sizeof(cls));
	for (i = 0; i < s->labels.cap; i++)
		if (s->labels.e[i].used &&
		    (int32_t)s->labels.e[i].a != -1)
			*tally_slot(&cls, (uint64_t)(int64_t)(int32_t)
			    s->labels.e[i].a, 0) = s->labels.e[i].v;
	for (i = 0; i < m->n; i++) {
		const char *k = m->key[i];
		char *end;
		long n;

		if (strncmp(k, "class.", 6) != 0 || k[6] < '0' ||
		    k[6] > '9')
			continue;
		errno = 0;
		n = strtol(k + 6, &end, 10);
		if (*end || errno || n > INT32_MAX)
			continue;
		(void)tally_slot(&cls, (uint64_t)n, 0);
	}
	if (cls.n == 0) {
		bprintf(o, "%-" KEYW "s none (%llu unlabelled)\n", "classes",
		    (unsigned long long)(s->samples - labelled));
		tally_release(&cls);
		return;
	}
	bprintf(o, "%-" KEYW "s %zu (%llu labelled, %llu unlabelled)\n",
	    "classes", cls.n, (unsigned long long)labelled,
	    (unsigned long long)(s->samples - labelled));
	/* keys are labels as signed 64-bit: sort them as such */
	for (i = 0; i < cls.cap; i++)
		if (cls.e[i].used)
			cls.e[i].a ^= 1ull << 63;
	v = tally_sorted(&cls, by_key);
	shown = cls.n > MAX_CLASS_ROWS && !verbose ? MAX_CLASS_ROWS : cls.n;
	for (i = 0; i < cls.n; i++)
		v[i].a ^= 1ull << 63;
	for (i = 0; i < shown; i++) {
		char key[32];
		const char *name;
		int n;

		n = snprintf(key, sizeof(key), "%lld", (long long)v[i].a);
		if (n > lw)
			lw = n;
		snprintf(key, sizeof(key), "class.%lld", (long long)v[i].a);
		name = rv_meta_get(m, key);
		if (name && (int)strlen(name) > nw)
			nw = (int)strlen(name) > 40 ? 40 : (int)strlen(name);
		n = snprintf(key, sizeof(key), "%llu",
		    (unsigned long long)v[i].v);
		if (n > cw)
			cw = n;
	}
	for (i = 0; i < shown; i++) {
		char key[32];
		const char *name;

		snprintf(key, sizeof(key), "class.%lld", (long long)v[i].a);
		name = rv_meta_get(m, key);
		bprintf(o, "  %*lld", lw, (long long)v[i].a);
		if (nw)
			bprintf(o, "  %-*s", nw, name ? name : "");
		bprintf(o, "  %*llu  %5.1f%%\n", cw,
		    (unsigned long long)v[i].v, labelled ?
		    100.0 * (double)v[i].v / (double)labelled : 0.0);
	}
	if (shown < cls.n)
		bprintf(o, "  ... %zu more (-v lists every class)\n",
		    cls.n - shown);
	free(v);
	tally_release(&cls);
}

void
rv_summary_format(const struct rv_summary *s, int verbose,
    struct rv_buf *o)
{
	const struct rv_meta *m = &s->meta;
	size_t i;
	int kw = 1, first;

	bprintf(o, "%-" KEYW "s %llu (sample %llu, batch %llu, epoch-end %llu, "
	    "meta %llu)\n", "records", (unsigned long long)s->records,
	    (unsigned long long)s->kinds[RV_SAMPLE],
	    (unsigned long long)s->kinds[RV_BATCH],
	    (unsigned long long)s->kinds[RV_EPOCH_END],
	    (unsigned long long)s->kinds[RV_META]);
	bprintf(o, "%-" KEYW "s %llu", "samples",
	    (unsigned long long)s->samples);
	if (s->samples)
		bprintf(o, " (ids %llu to %llu)",
		    (unsigned long long)s->id_min,
		    (unsigned long long)s->id_max);
	bprintf(o, "\n");
	bprintf(o, "%-" KEYW "s %llu input, %llu payload\n", "bytes",
	    (unsigned long long)s->input, (unsigned long long)s->payload);
	fmt_epochs(s, verbose, o);
	fmt_shapes(s, verbose, o);

	bprintf(o, "%-" KEYW "s", "dtypes");
	first = 1;
	for (i = 0; i < 4; i++) {
		if (!s->dtypes[i])
			continue;
		bprintf(o, "%s %s %llu", first ? "" : ",", rv_dtype_name(
		    (int)i), (unsigned long long)s->dtypes[i]);
		first = 0;
	}
	bprintf(o, "%s\n", first ? " none" : "");

	bprintf(o, "%-" KEYW "s", "flags");
	for (i = 0; i < NFLAGS; i++)
		bprintf(o, "%s %s %llu", i ? "," : "", flag_names[i],
		    (unsigned long long)s->flags[i]);
	if (s->flags_other)
		bprintf(o, ", unknown %llu",
		    (unsigned long long)s->flags_other);
	bprintf(o, "\n");

	if (s->uses_max == 0)
		bprintf(o, "%-" KEYW "s none\n", "uses");
	else
		bprintf(o, "%-" KEYW "s mean %.4g, max %u\n", "uses",
		    s->uses_sum / (double)s->samples, s->uses_max);
	if (s->samples == 0 || (s->wmin == 1.0f && s->wmax == 1.0f))
		bprintf(o, "%-" KEYW "s all 1\n", "weights");
	else
		bprintf(o, "%-" KEYW "s min %.4g, mean %.4g, max %.4g\n",
		    "weights", (double)s->wmin,
		    s->wsum / (double)s->samples, (double)s->wmax);
	if (s->nscore == 0)
		bprintf(o, "%-" KEYW "s none\n", "scores");
	else
		bprintf(o, "%-" KEYW "s %llu scored, min %.4g, mean %.4g, "
		    "max %.4g\n", "scores", (unsigned long long)s->nscore,
		    (double)s->smin, s->ssum / (double)s->nscore,
		    (double)s->smax);
	fmt_classes(s, verbose, o);

	if (m->n == 0) {
		bprintf(o, "%-" KEYW "s none\n", "meta");
		return;
	}
	bprintf(o, "%-" KEYW "s %zu keys\n", "meta", m->n);
	for (i = 0; i < m->n; i++)
		if ((int)strlen(m->key[i]) > kw)
			kw = (int)strlen(m->key[i]);
	if (kw > 20)
		kw = 20;
	for (i = 0; i < m->n; i++)
		bprintf(o, "  %-*s %s\n", kw, m->key[i], m->val[i]);
}

/* --------------------------------------------------------------- dump */

void
rv_dump_header(struct rv_buf *o)
{
	bprintf(o, "index\toffset\tkind\tepoch\tid\tlabel\theight\twidth\t"
	    "channels\tdtype\tcount\tflags\tuses\tweight\tscore\tbytes\n");
}

void
rv_dump_line(const struct rv_rec *r, uint64_t index, uint64_t offset,
    struct rv_buf *o)
{
	int sample = r->kind == RV_SAMPLE;
	int i, any = 0;

	bprintf(o, "%llu\t%llu\t%s\t%u\t", (unsigned long long)index,
	    (unsigned long long)offset, rv_kind_name(r->kind), r->epoch);
	if (sample) {
		bprintf(o, "%llu\t", (unsigned long long)r->id);
		if (r->label == -1)
			bprintf(o, "-\t");
		else
			bprintf(o, "%d\t", r->label);
	} else {
		bprintf(o, "-\t-\t");
	}
	bprintf(o, "%u\t%u\t%u\t%s\t%u\t", r->height, r->width, r->channels,
	    rv_dtype_name(r->dtype), r->count);
	for (i = 0; i < NFLAGS; i++) {
		if (r->flags & 1u << i) {
			bprintf(o, "%s%s", any ? "," : "", flag_names[i]);
			any = 1;
		}
	}
	if (r->flags & ~RV_F_ALL) {
		bprintf(o, "%s0x%x", any ? "," : "",
		    (unsigned)(r->flags & ~RV_F_ALL));
		any = 1;
	}
	bprintf(o, "%s\t%u\t", any ? "" : "-", r->uses);
	if (sample)
		bprintf(o, "%g\t", (double)r->weight);
	else
		bprintf(o, "-\t");
	if ((sample || r->kind == RV_BATCH) && !isnan(r->score))
		bprintf(o, "%g\t", (double)r->score);
	else
		bprintf(o, "-\t");
	bprintf(o, "%llu\n", (unsigned long long)r->payload_len);
}

/* ---------------------------------------------------------------- png */

struct rv_pngdir {
	char *dir;
	struct rv_buf path;
	struct tally seen;	/* (epoch, id): times written */
	struct rv_img img;
	uint64_t count;
};

void
rv_png_name(char *buf, size_t size, uint32_t epoch, uint64_t id,
    int32_t label, uint64_t k)
{
	char lab[16] = "", dup[32] = "";

	if (label != -1)
		snprintf(lab, sizeof(lab), "-l%d", label);
	if (k > 1)
		snprintf(dup, sizeof(dup), "-n%llu", (unsigned long long)k);
	snprintf(buf, size, "e%03u-id%06llu%s%s.png", epoch,
	    (unsigned long long)id, lab, dup);
}

struct rv_pngdir *
rv_pngdir_new(const char *dir)
{
	struct rv_pngdir *d;
	struct stat st;
	size_t n = strlen(dir);

	if (n == 0) {
		rv_seterr("empty directory name");
		return NULL;
	}
	while (n > 1 && dir[n - 1] == '/')
		n--;
	d = xcalloc(1, sizeof(*d));
	d->dir = xstrndup(dir, n);
	if (mkdir(d->dir, 0777) != 0 && errno != EEXIST) {
		rv_seterr("'%s':", d->dir);
		goto fail;
	}
	if (stat(d->dir, &st) != 0) {
		rv_seterr("'%s':", d->dir);
		goto fail;
	}
	if (!S_ISDIR(st.st_mode)) {
		rv_seterr("'%s': not a directory", d->dir);
		goto fail;
	}
	return d;
fail:
	free(d->dir);
	free(d);
	return NULL;
}

int
rv_pngdir_put(struct rv_pngdir *d, const struct rv_view *v,
    struct rv_codec *codec)
{
	struct rv_pix p;
	char name[96];
	uint64_t *k;

	if (rv_view_pixels(v, codec, &d->img, &p) < 0)
		return -1;
	k = tally_slot(&d->seen, v->epoch, v->id);
	rv_png_name(name, sizeof(name), v->epoch, v->id, v->label, ++*k);
	d->path.len = 0;
	rv_buf_append(&d->path, d->dir, strlen(d->dir));
	if (strcmp(d->dir, "/") != 0)
		rv_buf_append(&d->path, "/", 1);
	rv_buf_append(&d->path, name, strlen(name) + 1);
	if (rv_png_write((char *)d->path.data, p.px, p.h, p.w, p.c) < 0)
		return -1;
	d->count++;
	return 0;
}

uint64_t
rv_pngdir_count(const struct rv_pngdir *d)
{
	return d->count;
}

void
rv_pngdir_free(struct rv_pngdir *d)
{
	if (!d)
		return;
	free(d->dir);
	rv_buf_release(&d->path);
	tally_release(&d->seen);
	rv_img_release(&d->img);
	free(d);
}

/* -------------------------------------------------------------- sheet */

struct tile {
	size_t off;
	uint32_t h, w, c;	/* c: 1 or 3 */
	int32_t label;
};

struct rv_sheet {
	uint32_t max, n, cap;
	uint32_t tile;		/* rv_sheet_set_tile(); 0: the default */
	struct tile *t;
	struct rv_buf px;	/* every tile's pixels, one after another */
	struct rv_img dec, conv;
};

static const unsigned char sheet_bg[3] = { 64, 64, 64 };
static const unsigned char sheet_fg[3] = { 255, 255, 255 };

struct rv_sheet *
rv_sheet_new(uint32_t max_tiles)
{
	struct rv_sheet *s = xcalloc(1, sizeof(*s));

	s->max = max_tiles;
	return s;
}

void
rv_sheet_free(struct rv_sheet *s)
{
	if (!s)
		return;
	free(s->t);
	rv_buf_release(&s->px);
	rv_img_release(&s->dec);
	rv_img_release(&s->conv);
	free(s);
}

uint32_t
rv_sheet_count(const struct rv_sheet *s)
{
	return s->n;
}

int
rv_sheet_full(const struct rv_sheet *s)
{
	return s->n >= s->max;
}

void
rv_sheet_set_tile(struct rv_sheet *s, uint32_t tile)
{
	s->tile = tile > RV_SHEET_MAX_SIDE ? RV_SHEET_MAX_SIDE : tile;
}

int
rv_sheet_add(struct rv_sheet *s, const struct rv_view *v,
    struct rv_codec *codec)
{
	struct rv_pix p;
	const unsigned char *src;
	uint32_t tc, oh, ow;
	size_t bytes;
	struct tile *t;

	if (s->n >= s->max)
		return 0;
	if (rv_view_pixels(v, codec, &s->dec, &p) < 0)
		return -1;
	/* grey stays grey, alpha is dropped: tiles are 1 or 3 channels */
	tc = p.c <= 2 ? 1 : 3;
	src = p.px;
	if (p.c != tc) {
		size_t i, npx = (size_t)p.h * p.w;
		uint32_t k;
		rv_img_reserve(&s->conv, p.h, p.w, tc);
		for (i = 0; i < npx; i++)
			for (k = 0; k < tc; k++)
				s->conv.data[i * tc + k] = p.px[i * p.c + k];
		src = s->conv.data;
	}
	rv_fit_max_side(p.h, p.w, s->tile ? s->tile : RV_SHEET_MAX_SIDE, &oh,
	    &ow);
	bytes = (size_t)oh * ow * tc;
	rv_buf_reserve(&s->px, bytes);
	if (oh != p.h || ow != p.w)
		rv_img_resize_area(src, p.h, p.w, tc, s->px.data + s->px.len,
		    oh, ow);
	else
		memcpy(s->px.data + s->px.len, src, bytes);
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 64;
		if (s->cap > s->max)
			s->cap = s->max;
		s->t = xreallocarray(s->t, s->cap, sizeof(*s->t));
	}
	t = &s->t[s->n++];
	t->off = s->px.len;
	t->h = oh;
	t->w = ow;
	t->c = tc;
	t->label = v->label;
	s->px.len += bytes;
	return 0;
}

/* The text under a tile: the class name if it fits, else the number,
 * cut to what fits. */
static void
tile_text(const struct rv_meta *meta, int32_t label, uint32_t width,
    char *buf, size_t size)
{
	char key[32];
	const char *name;
	size_t fit = (width + 1) / RV_GLYPH_ADV;

	snprintf(key, sizeof(key), "class.%d", label);
	name = meta ? rv_meta_get(meta, key) : NULL;
	if (name && strlen(name) < size && rv_font_width(name) <= width)
		snprintf(buf, size, "%s", name);
	else
		snprintf(buf, size, "%d", label);
	if (strlen(buf) > fit)
		buf[fit] = '\0';
}

static void
draw_tile(const struct rv_sheet *s, const struct tile *t, uint32_t scale,
    struct rv_img *out, uint64_t x0, uint64_t y0)
{
	const unsigned char *src = s->px.data + t->off;
	uint64_t th = (uint64_t)t->h * scale, tw = (uint64_t)t->w * scale;
	uint64_t y, x;

	for (y = 0; y < th; y++) {
		const unsigned char *row = src + (size_t)(y / scale) * t->w *
		    t->c;
		unsigned char *d = out->data + ((size_t)(y0 + y) * out->w +
		    (size_t)x0) * 3;
		for (x = 0; x < tw; x++, d += 3) {
			const unsigned char *p = row + (size_t)(x / scale) *
			    t->c;
			if (t->c == 1) {
				d[0] = d[1] = d[2] = p[0];
			} else {
				d[0] = p[0];
				d[1] = p[1];
				d[2] = p[2];
			}
		}
	}
}

int
rv_sheet_render(const struct rv_sheet *s, uint32_t cols, uint32_t scale,
    const struct rv_meta *meta, struct rv_img *out)
{
	uint32_t maxh = 0, maxw = 0, rows, i;
	uint64_t cellw, cellh, imgh, W, H;
	size_t k, npx;
	int labelled = 0;

	if (s->n == 0)
		return rv_seterr("no samples to draw");
	for (i = 0; i < s->n; i++) {
		if (s->t[i].h > maxh)
			maxh = s->t[i].h;
		if (s->t[i].w > maxw)
			maxw = s->t[i].w;
		if (s->t[i].label != -1)
			labelled = 1;
	}
	if (scale == 0) {
		uint32_t side = maxh > maxw ? maxh : maxw;
		/* with a tile size: the largest factor that stays within it */
		scale = s->tile ? s->tile / side :
		    (RV_SHEET_AUTO_SIDE + side - 1) / side;
		if (scale < 1)
			scale = 1;
		if (scale > RV_SHEET_MAX_AUTO)
			scale = RV_SHEET_MAX_AUTO;
	}
	if (cols == 0)
		while ((uint64_t)cols * cols < s->n)
			cols++;
	if (cols > s->n)
		cols = s->n;
	rows = (s->n + cols - 1) / cols;
	imgh = (uint64_t)maxh * scale;
	cellw = (uint64_t)maxw * scale;
	cellh = imgh + (labelled ? RV_SHEET_BAND : 0);
	W = cols * cellw + (uint64_t)(cols + 1) * RV_SHEET_GAP;
	H = rows * cellh + (uint64_t)(rows + 1) * RV_SHEET_GAP;
	if (W > RV_SHEET_MAX_DIM || H > RV_SHEET_MAX_DIM)
		return rv_seterr("contact sheet would be %llux%llu pixels, "
		    "over %u a side: draw fewer samples or use a smaller "
		    "scale",
		    (unsigned long long)W, (unsigned long long)H,
		    RV_SHEET_MAX_DIM);
	rv_img_reserve(out, (uint32_t)H, (uint32_t)W, 3);
	out->h = (uint32_t)H;
	out->w = (uint32_t)W;
	out->c = 3;
	npx = (size_t)W * (size_t)H;
	for (k = 0; k < npx; k++)
		memcpy(out->data + k * 3, sheet_bg, 3);
	for (i = 0; i < s->n; i++) {
		const struct tile *t = &s->t[i];
		uint64_t x0 = RV_SHEET_GAP + (i % cols) * (cellw +
		    RV_SHEET_GAP);
		uint64_t y0 = RV_SHEET_GAP + (i / cols) * (cellh +
		    RV_SHEET_GAP);
		char text[64];
		uint32_t tw;

		draw_tile(s, t, scale, out,
		    x0 + (cellw - (uint64_t)t->w * scale) / 2,
		    y0 + (imgh - (uint64_t)t->h * scale) / 2);
		if (t->label == -1)
			continue;
		tile_text(meta, t->label, (uint32_t)cellw, text, sizeof(text));
		tw = rv_font_width(text);
		rv_font_draw(out->data, out->w, out->h,
		    (long)(x0 + (cellw - tw) / 2), (long)(y0 + imgh + 2), text,
		    sheet_fg);
	}
	return 0;
}
