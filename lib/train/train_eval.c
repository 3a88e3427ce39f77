/*
 * Evaluation sets (train_eval.h).  Samples are collated by the same
 * batcher rv-batch uses (so batches of any size re-batch, and a bad
 * record is reported as everywhere else), then appended to flat arrays:
 * a 10000-image Fashion-MNIST test set is 7.8 MB.
 */
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/xmem.h"
#include "stream/batch.h"
#include "stream/stream.h"
#include "train/train_eval.h"

static int
append(void *ctx, const struct rv_rec *b)
{
	struct rv_eval_set *e = ctx;
	const unsigned char *p = b->payload;
	size_t n = b->count, i, px;

	if (e->n == 0 && e->cap == 0) {
		e->h = b->height;
		e->w = b->width;
		e->c = b->channels;
	}
	px = (size_t)e->h * e->w * e->c;
	if (e->n + n > e->cap) {
		size_t cap = e->cap ? e->cap : 1024;

		while (cap < e->n + n)
			cap *= 2;
		e->pixels = xrealloc(e->pixels, cap * px);
		e->labels = xrealloc(e->labels, cap * sizeof(*e->labels));
		e->ids = xrealloc(e->ids, cap * sizeof(*e->ids));
		e->weights = xrealloc(e->weights, cap * sizeof(*e->weights));
		e->cap = cap;
	}
	for (i = 0; i < n; i++) {
		int32_t l = (int32_t)rv_le32(p + 8 * n + 4 * i);

		if (l < 0)
			return rv_seterr("sample %llu has no label",
			    (unsigned long long)rv_le64(p + 8 * i));
		e->ids[e->n + i] = rv_le64(p + 8 * i);
		e->labels[e->n + i] = l;
		e->weights[e->n + i] = 1;
	}
	memcpy(e->pixels + e->n * px, p + rv_batch_pixels_off((uint32_t)n),
	    n * px);
	e->n += n;
	return 0;
}

int
rv_eval_load(struct rv_eval_set *e, const char *path, uint32_t batch)
{
	struct rv_batch_conf bc;
	struct rv_batcher *bt;
	struct rv_reader *rd;
	struct rv_rec rec;
	int r;

	memset(e, 0, sizeof(*e));
	if ((rd = rv_reader_open(path)) == NULL)
		return -1;
	rv_batch_conf_init(&bc);
	bc.size = batch;
	bt = rv_batcher_new(&bc, append, e);
	while ((r = rv_reader_next(rd, &rec)) == 1) {
		if (rec.kind == RV_SAMPLE || rec.kind == RV_BATCH)
			r = rv_batcher_add(bt, &rec);
		else if (rec.kind == RV_EPOCH_END)
			r = rv_batcher_end_epoch(bt);
		else
			r = 0;
		if (r < 0) {
			rv_preferr("'%s': record %llu at byte %llu",
			    rv_reader_name(rd), (unsigned long long)
			    rv_reader_records(rd) - 1,
			    (unsigned long long)rv_reader_offset(rd));
			break;
		}
	}
	if (r == 0 && rv_batcher_end_epoch(bt) < 0)
		r = -1;
	if (r == 0 && rv_reader_check_end(rd) < 0)
		r = -1;
	rv_batcher_free(bt);
	rv_reader_close(rd);
	if (r == 0 && e->n == 0)
		r = rv_seterr("'%s': no samples to evaluate on", path);
	if (r < 0) {
		rv_preferr("--eval");
		rv_eval_release(e);
		return -1;
	}
	return 0;
}

int
rv_eval_run(const struct rv_eval_set *e, const struct rv_nn_ops *ops,
    void *be, int batch_max, float *loss, int32_t *pred, double *mean_loss,
    double *acc)
{
	size_t px = (size_t)e->h * e->w * e->c, i = 0, k;
	struct rv_nn_out out = { loss, NULL, pred };
	struct rv_nn_batch b;
	double lsum = 0;
	uint64_t correct = 0;

	while (i < e->n) {
		size_t n = e->n - i < (size_t)batch_max ? e->n - i :
		    (size_t)batch_max;

		b.n = (int)n;
		b.pixels = e->pixels + i * px;
		b.ids = e->ids + i;
		b.labels = e->labels + i;
		b.weights = e->weights + i;
		b.step = 0;
		if (ops->eval(be, &b, &out) < 0)
			return rv_preferr("--eval");
		for (k = 0; k < n; k++) {
			lsum += loss[k];
			correct += pred[k] == e->labels[i + k];
		}
		i += n;
	}
	*mean_loss = lsum / (double)e->n;
	*acc = (double)correct / (double)e->n;
	return 0;
}

void
rv_eval_release(struct rv_eval_set *e)
{
	free(e->pixels);
	free(e->labels);
	free(e->ids);
	free(e->weights);
	memset(e, 0, sizeof(*e));
}
