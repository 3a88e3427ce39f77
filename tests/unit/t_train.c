/*
 * The trainer's pure parts: the learning-rate schedules of lib/train/train.c
 * (rv_train_lr), its text summary, and the checkpoint format of
 * lib/train/ckpt.c: a save/load round trip that keeps every bit, and every
 * corruption (each truncation, each flipped byte, a bad magic, version or
 * header length, impossible sizes, bad shapes) refused with -1 and a
 * message, never a crash or a leak (the ASan build checks the latter).
 * And the bound on a batch record's samples (issue 47): one over
 * RV_TRAIN_BATCH_MAX is refused, naming it, before the model is built;
 * one at it trains, whatever -b says.
 */
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "base/err.h"
#include "base/io.h"
#include "stream/record.h"
#include "stream/stream.h"
#include "train/ckpt.h"
#include "train/train.h"
#include "unit.h"

/* Byte offsets of the header fields (ckpt.h), as tests/bats/train.bats uses. */
#define O_STEP		44
#define O_WALL		108
#define O_LAST		116
#define O_WAIT		124
#define O_MEAN		132
#define O_STD		148
#define O_SPECLEN	164

static char dir[64];

static int
near(double a, double b)
{
	return fabs(a - b) <= 1e-12 * (fabs(b) > 1 ? fabs(b) : 1);
}

static void
conf_init(struct rv_train_conf *c, enum rv_sched s)
{
	memset(c, 0, sizeof(*c));
	c->hyper.lr = 0.5f;
	c->sched = s;
	c->step_size = 30;
	c->gamma = 0.1;
	c->target_acc = -1;
}

static void
test_lr_const(void)
{
	struct rv_train_conf c;

	conf_init(&c, RV_SCHED_CONST);
	EXPECT(near(rv_train_lr(&c, 0, 0), 0.5));
	EXPECT(near(rv_train_lr(&c, 123456, 77.25), 0.5));
}

static void
test_lr_step(void)
{
	struct rv_train_conf c;

	conf_init(&c, RV_SCHED_STEP);
	c.step_size = 2;
	c.gamma = 0.5;
	EXPECT(near(rv_train_lr(&c, 0, 0), 0.5));
	EXPECT(near(rv_train_lr(&c, 10, 1.999), 0.5));
	EXPECT(near(rv_train_lr(&c, 11, 2), 0.25));
	EXPECT(near(rv_train_lr(&c, 12, 3.5), 0.25));
	EXPECT(near(rv_train_lr(&c, 13, 4), 0.125));
	EXPECT(near(rv_train_lr(&c, 14, 9.9), 0.5 * pow(0.5, 4)));
	/* a fractional step size */
	c.step_size = 0.5;
	EXPECT(near(rv_train_lr(&c, 1, 0.75), 0.25));
	/* gamma 0: nothing after the first decay */
	c.step_size = 1;
	c.gamma = 0;
	EXPECT(near(rv_train_lr(&c, 1, 0.5), 0.5));
	EXPECT(rv_train_lr(&c, 1, 1) == 0);
}

static void
test_lr_linear(void)
{
	struct rv_train_conf c;

	conf_init(&c, RV_SCHED_LINEAR);
	c.epochs = 4;
	EXPECT(near(rv_train_lr(&c, 0, 0), 0.5));
	EXPECT(near(rv_train_lr(&c, 5, 1), 0.375));
	EXPECT(near(rv_train_lr(&c, 5, 3), 0.125));
	EXPECT(rv_train_lr(&c, 9, 4) == 0);
	/* past its end it stays at 0, never negative */
	EXPECT(rv_train_lr(&c, 9, 7) == 0);
	/* fitted to a step budget: the epoch is not read */
	c.epochs = 0;
	c.steps = 1000;
	EXPECT(near(rv_train_lr(&c, 0, 99), 0.5));
	EXPECT(near(rv_train_lr(&c, 250, 0), 0.375));
	EXPECT(near(rv_train_lr(&c, 999, 0), 0.0005));
	EXPECT(rv_train_lr(&c, 1000, 0) == 0);
	/* warm-up multiplies, as for the others */
	c.warmup = 10;
	EXPECT(near(rv_train_lr(&c, 4, 0), 0.5 * (1 - 0.004) * 0.5));
}

