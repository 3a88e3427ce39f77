/*
 * The CPU backend on whole models: gradients of every layer kind against
 * central differences of the train-mode objective, the per-sample
 * gradnorm against differences of one sample's loss, training a tiny
 * batch to a small loss, state round trips, determinism, partial batches
 * and the errors for bad batches.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/rng.h"
#include "nn/nn.h"
#include "nn/nn_cpu.h"
#include "unit.h"

/*
 * One thread but where thread counts matter: idle OpenMP workers spin
 * between the tiny kernels of these models, which on a loaded two-core
 * machine costs seconds of wall time for nothing.
 */
#define THREADS 1

/*
 * Every layer kind, both shortcut flavours, "relu; maxpool" (which runs
 * swapped), dropout and bn on features.
 */
static const char spec_all[] =
    "conv 4 k=3 pad=1 bias=1; bn; relu;"
    "res; conv 4 k=3 pad=1; bn; relu; conv 6 k=3 stride=2 pad=1; bn;"
    "add; relu;"
    "res; conv 6 k=3 pad=1 bias=1; bn; add; relu;"
    "maxpool 2 stride=1; avgpool 2 stride=1 pad=1; dropout 0.3; gap;"
    "linear 5; bn; relu; linear";

struct tbatch {
	struct rv_nn_batch b;
	uint8_t *px;
	uint64_t *ids;
	int32_t *labels;
	float *wt;
};

static void
tb_make(struct tbatch *t, int n, struct rv_shape in, int classes,
    uint64_t seed)
{
	struct rv_rng g;
	size_t i, npx = (size_t)n * in.c * in.h * in.w;

	t->px = malloc(npx);
	t->ids = malloc(n * sizeof(*t->ids));
	t->labels = malloc(n * sizeof(*t->labels));
	t->wt = malloc(n * sizeof(*t->wt));
	rv_rng_init(&g, seed, RV_STAGE_TRAIN, 999, 0, 0);
	for (i = 0; i < npx; i++)
		t->px[i] = (uint8_t)rv_rng_below(&g, 256);
	for (i = 0; i < (size_t)n; i++) {
		t->ids[i] = 1000 + seed * 100 + i;
		t->labels[i] = (int32_t)(i % classes);
		t->wt[i] = 0.5f + (float)rv_rng_uniform(&g);
	}
	t->b.n = n;
	t->b.pixels = t->px;
	t->b.ids = t->ids;
	t->b.labels = t->labels;
	t->b.weights = t->wt;
	t->b.step = seed;
}

static void
tb_free(struct tbatch *t)
{
	free(t->px);
	free(t->ids);
	free(t->labels);
	free(t->wt);
}

static void *
backend_j(const struct rv_net *net, int batch_max, uint64_t seed,
    int threads)
{
	struct rv_nn_config cfg;
	int i;
	void *be;

	memset(&cfg, 0, sizeof(cfg));
	cfg.net = net;
	cfg.batch_max = batch_max;
	cfg.threads = threads;
	cfg.seed = seed;
	for (i = 0; i < 4; i++) {
		cfg.mean[i] = 0.5f;
		cfg.std[i] = 0.25f;
	}
	be = rv_nn_cpu.create(&cfg);
	if (be == NULL)
		printf("# create: %s\n", rv_errmsg());
	return be;
}

static void *
backend(const struct rv_net *net, int batch_max, uint64_t seed)
{
	return backend_j(net, batch_max, seed, THREADS);
}

static int
parse(struct rv_net *net, const char *spec, int c, int h, int w,
    int classes)
{
	struct rv_shape in = { c, h, w };

	if (rv_net_parse(net, spec, in, classes) == -1) {
		printf("# parse: %s\n", rv_errmsg());
		return -1;
	}
	return 0;
}

/* The whole state, params then momentum then buffers, in one array. */
static float *
state(void *be, const struct rv_net *net)
{
	float *s = malloc((2 * net->nparams + net->nbufs + 1) *
	    sizeof(float));

	rv_nn_cpu.get_state(be, s, s + net->nparams, s + 2 * net->nparams);
	return s;
}

static size_t
state_bytes(const struct rv_net *net)
{
	return (2 * net->nparams + net->nbufs) * sizeof(float);
}

