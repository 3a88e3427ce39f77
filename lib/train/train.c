/*
 * The training loop (train.h).  One pass over the input: each batch is one
 * SGD step on the backend, then its per-sample feedback lines, then the
 * metrics, the evaluation, checkpoint and stopping rules that fall due.
 * Nothing here depends on the backend beyond struct rv_nn_ops, so the
 * CUDA backend trains through the same loop.
 *
 * Resuming: a checkpoint records how many batches were consumed and a
 * chained hash of their ids.  Fed the same input again, the loop skips
 * that many batches, checks the hash (so a different input is an error,
 * not a silently different run) and continues where the checkpoint
 * stood: the result equals the uninterrupted run's.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "base/err.h"
#include "base/opt.h"
#include "base/progress.h"
#include "base/xmem.h"
#include "stream/batch.h"
#include "stream/feedback.h"
#include "stream/meta.h"
#include "stream/stream.h"
#include "train/ckpt.h"
#include "train/train.h"
#include "train/train_eval.h"
#include "train/train_in.h"

/* Running sums over a window of steps (a log interval, an epoch). */
struct window {
	double loss, t0, wait;
	uint64_t n, correct, samples0;
};

/* A step's per-sample results, batch_max each. */
struct outs {
	float *loss, *gnorm;
	int32_t *pred;
};

/* A step queued on an asynchronous backend, its results not yet read. */
struct pending {
	struct rv_tin_item *it;		/* held until then */
	struct outs o;			/* its out arrays */
	uint64_t step;			/* the step count after it */
	float lr;
};

struct trainer {
	const struct rv_train_conf *conf;
	struct rv_train_result *res;
	struct rv_net net;
	int have_net;
	void *be;
	int batch_max;
	struct rv_meta meta;
	struct rv_ckpt ck;		/* resume state, if any */
	uint64_t skip_batches;		/* resume: batches still to skip */
	uint32_t skip_ends;		/* and epoch ends */
	uint64_t skip_hash;
	struct rv_ckpt_pos pos;
	struct rv_eval_set eval;
	struct rv_fb_writer *fb;
	FILE *log;
	struct window logw, epw;
	double t0, wall0, wait;
	float mean[4], std[4];
	char mean_at[512], std_at[512];	/* the records that set them */
	/* two sets, so that a backend with ops->wait computes one step
	 * while the other's results are read */
	struct outs out[2];
	int flip;			/* the set the next step writes */
	struct rv_tin *in;
	struct pending pend;		/* a step in flight (pend.it) */
	int done;			/* a stopping rule fired */
	int have_train;			/* train_loss/acc set by an epoch */
	uint64_t meta_samples;		/* the stream's samples an epoch */
	uint64_t eval_at;		/* the step of the last evaluation */
	struct rv_progress prog;	/* in steps with a step budget, else
					 * in samples (the stream's total) */
	uint64_t steps_total;		/* the step budget, 0: none */
	int step_lines;			/* --log-every lines on stderr */
};

double
rv_train_lr(const struct rv_train_conf *c, uint64_t step, double epoch_pos)
{
	double lr = c->hyper.lr;
	/* where the step stands, and the schedule's length, in one unit */
	double t = c->steps > 0 ? (double)step : epoch_pos;
	double len = c->steps > 0 ? (double)c->steps : c->epochs;
	/* the step schedule fitted to a step budget: three equal parts */
	double size = c->step_size > 0 ? c->step_size : len / 3;

	switch (c->sched) {
	case RV_SCHED_STEP:
		lr *= pow(c->gamma, floor(t / size));
		break;
	case RV_SCHED_COSINE:
		lr *= 0.5 * (1 + cos(3.14159265358979323846 * fmin(t / len, 1)));
		break;
	case RV_SCHED_LINEAR:
		lr *= fmax(1 - t / len, 0);
		break;
	default:
		break;
	}
	if (c->warmup > 0 && step < c->warmup)
		lr *= (double)(step + 1) / (double)c->warmup;
	return lr;
}

static double
epoch_pos(const struct trainer *t)
{
	double f = 0;

	if (t->pos.prev_epoch_samples > 0)
		f = fmin(1, (double)t->pos.epoch_samples /
		    (double)t->pos.prev_epoch_samples);
	else if (t->meta_samples > 0)
		f = fmin(1, (double)t->pos.epoch_samples /
		    (double)t->meta_samples);
	return t->pos.epochs_done + f;
}

static double
wall(const struct trainer *t)
{
	return t->wall0 + (rv_now() - t->t0);
}

static void
window_reset(struct trainer *t, struct window *w)
{
	memset(w, 0, sizeof(*w));
	w->t0 = rv_now();
	w->wait = t->wait;
	w->samples0 = t->pos.samples;
}

/* JSON: a number, or null when it is not finite. */
static void
jnum(FILE *f, const char *key, double v)
{
	if (isfinite(v))
		fprintf(f, ",\"%s\":%.6g", key, v);
	else
		fprintf(f, ",\"%s\":null", key);
}