static void
test_lr_step_budget(void)
{
	struct rv_train_conf c;

	/* with a step budget and no step size: decays at N/3 and 2N/3 */
	conf_init(&c, RV_SCHED_STEP);
	c.steps = 900;
	c.step_size = 0;
	c.gamma = 0.1;
	EXPECT(near(rv_train_lr(&c, 0, 0), 0.5));
	EXPECT(near(rv_train_lr(&c, 299, 0), 0.5));
	EXPECT(near(rv_train_lr(&c, 300, 0), 0.05));
	EXPECT(near(rv_train_lr(&c, 599, 0), 0.05));
	EXPECT(near(rv_train_lr(&c, 600, 0), 0.005));
	EXPECT(near(rv_train_lr(&c, 899, 0), 0.005));
	/* a step size given still counts steps */
	c.step_size = 100;
	EXPECT(near(rv_train_lr(&c, 100, 0), 0.05));
}

static void
test_lr_cosine(void)
{
	struct rv_train_conf c;
	double e, prev = INFINITY, lr;

	conf_init(&c, RV_SCHED_COSINE);
	c.epochs = 4;
	EXPECT(near(rv_train_lr(&c, 0, 0), 0.5));
	EXPECT(near(rv_train_lr(&c, 5, 2), 0.25));
	EXPECT(near(rv_train_lr(&c, 5, 1), 0.25 * (1 + cos(3.14159265358979323846 / 4))));
	EXPECT(fabs(rv_train_lr(&c, 9, 4)) < 1e-12);
	/* past the schedule's end it stays at 0, it does not rise again */
	EXPECT(fabs(rv_train_lr(&c, 9, 6)) < 1e-12);
	EXPECT(fabs(rv_train_lr(&c, 9, 8)) < 1e-12);
	for (e = 0; e <= 4.0001; e += 0.125) {
		lr = rv_train_lr(&c, 100, e);
		EXPECT(lr <= prev && lr >= 0 && lr <= 0.5);
		prev = lr;
	}
}

/* A step budget: the schedule counts steps, whatever the epoch, so a run
 * whose epochs were shrunk sees the same curve at the same step. */
static void
test_lr_steps(void)
{
	struct rv_train_conf c;
	uint64_t st;
	double prev = INFINITY, lr;

	conf_init(&c, RV_SCHED_COSINE);
	c.steps = 400;
	EXPECT(near(rv_train_lr(&c, 0, 0), 0.5));
	EXPECT(near(rv_train_lr(&c, 200, 0), 0.25));
	EXPECT(near(rv_train_lr(&c, 200, 37.5), 0.25));
	EXPECT(near(rv_train_lr(&c, 100, 0.1), 0.25 * (1 + cos(3.14159265358979323846 / 4))));
	EXPECT(fabs(rv_train_lr(&c, 400, 1)) < 1e-12);
	EXPECT(fabs(rv_train_lr(&c, 4000, 1)) < 1e-12);
	for (st = 0; st <= 400; st += 7) {
		lr = rv_train_lr(&c, st, 99);
		EXPECT(lr <= prev && lr >= 0 && lr <= 0.5);
		prev = lr;
	}
	/* step decay: --step-size in steps */
	c.sched = RV_SCHED_STEP;
	c.step_size = 100;
	c.gamma = 0.5;
	EXPECT(near(rv_train_lr(&c, 99, 50), 0.5));
	EXPECT(near(rv_train_lr(&c, 100, 0), 0.25));
	EXPECT(near(rv_train_lr(&c, 399, 0), 0.5 * pow(0.5, 3)));
	/* and warm-up on top, as without a budget */
	c.warmup = 200;
	EXPECT(near(rv_train_lr(&c, 149, 0), 0.25 * 150.0 / 200));
}

