/*
 * Instance shrinking (rv-score): the keep decision of each sample under
 * the assistant, history or uniform policy, and the bounded per-id state
 * that feedback lines are matched against.  All memory is allocated by
 * rv_shrink_new; deciding and learning allocate nothing.
 */
#include "shrink.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "rng.h"
#include "xmem.h"

#define NIL		UINT32_MAX
#define MAX_TABLE	((size_t)1 << 30)	/* entries in one id map */
#define RECENT		4096	/* recent gradnorms for percentiles */
#define RESORT		256	/* pushes between sorts of the copy */

/*
 * A bounded map from ids to slots 0..cap-1: a hash table (linear probing,
 * backward-shift deletion, so no tombstones) over a doubly linked age
 * list, oldest first, that evicts its head when a new id finds the map
 * full.  The caller keeps the payload in its own arrays by slot.  tab[]
 * holds slot + 1 and slots are handed out in order before the free list
 * is used, so zeroed (untouched) pages are valid state.
 */
struct idmap {
	uint32_t *tab;
	size_t mask;
	uint64_t *id;
	uint32_t *prev, *next;
	uint32_t head, tail, free;
	size_t n, fresh, cap;
};

struct rv_shrink {
	struct rv_shrink_conf conf;
	uint32_t channels;
	size_t nfeat;		/* image features, then RV_HIST_FEAT if on */
	size_t nimg;		/* image features: rv_feat_len(channels) */
	struct rv_assist *a;
	float *phi;		/* features of the sample being decided */

	/* assistant: features and labels of kept samples awaiting feedback */
	struct idmap fly;
	float *fly_phi;
	int32_t *fly_label;

	/* history, and the assistant's history features: the last value
	 * (gradnorm; the assistant's target value) of each id */
	struct idmap hist;
	float *hist_gn;
	float recent[RECENT], sorted[RECENT];
	size_t recent_n, recent_pos, sorted_n;
	uint64_t pushes;

	int have_first, warm;
	uint32_t first_epoch;
	uint64_t seen, kept, total_seen, total_kept, feedback, unmatched;
};

/* splitmix64's finaliser: consecutive ids spread over the table. */
static size_t
id_hash(uint64_t x)
{
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return (size_t)(x ^ (x >> 31));
}

static void
idmap_init(struct idmap *m, size_t cap)
{
	size_t size = 2;

	while (size < 2 * cap)
		size *= 2;
	m->tab = xcalloc(size, sizeof(*m->tab));
	m->mask = size - 1;
	m->id = xcalloc(cap, sizeof(*m->id));
	m->prev = xcalloc(cap, sizeof(*m->prev));
	m->next = xcalloc(cap, sizeof(*m->next));
	m->head = m->tail = m->free = NIL;
	m->n = m->fresh = 0;
	m->cap = cap;
}

static void
idmap_release(struct idmap *m)
{
	free(m->tab);
	free(m->id);
	free(m->prev);
	free(m->next);
}

static uint32_t
idmap_find(const struct idmap *m, uint64_t id)
{
	size_t i = id_hash(id) & m->mask;

	for (; m->tab[i] != 0; i = (i + 1) & m->mask)
		if (m->id[m->tab[i] - 1] == id)
			return m->tab[i] - 1;
	return NIL;
}

static void
list_unlink(struct idmap *m, uint32_t s)
{
	if (m->prev[s] != NIL)
		m->next[m->prev[s]] = m->next[s];
	else
		m->head = m->next[s];
	if (m->next[s] != NIL)
		m->prev[m->next[s]] = m->prev[s];
	else
		m->tail = m->prev[s];
}

static void
list_append(struct idmap *m, uint32_t s)
{
	m->prev[s] = m->tail;
	m->next[s] = NIL;
	if (m->tail != NIL)
		m->next[m->tail] = s;
	else
		m->head = s;
	m->tail = s;
}

static void
hash_remove(struct idmap *m, uint32_t s)
{
	size_t i = id_hash(m->id[s]) & m->mask, j, k;

	while (m->tab[i] != s + 1)
		i = (i + 1) & m->mask;
	m->tab[i] = 0;
	/* pull back every later entry of the run that may sit at i */
	for (j = (i + 1) & m->mask; m->tab[j] != 0; j = (j + 1) & m->mask) {
		k = id_hash(m->id[m->tab[j] - 1]) & m->mask;
		if (((j - k) & m->mask) >= ((j - i) & m->mask)) {
			m->tab[i] = m->tab[j];
			m->tab[j] = 0;
			i = j;
		}
	}
}

