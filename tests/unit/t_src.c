/*
 * Unit tests for the dataset sources (lib/src*.c): Fashion-MNIST from
 * /usr/share/datasets, hostile IDX headers, ImageFolder order and classes,
 * WebDataset keys and labels, broken and truncated archives (skips and
 * --strict), the same listing from tar/tar.gz/tar.zst/zip, CIFAR pixels.
 * The archives come from tests/setup/fixtures-datasets.sh, run here on stand-in
 * image files (the sources never decode, so bytes with the magic do).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "base/err.h"
#include "src/src.h"
#include "src/src_warn.h"
#include "stream/record.h"
#include "stream/stream.h"
#include "unit.h"

#define FMNIST	"/usr/share/datasets/fashion-mnist"

static char tmp[64];		/* the test's temp directory */
static char img[128];		/* stand-in images */
static char ds[128];		/* tests/setup/fixtures-datasets.sh output */

/* ---- helpers ---- */

static void
write_file(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");

	if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
		printf("# cannot write '%s'\n", path);
		exit(1);
	}
}

static unsigned char *
read_file(const char *path, size_t *len)
{
	unsigned char *buf = NULL;
	size_t cap = 0, n = 0, r;
	FILE *f = fopen(path, "rb");

	if (!f) {
		printf("# cannot open '%s'\n", path);
		unit_st.cur_failed = 1;
		*len = 0;
		return NULL;
	}
	for (;;) {
		if (n == cap) {
			cap = cap ? 2 * cap : 65536;
			if (!(buf = realloc(buf, cap)))
				abort();
		}
		if ((r = fread(buf + n, 1, cap - n, f)) == 0)
			break;
		n += r;
	}
	fclose(f);
	*len = n;
	return buf;
}

static struct rv_dataset *
open_n(char **paths, int n, int strict, uint64_t *skipped)
{
	struct rv_src_opts o = { .strict = strict };

	return rv_dataset_open(paths, n, &o, skipped);
}

static struct rv_dataset *
open1(const char *path, int strict, uint64_t *skipped)
{
	char *p = (char *)path;

	return open_n(&p, 1, strict, skipped);
}

static const char *
meta(const struct rv_dataset *d, const char *key)
{
	const char *v = rv_meta_get(rv_dataset_meta(d), key);

	return v ? v : "(none)";
}

/* Any warning containing s? */
static int
warned(const struct rv_dataset *d, const char *s)
{
	size_t i;

	for (i = 0; i < rv_dataset_nwarnings(d); i++)
		if (strstr(rv_dataset_warning(d, i), s))
			return 1;
	return 0;
}

/* Fetch every sample; labels into lab (may be NULL); 0 if all worked. */
static int
fetch_all(struct rv_dataset *d, int32_t *lab)
{
	struct rv_buf scratch = { 0 };
	struct rv_item it;
	uint64_t i;
	int r = 0;

	for (i = 0; i < rv_dataset_count(d); i++) {
		if (rv_dataset_fetch(d, i, &scratch, &it) < 0) {
			printf("# fetch %" PRIu64 ": %s\n", i, rv_errmsg());
			r = -1;
			break;
		}
		if (it.id != i)
			r = -1;
		if (lab)
			lab[i] = it.label;
	}
	rv_buf_release(&scratch);
	return r;
}

/* A stand-in image: the format's magic, then bytes that depend on seed. */
static void
fake_image(const char *name, int png, int seed)
{
	static const unsigned char jm[] = { 0xff, 0xd8, 0xff, 0xe0 };
	static const unsigned char pm[] = { 0x89, 'P', 'N', 'G', '\r', '\n',
	    0x1a, '\n' };
	unsigned char buf[4096];
	size_t n = 700 + 97 * (size_t)seed, i;
	char path[256];

	memcpy(buf, png ? pm : jm, png ? sizeof(pm) : sizeof(jm));
	for (i = png ? sizeof(pm) : sizeof(jm); i < n; i++)
		buf[i] = (unsigned char)(i * 31 + (size_t)seed * 7);
	snprintf(path, sizeof(path), "%s/%s", img, name);
	write_file(path, buf, n);
}

static int
make_fixtures(void)
{
	static const char *const jpgs[] = { "rgb.jpg", "grey.jpg", "cmyk.jpg",
	    "progressive.jpg", "corrupt.jpg", "truncated.jpg" };
	static const char *const pngs[] = { "rgb.png", "grey.png",
	    "palette.png", "rgba.png", "interlaced.png", "rgb16.png" };
	char cmd[512];
	size_t i;

	snprintf(tmp, sizeof(tmp), "/tmp/t_src.XXXXXX");
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return -1;
	}
	snprintf(img, sizeof(img), "%s/img", tmp);
	snprintf(ds, sizeof(ds), "%s/ds", tmp);
	mkdir(img, 0777);
	for (i = 0; i < sizeof(jpgs) / sizeof(jpgs[0]); i++)
		fake_image(jpgs[i], 0, (int)i);
	for (i = 0; i < sizeof(pngs) / sizeof(pngs[0]); i++)
		fake_image(pngs[i], 1, (int)(i + 6));
	snprintf(cmd, sizeof(cmd), "bash tests/setup/fixtures-datasets.sh '%s' '%s'",
	    img, ds);
	if (system(cmd) != 0) {
		printf("# %s failed\n", cmd);
		return -1;
	}
	return 0;
}

/* ---- IDX ---- */