static void
log_window(struct trainer *t, const char *event, const struct window *w,
    double lr)
{
	double dt = rv_now() - w->t0;

	if (t->log == NULL)
		return;
	fprintf(t->log, "{\"event\":\"%s\",\"step\":%llu,\"epoch\":%u",
	    event, (unsigned long long)t->pos.step, t->pos.epoch);
	jnum(t->log, "loss", w->n ? w->loss / (double)w->n : NAN);
	jnum(t->log, "acc", w->n ? (double)w->correct / (double)w->n : NAN);
	jnum(t->log, "lr", lr);
	jnum(t->log, "samples_per_s", dt > 0 ?
	    (double)(t->pos.samples - w->samples0) / dt : NAN);
	jnum(t->log, "wait_frac", dt > 0 ? (t->wait - w->wait) / dt : 0);
	fprintf(t->log, ",\"samples\":%llu,\"grads\":%llu",
	    (unsigned long long)t->pos.samples,
	    (unsigned long long)t->pos.grads);
	jnum(t->log, "wall", wall(t));
	if (strcmp(event, "epoch") == 0)
		jnum(t->log, "epoch_s", dt);
	fputs("}\n", t->log);
	fflush(t->log);
}

/* Where the progress stands: steps with a step budget, else samples. */
static uint64_t
prog_count(const struct trainer *t)
{
	return t->steps_total > 0 ? t->pos.step : t->pos.samples;
}

/*
 * A step line on standard error (with -v, or into a log): the JSON log's
 * step event for a person, with the time to the end of the schedule
 * when it is known (a step budget, or the stream's total of samples).
 */
static void
step_line(struct trainer *t, const struct window *w, double lr)
{
	double dt = rv_now() - w->t0;
	double left = rv_progress_left(&t->prog, prog_count(t));
	char tot[32] = "", el[32], eta[48] = "";

	if (t->steps_total > 0)
		snprintf(tot, sizeof(tot), "/%llu",
		    (unsigned long long)t->steps_total);
	rv_progress_dur(el, sizeof(el), wall(t));
	if (left >= 0) {
		memcpy(eta, ", ETA ", 6);
		rv_progress_dur(eta + 6, sizeof(eta) - 6, left);
	}
	rv_progress_done(&t->prog);
	fprintf(stderr, "%s: step %llu%s, epoch %u, loss %.4f, acc %.4f, "
	    "lr %.4g, %.0f samples/s, data wait %.1f%%, elapsed %s%s\n",
	    rv_progname(), (unsigned long long)t->pos.step, tot, t->pos.epoch,
	    w->n ? w->loss / (double)w->n : NAN,
	    w->n ? (double)w->correct / (double)w->n : NAN, lr,
	    dt > 0 ? (double)(t->pos.samples - w->samples0) / dt : 0.0,
	    dt > 0 ? 100 * (t->wait - w->wait) / dt : 0.0, el, eta);
}

/* Is net (from a checkpoint, perhaps) the preset called name? */
static int
is_preset(const char *name, const struct rv_net *net)
{
	struct rv_net p;
	int same;

	if (rv_net_preset(name) == NULL ||
	    rv_net_parse(&p, name, net->in, net->classes) < 0)
		return 0;
	same = strcmp(p.spec, net->spec) == 0;
	rv_net_release(&p);
	return same;
}

/* The stream's "samples" key: the epoch length before one has ended
 * (checked when its record was read). */
static void
meta_samples(struct trainer *t)
{
	uint64_t n;

	if (rv_meta_u64(&t->meta, "samples", 0, UINT64_MAX, &n) == 1)
		t->meta_samples = n;
}

/* Merge a metadata record, remembering where mean and std came from: 0,
 * or -1 when it would take the merged metadata past its caps (meta.h). */
static int
merge_meta(struct trainer *t, const struct rv_tin_item *it)
{
	if (rv_meta_merge(&t->meta, &it->meta) < 0)
		return rv_preferr("%s", it->msg);
	if (rv_meta_get(&it->meta, "mean") != NULL)
		snprintf(t->mean_at, sizeof(t->mean_at), "%s", it->msg);
	if (rv_meta_get(&it->meta, "std") != NULL)
		snprintf(t->std_at, sizeof(t->std_at), "%s", it->msg);
	meta_samples(t);
	/* Samples to the schedule's end: its epochs of the stream's, else
	 * the stream's total (one epoch file of several read as one stream
	 * says its own). */
	if (t->steps_total == 0)
		rv_progress_total(&t->prog, t->conf->epochs > 0 &&
		    t->meta_samples > 0 ? (uint64_t)(t->conf->epochs *
		    (double)t->meta_samples) : rv_meta_total(&t->meta));
	return 0;
}

/*
 * The stream's mean or std: the number of values, 0 if absent, checked
 * here, where they are used (not under --mean/--std); their count needs
 * the channels (meta_count()).
 */
static int
meta_list(const struct trainer *t, const char *key, const char *at,
    float *v)
{
	int n = 0;

	if (rv_meta_stats(&t->meta, key, v, &n) < 0)
		return rv_preferr("%s", at);
	return n;
}