static void
test_lr_warmup(void)
{
	struct rv_train_conf c;

	conf_init(&c, RV_SCHED_CONST);
	c.warmup = 4;
	EXPECT(near(rv_train_lr(&c, 0, 0), 0.125));
	EXPECT(near(rv_train_lr(&c, 1, 0), 0.25));
	EXPECT(near(rv_train_lr(&c, 3, 0), 0.5));
	EXPECT(near(rv_train_lr(&c, 4, 0), 0.5));
	EXPECT(near(rv_train_lr(&c, 1000, 9), 0.5));
	/* warm-up scales whatever the schedule gives */
	c.sched = RV_SCHED_COSINE;
	c.epochs = 4;
	EXPECT(near(rv_train_lr(&c, 1, 2), 0.25 * 0.5));
	c.sched = RV_SCHED_STEP;
	c.step_size = 1;
	c.gamma = 0.1;
	EXPECT(near(rv_train_lr(&c, 2, 1), 0.5 * 0.1 * 0.75));
	c.warmup = 1;
	EXPECT(near(rv_train_lr(&c, 0, 0), 0.5));
}

/* The summary's text, in a buffer (NUL-terminated, caller frees). */
static char *
summary(const struct rv_train_conf *c, const struct rv_train_result *r)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (f == NULL)
		abort();
	rv_train_summary(f, c, r);
	fclose(f);
	return buf;
}

static void
test_summary(void)
{
	struct rv_train_conf c;
	struct rv_train_result r;
	char *s;

	conf_init(&c, RV_SCHED_CONST);
	memset(&r, 0, sizeof(r));
	snprintf(r.model, sizeof(r.model), "mlp");
	snprintf(r.device, sizeof(r.device), "cpu (1 thread)");
	r.params = 1234;
	r.steps = 40;
	r.epochs = 2;
	r.samples = r.grads = 1280;
	r.wall = 2;
	r.wait = 0.5;
	r.train_loss = 0.25;
	r.train_acc = 0.875;
	s = summary(&c, &r);
	EXPECT_STR(s,
	    "model     mlp, 1234 parameters\n"
	    "device    cpu (1 thread)\n"
	    "steps     40\n"
	    "epochs    2\n"
	    "samples   1280\n"
	    "grads     1280\n"
	    "wall      2.00 s\n"
	    "wait      0.50 s (25.0% of wall time waiting for input)\n"
	    "train     loss 0.2500 acc 0.8750\n");
	free(s);

	/* every optional line */
	c.target_acc = 0.9;
	c.feedback_path = "fb";
	c.save_path = "ck";
	r.resumed_from = 20;
	r.evaluated = 1;
	r.eval_loss = 0.5;
	r.eval_acc = 0.9125;
	r.eval_epoch = 1;
	r.eval_step = 40;
	r.reached = 1;
	r.reached_wall = 1.5;
	r.reached_epoch = 1;
	r.reached_step = 40;
	r.reached_samples = r.reached_grads = 1280;
	r.fb_written = 1000;
	r.fb_dropped = 280;
	r.interrupted = 1;
	s = summary(&c, &r);
	EXPECT_STR(s,
	    "model     mlp, 1234 parameters\n"
	    "device    cpu (1 thread)\n"
	    "steps     40 (resumed at step 20)\n"
	    "epochs    2\n"
	    "samples   1280\n"
	    "grads     1280\n"
	    "wall      2.00 s\n"
	    "wait      0.50 s (25.0% of wall time waiting for input)\n"
	    "train     loss 0.2500 acc 0.8750\n"
	    "eval      loss 0.5000 acc 0.9125 (epoch 1, step 40)\n"
	    "target    0.9000 reached at 1.50 s, epoch 1, step 40, "
	    "1280 samples, 1280 grads\n"
	    "feedback  1000 lines written, 280 dropped\n"
	    "stopped   by a signal, checkpoint saved\n");
	free(s);
	r.reached = 0;
	r.wall = 0;
	c.save_path = NULL;
	s = summary(&c, &r);
	EXPECT(strstr(s, "\ntarget    0.9000 not reached\n") != NULL);
	EXPECT(strstr(s, "(0.0% of wall time") != NULL);
	EXPECT(strstr(s, "\nstopped   by a signal\n") != NULL);
	free(s);
}

/* ---- checkpoints ---- */

#define NP	7
#define NB	3

static float params[NP], momentum[NP], bufs[NB];