static void
test_fmnist(void)
{
	char *pair[2] = { FMNIST "/train-images-idx3-ubyte.gz",
	    FMNIST "/train-labels-idx1-ubyte.gz" };
	char *rev[2] = { pair[1], pair[0] };
	unsigned char first[16 + 784];
	struct rv_buf scratch = { 0 };
	struct rv_dataset *d, *d2;
	struct rv_item it, it2;
	int count[10] = { 0 }, i, bad = 0;
	uint64_t skipped = 1;
	int32_t *lab;
	gzFile gz;

	if (access(pair[0], R_OK) != 0) {
		printf("# fashion-mnist is not installed: skipped\n");
		return;
	}
	d = open_n(pair, 2, 0, &skipped);
	EXPECT(d != NULL);
	if (!d) {
		printf("# %s\n", rv_errmsg());
		return;
	}
	EXPECT_EQ(skipped, 0);
	EXPECT_EQ(rv_dataset_count(d), 60000);
	lab = calloc(60000, sizeof(*lab));
	EXPECT(fetch_all(d, lab) == 0);
	for (i = 0; i < 60000; i++) {
		if (lab[i] < 0 || lab[i] > 9)
			bad++;
		else
			count[lab[i]]++;
	}
	EXPECT_EQ(bad, 0);
	for (i = 0; i < 10; i++)
		EXPECT_EQ(count[i], 6000);
	EXPECT_STR(meta(d, "classes"), "10");
	EXPECT_STR(meta(d, "class.0"), "T-shirt/top");
	EXPECT_STR(meta(d, "class.9"), "Ankle boot");
	EXPECT(strstr(meta(d, "source"), "train-images-idx3-ubyte.gz"));

	/* The first image is the IDX bytes right after the 16-byte header. */
	gz = gzopen(pair[0], "rb");
	EXPECT(gz && gzread(gz, first, sizeof(first)) == (int)sizeof(first));
	if (gz)
		gzclose(gz);
	EXPECT(rv_dataset_fetch(d, 0, &scratch, &it) == 0);
	EXPECT_EQ(it.dtype, RV_DT_U8);
	EXPECT_EQ(it.h, 28);
	EXPECT_EQ(it.w, 28);
	EXPECT_EQ(it.c, 1);
	EXPECT_EQ(it.len, 784);
	EXPECT(memcmp(it.data, first + 16, 784) == 0);
	EXPECT_EQ(it.label, 9);	/* the first training sample: ankle boot */
	EXPECT(strstr(it.name, "train-images-idx3-ubyte.gz': record 0"));

	/* Labels first pair up the same way. */
	d2 = open_n(rev, 2, 0, NULL);
	EXPECT(d2 != NULL);
	if (d2) {
		EXPECT_EQ(rv_dataset_count(d2), 60000);
		EXPECT(rv_dataset_fetch(d2, 59999, &scratch, &it2) == 0);
		EXPECT_EQ(it2.label, lab[59999]);
		EXPECT(strstr(it2.name, "train-images-idx3-ubyte.gz': record "
		    "59999"));
		rv_dataset_free(d2);
	}
	/* Images alone: no labels, names still from the path. */
	d2 = open_n(pair, 1, 0, NULL);
	EXPECT(d2 != NULL);
	if (d2) {
		EXPECT(rv_dataset_fetch(d2, 5, &scratch, &it2) == 0);
		EXPECT_EQ(it2.label, -1);
		EXPECT_STR(meta(d2, "classes"), "10");
		rv_dataset_free(d2);
	}
	/* Labels alone are an error. */
	EXPECT(open_n(rev, 1, 0, NULL) == NULL);
	EXPECT(strstr(rv_errmsg(), "IDX labels without an images file"));
	free(lab);
	rv_buf_release(&scratch);
	rv_dataset_free(d);
}

static void
put_be32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

/* An IDX file: u8 type, dims, then ndata bytes of i & 255. */
static void
write_idx(const char *path, int type, int nd, const uint32_t *dims,
    size_t ndata, int gz)
{
	unsigned char *buf = malloc(4 + 4 * (size_t)nd + ndata + 1);
	size_t n = 0, i;
	int k;

	buf[n++] = 0;
	buf[n++] = 0;
	buf[n++] = (unsigned char)type;
	buf[n++] = (unsigned char)nd;
	for (k = 0; k < nd; k++, n += 4)
		put_be32(buf + n, dims[k]);
	for (i = 0; i < ndata; i++)
		buf[n++] = (unsigned char)i;
	if (gz) {
		gzFile g = gzopen(path, "wb");
		gzwrite(g, buf, (unsigned)n);
		gzclose(g);
	} else
		write_file(path, buf, n);
	free(buf);
}

/* Opening path fails and the message holds every string of want. */
static void
expect_fail(const char *path, const char *w1, const char *w2)
{
	struct rv_dataset *d = open1(path, 0, NULL);

	EXPECT(d == NULL);
	rv_dataset_free(d);
	if (!strstr(rv_errmsg(), path) || !strstr(rv_errmsg(), w1) ||
	    (w2 && !strstr(rv_errmsg(), w2))) {
		printf("# '%s': unexpected message: %s\n", path, rv_errmsg());
		unit_st.cur_failed = 1;
	}
}