/* One value of the stream's key for every channel, or one per channel. */
static int
meta_count(const struct trainer *t, const char *key, const char *at, int n,
    uint32_t c)
{
	if (n > 1 && (uint32_t)n != c)
		return rv_seterr("%s: metadata '%s=%s': %d values for %u "
		    "channel%s: give one value, or one per channel", at, key,
		    rv_meta_get(&t->meta, key), n, c, c == 1 ? "" : "s");
	return 0;
}

/* Classes, mean and std: options first, then the stream, then defaults. */
static int
stream_params(struct trainer *t, uint32_t c, int *classes)
{
	const struct rv_train_conf *conf = t->conf;
	uint64_t n;
	uint32_t i;

	*classes = conf->classes;
	if (*classes == 0 &&
	    rv_meta_u64(&t->meta, "classes", 0, UINT32_MAX, &n) == 1)
		*classes = n <= INT_MAX ? (int)n : 0;
	if (*classes < 2)
		return rv_seterr("the stream does not say how many classes "
		    "there are: give --classes N");
	float mv[4], sv[4];
	int nm = conf->nmean, ns = conf->nstd, mbad, sbad;

	memcpy(mv, conf->mean, sizeof(mv));
	memcpy(sv, conf->std, sizeof(sv));
	if (nm == 0 && ns == 0 && rv_meta_get(&t->meta, "mean") != NULL &&
	    rv_meta_get(&t->meta, "std") != NULL) {
		/* the stream's own statistics, both or neither */
		if ((nm = meta_list(t, "mean", t->mean_at, mv)) < 0 ||
		    (ns = meta_list(t, "std", t->std_at, sv)) < 0)
			return -1;
		if (meta_count(t, "mean", t->mean_at, nm, c) < 0 ||
		    meta_count(t, "std", t->std_at, ns, c) < 0)
			return -1;
	}
	/* one value for every channel, or exactly one per channel */
	mbad = nm > 1 && (uint32_t)nm != c;
	sbad = ns > 1 && (uint32_t)ns != c;
	if (mbad || sbad)
		return rv_seterr("%s: %d values for %u channel%s: give one "
		    "value, or one per channel", mbad ? "--mean" : "--std",
		    mbad ? nm : ns, c, c == 1 ? "" : "s");
	/* slots past the channels (unused) repeat the last channel's */
	for (i = 0; i < 4; i++) {
		uint32_t k = i < c ? i : c - 1;

		t->mean[i] = nm == 0 ? 0.5f : mv[nm == 1 ? 0 : k];
		t->std[i] = ns == 0 ? 0.5f : sv[ns == 1 ? 0 : k];
		if (!(t->std[i] > 0))
			return rv_seterr("--std: a standard deviation must "
			    "be positive");
	}
	return 0;
}

static void
free_outputs(struct trainer *t)
{
	for (int k = 0; k < 2; k++) {
		free(t->out[k].loss);
		free(t->out[k].gnorm);
		free(t->out[k].pred);
	}
}

static void
alloc_outputs(struct trainer *t, int n)
{
	free_outputs(t);
	for (int k = 0; k < 2; k++) {
		t->out[k].loss = xmalloc((size_t)n * sizeof(float));
		t->out[k].gnorm = xmalloc((size_t)n * sizeof(float));
		t->out[k].pred = xmalloc((size_t)n * sizeof(int32_t));
	}
}

static void *
make_backend(struct trainer *t, int batch_max)
{
	struct rv_nn_config cfg;

	memset(&cfg, 0, sizeof(cfg));
	cfg.net = &t->net;
	cfg.batch_max = batch_max;
	cfg.threads = t->conf->threads;
	cfg.seed = t->conf->seed;
	cfg.label_smoothing = t->conf->hyper.label_smoothing;
	cfg.device = t->conf->device;
	cfg.precision = t->conf->precision;
	cfg.tune = t->conf->autotune;
	cfg.async = t->conf->backend->wait != NULL;
	memcpy(cfg.mean, t->mean, sizeof(cfg.mean));
	memcpy(cfg.std, t->std, sizeof(cfg.std));
	return t->conf->backend->create(&cfg);
}

/* The device line of the summary, once the backend exists. */
static void
describe(struct trainer *t)
{
	const struct rv_nn_ops *ops = t->conf->backend;

	if (ops->describe != NULL && ops->describe(t->be) != NULL)
		snprintf(t->res->device, sizeof(t->res->device), "%s (%s)",
		    ops->name, ops->describe(t->be));
}

/* A batch larger than any before: a new backend holding the same state. */
static int
grow_backend(struct trainer *t, int n)
{
	const struct rv_nn_ops *ops = t->conf->backend;
	size_t np = t->net.nparams, nb = t->net.nbufs;
	float *p = xmalloc(4 * (np + np + nb + 1));
	void *be;
	int rc = -1;

	if (ops->get_state(t->be, p, p + np, p + 2 * np) < 0)
		goto end;
	if ((be = make_backend(t, n)) == NULL)
		goto end;
	if (ops->set_state(be, p, p + np, p + 2 * np) < 0) {
		ops->destroy(be);
		goto end;
	}
	ops->destroy(t->be);
	t->be = be;
	t->batch_max = n;
	alloc_outputs(t, n);
	rc = 0;
end:
	free(p);
	return rc;
}

