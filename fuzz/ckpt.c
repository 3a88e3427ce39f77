/*
 * libFuzzer harness for the checkpoint reader (lib/train/ckpt.c): arbitrary
 * bytes parsed by rv_ckpt_parse, which --resume trusts with a file from
 * anywhere.  A refused file must leave a message and nothing allocated; an
 * accepted one must hold exactly the bytes of the layout in ckpt.h (read
 * here independently), and saving it again must give the same bytes.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "base/err.h"
#include "base/io.h"
#include "stream/record.h"
#include "train/ckpt.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Byte offsets of the header fields after the counts (ckpt.h). */
#define O_WALL		108
#define O_LAST		116
#define O_WAIT		124
#define O_MEAN		132
#define O_STD		148
#define O_SPECLEN	164

static char path[64];

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	rv_setprogname("fuzz-ckpt");
	snprintf(path, sizeof(path), "/tmp/fuzz-ckpt.%ld.ck", (long)getpid());
	return 0;
}

static int
f32_is(float f, const unsigned char *p)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	return u == rv_le32(p);
}

static int
f64_is(double d, const unsigned char *p)
{
	uint64_t u;

	memcpy(&u, &d, 8);
	return u == rv_le64(p);
}

/* Every field of c against the bytes it came from; abort() on a miss. */
static void
check(const struct rv_ckpt *c, const unsigned char *p, size_t len)
{
	size_t speclen = rv_le32(p + O_SPECLEN), off, i;
	const struct rv_ckpt_pos *s = &c->pos;

	if (rv_le32(p) != RV_CKPT_MAGIC || rv_le32(p + 4) != RV_CKPT_VERSION ||
	    rv_le32(p + 8) != RV_CKPT_HDR ||
	    rv_le64(p + len - 8) != XXH64(p, len - 8, 0))
		abort();
	if (c->in_c != rv_le32(p + 12) || c->in_h != rv_le32(p + 16) ||
	    c->in_w != rv_le32(p + 20) || c->classes != rv_le32(p + 24) ||
	    c->nparams != rv_le64(p + 28) || c->nbufs != rv_le64(p + 36))
		abort();
	if (c->in_c < 1 || c->in_c > 4 || c->in_h < 1 || c->in_w < 1 ||
	    c->classes < 2 || O_SPECLEN + 4 != RV_CKPT_HDR)
		abort();
	if (s->step != rv_le64(p + 44) || s->batches != rv_le64(p + 52) ||
	    s->samples != rv_le64(p + 60) || s->grads != rv_le64(p + 68) ||
	    s->epoch != rv_le32(p + 76) || s->epochs_done != rv_le32(p + 80) ||
	    s->ids_hash != rv_le64(p + 84) ||
	    s->epoch_samples != rv_le64(p + 92) ||
	    s->prev_epoch_samples != rv_le64(p + 100) ||
	    !f64_is(s->wall, p + O_WALL) || !f64_is(s->last_acc, p + O_LAST) ||
	    !f64_is(s->wait, p + O_WAIT))
		abort();
	for (i = 0; i < 4; i++)
		if (!f32_is(c->mean[i], p + O_MEAN + 4 * i) ||
		    !f32_is(c->std[i], p + O_STD + 4 * i))
			abort();
	if (len != RV_CKPT_HDR + speclen + 4 * (2 * c->nparams + c->nbufs) +
	    8)
		abort();
	if (c->spec == NULL || strlen(c->spec) != speclen ||
	    memcmp(c->spec, p + RV_CKPT_HDR, speclen) != 0)
		abort();
	if (c->params == NULL || c->momentum == NULL || c->bufs == NULL)
		abort();
	off = RV_CKPT_HDR + speclen;
	for (i = 0; i < c->nparams; i++, off += 4)
		if (!f32_is(c->params[i], p + off))
			abort();
	for (i = 0; i < c->nparams; i++, off += 4)
		if (!f32_is(c->momentum[i], p + off))
			abort();
	for (i = 0; i < c->nbufs; i++, off += 4)
		if (!f32_is(c->bufs[i], p + off))
			abort();
}

/* The format is canonical: what parsed saves to the same bytes. */
static void
resave(const struct rv_ckpt *c, const unsigned char *p, size_t len)
{
	unsigned char *back;
	size_t blen;

	if (rv_ckpt_save(path, c) < 0)
		return;		/* /tmp full or gone: not the parser's bug */
	if (rv_slurp(path, &back, &blen) < 0)
		abort();
	unlink(path);
	if (blen != len || memcmp(back, p, len) != 0)
		abort();
	free(back);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rv_ckpt c;
	unsigned char *p;
	size_t len;

	if (size < 1)
		return 0;
	/* byte 0, bit 0: recompute the trailing checksum first, so that a
	 * mutated header reaches the checks behind the checksum */
	len = size - 1;
	p = malloc(len ? len : 1);
	if (p == NULL)
		abort();
	memcpy(p, data + 1, len);
	if ((data[0] & 1) && len >= 8)
		rv_put64(p + len - 8, XXH64(p, len - 8, 0));
	rv_seterr("%s", "");
	memset(&c, 0x5a, sizeof(c));
	if (rv_ckpt_parse(&c, p, len) < 0) {
		if (rv_errmsg()[0] == '\0' || c.spec != NULL ||
		    c.params != NULL || c.momentum != NULL || c.bufs != NULL)
			abort();
		rv_ckpt_release(&c);
		free(p);
		return 0;
	}
	check(&c, p, len);
	resave(&c, p, len);
	rv_ckpt_release(&c);
	free(p);
	return 0;
}