/* A slot for an id not in the map, evicting the oldest if full. */
static uint32_t
idmap_insert(struct idmap *m, uint64_t id)
{
	uint32_t s;
	size_t i;

	if (m->free != NIL) {
		s = m->free;
		m->free = m->next[s];
	} else if (m->fresh < m->cap) {
		s = (uint32_t)m->fresh++;
	} else {
		s = m->head;
		list_unlink(m, s);
		hash_remove(m, s);
		m->n--;
	}
	m->id[s] = id;
	for (i = id_hash(id) & m->mask; m->tab[i] != 0; i = (i + 1) & m->mask)
		;
	m->tab[i] = s + 1;
	list_append(m, s);
	m->n++;
	return s;
}

static void
idmap_remove(struct idmap *m, uint32_t s)
{
	list_unlink(m, s);
	hash_remove(m, s);
	m->next[s] = m->free;
	m->free = s;
	m->n--;
}

/* The youngest now: the last to be evicted. */
static void
idmap_touch(struct idmap *m, uint32_t s)
{
	list_unlink(m, s);
	list_append(m, s);
}

void
rv_shrink_conf_init(struct rv_shrink_conf *c)
{
	c->policy = RV_POLICY_ASSISTANT;
	c->floor = 0.3;
	c->beta = 1;
	c->keep = 0.5;
	c->reweight = 0;
	c->seed = 0;
	c->min_feedback = 1000;
	c->max_inflight = (size_t)1 << 16;
	c->max_ids = (size_t)1 << 20;
	c->hist_feat = 1;
	rv_assist_conf_init(&c->assist);
}

static int
check_conf(const struct rv_shrink_conf *c, uint32_t channels)
{
	if (c->policy != RV_POLICY_ASSISTANT &&
	    c->policy != RV_POLICY_HISTORY && c->policy != RV_POLICY_UNIFORM)
		return rv_seterr("shrink: policy %d: unknown", (int)c->policy);
	if (!(c->floor >= 0 && c->floor <= 1))
		return rv_seterr("shrink: floor %g: must be in [0, 1]",
		    c->floor);
	if (!(c->keep > 0 && c->keep <= 1))
		return rv_seterr("shrink: keep %g: must be in (0, 1]", c->keep);
	if (!(c->beta > 0) || !isfinite(c->beta))
		return rv_seterr("shrink: beta %g: must be positive", c->beta);
	if (c->max_inflight < 1)
		return rv_seterr("shrink: max_inflight 0: must be at least 1");
	if (c->max_inflight > MAX_TABLE)
		return rv_seterr("shrink: max_inflight %zu: more than %zu",
		    c->max_inflight, MAX_TABLE);
	if (c->max_ids < 1)
		return rv_seterr("shrink: max_ids 0: must be at least 1");
	if (c->max_ids > MAX_TABLE)
		return rv_seterr("shrink: max_ids %zu: more than %zu",
		    c->max_ids, MAX_TABLE);
	if (channels < 1 || channels > 4)
		return rv_seterr("shrink: %u channels: must be 1 to 4",
		    channels);
	return 0;
}

/* Does this configuration keep each id's last value? */
static int
uses_hist(const struct rv_shrink_conf *c)
{
	return c->policy == RV_POLICY_HISTORY ||
	    (c->policy == RV_POLICY_ASSISTANT && c->hist_feat);
}

/*
 * The assistant's history features of an id: the log of its last value
 * over the running mean of values, clamped to [-4, 4], and 1; both 0 for
 * an id never heard of (or before there is a mean).  The ratio is what
 * the label compares (value > mean), in a scale that does not drift as
 * the gradient norms shrink over training.
 */