/* The first batch fixes the input shape: build the model. */
static int
setup_model(struct trainer *t, const struct rv_tin_item *b)
{
	const struct rv_train_conf *conf = t->conf;
	const struct rv_nn_ops *ops = conf->backend;
	struct rv_shape in = { (int)b->c, (int)b->h, (int)b->w };
	const char *spec = conf->model;
	int classes, bmax;

	if (b->c < 1 || b->c > 4)
		return rv_seterr("batches of %u channels: the trainer takes "
		    "1 to 4", b->c);
	if (t->ck.spec != NULL) {
		if (t->ck.in_c != b->c || t->ck.in_h != b->h ||
		    t->ck.in_w != b->w)
			return rv_seterr("resume: the checkpoint's model "
			    "takes %ux%ux%u input, the stream has %ux%ux%u",
			    t->ck.in_h, t->ck.in_w, t->ck.in_c, b->h, b->w,
			    b->c);
		spec = t->ck.spec;
		classes = (int)t->ck.classes;
		memcpy(t->mean, t->ck.mean, sizeof(t->mean));
		memcpy(t->std, t->ck.std, sizeof(t->std));
	} else if (stream_params(t, b->c, &classes) < 0)
		return -1;
	if (rv_net_parse(&t->net, spec, in, classes) < 0)
		return -1;
	t->have_net = 1;
	if (t->ck.spec != NULL && (t->net.nparams != t->ck.nparams ||
	    t->net.nbufs != t->ck.nbufs))
		return rv_seterr("resume: the checkpoint does not fit its "
		    "own model spec");
	snprintf(t->res->model, sizeof(t->res->model), "%s",
	    is_preset(conf->model, &t->net) ? conf->model : "custom");
	t->res->params = t->net.nparams;
	/* both at most RV_TRAIN_BATCH_MAX: the input refuses larger
	 * batch records, so the stream cannot size the buffers beyond what
	 * -b could */
	bmax = (int)b->n > (int)conf->batch ? (int)b->n : (int)conf->batch;
	if ((t->be = make_backend(t, bmax)) == NULL)
		return -1;
	describe(t);
	t->batch_max = bmax;
	alloc_outputs(t, bmax);
	if (t->ck.spec != NULL && ops->set_state(t->be, t->ck.params,
	    t->ck.momentum, t->ck.bufs) < 0)
		return -1;
	if (t->eval.n > 0 && (t->eval.h != b->h || t->eval.w != b->w ||
	    t->eval.c != b->c))
		return rv_seterr("--eval '%s' holds %ux%ux%u samples, the "
		    "training stream %ux%ux%u", conf->eval_path, t->eval.h,
		    t->eval.w, t->eval.c, b->h, b->w, b->c);
	for (size_t i = 0; i < t->eval.n; i++)
		if (t->eval.labels[i] >= classes)
			return rv_seterr("--eval '%s': sample %llu has label "
			    "%d, the model %d classes", conf->eval_path,
			    (unsigned long long)t->eval.ids[i],
			    t->eval.labels[i], classes);
	if (conf->verbose) {
		size_t len = 128 * (size_t)(t->net.nlayers + 2);
		char *desc = xmalloc(len);

		rv_net_describe(&t->net, desc, len);
		fprintf(stderr, "%s: model %s, %zu parameters, %.3g MMAC a "
		    "sample:\n%s", rv_progname(), t->res->model,
		    t->net.nparams, (double)rv_net_macs(&t->net) / 1e6, desc);
		free(desc);
	}
	return 0;
}

/* Time spent off training: keep it out of the windows' rates. */
static void
off_clock(struct trainer *t, double since)
{
	double d = rv_now() - since;

	t->logw.t0 += d;
	t->epw.t0 += d;
}

static int
save(struct trainer *t)
{
	const struct rv_nn_ops *ops = t->conf->backend;
	struct rv_ckpt c;
	size_t np = t->net.nparams, nb = t->net.nbufs;
	double t0 = rv_now();
	int rc = -1;

	if (t->conf->save_path == NULL || !t->have_net)
		return 0;
	memset(&c, 0, sizeof(c));
	c.in_c = (uint32_t)t->net.in.c;
	c.in_h = (uint32_t)t->net.in.h;
	c.in_w = (uint32_t)t->net.in.w;
	c.classes = (uint32_t)t->net.classes;
	memcpy(c.mean, t->mean, sizeof(c.mean));
	memcpy(c.std, t->std, sizeof(c.std));
	c.spec = t->net.spec;
	c.nparams = np;
	c.nbufs = nb;
	c.params = xmalloc(4 * (2 * np + nb + 1));
	c.momentum = c.params + np;
	c.bufs = c.params + 2 * np;
	c.pos = t->pos;
	c.pos.wall = wall(t);
	c.pos.wait = t->wait;
	c.pos.last_acc = t->res->evaluated ? t->res->eval_acc : -1;
	if (ops->get_state(t->be, c.params, c.momentum, c.bufs) == 0 &&
	    rv_ckpt_save(t->conf->save_path, &c) == 0)
		rc = 0;
	free(c.params);
	off_clock(t, t0);
	return rc;
}

