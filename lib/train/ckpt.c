/*
 * Checkpoints (format in ckpt.h).  The file is built in memory and written
 * through struct rv_out, so a checkpoint on disk is always whole: an old
 * one stays in place until the new one is complete and renamed over it.
 * Loading validates the header, every count against the file size and
 * the checksum before it allocates anything big.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "base/err.h"
#include "base/io.h"
#include "base/xmem.h"
#include "stream/record.h"
#include "stream/stream.h"
#include "train/ckpt.h"

/* Largest model a checkpoint may describe: 2^31 floats, as nn_spec. */
#define CKPT_MAX_FLOATS	((uint64_t)1 << 31)
#define CKPT_MAX_SPEC	(1u << 20)

static void
put_f32(struct rv_buf *b, float f)
{
	uint32_t u;
	unsigned char p[4];

	memcpy(&u, &f, 4);
	rv_put32(p, u);
	rv_buf_append(b, p, 4);
}

static void
put_u32(struct rv_buf *b, uint32_t v)
{
	unsigned char p[4];

	rv_put32(p, v);
	rv_buf_append(b, p, 4);
}

static void
put_u64(struct rv_buf *b, uint64_t v)
{
	unsigned char p[8];

	rv_put64(p, v);
	rv_buf_append(b, p, 8);
}

static void
put_f64(struct rv_buf *b, double d)
{
	uint64_t u;

	memcpy(&u, &d, 8);
	put_u64(b, u);
}

static void
put_floats(struct rv_buf *b, const float *v, size_t n)
{
	size_t i;

	rv_buf_reserve(b, 4 * n);
	for (i = 0; i < n; i++)
		put_f32(b, v[i]);
}

int
rv_ckpt_save(const char *path, const struct rv_ckpt *c)
{
	struct rv_buf b = { 0 };
	struct rv_out out;
	size_t speclen = strlen(c->spec);
	int i, rc = -1;

	rv_buf_reserve(&b, RV_CKPT_HDR + speclen +
	    4 * (2 * c->nparams + c->nbufs) + 8);
	put_u32(&b, RV_CKPT_MAGIC);
	put_u32(&b, RV_CKPT_VERSION);
	put_u32(&b, RV_CKPT_HDR);
	put_u32(&b, c->in_c);
	put_u32(&b, c->in_h);
	put_u32(&b, c->in_w);
	put_u32(&b, c->classes);
	put_u64(&b, c->nparams);
	put_u64(&b, c->nbufs);
	put_u64(&b, c->pos.step);
	put_u64(&b, c->pos.batches);
	put_u64(&b, c->pos.samples);
	put_u64(&b, c->pos.grads);
	put_u32(&b, c->pos.epoch);
	put_u32(&b, c->pos.epochs_done);
	put_u64(&b, c->pos.ids_hash);
	put_u64(&b, c->pos.epoch_samples);
	put_u64(&b, c->pos.prev_epoch_samples);
	put_f64(&b, c->pos.wall);
	put_f64(&b, c->pos.last_acc);
	put_f64(&b, c->pos.wait);
	for (i = 0; i < 4; i++)
		put_f32(&b, c->mean[i]);
	for (i = 0; i < 4; i++)
		put_f32(&b, c->std[i]);
	put_u32(&b, (uint32_t)speclen);
	rv_buf_append(&b, c->spec, speclen);
	put_floats(&b, c->params, c->nparams);
	put_floats(&b, c->momentum, c->nparams);
	put_floats(&b, c->bufs, c->nbufs);
	put_u64(&b, XXH64(b.data, b.len, 0));

	if (rv_out_open(&out, path, 1) < 0)
		goto end;
	if (rv_write_full(out.fd, b.data, b.len) < 0) {
		rv_preferr("'%s'", path);
		rv_out_abort(&out);
		goto end;
	}
	if (rv_out_commit(&out) < 0)
		goto end;
	rc = 0;
end:
	rv_buf_release(&b);
	return rc;
}

/* A bounds-checked little-endian cursor. */
struct cur {
	const unsigned char *p;
	size_t len, off;
};

static uint32_t
get_u32(struct cur *c)
{
	uint32_t v = rv_le32(c->p + c->off);

	c->off += 4;
	return v;
}

static uint64_t
get_u64(struct cur *c)
{
	uint64_t v = rv_le64(c->p + c->off);

	c->off += 8;
	return v;
}

static float
get_f32(struct cur *c)
{
	uint32_t u = get_u32(c);
	float f;

	memcpy(&f, &u, 4);
	return f;
}

