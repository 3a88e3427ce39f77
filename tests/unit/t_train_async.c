/*
 * The training loop with an asynchronous backend (struct rv_nn_ops.wait,
 * as the CUDA backend's): a wrapper around the CPU backend that fills a
 * step's out arrays only when wait() collects it, and poisons them with
 * NaN until then, so that a loop reading results early diverges or
 * writes wrong feedback.  On real Fashion-MNIST batches the loop must
 * give exactly the results, the feedback lines and the checkpoint of a
 * synchronous run: logging, evaluation, saving and the step limit all
 * see every step's results.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "nn/nn.h"
#include "train/ckpt.h"
#include "train/train.h"
#include "unit.h"

#define FMNIST "/usr/share/datasets/fashion-mnist"

static char dir[64];
static int max_inflight;	/* the most steps the loop kept in flight */

/* ---- The deferred backend --------------------------------------------- */

#define DMAX 4

struct deferred {
	void *cpu;
	int bm, inflight, head;
	float *loss[DMAX], *gn[DMAX];
	int32_t *pred[DMAX];
	struct rv_nn_out out[DMAX];
	int n[DMAX];
};

static void *
d_create(const struct rv_nn_config *cfg)
{
	struct deferred *d = calloc(1, sizeof(*d));

	if (d == NULL || !cfg->async)	/* the loop must ask for async */
		goto fail;
	if ((d->cpu = rv_nn_cpu.create(cfg)) == NULL)
		goto fail;
	d->bm = cfg->batch_max;
	for (int i = 0; i < DMAX; i++) {
		d->loss[i] = malloc(d->bm * sizeof(float));
		d->gn[i] = malloc(d->bm * sizeof(float));
		d->pred[i] = malloc(d->bm * sizeof(int32_t));
	}
	return d;
fail:
	free(d);
	rv_seterr("deferred: create failed");
	return NULL;
}

static void
d_destroy(void *be)
{
	struct deferred *d = be;

	rv_nn_cpu.destroy(d->cpu);
	for (int i = 0; i < DMAX; i++) {
		free(d->loss[i]);
		free(d->gn[i]);
		free(d->pred[i]);
	}
	free(d);
}

static int
d_wait(void *be, int keep)
{
	struct deferred *d = be;

	while (d->inflight > keep) {
		int s = d->head;
		size_t n = (size_t)d->n[s];

		if (d->out[s].loss != NULL)
			memcpy(d->out[s].loss, d->loss[s], n * 4);
		if (d->out[s].gradnorm != NULL)
			memcpy(d->out[s].gradnorm, d->gn[s], n * 4);
		if (d->out[s].pred != NULL)
			memcpy(d->out[s].pred, d->pred[s], n * 4);
		d->head = (s + 1) % DMAX;
		d->inflight--;
	}
	return 0;
}

static int
d_train(void *be, const struct rv_nn_batch *b, const struct rv_nn_hyper *h,
    struct rv_nn_out *out)
{
	struct deferred *d = be;
	int s = (d->head + d->inflight) % DMAX;
	struct rv_nn_out o = { d->loss[s], d->gn[s], d->pred[s] };

	if (d->inflight == DMAX)
		return rv_seterr("deferred: %d steps in flight", DMAX);
	if (rv_nn_cpu.train(d->cpu, b, h, &o) < 0)
		return -1;
	d->out[s] = *out;
	d->n[s] = b->n;
	for (int i = 0; i < b->n; i++) {
		out->loss[i] = NAN;
		out->gradnorm[i] = NAN;
		out->pred[i] = -1;
	}
	if (++d->inflight > max_inflight)
		max_inflight = d->inflight;
	return 0;
}

static int
d_eval(void *be, const struct rv_nn_batch *b, struct rv_nn_out *out)
{
	struct deferred *d = be;

	if (d->inflight > 0)
		return rv_seterr("deferred: eval with steps in flight");
	return rv_nn_cpu.eval(d->cpu, b, out);
}

static int
d_get_state(void *be, float *p, float *m, float *b)
{
	struct deferred *d = be;

	if (d->inflight > 0)
		return rv_seterr("deferred: get_state with steps in flight");
	return rv_nn_cpu.get_state(d->cpu, p, m, b);
}

static int
d_set_state(void *be, const float *p, const float *m, const float *b)
{
	struct deferred *d = be;

	if (d->inflight > 0)
		return rv_seterr("deferred: set_state with steps in flight");
	return rv_nn_cpu.set_state(d->cpu, p, m, b);
}

static const struct rv_nn_ops deferred_ops = {
	.name = "deferred",
	.create = d_create,
	.destroy = d_destroy,
	.train = d_train,
	.eval = d_eval,
	.get_state = d_get_state,
	.set_state = d_set_state,
	.wait = d_wait,
};

/* ---- Runs -------------------------------------------------------------- */

static char *
slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	*len = 0;
	if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) != 0 || (buf = malloc((size_t)n + 1)) ==
	    NULL || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		if (f != NULL)
			fclose(f);
		free(buf);
		return NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static int