static int
evaluate(struct trainer *t)
{
	struct rv_train_result *r = t->res;
	double loss, acc, t0 = rv_now();

	if (t->eval.n == 0 || !t->have_net ||
	    (r->evaluated && t->eval_at == t->pos.step))
		return 0;
	if (rv_eval_run(&t->eval, t->conf->backend, t->be, t->batch_max,
	    t->out[0].loss, t->out[0].pred, &loss, &acc) < 0)
		return -1;
	off_clock(t, t0);
	r->eval_s += rv_now() - t0;
	t->eval_at = t->pos.step;
	r->evaluated = 1;
	r->eval_loss = loss;
	r->eval_acc = acc;
	r->eval_epoch = t->pos.epoch;
	r->eval_step = t->pos.step;
	if (t->log != NULL) {
		fprintf(t->log, "{\"event\":\"eval\",\"step\":%llu,"
		    "\"epoch\":%u", (unsigned long long)t->pos.step,
		    t->pos.epoch);
		jnum(t->log, "eval_loss", loss);
		jnum(t->log, "eval_acc", acc);
		fprintf(t->log, ",\"samples\":%llu,\"grads\":%llu",
		    (unsigned long long)t->pos.samples,
		    (unsigned long long)t->pos.grads);
		jnum(t->log, "wall", wall(t));
		jnum(t->log, "eval_s", r->eval_s);
		fputs("}\n", t->log);
		fflush(t->log);
	}
	if (t->conf->verbose)
		fprintf(stderr, "%s: step %llu epoch %u: eval loss %.4f "
		    "acc %.4f\n", rv_progname(),
		    (unsigned long long)t->pos.step, t->pos.epoch, loss, acc);
	if (t->conf->target_acc >= 0 && acc >= t->conf->target_acc &&
	    !r->reached) {
		r->reached = 1;
		r->reached_wall = wall(t);
		r->reached_step = t->pos.step;
		r->reached_grads = t->pos.grads;
		r->reached_samples = t->pos.samples;
		r->reached_epoch = t->pos.epoch;
		t->done = 1;
	}
	return 0;
}

static void
feedback(struct trainer *t, const struct pending *p)
{
	const struct rv_tin_item *b = p->it;
	struct rv_fb_line l;
	uint32_t i;

	if (t->fb == NULL)
		return;
	for (i = 0; i < b->n; i++) {
		l.id = b->ids[i];
		l.epoch = b->epoch;
		l.step = p->step;
		l.loss = p->o.loss[i];
		l.gradnorm = p->o.gnorm[i];
		rv_fb_put(t->fb, &l);
	}
}

/* A step's results are in: statistics, the divergence check, feedback. */
static int
finish(struct trainer *t, const struct pending *p)
{
	const struct rv_tin_item *b = p->it;
	double lsum = 0;
	uint64_t correct = 0;
	uint32_t i;

	for (i = 0; i < b->n; i++) {
		lsum += p->o.loss[i];
		correct += p->o.pred[i] == b->labels[i];
	}
	if (!isfinite(lsum))
		return rv_seterr("training diverged at step %llu (loss %s): "
		    "try a lower --lr", (unsigned long long)p->step,
		    isnan(lsum) ? "nan" : "inf");
	t->logw.loss += lsum;
	t->logw.correct += correct;
	t->logw.n += b->n;
	t->epw.loss += lsum;
	t->epw.correct += correct;
	t->epw.n += b->n;
	feedback(t, p);
	rv_progress_tick(&t->prog, prog_count(t));
	return 0;
}

/*
 * Finish the step held in t->pend, if any, once the backend has at most
 * `keep` steps in flight (1: the one queued after it may still run).
 */
static int
drain(struct trainer *t, int keep)
{
	const struct rv_nn_ops *ops = t->conf->backend;
	int rc = 0;

	if (t->pend.it == NULL)
		return 0;
	if (ops->wait != NULL && ops->wait(t->be, keep) < 0)
		rc = -1;
	if (rc == 0)
		rc = finish(t, &t->pend);
	rv_tin_done(t->in, t->pend.it);
	t->pend.it = NULL;
	return rc;
}

/*
 * One training step.  On a backend with ops->wait the step is queued
 * and `it` taken (*held set: drain() hands it back) until the next step
 * is queued too: then the previous step's results are read while this
 * one computes.  Steps that
 * log, evaluate, save or stop wait for their own results first, so
 * everything they see is as with a synchronous backend.
 */