/* A small checkpoint whose floats hold awkward bit patterns. */
static void
ck_fill(struct rv_ckpt *c)
{
	static const uint32_t bits[] = {
		0x00000000, 0x80000000, 0x00000001, 0x7f800000, 0xff800000,
		0x7fc00123, 0x3f800000, 0xc2f6e979, 0x7f7fffff, 0x00800000,
	};
	int i;

	memset(c, 0, sizeof(*c));
	for (i = 0; i < NP; i++) {
		memcpy(&params[i], &bits[i], 4);
		memcpy(&momentum[i], &bits[(i + 3) % 10], 4);
	}
	for (i = 0; i < NB; i++)
		memcpy(&bufs[i], &bits[(i + 7) % 10], 4);
	c->in_c = 3;
	c->in_h = 32;
	c->in_w = 24;
	c->classes = 10;
	for (i = 0; i < 4; i++) {
		c->mean[i] = 0.25f * (float)i;
		c->std[i] = 0.5f + (float)i;
	}
	c->spec = (char *)"conv 8 k=3 pad=1; bn; relu; gap; linear";
	c->nparams = NP;
	c->nbufs = NB;
	c->params = params;
	c->momentum = momentum;
	c->bufs = bufs;
	c->pos.step = 0x0102030405060708ull;
	c->pos.batches = 41;
	c->pos.samples = 1300;
	c->pos.grads = 1290;
	c->pos.epoch = 7;
	c->pos.epochs_done = 6;
	c->pos.ids_hash = 0xfedcba9876543210ull;
	c->pos.epoch_samples = 20;
	c->pos.prev_epoch_samples = 640;
	c->pos.wall = 12.5;
	c->pos.last_acc = -1;
	c->pos.wait = 0.75;
}

static int
ck_equal(const struct rv_ckpt *a, const struct rv_ckpt *b)
{
	return a->in_c == b->in_c && a->in_h == b->in_h &&
	    a->in_w == b->in_w && a->classes == b->classes &&
	    memcmp(a->mean, b->mean, sizeof(a->mean)) == 0 &&
	    memcmp(a->std, b->std, sizeof(a->std)) == 0 &&
	    strcmp(a->spec, b->spec) == 0 && a->nparams == b->nparams &&
	    a->nbufs == b->nbufs &&
	    memcmp(a->params, b->params, 4 * a->nparams) == 0 &&
	    memcmp(a->momentum, b->momentum, 4 * a->nparams) == 0 &&
	    memcmp(a->bufs, b->bufs, 4 * a->nbufs) == 0 &&
	    a->pos.step == b->pos.step && a->pos.batches == b->pos.batches &&
	    a->pos.samples == b->pos.samples &&
	    a->pos.grads == b->pos.grads && a->pos.epoch == b->pos.epoch &&
	    a->pos.epochs_done == b->pos.epochs_done &&
	    a->pos.ids_hash == b->pos.ids_hash &&
	    a->pos.epoch_samples == b->pos.epoch_samples &&
	    a->pos.prev_epoch_samples == b->pos.prev_epoch_samples &&
	    memcmp(&a->pos.wall, &b->pos.wall, 8) == 0 &&
	    memcmp(&a->pos.last_acc, &b->pos.last_acc, 8) == 0 &&
	    memcmp(&a->pos.wait, &b->pos.wait, 8) == 0;
}

/* Save c to dir/name and read the file's bytes back (caller frees). */
static unsigned char *
ck_bytes(const struct rv_ckpt *c, const char *name, size_t *len)
{
	char path[128];
	unsigned char *buf = NULL;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (rv_ckpt_save(path, c) < 0) {
		printf("# save: %s\n", rv_errmsg());
		return NULL;
	}
	if (rv_slurp(path, &buf, len) < 0) {
		printf("# slurp: %s\n", rv_errmsg());
		return NULL;
	}
	unlink(path);
	return buf;
}

/* Recompute the trailing checksum after an edit. */
static void
reseal(unsigned char *p, size_t len)
{
	rv_put64(p + len - 8, XXH64(p, len - 8, 0));
}

/* Parse must fail with a message containing want (NULL: any message). */
static int
parse_fails(const unsigned char *p, size_t len, const char *want)
{
	struct rv_ckpt c;

	rv_seterr("%s", "");
	memset(&c, 0xa5, sizeof(c));
	if (rv_ckpt_parse(&c, p, len) != -1) {
		rv_ckpt_release(&c);
		printf("# parse of %zu bytes succeeded\n", len);
		return 0;
	}
	/* a failed parse owns nothing: releasing it is harmless */
	if (c.spec != NULL || c.params != NULL || c.momentum != NULL ||
	    c.bufs != NULL) {
		printf("# a failed parse left pointers behind\n");
		return 0;
	}
	rv_ckpt_release(&c);
	if (rv_errmsg()[0] == '\0' ||
	    (want != NULL && strstr(rv_errmsg(), want) == NULL)) {
		printf("# message '%s', want '%s'\n", rv_errmsg(),
		    want ? want : "(any)");
		return 0;
	}
	return 1;
}