static void
test_idx_hostile(void)
{
	uint32_t huge[3] = { 0xffffffffu, 0xffffffffu, 0xffffffffu };
	uint32_t big[3] = { 1000, 28, 28 }, two[3] = { 2, 2, 3 };
	uint32_t rgb[4] = { 2, 2, 2, 3 }, n2[1] = { 2 }, n3[1] = { 3 };
	char p[8][192], *ops[2];
	struct rv_buf scratch = { 0 };
	struct rv_dataset *d;
	struct rv_item it;
	int i;

	for (i = 0; i < 8; i++)
		snprintf(p[i], sizeof(p[i]), "%s/idx%d", tmp, i);
	/* The product overflows at the third dimension (byte 12). */
	write_idx(p[0], 8, 3, huge, 10, 0);
	expect_fail(p[0], "byte 12: IDX dimension 4294967295 overflows",
	    NULL);
	/* Promises more than it holds, raw and gzip. */
	write_idx(p[1], 8, 3, big, 100, 0);
	expect_fail(p[1], "byte 16: IDX header promises 784000 bytes of data, "
	    "the file holds 100", NULL);
	write_idx(p[2], 8, 3, big, 100, 1);
	expect_fail(p[2], "byte 16: IDX header promises 784000 bytes of data, "
	    "the file holds 100", NULL);
	/* Holds more than it promises. */
	write_idx(p[3], 8, 3, two, 13, 1);
	expect_fail(p[3], "promises 12 bytes of data, the file holds more",
	    NULL);
	write_idx(p[3], 8, 3, two, 13, 0);
	expect_fail(p[3], "promises 12 bytes of data, the file holds 13",
	    NULL);
	/* A header cut short, a type that is not u8, 2 dimensions. */
	write_file(p[4], "\0\0\x08\x03\0\0\0\x02\0\0", 10);
	expect_fail(p[4], "byte 10: truncated IDX header", NULL);
	write_idx(p[5], 0x0d, 3, two, 48, 0);
	expect_fail(p[5], "byte 2: IDX element type 0x0d", NULL);
	write_idx(p[5], 8, 2, two, 4, 0);
	expect_fail(p[5], "not 2 dimensions", NULL);

	/* A good pair; N x H x W x 3 images; labels that do not pair. */
	write_idx(p[6], 8, 3, two, 12, 1);
	write_idx(p[7], 8, 1, n2, 2, 0);
	ops[0] = p[6];
	ops[1] = p[7];
	d = open_n(ops, 2, 0, NULL);
	EXPECT(d != NULL);
	if (d) {
		EXPECT_EQ(rv_dataset_count(d), 2);
		EXPECT(rv_dataset_fetch(d, 1, &scratch, &it) == 0);
		EXPECT_EQ(it.label, 1);
		EXPECT_EQ(it.h, 2);
		EXPECT_EQ(it.w, 3);
		EXPECT_EQ(it.len, 6);
		EXPECT_EQ(it.data[0], 6);
		/* no names, but labels 0 and 1: two classes */
		EXPECT_STR(meta(d, "classes"), "2");
		rv_dataset_free(d);
	}
	write_idx(p[6], 8, 4, rgb, 24, 0);
	d = open1(p[6], 0, NULL);
	EXPECT(d != NULL);
	if (d) {
		EXPECT(rv_dataset_fetch(d, 1, &scratch, &it) == 0);
		EXPECT_EQ(it.c, 3);
		EXPECT_EQ(it.len, 12);
		EXPECT_EQ(it.data[11], 23);
		EXPECT_EQ(it.label, -1);
		rv_dataset_free(d);
	}
	write_idx(p[7], 8, 1, n3, 3, 0);
	d = open_n(ops, 2, 0, NULL);
	EXPECT(d == NULL);
	EXPECT(strstr(rv_errmsg(), "IDX labels without an images file of 3"));
	rv_buf_release(&scratch);
}

/* ---- directories ---- */

static void
test_dir(void)
{
	static const char *const rel[8] = { "cat/a.jpg", "cat/b.png",
	    "cat/c.JPG", "dog/d.jpg", "dog/puppies/e.png",
	    "dog/puppies/f.jpeg", "zebra/g.png", "zebra/h.png" };
	static const int lab[8] = { 0, 0, 0, 1, 1, 1, 2, 2 };
	struct rv_buf scratch = { 0 };
	struct rv_dataset *d;
	struct rv_item it;
	uint64_t skipped = 9;
	char path[256], want[512];
	int i;

	snprintf(path, sizeof(path), "%s/folder/", ds);
	d = open1(path, 0, &skipped);
	EXPECT(d != NULL);
	if (!d)
		return;
	EXPECT_EQ(skipped, 0);
	EXPECT_EQ(rv_dataset_nwarnings(d), 0);
	EXPECT_EQ(rv_dataset_count(d), 8);
	EXPECT_STR(meta(d, "classes"), "3");
	EXPECT_STR(meta(d, "class.0"), "cat");
	EXPECT_STR(meta(d, "class.1"), "dog");
	EXPECT_STR(meta(d, "class.2"), "zebra");
	for (i = 0; i < 8 && rv_dataset_count(d) == 8; i++) {
		unsigned char *f;
		size_t n;

		EXPECT(rv_dataset_fetch(d, (uint64_t)i, &scratch, &it) == 0);
		snprintf(want, sizeof(want), "'%s': '%s'", path, rel[i]);
		EXPECT_STR(it.name, want);
		EXPECT_EQ(it.label, lab[i]);
		EXPECT_EQ(it.dtype, strstr(rel[i], ".png") ? RV_DT_PNG :
		    RV_DT_JPEG);
		snprintf(want, sizeof(want), "%s/folder/%s", ds, rel[i]);
		f = read_file(want, &n);
		EXPECT(f && it.len == n && memcmp(it.data, f, n) == 0);
		free(f);
	}
	rv_dataset_free(d);

	snprintf(path, sizeof(path), "%s/flat", ds);
	d = open1(path, 0, NULL);
	EXPECT(d != NULL);
	if (d) {
		int32_t l[3] = { 0, 0, 0 };

		EXPECT_EQ(rv_dataset_count(d), 3);
		EXPECT(fetch_all(d, l) == 0);
		EXPECT(l[0] == -1 && l[1] == -1 && l[2] == -1);
		EXPECT_STR(meta(d, "classes"), "(none)");
		EXPECT(rv_dataset_fetch(d, 2, &scratch, &it) == 0);
		EXPECT(strstr(it.name, ": '3.png'"));
		rv_dataset_free(d);
	}
	rv_buf_release(&scratch);
}

