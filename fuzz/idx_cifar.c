/*
 * libFuzzer harness for the IDX and CIFAR readers (lib/src/src_idx.c,
 * lib/src/src_cifar.c, lib/src/src.c's operand sorting and class merging, and
 * the raw-pixel path of lib/codec/img.c).  The input is
 *
 *	byte 0		mode (bits 0-2), output channels (bit 3),
 *			--max-side (bits 4-6), --strict (bit 7)
 *	bytes 1-2	little-endian length of part A
 *	then		part A, then part B (the rest)
 *
 * and the mode names the files so that each format is recognised: an IDX
 * images file, an images + labels pair in either order, a CIFAR-10 or
 * CIFAR-100 batch with its class-name file, CIFAR beside IDX, and
 * Fashion-MNIST (whose class names come from the file name).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "codec/codec.h"
#include "src/src.h"
#include "src/src_warn.h"
#include "stream/meta.h"
#include "stream/record.h"
#include "stream/stream.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_FETCH	64

static const uint32_t sides[8] = { 0, 1, 3, 8, 16, 31, 32, 100 };

/* File names for part A and part B, and whether B is an operand. */
static const struct mode {
	const char *a, *b;
	int b_operand, b_first;
} modes[8] = {
	{ "t10k-images-idx3-ubyte", NULL, 0, 0 },
	{ "train-images-idx3-ubyte", "train-labels-idx1-ubyte", 1, 0 },
	{ "train-images-idx3-ubyte", "train-labels-idx1-ubyte", 1, 1 },
	{ "data_batch_1.bin", "batches.meta.txt", 0, 0 },
	{ "train.bin", "fine_label_names.txt", 0, 0 },
	{ "test_batch.bin", "x-idx3-ubyte", 1, 0 },
	{ "fashion-images-idx3-ubyte", "fashion-labels-idx1-ubyte", 1, 0 },
	{ "test.bin", "fashion-idx4-ubyte", 1, 1 },
};

static char tmpdir[] = "/tmp/rv-fuzz-idx-XXXXXX";
static volatile unsigned sink;
static char pa[128], pb[128];

static void
cleanup(void)
{
	rmdir(tmpdir);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	rv_setprogname("fuzz-idx-cifar");
	if (!mkdtemp(tmpdir))
		abort();
	atexit(cleanup);
	return 0;
}

static void
write_file(const char *p, const uint8_t *data, size_t size)
{
	FILE *f = fopen(p, "wb");

	if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f))
		abort();
}

static void
check_meta(const struct rv_meta *m)
{
	struct rv_buf b = { 0 };
	struct rv_meta m2;

	rv_meta_encode(m, &b);
	rv_meta_init(&m2);
	if (rv_meta_parse(&m2, b.data, b.len) < 0 || m2.n != m->n)
		abort();
	rv_meta_release(&m2);
	rv_buf_release(&b);
}

static void
fetch(struct rv_dataset *d, uint64_t i, const struct rv_decode_opts *o,
    struct rv_buf *scratch, struct rv_img *im)
{
	struct rv_item it;
	uint32_t dh, dw;

	if (rv_dataset_fetch(d, i, scratch, &it) < 0)
		return;
	if (it.id != i || it.dtype != RV_DT_U8 || !it.data ||
	    it.len != (size_t)it.h * it.w * it.c || it.len == 0)
		abort();
	/* the item's bytes are all there to be read */
	sink += it.data[0] + it.data[it.len - 1];
	if (it.c != 1 && it.c != 3)
		abort();
	if (rv_img_from_pixels(it.data, it.h, it.w, it.c, o, im) != 0)
		abort();
	rv_fit_max_side(it.h, it.w, o->max_side, &dh, &dw);
	if (im->h != dh || im->w != dw || im->c != o->channels)
		abort();
	sink += im->data[(size_t)dh * dw * im->c - 1];
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct mode *m;
	struct rv_src_opts so = { 0, 1 };
	struct rv_decode_opts o;
	struct rv_buf scratch = { 0 };
	struct rv_img im = { 0 };
	struct rv_dataset *d;
	char *paths[2];
	uint64_t skipped, n, i;
	size_t alen;
	int np = 0;

	if (size < 3)
		return 0;
	m = &modes[data[0] & 7];
	o.channels = data[0] & 8 ? 1 : 3;
	o.max_side = sides[data[0] >> 4 & 7];
	o.max_pixels = 0;
	so.strict = data[0] >> 7;
	alen = (size_t)data[1] | (size_t)data[2] << 8;
	data += 3;
	size -= 3;
	if (alen > size)
		alen = size;

	snprintf(pa, sizeof(pa), "%s/%s", tmpdir, m->a);
	write_file(pa, data, alen);
	pb[0] = '\0';
	if (m->b) {
		snprintf(pb, sizeof(pb), "%s/%s", tmpdir, m->b);
		write_file(pb, data + alen, size - alen);
	}
	if (m->b_operand && m->b_first)
		paths[np++] = pb;
	paths[np++] = pa;
	if (m->b_operand && !m->b_first)
		paths[np++] = pb;

	d = rv_dataset_open(paths, np, &so, &skipped);
	if (!d) {
		if (rv_errmsg()[0] == '\0')
			abort();
		goto out;
	}
	check_meta(rv_dataset_meta(d));
	for (i = 0; i < rv_dataset_nwarnings(d); i++)
		if (strlen(rv_dataset_warning(d, i)) == 0)
			abort();
	n = rv_dataset_count(d);
	for (i = 0; i < n && i < MAX_FETCH; i++)
		fetch(d, i, &o, &scratch, &im);
	if (n > MAX_FETCH)
		fetch(d, n - 1, &o, &scratch, &im);
	rv_dataset_free(d);
out:
	rv_img_release(&im);
	rv_buf_release(&scratch);
	unlink(pa);
	if (pb[0])
		unlink(pb);
	return 0;
}