/* The objective with params[j] = v (params restored afterwards). */
static double
objective_at(void *be, float *params, size_t j, float v,
    const struct rv_nn_batch *b, float ls)
{
	float old = params[j];
	double f;

	params[j] = v;
	rv_nn_cpu.set_state(be, params, NULL, NULL);
	f = rv_nn_cpu_objective(be, b, ls);
	params[j] = old;
	return f;
}

/*
 * Gradients of one SGD step (lr 1, no momentum, no decay: before - after)
 * against central differences of the train-mode objective, on a sample of
 * every parameter block of every layer; compared per layer as vectors, so
 * that a tiny component's rounding does not dominate.  The step is small
 * because ReLU and max-pool kinks lie close to some inputs: at 1e-2 the
 * differences straddle them (errors up to 15%), at 3e-4 the largest error
 * is under 1% and float rounding is still far below it.
 */
static void
t_gradcheck(void)
{
	struct rv_nn_hyper hy = { 1.0f, 0.0f, 0.0f, 0.1f, 0 };
	const float eps = 3e-4f;
	struct rv_net net;
	struct tbatch tb;
	float *p0, *p1;
	double *fd;
	char *pick;
	void *be;
	int i, checked = 0;

	if (parse(&net, spec_all, 2, 8, 8, 3) == -1) {
		EXPECT(0);
		return;
	}
	tb_make(&tb, 6, net.in, 3, 7);
	be = backend(&net, 8, 11);
	EXPECT(be != NULL);
	if (be == NULL)
		goto out;
	p0 = state(be, &net);
	p1 = malloc(net.nparams * sizeof(float));
	memcpy(p1, p0, net.nparams * sizeof(float));
	fd = malloc(net.nparams * sizeof(double));
	pick = calloc(net.nparams, 1);
	/* Differences first: train() below changes the parameters. */
	for (i = 0; i < net.nlayers; i++) {
		const struct rv_layer *ly = &net.layers[i];
		size_t k, m = ly->nparam < 24 ? ly->nparam : 24;

		for (k = 0; k < m; k++) {
			size_t j = ly->param_off + (k * ly->nparam) / m +
			    (k * 7) % (ly->nparam / m);
			float vp = p1[j] + eps, vm = p1[j] - eps;
			double fp = objective_at(be, p1, j, vp, &tb.b,
			    hy.label_smoothing);
			double fm = objective_at(be, p1, j, vm, &tb.b,
			    hy.label_smoothing);

			fd[j] = (fp - fm) / ((double)vp - vm);
			pick[j] = 1;
		}
	}
	rv_nn_cpu.set_state(be, p0, NULL, NULL);
	EXPECT(rv_nn_cpu.train(be, &tb.b, &hy, NULL) == 0);
	rv_nn_cpu.get_state(be, p1, NULL, NULL);
	for (i = 0; i < net.nlayers; i++) {
		const struct rv_layer *ly = &net.layers[i];
		double dd = 0, na = 0, nf = 0, e;
		size_t j;

		if (ly->nparam == 0)
			continue;
		for (j = ly->param_off; j < ly->param_off + ly->nparam; j++) {
			double an = (double)p0[j] - p1[j];

			if (!pick[j])
				continue;
			dd += (an - fd[j]) * (an - fd[j]);
			na += an * an;
			nf += fd[j] * fd[j];
		}
		e = sqrt(dd) / fmax(fmax(sqrt(na), sqrt(nf)), 1e-6);
		if (!(e < 2e-2))
			printf("# layer %d (kind %d): rel err %.3g, |an| %.3g "
			    "|fd| %.3g\n", i + 1, ly->kind, e, sqrt(na),
			    sqrt(nf));
		EXPECT(e < 2e-2);
		EXPECT(nf > 1e-8);
		checked++;
	}
	EXPECT_EQ(checked, 12);
	free(fd);
	free(pick);
	free(p0);
	free(p1);
	rv_nn_cpu.destroy(be);
out:
	tb_free(&tb);
	rv_net_release(&net);
}

static double
mean_loss(const float *loss, int n)
{
	double s = 0;
	int i;

	for (i = 0; i < n; i++)
		s += loss[i];
	return s / n;
}