/* ---- archives ---- */

static void
test_wds(void)
{
	static const char *const member[5] = { "./train/x/0001.jpg",
	    "./train/x/0002.png", "./train/y/0003.jpg", "./train/y/0004.jpg",
	    "./train/z/0005.jpg" };
	static const int lab[5] = { 3, 7, 5, 9, 1 };
	struct rv_buf scratch = { 0 };
	struct rv_dataset *d;
	struct rv_item it;
	uint64_t skipped = 9;
	char path[256];
	unsigned char *f;
	size_t n;
	int i;

	snprintf(path, sizeof(path), "%s/wds.tar", ds);
	d = open1(path, 1, &skipped);
	EXPECT(d != NULL);
	if (!d) {
		printf("# %s\n", rv_errmsg());
		return;
	}
	EXPECT_EQ(skipped, 0);
	EXPECT_EQ(rv_dataset_count(d), 5);
	/* No names; the highest sidecar label is 9. */
	EXPECT_STR(meta(d, "classes"), "10");
	{
		struct rv_src_counts cnt;

		/* 0001.cls .txt, 0002.cls, 0003.txt, 0004.json, 0005.cls
		 * and 0005.seg.png came with the samples; nothing else. */
		rv_dataset_counts(d, &cnt);
		EXPECT_EQ(cnt.sidecars, 7);
		EXPECT_EQ(cnt.ignored, 0);
		EXPECT_EQ(cnt.skipped, 0);
	}
	for (i = 0; i < 5 && rv_dataset_count(d) == 5; i++) {
		EXPECT(rv_dataset_fetch(d, (uint64_t)i, &scratch, &it) == 0);
		EXPECT(strstr(it.name, member[i]));
		EXPECT_EQ(it.label, lab[i]);
	}
	/* 0005's image is 0005.jpg, not 0005.seg.png. */
	snprintf(path, sizeof(path), "%s/progressive.jpg", img);
	f = read_file(path, &n);
	EXPECT(rv_dataset_fetch(d, 4, &scratch, &it) == 0);
	EXPECT(f && it.len == n && memcmp(it.data, f, n) == 0);
	EXPECT_EQ(it.dtype, RV_DT_JPEG);
	free(f);
	rv_buf_release(&scratch);
	rv_dataset_free(d);
}

/* dirs.tar, .tar.gz, .tar.zst, .zip and the .tar.gz on stdin agree. */
static void
test_formats(void)
{
	static const char *const ext[5] = { "tar", "tar.gz", "tar.zst", "zip",
	    "-" };
	static const int lab[5] = { 0, 0, 1, 2, 2 };
	struct rv_buf scratch = { 0 };
	unsigned char *ref[5] = { 0 };
	size_t reflen[5] = { 0 };
	int k, i, saved = dup(0);

	for (k = 0; k < 5; k++) {
		struct rv_dataset *d;
		struct rv_item it;
		char path[256];

		if (k < 4)
			snprintf(path, sizeof(path), "%s/dirs.%s", ds, ext[k]);
		else {
			int fd;

			snprintf(path, sizeof(path), "%s/dirs.tar.gz", ds);
			fd = open(path, O_RDONLY);
			dup2(fd, 0);
			close(fd);
			snprintf(path, sizeof(path), "-");
		}
		d = open1(path, 1, NULL);
		if (k == 4)
			dup2(saved, 0);
		EXPECT(d != NULL);
		if (!d) {
			printf("# %s: %s\n", ext[k], rv_errmsg());
			continue;
		}
		EXPECT_EQ(rv_dataset_count(d), 5);
		EXPECT_STR(meta(d, "classes"), "3");
		EXPECT_STR(meta(d, "class.0"), "cat");
		EXPECT_STR(meta(d, "class.2"), "zebra");
		for (i = 0; i < 5 && rv_dataset_count(d) == 5; i++) {
			EXPECT(rv_dataset_fetch(d, (uint64_t)i, &scratch,
			    &it) == 0);
			EXPECT_EQ(it.label, lab[i]);
			if (k == 0) {
				ref[i] = malloc(it.len);
				memcpy(ref[i], it.data, it.len);
				reflen[i] = it.len;
			} else
				EXPECT(it.len == reflen[i] &&
				    memcmp(it.data, ref[i], it.len) == 0);
		}
		if (k == 4) {
			EXPECT(rv_dataset_fetch(d, 0, &scratch, &it) == 0);
			EXPECT(strncmp(it.name, "'<stdin>': ", 11) == 0);
		}
		rv_dataset_free(d);
	}
	close(saved);
	for (i = 0; i < 5; i++)
		free(ref[i]);
	rv_buf_release(&scratch);
}