static void
test_ckpt_layout(void)
{
	struct rv_ckpt c;
	unsigned char *p;
	size_t len, speclen;
	uint64_t u;
	double d;

	ck_fill(&c);
	speclen = strlen(c.spec);
	if ((p = ck_bytes(&c, "layout.ck", &len)) == NULL) {
		EXPECT(0);
		return;
	}
	/* the layout ckpt.h documents, which tests/bats/train.bats relies on */
	EXPECT_EQ(len, RV_CKPT_HDR + speclen + 4 * (2 * NP + NB) + 8);
	EXPECT(memcmp(p, "RVCK", 4) == 0);
	EXPECT_EQ(rv_le32(p + 4), RV_CKPT_VERSION);
	EXPECT_EQ(rv_le32(p + 8), RV_CKPT_HDR);
	EXPECT_EQ(rv_le32(p + 12), 3);
	EXPECT_EQ(rv_le32(p + 16), 32);
	EXPECT_EQ(rv_le32(p + 20), 24);
	EXPECT_EQ(rv_le32(p + 24), 10);
	EXPECT_EQ(rv_le64(p + 28), NP);
	EXPECT_EQ(rv_le64(p + 36), NB);
	EXPECT(rv_le64(p + O_STEP) == 0x0102030405060708ull);
	EXPECT_EQ(rv_le64(p + 52), 41);
	EXPECT_EQ(rv_le64(p + 60), 1300);
	EXPECT_EQ(rv_le64(p + 68), 1290);
	EXPECT_EQ(rv_le32(p + 76), 7);
	EXPECT_EQ(rv_le32(p + 80), 6);
	EXPECT(rv_le64(p + 84) == 0xfedcba9876543210ull);
	EXPECT_EQ(rv_le64(p + 92), 20);
	EXPECT_EQ(rv_le64(p + 100), 640);
	/* wall and wait: the bytes train.bats ignores */
	u = rv_le64(p + O_WALL);
	memcpy(&d, &u, 8);
	EXPECT(d == 12.5);
	u = rv_le64(p + O_LAST);
	memcpy(&d, &u, 8);
	EXPECT(d == -1);
	u = rv_le64(p + O_WAIT);
	memcpy(&d, &u, 8);
	EXPECT(d == 0.75);
	EXPECT_EQ(rv_le32(p + O_MEAN + 4), 0x3e800000);	/* 0.25f */
	EXPECT_EQ(rv_le32(p + O_STD + 12), 0x40600000);	/* 3.5f */
	EXPECT_EQ(O_SPECLEN + 4, RV_CKPT_HDR);
	EXPECT_EQ(rv_le32(p + O_SPECLEN), speclen);
	EXPECT(memcmp(p + RV_CKPT_HDR, c.spec, speclen) == 0);
	EXPECT(rv_le64(p + len - 8) == XXH64(p, len - 8, 0));
	free(p);
}

static void
test_ckpt_roundtrip(void)
{
	struct rv_ckpt c, back;
	char path[128];
	unsigned char *p;
	size_t len;

	ck_fill(&c);
	snprintf(path, sizeof(path), "%s/rt.ck", dir);
	EXPECT_EQ(rv_ckpt_save(path, &c), 0);
	EXPECT_EQ(rv_ckpt_load(path, &back), 0);
	EXPECT(ck_equal(&c, &back));
	rv_ckpt_release(&back);
	EXPECT(back.spec == NULL && back.params == NULL);
	rv_ckpt_release(&back);		/* twice: still harmless */

	/* a save replaces the old file whole */
	c.pos.step = 99;
	c.spec = (char *)"linear";
	EXPECT_EQ(rv_ckpt_save(path, &c), 0);
	EXPECT_EQ(rv_ckpt_load(path, &back), 0);
	EXPECT(ck_equal(&c, &back));
	rv_ckpt_release(&back);
	unlink(path);

	/* from memory, and an empty model (no parameters, no buffers) */
	c.nparams = 0;
	c.nbufs = 0;
	c.pos.last_acc = 0.875;
	if ((p = ck_bytes(&c, "empty.ck", &len)) == NULL) {
		EXPECT(0);
		return;
	}
	EXPECT_EQ(len, RV_CKPT_HDR + strlen("linear") + 8);
	EXPECT_EQ(rv_ckpt_parse(&back, p, len), 0);
	EXPECT(ck_equal(&c, &back));
	rv_ckpt_release(&back);
	free(p);
}