run(const struct rv_nn_ops *ops, const char *tag, char *train_path,
    const char *eval_path, uint64_t max_steps, struct rv_train_result *r)
{
	static char fb[128], ck[128], lg[128];
	char *inputs[1] = { train_path };
	struct rv_train_conf c;

	snprintf(fb, sizeof(fb), "%s/fb-%s", dir, tag);
	snprintf(ck, sizeof(ck), "%s/ck-%s", dir, tag);
	snprintf(lg, sizeof(lg), "%s/log-%s", dir, tag);
	memset(&c, 0, sizeof(c));
	c.model = "cnn-small";
	c.backend = ops;
	c.threads = 1;
	c.seed = 3;
	c.batch = 64;
	c.hyper.lr = 0.05f;
	c.hyper.momentum = 0.9f;
	c.hyper.weight_decay = 5e-4f;
	c.sched = RV_SCHED_COSINE;
	c.epochs = 2;
	c.step_size = 30;
	c.gamma = 0.1;
	c.target_acc = -1;
	c.inputs = inputs;
	c.ninputs = 1;
	c.eval_path = eval_path;
	c.eval_every = 7;
	c.feedback_path = fb;
	c.feedback_queue = 1 << 16;
	c.log_path = lg;
	c.log_every = 5;
	c.save_path = ck;
	c.save_every = 11;
	c.max_steps = max_steps;
	c.quiet = 1;
	if (rv_train_run(&c, r) < 0) {
		printf("# %s: %s\n", tag, rv_errmsg());
		return -1;
	}
	return 0;
}

static int
same_file(const char *a, const char *b)
{
	char pa[128], pb[128], *x, *y;
	size_t la, lb;
	int same;

	snprintf(pa, sizeof(pa), "%s/%s", dir, a);
	snprintf(pb, sizeof(pb), "%s/%s", dir, b);
	x = slurp(pa, &la);
	y = slurp(pb, &lb);
	same = x != NULL && y != NULL && la == lb && la > 0 &&
	    memcmp(x, y, la) == 0;
	if (!same)
		printf("# %s and %s differ (%zu, %zu bytes)\n", pa, pb, la, lb);
	free(x);
	free(y);
	return same;
}

/* The same weights, momentum and statistics (the clocks differ). */
static int
same_ckpt(void)
{
	char pa[128], pb[128];
	struct rv_ckpt a, b;
	int same;

	snprintf(pa, sizeof(pa), "%s/ck-sync", dir);
	snprintf(pb, sizeof(pb), "%s/ck-async", dir);
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	if (rv_ckpt_load(pa, &a) < 0 || rv_ckpt_load(pb, &b) < 0) {
		printf("# %s\n", rv_errmsg());
		rv_ckpt_release(&a);
		return 0;
	}
	same = a.nparams == b.nparams && a.nbufs == b.nbufs &&
	    a.pos.step == b.pos.step && a.pos.ids_hash == b.pos.ids_hash &&
	    memcmp(a.params, b.params, a.nparams * 4) == 0 &&
	    memcmp(a.momentum, b.momentum, a.nparams * 4) == 0 &&
	    memcmp(a.bufs, b.bufs, a.nbufs * 4) == 0;
	rv_ckpt_release(&a);
	rv_ckpt_release(&b);
	return same;
}

static void
test_async_loop(void)
{
	char train[128], eval[128], cmd[1024];
	const char *bin = getenv("RV_BUILD") ? getenv("RV_BUILD") : "build";
	struct rv_train_result s, a;

	snprintf(train, sizeof(train), "%s/train.rvs", dir);
	snprintf(eval, sizeof(eval), "%s/eval.rvs", dir);
	/* Two epochs of 1000 samples in batches of 64 (the last partial). */
	snprintf(cmd, sizeof(cmd),
	    "%s/bin/rv-decode -q --limit 1000 %s/train-images-idx3-ubyte.gz "
	    "%s/train-labels-idx1-ubyte.gz -o %s/one.rvs && "
	    "cat %s/one.rvs %s/one.rvs | %s/bin/rv-batch -q -b 64 -o %s && "
	    "%s/bin/rv-decode -q --limit 300 %s/t10k-images-idx3-ubyte.gz "
	    "%s/t10k-labels-idx1-ubyte.gz -o %s",
	    bin, FMNIST, FMNIST, dir, dir, dir, bin, train, bin, FMNIST,
	    FMNIST, eval);
	EXPECT_EQ(system(cmd), 0);
	if (run(&rv_nn_cpu, "sync", train, eval, 0, &s) < 0 ||
	    run(&deferred_ops, "async", train, eval, 0, &a) < 0) {
		EXPECT(0);
		return;
	}
	EXPECT(s.steps > 20);
	EXPECT_EQ(max_inflight, 2);
	EXPECT_EQ(a.steps, s.steps);
	EXPECT_EQ(a.samples, s.samples);
	EXPECT_EQ(a.epochs, s.epochs);
	EXPECT(a.train_loss == s.train_loss);
	EXPECT(a.train_acc == s.train_acc);
	EXPECT(a.evaluated && s.evaluated);
	EXPECT(a.eval_acc == s.eval_acc);
	EXPECT(a.eval_step == s.eval_step);
	EXPECT(same_file("fb-sync", "fb-async"));
	EXPECT(same_ckpt());
	/* A step limit in the middle of an epoch. */
	EXPECT(run(&rv_nn_cpu, "sync", train, eval, 13, &s) == 0);
	EXPECT(run(&deferred_ops, "async", train, eval, 13, &a) == 0);
	EXPECT_EQ(a.steps, 13);
	EXPECT_EQ(s.steps, 13);
	EXPECT(a.train_loss == s.train_loss);
	EXPECT(same_file("fb-sync", "fb-async"));
	EXPECT(same_ckpt());
}

int
main(void)
{
	char cmd[128];

	if (access(FMNIST "/train-images-idx3-ubyte.gz", R_OK) != 0) {
		printf("ok 1 - test_async_loop # SKIP no Fashion-MNIST\n"
		    "1..1\n");
		return 0;
	}
	snprintf(dir, sizeof(dir), "/tmp/t_train_async.XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(test_async_loop);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	EXPECT_EQ(system(cmd), 0);
	return UNIT_DONE();
}