static void
test_broken(void)
{
	static const char *const member[7] = { "corrupt.jpg", "good.jpg",
	    "hard.jpg", "link.jpg", "odd\\nname.jpg", "truncated.jpg",
	    "\\xff.jpg" };
	struct rv_buf scratch = { 0 };
	struct rv_dataset *d;
	struct rv_item it;
	uint64_t skipped = 0;
	char path[256], want[512];
	int i;

	snprintf(path, sizeof(path), "%s/broken.tar", ds);
	d = open1(path, 0, &skipped);
	EXPECT(d != NULL);
	if (d) {
		/* the two links named as images are samples of their own,
		 * as in a folder (issue 21) */
		EXPECT_EQ(rv_dataset_count(d), 7);
		/* the orphan sidecar; the hidden ._good.jpg is ignored,
		 * with a note */
		EXPECT_EQ(skipped, 1);
		EXPECT_EQ(rv_dataset_nwarnings(d), 1);
		snprintf(want, sizeof(want), "'%s': 'orphan': no image member",
		    path);
		EXPECT(warned(d, want));
		EXPECT_EQ(rv_dataset_nnotes(d), 1);
		snprintf(want, sizeof(want), "'%s': './._good.jpg': hidden "
		    "(ignored)", path);
		EXPECT_STR(rv_dataset_note(d, 0), want);
		for (i = 0; i < 7 && rv_dataset_count(d) == 7; i++) {
			EXPECT(rv_dataset_fetch(d, (uint64_t)i, &scratch,
			    &it) == 0);
			snprintf(want, sizeof(want), "'%s': './%s'", path,
			    member[i]);
			EXPECT_STR(it.name, want);
			EXPECT_EQ(it.label, -1);
		}
		rv_dataset_free(d);
	}
	EXPECT(open1(path, 1, NULL) == NULL);
	EXPECT(strstr(rv_errmsg(), "'orphan': no image member"));

	snprintf(path, sizeof(path), "%s/broken.zip", ds);
	d = open1(path, 0, &skipped);
	EXPECT(d != NULL);
	if (d) {
		EXPECT_EQ(rv_dataset_count(d), 1);
		EXPECT_EQ(skipped, 1);
		snprintf(want, sizeof(want), "'%s': 'bad.jpg': ", path);
		EXPECT(warned(d, want));
		EXPECT(rv_dataset_fetch(d, 0, &scratch, &it) == 0);
		EXPECT(strstr(it.name, "ok.png"));
		EXPECT_EQ(it.dtype, RV_DT_PNG);
		rv_dataset_free(d);
	}
	EXPECT(open1(path, 1, NULL) == NULL);
	EXPECT(strstr(rv_errmsg(), "'bad.jpg': "));

	snprintf(path, sizeof(path), "%s/cut.tar", ds);
	d = open1(path, 0, &skipped);
	EXPECT(d != NULL);
	if (d) {
		EXPECT_EQ(rv_dataset_count(d), 2);
		EXPECT_EQ(skipped, 1);
		snprintf(want, sizeof(want), "'%s': './c.jpg': truncated",
		    path);
		EXPECT(warned(d, want));
		if (!warned(d, want) && rv_dataset_nwarnings(d))
			printf("# %s\n", rv_dataset_warning(d, 0));
		rv_dataset_free(d);
	}
	EXPECT(open1(path, 1, NULL) == NULL);
	EXPECT(strstr(rv_errmsg(), "c.jpg"));
	rv_buf_release(&scratch);
}

/* ---- every member accounted for ---- */

/* Write text to dir/name. */
static void
put(const char *dir, const char *name, const char *text)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	write_file(path, text, strlen(text));
}

/* Any note containing s? */
static int
noted(const struct rv_dataset *d, const char *s)
{
	size_t i;

	for (i = 0; i < rv_dataset_nnotes(d); i++)
		if (strstr(rv_dataset_note(d, i), s))
			return 1;
	return 0;
}

/*
 * A folder: other image formats are samples, an image format rv does
 * not read is a skipped sample, text, hidden entries, special files and
 * links to directories are ignored with a note each; nothing vanishes.
 */
static void
test_dir_accounting(void)
{
	struct rv_src_counts cnt;
	struct rv_dataset *d;
	char dir[256], path[600];
	uint64_t skipped = 9;

	snprintf(path, sizeof(path), "%s/folder", ds);
	d = open1(path, 0, &skipped);
	EXPECT(d != NULL);
	if (d) {
		rv_dataset_counts(d, &cnt);
		EXPECT_EQ(skipped, 0);
		EXPECT_EQ(cnt.ignored, 3);
		EXPECT_EQ(cnt.sidecars, 0);
		EXPECT_EQ(rv_dataset_nwarnings(d), 0);
		EXPECT_EQ(rv_dataset_nnotes(d), 3);
		EXPECT(noted(d, "': 'README.txt': not an image (ignored)"));
		EXPECT(noted(d, "': 'cat/notes.txt': not an image (ignored)"));
		EXPECT(noted(d, "': 'dog/.hidden.jpg': hidden (ignored)"));
		rv_dataset_free(d);
	}

	snprintf(dir, sizeof(dir), "%s/acct", tmp);
	mkdir(dir, 0777);
	snprintf(path, sizeof(path), "%s/c", dir);
	mkdir(path, 0777);
	snprintf(path, sizeof(path), "%s/c/.git", dir);
	mkdir(path, 0777);
	snprintf(path, sizeof(path), "%s/c/sub", dir);
	mkdir(path, 0777);
	put(dir, "c/a.webp", "w");
	put(dir, "c/b.GIF", "g");
	put(dir, "c/sub/d.bmp", "b");
	put(dir, "c/e.tiff", "t");
	put(dir, "c/f.heic", "h");
	put(dir, "c/g.txt", "x");
	put(dir, "c/.git/HEAD", "x");
	snprintf(path, sizeof(path), "%s/c/fifo", dir);
	EXPECT(mkfifo(path, 0600) == 0);
	snprintf(path, sizeof(path), "%s/c/up", dir);
	EXPECT(symlink("sub", path) == 0);
	d = open1(dir, 0, &skipped);
	EXPECT(d != NULL);
	if (d) {
		rv_dataset_counts(d, &cnt);
		EXPECT_EQ(rv_dataset_count(d), 4);
		EXPECT_EQ(skipped, 1);
		EXPECT(warned(d, "': 'c/f.heic': unsupported image format"));
		EXPECT_EQ(cnt.ignored, 4);
		EXPECT(noted(d, "': 'c/.git': hidden (ignored)"));
		EXPECT(noted(d, "': 'c/fifo': not a regular file (ignored)"));
		EXPECT(noted(d, "': 'c/g.txt': not an image (ignored)"));
		EXPECT(noted(d, "': 'c/up': symlink to a directory, not "
		    "followed (ignored)"));
		EXPECT_STR(meta(d, "classes"), "1");
		rv_dataset_free(d);
	}
	EXPECT(open1(dir, 1, NULL) == NULL);
	EXPECT(strstr(rv_errmsg(), "'c/f.heic': unsupported image format"));
}