static void
hist_features(const struct rv_shrink *s, uint64_t id, float *f)
{
	uint32_t slot = idmap_find(&s->hist, id);
	double m = rv_assist_mean(s->a), r;

	f[0] = f[1] = 0;
	if (slot == NIL || !(m > 0))
		return;
	r = log(fmax(s->hist_gn[slot], 1e-30) / m);
	f[0] = (float)fmin(fmax(r, -4), 4);
	f[1] = 1;
}

/* Remember v as id's last value. */
static void
hist_put(struct rv_shrink *s, uint64_t id, float v)
{
	uint32_t slot = idmap_find(&s->hist, id);

	if (slot == NIL)
		slot = idmap_insert(&s->hist, id);
	else
		idmap_touch(&s->hist, slot);
	s->hist_gn[slot] = v;
}

struct rv_shrink *
rv_shrink_new(const struct rv_shrink_conf *c, uint32_t channels,
    uint32_t classes)
{
	struct rv_shrink *s;
	struct rv_assist_conf ac;
	struct rv_assist *a = NULL;

	if (check_conf(c, channels) < 0)
		return NULL;
	if (c->policy == RV_POLICY_ASSISTANT) {
		ac = c->assist;
		ac.nfeat = (uint32_t)(rv_feat_len(channels) +
		    (c->hist_feat ? RV_HIST_FEAT : 0));
		ac.classes = classes;
		if ((a = rv_assist_new(&ac)) == NULL) {
			rv_preferr("shrink");
			return NULL;
		}
	}
	s = xcalloc(1, sizeof(*s));
	s->conf = *c;
	s->channels = channels;
	s->nimg = rv_feat_len(channels);
	s->nfeat = s->nimg;
	s->a = a;
	if (a != NULL) {
		s->conf.assist = ac;
		s->nfeat = ac.nfeat;
		s->phi = xcalloc(s->nfeat, sizeof(*s->phi));
		idmap_init(&s->fly, c->max_inflight);
		s->fly_phi = xcalloc(c->max_inflight * s->nfeat,
		    sizeof(*s->fly_phi));
		s->fly_label = xcalloc(c->max_inflight,
		    sizeof(*s->fly_label));
	}
	if (uses_hist(c)) {
		idmap_init(&s->hist, c->max_ids);
		s->hist_gn = xcalloc(c->max_ids, sizeof(*s->hist_gn));
	}
	return s;
}

void
rv_shrink_free(struct rv_shrink *s)
{
	if (s == NULL)
		return;
	rv_assist_free(s->a);
	free(s->phi);
	if (s->a != NULL)
		idmap_release(&s->fly);
	free(s->fly_phi);
	free(s->fly_label);
	if (uses_hist(&s->conf))
		idmap_release(&s->hist);
	free(s->hist_gn);
	free(s);
}

static int
cmp_float(const void *x, const void *y)
{
	float a = *(const float *)x, b = *(const float *)y;

	return (a > b) - (a < b);
}