static int
train_batch(struct trainer *t, struct rv_tin_item *it, int *held)
{
	const struct rv_train_conf *conf = t->conf;
	const struct rv_nn_ops *ops = conf->backend;
	struct rv_nn_hyper h = conf->hyper;
	struct rv_nn_batch nb;
	struct rv_nn_out out;
	struct pending p;
	uint64_t st;
	int log, eval, ckpt, last;

	*held = 0;
	if (it->h != (uint32_t)t->net.in.h || it->w != (uint32_t)t->net.in.w ||
	    it->c != (uint32_t)t->net.in.c)
		return rv_seterr("batch of %ux%ux%u samples: the model takes "
		    "%dx%dx%d", it->h, it->w, it->c, t->net.in.h, t->net.in.w,
		    t->net.in.c);
	for (uint32_t i = 0; i < it->n; i++)
		if (it->labels[i] < 0 || it->labels[i] >= t->net.classes)
			return rv_seterr("sample %llu: label %d is not a "
			    "class of the model (0 to %d)",
			    (unsigned long long)it->ids[i], it->labels[i],
			    t->net.classes - 1);
	if ((int)it->n > t->batch_max && (drain(t, 0) < 0 ||
	    grow_backend(t, (int)it->n) < 0))
		return -1;
	h.lr = (float)rv_train_lr(conf, t->pos.step, epoch_pos(t));
	nb.n = (int)it->n;
	nb.pixels = it->pixels;
	nb.ids = it->ids;
	nb.labels = it->labels;
	nb.weights = it->weights;
	nb.step = t->pos.step;
	p.it = it;
	p.o = t->out[t->flip];
	p.lr = h.lr;
	out.loss = p.o.loss;
	out.gradnorm = p.o.gnorm;
	out.pred = p.o.pred;
	if (ops->train(t->be, &nb, &h, &out) < 0)
		return -1;
	t->flip = !t->flip;
	t->pos.step++;
	t->pos.batches++;
	t->pos.samples += it->n;
	t->pos.grads += it->n;
	t->pos.epoch = it->epoch;
	t->pos.epoch_samples += it->n;
	t->pos.ids_hash = XXH64(it->ids, 8 * (size_t)it->n, t->pos.ids_hash);
	p.step = st = t->pos.step;
	log = conf->log_every > 0 && st % conf->log_every == 0;
	eval = conf->eval_every > 0 && st % conf->eval_every == 0;
	ckpt = conf->save_every > 0 && st % conf->save_every == 0;
	last = (conf->max_steps > 0 && st >= conf->max_steps) ||
	    (conf->steps > 0 && st >= conf->steps);
	if (ops->wait != NULL) {
		/* The previous step's results, while this one computes. */
		if (drain(t, 1) < 0)
			return -1;
		t->pend = p;
		*held = 1;
		if (!log && !eval && !ckpt && !last &&
		    !(conf->stop != NULL && *conf->stop))
			return 0;
		if (drain(t, 0) < 0)
			return -1;
	} else if (finish(t, &p) < 0)
		return -1;
	if (log) {
		log_window(t, "step", &t->logw, p.lr);
		if (t->step_lines)
			step_line(t, &t->logw, p.lr);
		window_reset(t, &t->logw);
	}
	if ((eval && evaluate(t) < 0) || (ckpt && save(t) < 0))
		return -1;
	if (last)
		t->done = 1;
	return 0;
}

static int
epoch_end(struct trainer *t, uint32_t epoch)
{
	struct rv_train_result *r = t->res;
	/* the rate at the epoch's end, the last the epoch trained with */
	double lr = rv_train_lr(t->conf, t->pos.step ? t->pos.step - 1 : 0,
	    epoch_pos(t));

	t->pos.epochs_done++;
	t->pos.epoch = epoch;
	if (t->epw.n > 0) {
		r->train_loss = t->epw.loss / (double)t->epw.n;
		r->train_acc = (double)t->epw.correct / (double)t->epw.n;
		t->have_train = 1;
	}
	log_window(t, "epoch", &t->epw, lr);
	if (t->conf->verbose && t->epw.n > 0)
		fprintf(stderr, "%s: epoch %u: %llu samples, train loss %.4f "
		    "acc %.4f, %.1f s\n", rv_progname(), epoch,
		    (unsigned long long)t->epw.n, r->train_loss, r->train_acc,
		    rv_now() - t->epw.t0);
	t->pos.prev_epoch_samples = t->pos.epoch_samples;
	t->pos.epoch_samples = 0;
	if ((!t->conf->no_epoch_eval && evaluate(t) < 0) || save(t) < 0)
		return -1;
	window_reset(t, &t->epw);
	return 0;
}

/*
 * Resuming: is this item one the checkpointed run had consumed?  Batches
 * are counted and hashed; the epoch ends it had seen are skipped too
 * (the one right after its last batch included, when it saved there).
 */
static int
skipping(struct trainer *t, const struct rv_tin_item *it, int *skip)
{
	*skip = 0;
	if (it->kind == RV_TIN_BATCH && t->skip_batches > 0) {
		*skip = 1;
		t->skip_hash = XXH64(it->ids, 8 * (size_t)it->n,
		    t->skip_hash);
		if (--t->skip_batches == 0 &&
		    t->skip_hash != t->ck.pos.ids_hash)
			return rv_seterr("resume: the input is not the one "
			    "the checkpoint was trained on (its first %llu "
			    "batches differ)",
			    (unsigned long long)t->ck.pos.batches);
	} else if (it->kind == RV_TIN_EPOCH_END && t->skip_ends > 0) {
		*skip = 1;
		t->skip_ends--;
	}
	return 0;
}

/* A checkpoint path whose directory cannot take it fails now, not after
 * the first epoch's training. */
static int
check_dir(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir;
	int rc = 0;

	if (slash == NULL)
		dir = xstrdup(".");
	else if (slash == path)
		dir = xstrdup("/");
	else
		dir = xstrndup(path, (size_t)(slash - path));
	if (access(dir, W_OK | X_OK) < 0)
		rc = rv_seterr("--save '%s': directory '%s':", path, dir);
	free(dir);
	return rc;
}