/* A small CNN memorises 8 samples of 4 classes. */
static void
t_fits(void)
{
	struct rv_nn_hyper hy = { 0.05f, 0.9f, 1e-4f, 0.0f, 0 };
	struct rv_net net;
	struct tbatch tb;
	float loss[8], first = 0, l = 1e9f;
	int32_t pred[8];
	struct rv_nn_out out = { loss, NULL, pred };
	void *be;
	int step, i;

	if (parse(&net, "conv 8 k=3 pad=1; bn; relu; maxpool 2;"
	    "conv 8 k=3 pad=1; bn; relu; gap; linear", 1, 8, 8, 4) == -1) {
		EXPECT(0);
		return;
	}
	tb_make(&tb, 8, net.in, 4, 3);
	be = backend(&net, 8, 5);
	EXPECT(be != NULL);
	if (be == NULL)
		goto out;
	for (step = 0; step < 300 && l >= 0.05f; step++) {
		EXPECT(rv_nn_cpu.train(be, &tb.b, &hy, &out) == 0);
		l = (float)mean_loss(loss, 8);
		if (step == 0)
			first = l;
	}
	printf("# loss %.3f -> %.4f in %d steps\n", first, l, step);
	EXPECT(l < 0.05f);
	EXPECT(rv_nn_cpu.eval(be, &tb.b, &out) == 0);
	for (i = 0; i < 8; i++)
		EXPECT_EQ(pred[i], tb.labels[i]);
	rv_nn_cpu.destroy(be);
out:
	tb_free(&tb);
	rv_net_release(&net);
}

/*
 * gradnorm_i against the norm of central differences of loss_i alone
 * (weight n on sample i, 0 elsewhere, so the objective is loss_i) over
 * every weight and bias of the last layer.  No batch norm: it would
 * couple the samples.  The reported norm ignores the weights.
 */
static void
t_gradnorm(void)
{
	struct rv_nn_hyper hy = { 0.0f, 0.0f, 0.0f, 0.1f, 0 };
	const int n = 5;
	const float eps = 1e-2f;
	struct rv_net net;
	struct tbatch tb;
	float gn[5], wsave[5], *p;
	struct rv_nn_out out = { NULL, gn, NULL };
	const struct rv_layer *ly;
	void *be;
	int i, k;

	if (parse(&net, "conv 3 k=3; relu; linear 6; relu; linear", 2, 6,
	    6, 4) == -1) {
		EXPECT(0);
		return;
	}
	ly = &net.layers[net.nlayers - 1];
	tb_make(&tb, n, net.in, 4, 9);
	be = backend(&net, n, 1);
	EXPECT(be != NULL);
	if (be == NULL)
		goto out;
	EXPECT(rv_nn_cpu.train(be, &tb.b, &hy, &out) == 0);
	p = state(be, &net);
	memcpy(wsave, tb.wt, sizeof(wsave));
	for (i = 0; i < n; i++) {
		double s = 0;
		size_t j;

		for (k = 0; k < n; k++)
			tb.wt[k] = k == i ? (float)n : 0.0f;
		for (j = ly->param_off; j < ly->param_off + ly->nparam; j++) {
			float vp = p[j] + eps, vm = p[j] - eps;
			double d = (objective_at(be, p, j, vp, &tb.b, 0.1f) -
			    objective_at(be, p, j, vm, &tb.b, 0.1f)) /
			    ((double)vp - vm);

			s += d * d;
		}
		s = sqrt(s);
		if (!(fabs(s - gn[i]) < 1e-2 * s))
			printf("# sample %d: gradnorm %.6g, differences %.6g\n",
			    i, gn[i], s);
		EXPECT(fabs(s - gn[i]) < 1e-2 * s);
	}
	/* Weights scale the step, never the reported norm. */
	memcpy(tb.wt, wsave, sizeof(wsave));
	rv_nn_cpu.set_state(be, p, NULL, NULL);
	{
		float gn2[5];
		struct rv_nn_out out2 = { NULL, gn2, NULL };

		for (k = 0; k < n; k++)
			tb.wt[k] *= 3.0f;
		EXPECT(rv_nn_cpu.train(be, &tb.b, &hy, &out2) == 0);
		EXPECT(memcmp(gn, gn2, sizeof(gn)) == 0);
	}
	free(p);
	rv_nn_cpu.destroy(be);
out:
	tb_free(&tb);
	rv_net_release(&net);
}