/*
 * Label sidecars: one number (alone or in a list of one) is the label;
 * a list of several, or a label that is no number, loses the sample with
 * a warning instead of leaving it silently unlabelled; null and "[]" say
 * "no label".  Members of no sample are ignored; the rest are sidecars.
 */
/*
 * A folder's file that changes between the listing and the fetch (gone,
 * a directory, a FIFO in its place, grown past the limit) is that
 * sample's failure, RV_FETCH_BAD with the reason alone, never the run's;
 * a file over the limit at the listing is skipped there (fatal under
 * strict), its name quoted once.  Root-proof: no permission bits.
 */
static void
test_dir_changed(void)
{
	static const char *const gone[] = {
		"cannot open: No such file or directory",
		"no longer a regular file",
		"no longer a regular file",
		"file of 1153433600 bytes is over the 1 GiB limit",
	};
	struct rv_buf scratch = { 0 };
	struct rv_dataset *d;
	struct rv_item it;
	char dir[256], path[600], want[1024];
	uint64_t skipped = 9;
	int i;

	snprintf(dir, sizeof(dir), "%s/changed", tmp);
	mkdir(dir, 0777);
	snprintf(path, sizeof(path), "%s/c", dir);
	mkdir(path, 0777);
	put(dir, "c/a.jpg", "a");
	put(dir, "c/b.jpg", "b");
	put(dir, "c/c.jpg", "c");
	put(dir, "c/d.jpg", "d");
	put(dir, "c/e.jpg", "e");
	/* Over the 1 GiB limit (sparse): skipped at the listing. */
	snprintf(path, sizeof(path), "%s/c/big.jpg", dir);
	write_file(path, "", 0);
	EXPECT(truncate(path, ((off_t)1 << 30) + 1) == 0);
	d = open1(dir, 1, NULL);
	EXPECT(d == NULL);
	snprintf(want, sizeof(want), "'%s': 'c/big.jpg': file of 1073741825 "
	    "bytes is over the 1 GiB limit", dir);
	EXPECT_STR(rv_errmsg(), want);
	d = open1(dir, 0, &skipped);
	EXPECT(d != NULL);
	if (!d)
		return;
	EXPECT_EQ(skipped, 1);
	strcat(want, " (skipped)");
	EXPECT(rv_dataset_nwarnings(d) == 1 &&
	    strcmp(rv_dataset_warning(d, 0), want) == 0);
	EXPECT_EQ(rv_dataset_count(d), 5);
	snprintf(path, sizeof(path), "%s/c/a.jpg", dir);
	EXPECT(unlink(path) == 0);
	snprintf(path, sizeof(path), "%s/c/b.jpg", dir);
	EXPECT(unlink(path) == 0 && mkdir(path, 0777) == 0);
	snprintf(path, sizeof(path), "%s/c/c.jpg", dir);
	EXPECT(unlink(path) == 0 && mkfifo(path, 0600) == 0);
	snprintf(path, sizeof(path), "%s/c/d.jpg", dir);
	EXPECT(truncate(path, ((off_t)1100 << 20)) == 0);
	for (i = 0; i < 4 && rv_dataset_count(d) == 5; i++) {
		EXPECT_EQ(rv_dataset_fetch(d, (uint64_t)i, &scratch, &it),
		    RV_FETCH_BAD);
		EXPECT_STR(rv_errmsg(), gone[i]);
		snprintf(want, sizeof(want), "'%s': 'c/%c.jpg'", dir, 'a' + i);
		EXPECT_STR(it.name, want);
	}
	EXPECT(rv_dataset_fetch(d, 4, &scratch, &it) == 0);
	EXPECT(it.len == 1 && it.data[0] == 'e' && it.label == 0);
	rv_dataset_free(d);
	rv_buf_release(&scratch);
}