/* Share of the sorted recent gradnorms <= v. */
static double
percentile(const struct rv_shrink *s, float v)
{
	size_t lo = 0, hi = s->sorted_n, mid;

	if (s->sorted_n == 0)
		return 1;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (s->sorted[mid] <= v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (double)lo / (double)s->sorted_n;
}

/*
 * The sorted copy is refreshed every RESORT pushes, and at every push
 * while there are fewer than RESORT values, so a small data set is
 * ranked as soon as its first feedback comes.
 */
static void
push_recent(struct rv_shrink *s, float v)
{
	s->recent[s->recent_pos] = v;
	s->recent_pos = (s->recent_pos + 1) % RECENT;
	if (s->recent_n < RECENT)
		s->recent_n++;
	s->pushes++;
	if (s->pushes < RESORT || s->pushes % RESORT == 0) {
		memcpy(s->sorted, s->recent, s->recent_n * sizeof(float));
		qsort(s->sorted, s->recent_n, sizeof(float), cmp_float);
		s->sorted_n = s->recent_n;
	}
}

int
rv_shrink_decide(struct rv_shrink *s, uint64_t id, uint32_t epoch,
    int32_t label, const uint8_t *px, uint32_t h, uint32_t w, uint32_t c,
    struct rv_keep *out)
{
	const struct rv_shrink_conf *cf = &s->conf;
	double pk, p;
	struct rv_rng r;
	uint32_t slot;

	if (s->a != NULL) {
		if (h == 0 || w == 0)
			return rv_seterr("shrink: empty %ux%u image", w, h);
		if (c != s->channels)
			return rv_seterr("shrink: image has %u channels, "
			    "not %u", c, s->channels);
	}
	if (!s->have_first) {
		s->have_first = 1;
		s->first_epoch = epoch;
	}
	if (!s->warm && epoch != s->first_epoch &&
	    (s->a == NULL || s->feedback >= cf->min_feedback))
		s->warm = 1;

	out->score = NAN;
	switch (cf->policy) {
	case RV_POLICY_ASSISTANT:
		rv_feat(px, h, w, c, s->phi);
		if (cf->hist_feat)
			hist_features(s, id, s->phi + s->nimg);
		p = rv_assist_predict(s->a, s->phi, label);
		out->score = (float)p;
		pk = cf->floor + (1 - cf->floor) * p;
		break;
	case RV_POLICY_HISTORY:
		slot = idmap_find(&s->hist, id);
		if (slot == NIL)
			pk = 1;
		else
			pk = fmax(cf->floor, pow(percentile(s,
			    s->hist_gn[slot]), cf->beta));
		break;
	default:
		pk = cf->keep;
		break;
	}
	if (!s->warm || pk > 1)
		pk = 1;
	if (pk >= 1) {
		out->keep = 1;
	} else {
		rv_rng_init(&r, cf->seed, RV_STAGE_SCORE, 0, epoch, id);
		out->keep = rv_rng_uniform(&r) < pk;
	}
	out->p_keep = pk;
	out->weight = 1.0f;
	if (cf->reweight && pk > 0)
		out->weight = 1 / pk > FLT_MAX ? FLT_MAX : (float)(1 / pk);

	s->seen++;
	s->total_seen++;
	if (!out->keep)
		return 0;
	s->kept++;
	s->total_kept++;
	/* a dropped sample gets no feedback: only kept ones wait for it */
	if (s->a != NULL) {
		slot = idmap_find(&s->fly, id);
		if (slot == NIL)
			slot = idmap_insert(&s->fly, id);
		else
			idmap_touch(&s->fly, slot);
		memcpy(s->fly_phi + (size_t)slot * s->nfeat, s->phi,
		    s->nfeat * sizeof(float));
		s->fly_label[slot] = label;
	}
	return 0;
}

void
rv_shrink_feedback(struct rv_shrink *s, const struct rv_fb_line *l)
{
	uint32_t slot;
	double v;

	switch (s->conf.policy) {
	case RV_POLICY_ASSISTANT:
		v = s->conf.assist.target == RV_TARGET_LOSS ? l->loss :
		    l->gradnorm;
		/* what the line says of its id holds even when unmatched */
		if (s->conf.hist_feat && isfinite(v))
			hist_put(s, l->id, (float)v);
		slot = idmap_find(&s->fly, l->id);
		if (slot == NIL) {
			s->unmatched++;
			return;
		}
		rv_assist_learn(s->a, s->fly_phi + (size_t)slot * s->nfeat,
		    s->fly_label[slot], v);
		idmap_remove(&s->fly, slot);
		break;
	case RV_POLICY_HISTORY:
		/* NaN would break the sort order; parsed lines are finite */
		if (!isfinite(l->gradnorm))
			return;
		hist_put(s, l->id, l->gradnorm);
		push_recent(s, l->gradnorm);
		break;
	default:
		break;
	}
	s->feedback++;
}

void
rv_shrink_epoch_end(struct rv_shrink *s)
{
	s->seen = s->kept = 0;
}

void
rv_shrink_stats(const struct rv_shrink *s, struct rv_shrink_stats *st)
{
	st->seen = s->seen;
	st->kept = s->kept;
	st->dropped = s->seen - s->kept;
	st->total_seen = s->total_seen;
	st->total_kept = s->total_kept;
	st->feedback = s->feedback;
	st->unmatched = s->unmatched;
	st->warm = s->warm;
	if (s->a != NULL) {
		rv_assist_stats(s->a, &st->assist);
	} else {
		memset(&st->assist, 0, sizeof(st->assist));
		st->assist.mean = st->assist.acc = st->assist.auc =
		    st->assist.pos_rate = NAN;
	}
}
