/*
 * A filter of samples on -j threads (filter.h): the reading, the chunks
 * and the records passed on; the program gives what a sample becomes.
 */
#include "stream/filter.h"

#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/xmem.h"

struct rv_filter {
	struct rv_filter_conf c;
	struct rv_par *par;
	struct rv_filter_item *items;	/* one per slot of the chunk */
	size_t nitems;
};

static int
item_fn(void *state, size_t i, struct rv_par_slot *s, void *ctx)
{
	struct rv_filter *f = ctx;
	struct rv_filter_item *it = &f->items[i];

	if (it->pass)
		return RV_PAR_OK;
	return f->c.sample(state, it, s, f->c.ctx);
}

/* In order: a record passed on goes out where its slot stands. */
static int
each_fn(void *ctx, size_t i, const struct rv_par_slot *s)
{
	struct rv_filter *f = ctx;
	struct rv_filter_item *it = &f->items[i];

	if (it->pass)
		return rv_writer_put(f->c.out, &it->rec, it->in.data);
	if (s->status == RV_PAR_SKIP) {
		if (f->c.strict)
			return rv_seterr("%s", s->msg);
		rv_warn("%s (skipped)", s->msg);
		return 0;
	}
	return f->c.done(f->c.ctx, it, s);
}

struct rv_filter *
rv_filter_new(const struct rv_filter_conf *conf)
{
	struct rv_filter *f = xcalloc(1, sizeof(*f));

	f->c = *conf;
	f->par = rv_par_new(&(struct rv_par_conf){
		.nthreads = conf->nthreads,
		.max_items = conf->per_thread * (size_t)conf->nthreads,
		.start = conf->start, .stop = conf->stop, .arg = conf->arg,
		.item = item_fn, .each = each_fn, .ctx = f,
		.out = conf->out, .prog = conf->prog });
	if (f->par == NULL) {
		free(f);
		return NULL;
	}
	f->nitems = rv_par_max(f->par);
	f->items = xcalloc(f->nitems, sizeof(*f->items));
	return f;
}

/* Add rec to the chunk, taking its payload from the reader. */
static int
add_item(struct rv_filter *f, struct rv_reader *r, struct rv_rec *rec,
    const char *input, uint64_t recno, int pass)
{
	struct rv_filter_item *it;
	size_t i;

	if (rv_par_add(f->par, (size_t)rec->payload_len, &i) < 0)
		return -1;
	it = &f->items[i];
	rv_reader_take(r, rec, &it->in);
	it->rec = *rec;
	it->rec.payload = NULL;
	it->input = input;
	it->recno = recno;
	it->pass = pass;
	it->mark = 0;
	it->n = 0;
	return 0;
}

int
rv_filter_run(struct rv_filter *f, char *const *paths, int npaths)
{
	struct rv_reader *r;
	struct rv_rec rec;
	const char *name;
	uint64_t recno;
	int got, rc = 0, seen_meta = 0;

	if ((r = rv_reader_open_list(paths, npaths)) == NULL)
		return -1;
	while (rc == 0 && (got = rv_reader_next(r, &rec)) == 1) {
		name = rv_reader_name(r);	/* valid until the close */
		recno = rv_reader_records(r) - 1;
		switch (rec.kind) {
		case RV_BATCH:
			rc = rv_seterr("'%s': record %llu is a batch; %s "
			    "before rv-batch", name, (unsigned long long)recno,
			    f->c.verb);
			break;
		case RV_META:
			seen_meta = 1;
			if ((rc = rv_par_flush(f->par)) < 0)
				break;
			if ((rc = f->c.meta(f->c.ctx, &rec)) < 0)
				rv_preferr("'%s': record %llu", name,
				    (unsigned long long)recno);
			break;
		case RV_SAMPLE:
			if (!seen_meta) {
				seen_meta = 1;
				if ((rc = rv_par_flush(f->par)) < 0 ||
				    (rc = f->c.meta(f->c.ctx, NULL)) < 0)
					break;
			}
			rc = add_item(f, r, &rec, name, recno, 0);
			break;
		default:
			/* epoch ends, and kinds of later versions */
			rc = add_item(f, r, &rec, name, recno, 1);
			break;
		}
	}
	if (rc == 0 && (got < 0 || rv_reader_check_end(r) < 0))
		rc = -1;
	/* items name this reader: finish them while it is open */
	if (rc == 0)
		rc = rv_par_flush(f->par);
	rv_reader_close(r);
	return rc;
}

const struct rv_par_stats *
rv_filter_stats(const struct rv_filter *f)
{
	return rv_par_stats(f->par);
}

void
rv_filter_free(struct rv_filter *f)
{
	size_t i;

	if (f == NULL)
		return;
	rv_par_free(f->par);
	for (i = 0; i < f->nitems; i++)
		rv_buf_release(&f->items[i].in);
	free(f->items);
	free(f);
}