static void
test_labels(void)
{
	static const char *const files[][2] = {
		{ "a.cls", "[3]\n" }, { "b.cls", "3 7\n" },
		{ "c.json", "{\"label\": [1, 2]}" },
		{ "d.json", "{\"label\": \"cat\"}" },
		{ "e.json", "{\"label\": null, \"x\": 1}" },
		{ "f.json", "[4]" }, { "g.cls", "12" },
		{ "g.json", "{\"label\": [1, 2]}" }, { "h.cls", "cat\n" },
		{ "i.json", "{\"caption\": \"x\", \"cls\": 5}" },
		{ "j.heic", "h" }, { "k.npy", "n" }, { "README", "r" },
		{ "l.cls", "2" },
		{ "m.json", "{\"boxes\": [{\"label\": \"person\"}], "
		    "\"label\": 6}" },
		{ "n.json", "{\"objects\": [{\"label\": \"car\"}]}" },
	};
	static const char *const imgs[] = { "a.jpg", "b.jpg", "c.jpg",
	    "d.jpg", "e.jpg", "f.jpg", "g.jpg", "h.jpg", "i.jpg", "l.webp",
	    "m.jpg", "n.jpg" };
	/* a e f g i l m n; a "label" nested deeper is metadata */
	static const int want[8] = { 3, -1, 4, 12, 5, 2, 6, -1 };
	struct rv_src_counts cnt;
	struct rv_buf scratch = { 0 };
	struct rv_dataset *d;
	struct rv_item it;
	char dir[256], tar[256], cmd[700];
	uint64_t skipped;
	size_t i;

	snprintf(dir, sizeof(dir), "%s/labels", tmp);
	snprintf(tar, sizeof(tar), "%s/labels.tar", tmp);
	mkdir(dir, 0777);
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		put(dir, files[i][0], files[i][1]);
	for (i = 0; i < sizeof(imgs) / sizeof(imgs[0]); i++)
		put(dir, imgs[i], "\xff\xd8\xff image");
	snprintf(cmd, sizeof(cmd), "tar --sort=name -C '%s' -cf '%s' .", dir,
	    tar);
	EXPECT(system(cmd) == 0);
	d = open1(tar, 0, &skipped);
	EXPECT(d != NULL);
	if (!d)
		return;
	rv_dataset_counts(d, &cnt);
	EXPECT_EQ(rv_dataset_count(d), 8);
	for (i = 0; i < 8 && rv_dataset_count(d) == 8; i++) {
		EXPECT(rv_dataset_fetch(d, i, &scratch, &it) == 0);
		EXPECT_EQ(it.label, want[i]);
	}
	EXPECT_EQ(skipped, 5);
	EXPECT(warned(d, "'./b.cls': multi-label '3 7': an rv sample "
	    "carries one class label"));
	EXPECT(warned(d, "'./c.json': multi-label '[1, 2]'"));
	EXPECT(warned(d, "'./d.json': label '\"cat\"' is not a class number"));
	EXPECT(warned(d, "'./h.cls': label 'cat' is not a class number"));
	EXPECT(warned(d, "'./j.heic': unsupported image format"));
	EXPECT_EQ(cnt.ignored, 2);
	EXPECT(noted(d, "'./k.npy': not an image (ignored)"));
	EXPECT(noted(d, "'./README': no extension (ignored)"));
	/* a, e, f, g (twice), i, l, m and n's sidecars */
	EXPECT_EQ(cnt.sidecars, 9);
	EXPECT_STR(meta(d, "classes"), "13");
	rv_dataset_free(d);
	EXPECT(open1(tar, 1, NULL) == NULL);
	EXPECT(strstr(rv_errmsg(), "'./b.cls': multi-label '3 7'"));
	rv_buf_release(&scratch);
}

/*
 * Tar archives end to end in one file are read through (as tar -i
 * does), and an image whose key comes again later is reported replaced,
 * not dropped without a word.
 */
static void
test_concat(void)
{
	struct rv_src_counts cnt;
	struct rv_dataset *d;
	char path[256], cmd[800];
	uint64_t skipped;

	snprintf(path, sizeof(path), "%s/both.tar", tmp);
	snprintf(cmd, sizeof(cmd), "cat '%s/dirs.tar' '%s/wds.tar' > '%s'",
	    ds, ds, path);
	EXPECT(system(cmd) == 0);
	d = open1(path, 1, &skipped);
	EXPECT(d != NULL);
	if (d) {
		EXPECT_EQ(rv_dataset_count(d), 10);
		EXPECT_EQ(skipped, 0);
		rv_dataset_free(d);
	}
	snprintf(cmd, sizeof(cmd), "cat '%s/wds.tar' '%s/wds.tar' > '%s'",
	    ds, ds, path);
	EXPECT(system(cmd) == 0);
	d = open1(path, 0, &skipped);
	EXPECT(d != NULL);
	if (d) {
		rv_dataset_counts(d, &cnt);
		EXPECT_EQ(rv_dataset_count(d), 5);
		EXPECT_EQ(skipped, 5);
		EXPECT(warned(d, "'./train/x/0001.jpg': replaced by a later "
		    "member of the same name"));
		EXPECT_EQ(cnt.sidecars, 14);
		rv_dataset_free(d);
	}
	EXPECT(open1(path, 1, NULL) == NULL);
}

/* ---- CIFAR ---- */

static void
test_cifar(void)
{
	struct rv_buf scratch = { 0 };
	struct rv_dataset *d;
	struct rv_item it;
	unsigned char rec[3 * 3074];
	char path[256];
	int i, y, x, ch, bad = 0;

	snprintf(path, sizeof(path), "%s/cifar/data_batch_1.bin", ds);
	d = open1(path, 0, NULL);
	EXPECT(d != NULL);
	if (!d)
		return;
	EXPECT_EQ(rv_dataset_count(d), 20);
	EXPECT_STR(meta(d, "classes"), "10");
	EXPECT_STR(meta(d, "class.0"), "airplane");
	EXPECT_STR(meta(d, "class.9"), "truck");
	for (i = 0; i < 20 && rv_dataset_count(d) == 20; i++) {
		EXPECT(rv_dataset_fetch(d, (uint64_t)i, &scratch, &it) == 0);
		EXPECT_EQ(it.label, i % 10);
		EXPECT(it.dtype == RV_DT_U8 && it.h == 32 && it.w == 32 &&
		    it.c == 3 && it.len == 3072);
		for (y = 0; y < 32; y++)
			for (x = 0; x < 32; x++)
				for (ch = 0; ch < 3; ch++)
					bad += it.data[(y * 32 + x) * 3 + ch] !=
					    ((i * 7 + ch * 50 + y * 3 + x) &
					    255);
	}
	EXPECT_EQ(bad, 0);
	rv_dataset_free(d);

	/* CIFAR-100: the fine label (second byte); no names file here. */
	for (i = 0; i < 3; i++) {
		rec[i * 3074] = 1;
		rec[i * 3074 + 1] = (unsigned char)(40 + i);
		memset(rec + i * 3074 + 2, i, 1024);
		memset(rec + i * 3074 + 2 + 1024, 100 + i, 1024);
		memset(rec + i * 3074 + 2 + 2048, 200 + i, 1024);
	}
	snprintf(path, sizeof(path), "%s/train.bin", tmp);
	write_file(path, rec, sizeof(rec));
	d = open1(path, 0, NULL);
	EXPECT(d != NULL);
	if (d) {
		EXPECT_EQ(rv_dataset_count(d), 3);
		EXPECT(rv_dataset_fetch(d, 2, &scratch, &it) == 0);
		EXPECT_EQ(it.label, 42);
		EXPECT(it.data[0] == 2 && it.data[1] == 102 &&
		    it.data[2] == 202 && it.data[3071] == 202);
		/* the format's 100 classes, names file or not */
		EXPECT_STR(meta(d, "classes"), "100");
		rv_dataset_free(d);
	}
	rv_buf_release(&scratch);
}