static void
test_ckpt_truncated(void)
{
	struct rv_ckpt c;
	unsigned char *p, *cut;
	size_t len, n, bad = 0;

	ck_fill(&c);
	if ((p = ck_bytes(&c, "cut.ck", &len)) == NULL) {
		EXPECT(0);
		return;
	}
	/* every length: each in its own allocation, so ASan sees any read
	 * past the end */
	for (n = 0; n < len; n++) {
		cut = malloc(n ? n : 1);
		memcpy(cut, p, n);
		if (!parse_fails(cut, n, n < RV_CKPT_HDR + 8 ? "too short" :
		    NULL)) {
			printf("# truncated to %zu of %zu bytes\n", n, len);
			bad++;
		}
		free(cut);
	}
	EXPECT_EQ(bad, 0);
	/* one byte too many, the checksum right: the size check */
	cut = malloc(len + 1);
	memcpy(cut, p, len - 8);
	cut[len - 8] = 0;
	reseal(cut, len + 1);
	EXPECT(parse_fails(cut, len + 1, "does not match its header"));
	free(cut);
	free(p);
}

static void
test_ckpt_flipped(void)
{
	struct rv_ckpt c;
	unsigned char *p;
	size_t len, i, bad = 0;
	int bit;

	ck_fill(&c);
	if ((p = ck_bytes(&c, "flip.ck", &len)) == NULL) {
		EXPECT(0);
		return;
	}
	for (i = 0; i < len; i++) {
		for (bit = 0; bit < 8; bit += 7) {
			p[i] ^= (unsigned char)(1u << bit);
			if (!parse_fails(p, len, i < 12 ? NULL :
			    "checksum mismatch")) {
				printf("# bit %d of byte %zu\n", bit, i);
				bad++;
			}
			p[i] ^= (unsigned char)(1u << bit);
		}
	}
	EXPECT_EQ(bad, 0);
	free(p);
}

/* Edit a header field, reseal, and expect the parse to fail with want. */
static int
edit_fails(const unsigned char *p, size_t len, size_t off, int width,
    uint64_t v, const char *want)
{
	unsigned char *q = malloc(len);
	int ok;

	memcpy(q, p, len);
	if (width == 4)
		rv_put32(q + off, (uint32_t)v);
	else
		rv_put64(q + off, v);
	reseal(q, len);
	ok = parse_fails(q, len, want);
	if (!ok)
		printf("# field at %zu set to %llu\n", off,
		    (unsigned long long)v);
	free(q);
	return ok;
}