/*
 * A second backend given the first's state takes the same next step.
 * Evaluation smooths as the config says (none here), whatever train() did.
 */
static void
t_state(void)
{
	struct rv_nn_hyper hy = { 0.05f, 0.9f, 5e-4f, 0.05f, 1 };
	struct rv_net net;
	struct tbatch b1, b2;
	float la[6], lb[6], ga[6], gb[6];
	int32_t pa[6], pb[6];
	struct rv_nn_out oa = { la, ga, pa }, ob = { lb, gb, pb };
	float *sa, *sb;
	void *a, *b;

	if (parse(&net, spec_all, 2, 8, 8, 3) == -1) {
		EXPECT(0);
		return;
	}
	tb_make(&b1, 6, net.in, 3, 1);
	tb_make(&b2, 6, net.in, 3, 2);
	a = backend(&net, 6, 21);
	b = backend(&net, 6, 21);
	EXPECT(a != NULL && b != NULL);
	if (a == NULL || b == NULL)
		goto out;
	EXPECT(rv_nn_cpu.train(a, &b1.b, &hy, NULL) == 0);
	EXPECT(rv_nn_cpu.train(a, &b2.b, &hy, NULL) == 0);
	sa = state(a, &net);
	sb = state(b, &net);
	EXPECT(memcmp(sa, sb, state_bytes(&net)) != 0);
	EXPECT(rv_nn_cpu.set_state(b, sa, sa + net.nparams,
	    sa + 2 * net.nparams) == 0);
	free(sb);
	sb = state(b, &net);
	EXPECT(memcmp(sa, sb, state_bytes(&net)) == 0);
	EXPECT(rv_nn_cpu.eval(a, &b2.b, &oa) == 0);
	EXPECT(rv_nn_cpu.eval(b, &b2.b, &ob) == 0);
	EXPECT(memcmp(pa, pb, sizeof(pa)) == 0);
	/* eval's loss is smoothed as the config says, not as train() was */
	EXPECT(memcmp(la, lb, sizeof(la)) == 0);
	EXPECT(rv_nn_cpu.train(a, &b1.b, &hy, &oa) == 0);
	EXPECT(rv_nn_cpu.train(b, &b1.b, &hy, &ob) == 0);
	EXPECT(memcmp(la, lb, sizeof(la)) == 0);
	EXPECT(memcmp(ga, gb, sizeof(ga)) == 0);
	EXPECT(memcmp(pa, pb, sizeof(pa)) == 0);
	free(sa);
	free(sb);
	sa = state(a, &net);
	sb = state(b, &net);
	EXPECT(memcmp(sa, sb, state_bytes(&net)) == 0);
	EXPECT(rv_nn_cpu.eval(a, &b2.b, &oa) == 0);
	EXPECT(rv_nn_cpu.eval(b, &b2.b, &ob) == 0);
	EXPECT(memcmp(la, lb, sizeof(la)) == 0);
	free(sa);
	free(sb);
out:
	rv_nn_cpu.destroy(a);
	rv_nn_cpu.destroy(b);
	tb_free(&b1);
	tb_free(&b2);
	rv_net_release(&net);
}

/*
 * Same seed, same threads (two, so that reductions split): the same
 * bytes; eval changes nothing.
 */