/* ---- several operands ---- */

static void
test_multi(void)
{
	char a[256], b[256], c[256], *ops[3] = { a, b, c };
	struct rv_dataset *d;
	int32_t lab[40];
	uint64_t skipped;

	snprintf(a, sizeof(a), "%s/folder", ds);
	snprintf(b, sizeof(b), "%s/dirs.tar", ds);
	snprintf(c, sizeof(c), "%s/wds.tar", ds);
	d = open_n(ops, 3, 0, &skipped);
	EXPECT(d != NULL);
	if (d) {
		static const int want[18] = { 0, 0, 0, 1, 1, 1, 2, 2,
		    0, 0, 1, 2, 2, 3, 7, 5, 9, 1 };
		int i;

		EXPECT_EQ(rv_dataset_count(d), 18);
		EXPECT(fetch_all(d, lab) == 0);
		for (i = 0; i < 18; i++)
			EXPECT_EQ(lab[i], want[i]);
		/* 3 class names, but wds.tar's labels go up to 9 */
		EXPECT_STR(meta(d, "classes"), "10");
		EXPECT(strstr(meta(d, "source"), "dir:"));
		EXPECT(strstr(meta(d, "source"), "; archive:"));
		rv_dataset_free(d);
	}
	/* Batches in a row share their names; ids run on. */
	snprintf(a, sizeof(a), "%s/cifar/data_batch_1.bin", ds);
	snprintf(b, sizeof(b), "%s/cifar/data_batch_1.bin", ds);
	d = open_n(ops, 2, 0, NULL);
	EXPECT(d != NULL);
	if (d) {
		EXPECT_EQ(rv_dataset_count(d), 40);
		EXPECT(fetch_all(d, lab) == 0);
		EXPECT(lab[19] == 9 && lab[20] == 0 && lab[33] == 3);
		EXPECT_STR(meta(d, "classes"), "10");
		rv_dataset_free(d);
	}
	/* CIFAR's fixed names have "cat" and "dog" but no "zebra". */
	snprintf(a, sizeof(a), "%s/cifar/data_batch_1.bin", ds);
	snprintf(b, sizeof(b), "%s/folder", ds);
	EXPECT(open_n(ops, 2, 0, NULL) == NULL);
	EXPECT(strstr(rv_errmsg(), "class 'zebra' is not one of the 10 "
	    "classes of"));

	/* Missing and unrecognised operands. */
	snprintf(a, sizeof(a), "%s/nonexistent", tmp);
	EXPECT(open1(a, 0, NULL) == NULL);
	EXPECT(strstr(rv_errmsg(), "nonexistent': cannot open: No such file"));
	snprintf(a, sizeof(a), "%s/folder/README.txt", ds);
	EXPECT(open1(a, 0, NULL) == NULL);
	EXPECT(strstr(rv_errmsg(), "README.txt': not a directory, archive, "
	    "IDX file or CIFAR batch"));
}

/* Fetches from several threads at once see the same bytes. */
struct job {
	struct rv_dataset *d;
	unsigned long sum;
	int err;
};

static void *
fetch_thread(void *arg)
{
	struct job *j = arg;
	struct rv_buf scratch = { 0 };
	struct rv_item it;
	uint64_t i;
	int rep;
	size_t k;

	for (rep = 0; rep < 20; rep++)
		for (i = 0; i < rv_dataset_count(j->d); i++) {
			if (rv_dataset_fetch(j->d, i, &scratch, &it) < 0) {
				j->err = 1;
				continue;
			}
			for (k = 0; k < it.len; k++)
				j->sum += it.data[k] * (k + 1) +
				    (unsigned)it.label;
		}
	rv_buf_release(&scratch);
	return NULL;
}

static void
test_threads(void)
{
	char a[256], b[256], c[256], *ops[3] = { a, b, c };
	struct job j[3];
	pthread_t t[3];
	int i;

	snprintf(a, sizeof(a), "%s/flat", ds);
	snprintf(b, sizeof(b), "%s/cifar/data_batch_1.bin", ds);
	snprintf(c, sizeof(c), "%s/wds.tar", ds);
	memset(j, 0, sizeof(j));
	j[0].d = open_n(ops, 3, 0, NULL);
	EXPECT(j[0].d != NULL);
	if (!j[0].d)
		return;
	for (i = 1; i < 3; i++)
		j[i].d = j[0].d;
	for (i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, fetch_thread, &j[i]);
	for (i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	for (i = 0; i < 3; i++)
		EXPECT_EQ(j[i].err, 0);
	EXPECT(j[0].sum == j[1].sum && j[1].sum == j[2].sum && j[0].sum > 0);
	rv_dataset_free(j[0].d);
}

int
main(void)
{
	char cmd[128];
	int r;

	rv_setprogname("t_src");
	if (make_fixtures() < 0)
		return 1;
	RUN(test_fmnist);
	RUN(test_idx_hostile);
	RUN(test_dir);
	RUN(test_wds);
	RUN(test_formats);
	RUN(test_broken);
	RUN(test_dir_accounting);
	RUN(test_dir_changed);
	RUN(test_labels);
	RUN(test_concat);
	RUN(test_cifar);
	RUN(test_multi);
	RUN(test_threads);
	r = UNIT_DONE();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", tmp);
	return r;
}