static void
test_ckpt_bad_header(void)
{
	struct rv_ckpt c, back;
	unsigned char *p, *q;
	size_t len;
	double nan = NAN, inf = INFINITY;
	uint64_t u;

	ck_fill(&c);
	if ((p = ck_bytes(&c, "hdr.ck", &len)) == NULL) {
		EXPECT(0);
		return;
	}
	EXPECT(edit_fails(p, len, 0, 4, 0x4b435653, "bad magic"));
	EXPECT(edit_fails(p, len, 0, 4, 0, "bad magic"));
	EXPECT(edit_fails(p, len, 4, 4, 2, "version 2 not supported"));
	EXPECT(edit_fails(p, len, 4, 4, 0, "version 0 not supported"));
	EXPECT(edit_fails(p, len, 8, 4, RV_CKPT_HDR - 1, "header length"));
	EXPECT(edit_fails(p, len, 8, 4, RV_CKPT_HDR + 8, "header length"));
	EXPECT(edit_fails(p, len, 8, 4, 0xffffffff, "header length"));
	/* shapes */
	EXPECT(edit_fails(p, len, 12, 4, 0, "bad shapes"));
	EXPECT(edit_fails(p, len, 12, 4, 5, "bad shapes"));
	EXPECT(edit_fails(p, len, 16, 4, 0, "bad shapes"));
	EXPECT(edit_fails(p, len, 20, 4, 0, "bad shapes"));
	EXPECT(edit_fails(p, len, 24, 4, 1, "bad shapes"));
	memcpy(&u, &nan, 8);
	EXPECT(edit_fails(p, len, O_WALL, 8, u, "bad shapes"));
	EXPECT(edit_fails(p, len, O_WAIT, 8, u, "bad shapes"));
	memcpy(&u, &inf, 8);
	EXPECT(edit_fails(p, len, O_WALL, 8, u, "bad shapes"));
	EXPECT(edit_fails(p, len, O_WAIT, 8, u, "bad shapes"));
	/* sizes that claim more (or less) than the file holds */
	EXPECT(edit_fails(p, len, 28, 8, NP + 1, "does not match"));
	EXPECT(edit_fails(p, len, 28, 8, NP - 1, "does not match"));
	EXPECT(edit_fails(p, len, 36, 8, NB + 1, "does not match"));
	EXPECT(edit_fails(p, len, O_SPECLEN, 4, strlen(c.spec) + 1,
	    "does not match"));
	EXPECT(edit_fails(p, len, O_SPECLEN, 4, 0, "does not match"));
	/* sizes no model has: refused before any arithmetic can wrap */
	EXPECT(edit_fails(p, len, 28, 8, ((uint64_t)1 << 31) + 1,
	    "impossible model size"));
	EXPECT(edit_fails(p, len, 28, 8, UINT64_MAX, "impossible"));
	EXPECT(edit_fails(p, len, 28, 8, (uint64_t)1 << 62, "impossible"));
	EXPECT(edit_fails(p, len, 28, 8, ((uint64_t)1 << 62) + NP,
	    "impossible"));
	EXPECT(edit_fails(p, len, 36, 8, UINT64_MAX, "impossible"));
	EXPECT(edit_fails(p, len, 36, 8, ((uint64_t)1 << 63) + NB,
	    "impossible"));
	EXPECT(edit_fails(p, len, O_SPECLEN, 4, 0xffffffff, "impossible"));
	EXPECT(edit_fails(p, len, O_SPECLEN, 4, (1u << 20) + 1,
	    "impossible"));
	/* the most a header may claim is refused by the size, not trusted */
	EXPECT(edit_fails(p, len, 28, 8, (uint64_t)1 << 31,
	    "does not match"));
	/* a NUL inside the spec */
	q = malloc(len);
	memcpy(q, p, len);
	q[RV_CKPT_HDR + 3] = '\0';
	reseal(q, len);
	EXPECT(parse_fails(q, len, "NUL"));
	/* and the untouched bytes still parse */
	EXPECT_EQ(rv_ckpt_parse(&back, p, len), 0);
	EXPECT(ck_equal(&c, &back));
	rv_ckpt_release(&back);
	free(q);
	free(p);
}

static void
test_ckpt_files(void)
{
	struct rv_ckpt c, back;
	char path[128], msg[512];
	FILE *f;

	ck_fill(&c);
	/* a missing file and a damaged one: the message names the path */
	snprintf(path, sizeof(path), "%s/none.ck", dir);
	EXPECT_EQ(rv_ckpt_load(path, &back), -1);
	snprintf(msg, sizeof(msg), "'%s'", path);
	EXPECT(strstr(rv_errmsg(), msg) != NULL);
	EXPECT(back.spec == NULL && back.params == NULL);
	rv_ckpt_release(&back);
	snprintf(path, sizeof(path), "%s/junk.ck", dir);
	if ((f = fopen(path, "w")) == NULL) {
		EXPECT(0);
		return;
	}
	fputs("not a checkpoint\n", f);
	fclose(f);
	EXPECT_EQ(rv_ckpt_load(path, &back), -1);
	snprintf(msg, sizeof(msg), "'%s': not a checkpoint: 17 bytes is too "
	    "short", path);
	EXPECT_STR(rv_errmsg(), msg);
	rv_ckpt_release(&back);
	unlink(path);
	/* a save into a missing directory fails, and leaves nothing */
	snprintf(path, sizeof(path), "%s/no/such/dir.ck", dir);
	EXPECT_EQ(rv_ckpt_save(path, &c), -1);
	EXPECT(rv_errmsg()[0] != '\0');
}