static void
t_determinism(void)
{
	struct rv_nn_hyper hy = { 0.1f, 0.9f, 1e-4f, 0.0f, 0 };
	struct rv_net net;
	struct tbatch tb[5];
	float l1[16], l2[16];
	int32_t p1[16], p2[16];
	struct rv_nn_out o1 = { l1, NULL, p1 }, o2 = { l2, NULL, p2 };
	float *s1, *s2;
	void *a, *b;
	int i;

	/* Big enough for the kernels to go parallel. */
	if (parse(&net, spec_all, 2, 24, 24, 3) == -1) {
		EXPECT(0);
		return;
	}
	for (i = 0; i < 5; i++)
		tb_make(&tb[i], 16, net.in, 3, 30 + i);
	a = backend_j(&net, 16, 4, 2);
	b = backend_j(&net, 16, 4, 2);
	EXPECT(a != NULL && b != NULL);
	if (a == NULL || b == NULL)
		goto out;
	for (i = 0; i < 5; i++) {
		EXPECT(rv_nn_cpu.train(a, &tb[i].b, &hy, NULL) == 0);
		EXPECT(rv_nn_cpu.train(b, &tb[i].b, &hy, NULL) == 0);
	}
	s1 = state(a, &net);
	s2 = state(b, &net);
	EXPECT(memcmp(s1, s2, state_bytes(&net)) == 0);
	free(s2);
	EXPECT(rv_nn_cpu.eval(a, &tb[0].b, &o1) == 0);
	EXPECT(rv_nn_cpu.eval(a, &tb[0].b, &o2) == 0);
	EXPECT(memcmp(l1, l2, sizeof(l1)) == 0);
	EXPECT(memcmp(p1, p2, sizeof(p1)) == 0);
	s2 = state(a, &net);
	EXPECT(memcmp(s1, s2, state_bytes(&net)) == 0);
	free(s2);
	/* The probe leaves the state alone too. */
	EXPECT(isfinite(rv_nn_cpu_objective(a, &tb[1].b, 0.0f)));
	s2 = state(a, &net);
	EXPECT(memcmp(s1, s2, state_bytes(&net)) == 0);
	free(s1);
	free(s2);
out:
	rv_nn_cpu.destroy(a);
	rv_nn_cpu.destroy(b);
	for (i = 0; i < 5; i++)
		tb_free(&tb[i]);
	rv_net_release(&net);
}

/*
 * A batch smaller than batch_max uses the front of every tensor: it must
 * train exactly as a backend made for that size.
 */
static void
t_partial(void)
{
	struct rv_nn_hyper hy = { 0.1f, 0.9f, 1e-4f, 0.1f, 0 };
	struct rv_net net;
	struct tbatch tb;
	float l1[3], l2[3], g1[3], g2[3];
	struct rv_nn_out o1 = { l1, g1, NULL }, o2 = { l2, g2, NULL };
	float *s1, *s2;
	void *a, *b;
	int i;

	if (parse(&net, spec_all, 2, 8, 8, 3) == -1) {
		EXPECT(0);
		return;
	}
	tb_make(&tb, 3, net.in, 3, 8);
	a = backend(&net, 16, 4);
	b = backend(&net, 3, 4);
	EXPECT(a != NULL && b != NULL);
	if (a == NULL || b == NULL)
		goto out;
	for (i = 0; i < 3; i++) {
		EXPECT(rv_nn_cpu.train(a, &tb.b, &hy, &o1) == 0);
		EXPECT(rv_nn_cpu.train(b, &tb.b, &hy, &o2) == 0);
		EXPECT(memcmp(l1, l2, sizeof(l1)) == 0);
		EXPECT(memcmp(g1, g2, sizeof(g1)) == 0);
	}
	s1 = state(a, &net);
	s2 = state(b, &net);
	EXPECT(memcmp(s1, s2, state_bytes(&net)) == 0);
	free(s1);
	free(s2);
out:
	rv_nn_cpu.destroy(a);
	rv_nn_cpu.destroy(b);
	tb_free(&tb);
	rv_net_release(&net);
}