static int
open_outputs(struct trainer *t)
{
	const struct rv_train_conf *conf = t->conf;

	if (conf->eval_path != NULL &&
	    rv_eval_load(&t->eval, conf->eval_path, conf->batch) < 0)
		return -1;
	if (conf->feedback_path != NULL && (t->fb = rv_fb_writer_openf(
	    conf->feedback_path, conf->feedback_queue,
	    conf->resume_path != NULL ? RV_FB_APPEND : 0)) == NULL)
		return -1;
	if (conf->save_path != NULL && check_dir(conf->save_path) < 0)
		return -1;
	if (conf->log_path != NULL && (t->log = fopen(conf->log_path,
	    conf->resume_path != NULL ? "ae" : "we")) == NULL)
		return rv_seterr("'%s':", conf->log_path);
	return 0;
}

static int
loop(struct trainer *t, struct rv_tin *in)
{
	const struct rv_train_conf *conf = t->conf;
	struct rv_tin_item *it;
	int rc = 0, skip, held;

	t->in = in;
	while (rc == 0 && !t->done) {
		if ((conf->stop != NULL && *conf->stop) ||
		    (it = rv_tin_next(in, &t->wait, conf->stop)) == NULL) {
			t->res->interrupted = 1;
			break;
		}
		if (it->kind == RV_TIN_BATCH && !t->have_net)
			rc = setup_model(t, it);
		if (rc == 0)
			rc = skipping(t, it, &skip);
		held = 0;
		/* Everything but a batch sees every step's results. */
		if (rc == 0 && !skip && it->kind != RV_TIN_BATCH)
			rc = drain(t, 0);
		if (rc == 0 && !skip) {
			switch (it->kind) {
			case RV_TIN_META:
				rc = merge_meta(t, it);
				break;
			case RV_TIN_BATCH:
				rc = train_batch(t, it, &held);
				break;
			case RV_TIN_EPOCH_END:
				rc = epoch_end(t, it->epoch);
				break;
			case RV_TIN_END:
				t->done = 1;
				break;
			case RV_TIN_ERROR:
				rc = rv_seterr("%s", it->msg);
				break;
			}
		}
		if (!held)
			rv_tin_done(in, it);
	}
	if (rc == 0)
		rc = drain(t, 0);
	t->pend.it = NULL;	/* after a failure: rv_tin_stop() frees it */
	if (rc == 0 && t->skip_batches > 0 && !t->res->interrupted)
		rc = rv_seterr("resume: the input ended after %llu of the "
		    "%llu batches the checkpoint had trained on",
		    (unsigned long long)(t->ck.pos.batches - t->skip_batches),
		    (unsigned long long)t->ck.pos.batches);
	return rc;
}

static void
fill_result(struct trainer *t)
{
	struct rv_train_result *r = t->res;

	r->steps = t->pos.step;
	r->samples = t->pos.samples;
	r->grads = t->pos.grads;
	r->batches = t->pos.batches;
	r->epochs = t->pos.epochs_done;
	r->wall = wall(t);
	r->wait = t->wait;
	if (t->epw.n > 0 && !t->have_train) {
		r->train_loss = t->epw.loss / (double)t->epw.n;
		r->train_acc = (double)t->epw.correct / (double)t->epw.n;
	}
}

static void
log_summary(struct trainer *t)
{
	const struct rv_train_result *r = t->res;
	FILE *f = t->log;

	if (f == NULL)
		return;
	fprintf(f, "{\"event\":\"summary\",\"reached\":%s",
	    r->reached ? "true" : "false");
	jnum(f, "target_acc", t->conf->target_acc >= 0 ?
	    t->conf->target_acc : NAN);
	jnum(f, "wall", r->wall);
	jnum(f, "eval_s", r->eval_s);
	fprintf(f, ",\"epochs\":%u,\"steps\":%llu,\"samples\":%llu,"
	    "\"grads\":%llu", r->epochs, (unsigned long long)r->steps,
	    (unsigned long long)r->samples, (unsigned long long)r->grads);
	jnum(f, "eval_acc", r->evaluated ? r->eval_acc : NAN);
	jnum(f, "eval_loss", r->evaluated ? r->eval_loss : NAN);
	jnum(f, "wait_frac", r->wall > 0 ? r->wait / r->wall : 0);
	fprintf(f, ",\"feedback_written\":%llu,\"feedback_dropped\":%llu}\n",
	    (unsigned long long)r->fb_written,
	    (unsigned long long)r->fb_dropped);
	fflush(f);
}