/*
 * A stream of classes metadata, one u8 batch of n 1x1x1 samples (ids 0,
 * labels 0, weights 1, pixels 0) and its epoch-end; *off the batch's
 * byte offset.  0, or -1 with a message.
 */
static int
batch_stream(const char *path, uint32_t n, uint64_t *off)
{
	static const char meta[] = "classes=10\n";
	const float one = 1;
	size_t plen = 17 * (size_t)n, i;
	unsigned char *p = calloc(plen, 1);
	struct rv_writer *w = NULL;
	struct rv_rec r;
	int fd, rc = -1;

	if (p == NULL)
		return -1;
	for (i = 0; i < n; i++)
		memcpy(p + 12 * (size_t)n + 4 * i, &one, 4);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644)) < 0 ||
	    (w = rv_writer_new(fd, path, 1)) == NULL)
		goto end;
	rv_rec_init(&r, RV_META);
	r.payload_len = sizeof(meta) - 1;
	if (rv_writer_put(w, &r, meta) < 0 || rv_writer_flush(w) < 0)
		goto end;
	*off = rv_writer_bytes(w);
	rv_rec_init(&r, RV_BATCH);
	r.dtype = RV_DT_U8;
	r.height = r.width = r.channels = 1;
	r.count = n;
	r.payload_len = plen;
	if (rv_writer_put(w, &r, p) < 0)
		goto end;
	rv_rec_init(&r, RV_EPOCH_END);
	r.count = n;
	if (rv_writer_put(w, &r, NULL) < 0)
		goto end;
	rc = 0;
end:
	if (rv_writer_close(w) < 0)
		rc = -1;
	if (fd >= 0)
		close(fd);
	free(p);
	return rc;
}

static void
test_batch_bound(void)
{
	char path[128], want[512];
	char *inputs[1] = { path };
	struct rv_train_conf c;
	struct rv_train_result r;
	uint64_t off = 0;

	snprintf(path, sizeof(path), "%s/batch.rvs", dir);
	memset(&c, 0, sizeof(c));
	c.model = "linear";
	c.backend = &rv_nn_cpu;
	c.threads = 1;
	c.batch = 7;
	c.hyper.lr = 0.05f;
	c.target_acc = -1;
	c.inputs = inputs;
	c.ninputs = 1;
	c.max_steps = 1;
	c.quiet = 1;
	EXPECT_EQ(batch_stream(path, RV_TRAIN_BATCH_MAX + 1, &off), 0);
	memset(&r, 0, sizeof(r));
	EXPECT_EQ(rv_train_run(&c, &r), -1);
	snprintf(want, sizeof(want), "'%s': record 1 at byte %llu: batch of "
	    "%u samples is over the limit of %u (the largest -b)", path,
	    (unsigned long long)off, RV_TRAIN_BATCH_MAX + 1,
	    RV_TRAIN_BATCH_MAX);
	EXPECT_STR(rv_errmsg(), want);
	EXPECT_EQ(r.steps, 0);
	/* at the bound, with -b 7: trained as it comes, in one step */
	EXPECT_EQ(batch_stream(path, RV_TRAIN_BATCH_MAX, &off), 0);
	memset(&r, 0, sizeof(r));
	EXPECT_EQ(rv_train_run(&c, &r), 0);
	EXPECT_EQ(r.steps, 1);
	EXPECT_EQ(r.samples, RV_TRAIN_BATCH_MAX);
	EXPECT_EQ(unlink(path), 0);
}

int
main(void)
{
	snprintf(dir, sizeof(dir), "/tmp/t_train.XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(test_lr_const);
	RUN(test_lr_step);
	RUN(test_lr_linear);
	RUN(test_lr_step_budget);
	RUN(test_lr_cosine);
	RUN(test_lr_steps);
	RUN(test_lr_warmup);
	RUN(test_summary);
	RUN(test_ckpt_layout);
	RUN(test_ckpt_roundtrip);
	RUN(test_ckpt_truncated);
	RUN(test_ckpt_flipped);
	RUN(test_ckpt_bad_header);
	RUN(test_ckpt_files);
	RUN(test_batch_bound);
	EXPECT_EQ(rmdir(dir), 0);
	return UNIT_DONE();
}