static double
get_f64(struct cur *c)
{
	uint64_t u = get_u64(c);
	double d;

	memcpy(&d, &u, 8);
	return d;
}

static float *
get_floats(struct cur *c, size_t n)
{
	float *v = xmalloc(n ? 4 * n : 1);
	size_t i;

	for (i = 0; i < n; i++)
		v[i] = get_f32(c);
	return v;
}

int
rv_ckpt_parse(struct rv_ckpt *ck, const unsigned char *p, size_t len)
{
	struct cur c = { p, len, 0 };
	uint64_t nparams, nbufs, need;
	uint32_t speclen;
	int i;

	memset(ck, 0, sizeof(*ck));
	if (len < RV_CKPT_HDR + 8)
		return rv_seterr("not a checkpoint: %zu bytes is too short",
		    len);
	if (get_u32(&c) != RV_CKPT_MAGIC)
		return rv_seterr("not a checkpoint: bad magic");
	if (get_u32(&c) != RV_CKPT_VERSION)
		return rv_seterr("checkpoint version %u not supported",
		    rv_le32(p + 4));
	if (get_u32(&c) != RV_CKPT_HDR)
		return rv_seterr("checkpoint header length %u is wrong",
		    rv_le32(p + 8));
	if (XXH64(p, len - 8, 0) != rv_le64(p + len - 8))
		return rv_seterr("checkpoint checksum mismatch (file "
		    "damaged or truncated)");
	ck->in_c = get_u32(&c);
	ck->in_h = get_u32(&c);
	ck->in_w = get_u32(&c);
	ck->classes = get_u32(&c);
	nparams = get_u64(&c);
	nbufs = get_u64(&c);
	ck->pos.step = get_u64(&c);
	ck->pos.batches = get_u64(&c);
	ck->pos.samples = get_u64(&c);
	ck->pos.grads = get_u64(&c);
	ck->pos.epoch = get_u32(&c);
	ck->pos.epochs_done = get_u32(&c);
	ck->pos.ids_hash = get_u64(&c);
	ck->pos.epoch_samples = get_u64(&c);
	ck->pos.prev_epoch_samples = get_u64(&c);
	ck->pos.wall = get_f64(&c);
	ck->pos.last_acc = get_f64(&c);
	ck->pos.wait = get_f64(&c);
	for (i = 0; i < 4; i++)
		ck->mean[i] = get_f32(&c);
	for (i = 0; i < 4; i++)
		ck->std[i] = get_f32(&c);
	speclen = get_u32(&c);
	if (nparams > CKPT_MAX_FLOATS || nbufs > CKPT_MAX_FLOATS ||
	    speclen > CKPT_MAX_SPEC)
		return rv_seterr("checkpoint claims an impossible model size");
	need = RV_CKPT_HDR + (uint64_t)speclen + 4 * (2 * nparams + nbufs) +
	    8;
	if (need != len)
		return rv_seterr("checkpoint size %zu does not match its "
		    "header (%llu)", len, (unsigned long long)need);
	if (ck->in_c < 1 || ck->in_c > 4 || ck->in_h < 1 || ck->in_w < 1 ||
	    ck->classes < 2 || !isfinite(ck->pos.wall) ||
	    !isfinite(ck->pos.wait))
		return rv_seterr("checkpoint header has bad shapes");
	if (memchr(p + c.off, '\0', speclen) != NULL)
		return rv_seterr("checkpoint model spec holds a NUL byte");
	ck->spec = xmalloc((size_t)speclen + 1);
	memcpy(ck->spec, p + c.off, speclen);
	ck->spec[speclen] = '\0';
	c.off += speclen;
	ck->nparams = (size_t)nparams;
	ck->nbufs = (size_t)nbufs;
	ck->params = get_floats(&c, ck->nparams);
	ck->momentum = get_floats(&c, ck->nparams);
	ck->bufs = get_floats(&c, ck->nbufs);
	return 0;
}

int
rv_ckpt_load(const char *path, struct rv_ckpt *c)
{
	unsigned char *buf;
	size_t len;
	int rc;

	memset(c, 0, sizeof(*c));
	if (rv_slurp(path, &buf, &len) < 0)
		return -1;	/* the message names path */
	rc = rv_ckpt_parse(c, buf, len);
	free(buf);
	if (rc < 0)
		return rv_preferr("'%s'", path);
	return 0;
}

void
rv_ckpt_release(struct rv_ckpt *c)
{
	free(c->spec);
	free(c->params);
	free(c->momentum);
	free(c->bufs);
	memset(c, 0, sizeof(*c));
}