static void
t_errors(void)
{
	struct rv_nn_hyper hy = { 0.1f, 0.0f, 0.0f, 0.0f, 0 };
	struct rv_nn_config cfg;
	struct rv_net net;
	struct tbatch tb;
	float *s1, *s2;
	void *be;

	if (parse(&net, "conv 2 k=3; bn; relu; dropout 0.5; linear 4; bn;"
	    "linear", 1, 5, 5, 3) == -1) {
		EXPECT(0);
		return;
	}
	tb_make(&tb, 4, net.in, 3, 2);
	be = backend(&net, 4, 1);
	EXPECT(be != NULL);
	if (be == NULL)
		goto out;
	s1 = state(be, &net);
	tb.labels[2] = 3;
	EXPECT(rv_nn_cpu.train(be, &tb.b, &hy, NULL) == -1);
	EXPECT_STR(rv_errmsg(), "cpu: sample 2 of the batch: label 3 out "
	    "of range [0, 3)");
	tb.labels[2] = -1;
	EXPECT(rv_nn_cpu.eval(be, &tb.b, NULL) == -1);
	EXPECT_STR(rv_errmsg(), "cpu: sample 2 of the batch: label -1 out "
	    "of range [0, 3)");
	tb.labels[2] = 0;
	tb.b.n = 5;
	EXPECT(rv_nn_cpu.train(be, &tb.b, &hy, NULL) == -1);
	EXPECT_STR(rv_errmsg(), "cpu: batch of 5 samples: expected 1 to 4");
	tb.b.n = 0;
	EXPECT(rv_nn_cpu.eval(be, &tb.b, NULL) == -1);
	EXPECT_STR(rv_errmsg(), "cpu: batch of 0 samples: expected 1 to 4");
	/* Batch norm in training needs two values a channel (as torch). */
	tb.b.n = 1;
	EXPECT(rv_nn_cpu.train(be, &tb.b, &hy, NULL) == -1);
	EXPECT_STR(rv_errmsg(), "cpu: layer 6: batch norm needs 2 values a "
	    "channel, the batch has 1");
	EXPECT(rv_nn_cpu.eval(be, &tb.b, NULL) == 0);
	tb.b.n = 4;
	tb.b.ids = NULL;
	EXPECT(rv_nn_cpu.train(be, &tb.b, &hy, NULL) == -1);
	EXPECT_STR(rv_errmsg(), "cpu: batch without ids: dropout needs them");
	hy.label_smoothing = 1.0f;
	tb.b.ids = tb.ids;
	EXPECT(rv_nn_cpu.train(be, &tb.b, &hy, NULL) == -1);
	EXPECT_STR(rv_errmsg(), "cpu: label smoothing 1: not in [0, 1)");
	s2 = state(be, &net);
	EXPECT(memcmp(s1, s2, state_bytes(&net)) == 0);
	free(s1);
	free(s2);
	rv_nn_cpu.destroy(be);

	/*
	 * A model too big for memory (256 GiB of activations) is an error,
	 * not an exit.  AddressSanitizer aborts on such a request instead.
	 */
	rv_net_release(&net);
	EXPECT(parse(&net, "conv 64 k=3 pad=1; gap; linear", 1, 1024, 1024,
	    2) == 0);
#ifndef __SANITIZE_ADDRESS__
	memset(&cfg, 0, sizeof(cfg));
	cfg.net = &net;
	cfg.batch_max = 1024;
	cfg.threads = 1;
	cfg.std[0] = 1;
	be = rv_nn_cpu.create(&cfg);
	EXPECT(be == NULL);
	EXPECT(strstr(rv_errmsg(), "out of memory") != NULL);
	rv_nn_cpu.destroy(be);
#endif
	/* Sizes past any memory are caught before they wrap. */
	rv_net_release(&net);
	EXPECT(parse(&net, "conv 65536 k=1; gap; linear", 4, 65536, 65536,
	    2) == 0);
	memset(&cfg, 0, sizeof(cfg));
	cfg.net = &net;
	cfg.batch_max = 1 << 20;
	cfg.threads = 1;
	cfg.std[0] = cfg.std[1] = cfg.std[2] = cfg.std[3] = 1;
	EXPECT(rv_nn_cpu.create(&cfg) == NULL);
	EXPECT_STR(rv_errmsg(), "cpu: the model at batch 1048576: too big "
	    "for any memory");
	memset(&cfg, 0, sizeof(cfg));
	cfg.net = &net;
	EXPECT(rv_nn_cpu.create(&cfg) == NULL);
	EXPECT_STR(rv_errmsg(), "cpu: bad configuration: need a model, "
	    "batch_max >= 1 and threads >= 1");
	/* no device (or no driver, or no backend built): 0 and why; without
	 * a driver, found out without loading the CUDA plugin */
	if (rv_nn_cuda_devices() == 0)
		EXPECT(rv_errmsg()[0] != '\0');
out:
	tb_free(&tb);
	rv_net_release(&net);
}

int
main(void)
{
	RUN(t_gradcheck);
	RUN(t_fits);
	RUN(t_gradnorm);
	RUN(t_state);
	RUN(t_determinism);
	RUN(t_partial);
	RUN(t_errors);
	return UNIT_DONE();
}