int
rv_train_run(const struct rv_train_conf *conf, struct rv_train_result *res)
{
	struct trainer t;
	struct rv_tin *in = NULL;
	int rc = -1;

	memset(&t, 0, sizeof(t));
	memset(res, 0, sizeof(*res));
	t.conf = conf;
	t.res = res;
	t.t0 = rv_now();
	rv_meta_init(&t.meta);
	snprintf(res->device, sizeof(res->device), "%s (%d thread%s)",
	    conf->backend->name, conf->threads, conf->threads == 1 ? "" : "s");
	if (conf->resume_path != NULL) {
		if (rv_ckpt_load(conf->resume_path, &t.ck) < 0)
			goto end;
		t.pos = t.ck.pos;
		t.wall0 = t.ck.pos.wall;
		t.wait = t.ck.pos.wait;
		t.skip_batches = t.ck.pos.batches;
		t.skip_ends = t.ck.pos.epochs_done;
		res->resumed_from = t.ck.pos.step;
	}
	if (open_outputs(&t) < 0)
		goto end;
	window_reset(&t, &t.logw);
	window_reset(&t, &t.epw);
	/* Progress in steps with a step budget (the schedule's end), else
	 * in samples; step lines take the place of the plain lines a log
	 * gets. */
	t.steps_total = conf->steps > 0 && (conf->max_steps == 0 ||
	    conf->steps < conf->max_steps) ? conf->steps : conf->max_steps;
	rv_progress_init(&t.prog, conf->quiet, t.steps_total > 0 ? "steps" :
	    "samples");
	rv_progress_total(&t.prog, t.steps_total);
	rv_progress_from(&t.prog, prog_count(&t));
	t.step_lines = conf->log_every > 0 && !conf->quiet &&
	    (conf->verbose || t.prog.every > 0);
	if (t.step_lines)
		rv_progress_no_lines(&t.prog);
	if ((in = rv_tin_start(conf->inputs, conf->ninputs, conf->batch,
	    conf->backend->wait != NULL ? 4 : 3)) == NULL)
		goto end;
	if (loop(&t, in) < 0)
		goto end;
	rv_tin_stop(in);
	in = NULL;
	if (!t.have_net && !res->interrupted) {
		rv_seterr("the input holds no batch to train on");
		goto end;
	}
	/* The end: a last evaluation if the last epoch's has not run (or
	 * epochs' are off). */
	if ((t.pos.epoch_samples > 0 || conf->no_epoch_eval) &&
	    !res->interrupted && evaluate(&t) < 0)
		goto end;
	if (save(&t) < 0)
		goto end;
	rc = 0;
end:
	if (in != NULL)
		rv_tin_stop(in);
	rv_progress_done(&t.prog);
	if (t.fb != NULL) {
		if (rv_fb_writer_close(t.fb, 200, &res->fb_written,
		    &res->fb_dropped) < 0 && rc == 0)
			rc = -1;
	}
	fill_result(&t);
	if (rc == 0)
		log_summary(&t);
	if (t.log != NULL && fclose(t.log) != 0 && rc == 0)
		rc = rv_seterr("'%s': write:", conf->log_path);
	if (t.be != NULL)
		conf->backend->destroy(t.be);
	if (t.have_net)
		rv_net_release(&t.net);
	rv_eval_release(&t.eval);
	rv_ckpt_release(&t.ck);
	rv_meta_release(&t.meta);
	free_outputs(&t);
	return rc;
}

void
rv_train_summary(FILE *f, const struct rv_train_conf *conf,
    const struct rv_train_result *r)
{
	fprintf(f, "model     %s, %llu parameters\n", r->model,
	    (unsigned long long)r->params);
	fprintf(f, "device    %s\n", r->device);
	fprintf(f, "steps     %llu", (unsigned long long)r->steps);
	if (r->resumed_from > 0)
		fprintf(f, " (resumed at step %llu)",
		    (unsigned long long)r->resumed_from);
	fprintf(f, "\nepochs    %u\n", r->epochs);
	fprintf(f, "samples   %llu\n", (unsigned long long)r->samples);
	fprintf(f, "grads     %llu\n", (unsigned long long)r->grads);
	fprintf(f, "wall      %.2f s\n", r->wall);
	fprintf(f, "wait      %.2f s (%.1f%% of wall time waiting for "
	    "input)\n", r->wait, r->wall > 0 ? 100 * r->wait / r->wall : 0);
	fprintf(f, "train     loss %.4f acc %.4f\n", r->train_loss,
	    r->train_acc);
	if (r->evaluated)
		fprintf(f, "eval      loss %.4f acc %.4f (epoch %u, step "
		    "%llu)\n", r->eval_loss, r->eval_acc, r->eval_epoch,
		    (unsigned long long)r->eval_step);
	if (conf->target_acc >= 0) {
		if (r->reached)
			fprintf(f, "target    %.4f reached at %.2f s, epoch "
			    "%u, step %llu, %llu samples, %llu grads\n",
			    conf->target_acc, r->reached_wall,
			    r->reached_epoch,
			    (unsigned long long)r->reached_step,
			    (unsigned long long)r->reached_samples,
			    (unsigned long long)r->reached_grads);
		else
			fprintf(f, "target    %.4f not reached\n",
			    conf->target_acc);
	}
	if (conf->feedback_path != NULL)
		fprintf(f, "feedback  %llu lines written, %llu dropped\n",
		    (unsigned long long)r->fb_written,
		    (unsigned long long)r->fb_dropped);
	if (r->interrupted)
		fprintf(f, "stopped   by a signal%s\n", conf->save_path ?
		    ", checkpoint saved" : "");
}
