/*
 * Unit tests for the PNG writer (every channel count, read back with
 * libpng itself, in memory and through the atomic file write) and for
 * rv-inspect's engine: sample views of batches, the summary accumulator
 * and its report, dump lines, PNG names and the contact sheet layout.
 */
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/err.h"
#include "base/io.h"
#include "codec/codec.h"
#include "inspect/inspect.h"
#include "stream/record.h"
#include "stream/stream.h"
#include "unit.h"

/* ---- a libpng reader, independent of the code under test ---- */

struct memsrc {
	const unsigned char *p;
	size_t n, pos;
};

static void
mem_read(png_structp png, png_bytep out, size_t n)
{
	struct memsrc *m = png_get_io_ptr(png);

	if (m->n - m->pos < n)
		png_error(png, "short");
	memcpy(out, m->p + m->pos, n);
	m->pos += n;
}

/* Decode 8-bit PNG bytes into px (caller frees).  0 or -1. */
static int
png_read_mem(const unsigned char *p, size_t n, unsigned char **px,
    uint32_t *h, uint32_t *w, uint32_t *c, int *depth)
{
	struct memsrc m = { p, n, 0 };
	png_structp png;
	png_infop info;
	unsigned char *volatile buf = NULL;
	size_t stride;
	uint32_t y;

	png = png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
	info = png_create_info_struct(png);
	if (setjmp(png_jmpbuf(png))) {
		png_destroy_read_struct(&png, &info, NULL);
		free(buf);
		return -1;
	}
	png_set_read_fn(png, &m, mem_read);
	png_read_info(png, info);
	*w = png_get_image_width(png, info);
	*h = png_get_image_height(png, info);
	*c = png_get_channels(png, info);
	*depth = png_get_bit_depth(png, info);
	stride = png_get_rowbytes(png, info);
	buf = malloc(stride * *h);
	for (y = 0; y < *h; y++)
		png_read_row(png, buf + y * stride, NULL);
	png_read_end(png, NULL);
	png_destroy_read_struct(&png, &info, NULL);
	*px = buf;
	return 0;
}

static void
fill(unsigned char *p, size_t n, unsigned seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (unsigned char)((i * 131 + seed * 17 + (i >> 7)) & 0xff);
}

static void
png_roundtrip(void)
{
	static const uint32_t sizes[][2] = { { 1, 1 }, { 7, 13 }, { 28, 28 },
	    { 64, 3 } };
	struct rv_buf b = { 0 };
	uint32_t c, k;

	for (c = 1; c <= 4; c++) {
		for (k = 0; k < 4; k++) {
			uint32_t h = sizes[k][0], w = sizes[k][1];
			uint32_t rh, rw, rc;
			size_t n = (size_t)h * w * c;
			unsigned char *px = malloc(n), *back = NULL;
			int depth;

			fill(px, n, c * 10 + k);
			b.len = 0;
			EXPECT_EQ(rv_png_encode(px, h, w, c, &b), 0);
			EXPECT(b.len > 8 && memcmp(b.data, "\x89PNG", 4) == 0);
			EXPECT_EQ(png_read_mem(b.data, b.len, &back, &rh, &rw,
			    &rc, &depth), 0);
			if (back) {
				EXPECT_EQ(rh, h);
				EXPECT_EQ(rw, w);
				EXPECT_EQ(rc, c);
				EXPECT_EQ(depth, 8);
				EXPECT(memcmp(back, px, n) == 0);
			}
			free(back);
			free(px);
		}
	}
	rv_buf_release(&b);
}

static void
png_appends(void)
{
	struct rv_buf b = { 0 };
	unsigned char px[12] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 };
	unsigned char *back = NULL;
	uint32_t h, w, c;
	int depth;

	rv_buf_append(&b, "xyz", 3);
	EXPECT_EQ(rv_png_encode(px, 2, 2, 3, &b), 0);
	EXPECT(memcmp(b.data, "xyz", 3) == 0);
	EXPECT_EQ(png_read_mem(b.data + 3, b.len - 3, &back, &h, &w, &c,
	    &depth), 0);
	EXPECT(back && memcmp(back, px, 12) == 0);
	free(back);
	/* refused arguments leave the buffer as it was */
	b.len = 3;
	EXPECT_EQ(rv_png_encode(px, 2, 2, 5, &b), -1);
	EXPECT_STR(rv_errmsg(), "png: 5 channels (1 to 4 allowed)");
	EXPECT_EQ(rv_png_encode(px, 0, 2, 1, &b), -1);
	EXPECT_EQ(b.len, 3);
	rv_buf_release(&b);
}

static int
count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static void
png_write_file(void)
{
	char dir[] = "/tmp/t_inspect.XXXXXX", path[64], bad[96];
	unsigned char px[6 * 5], *file = NULL, *back = NULL;
	size_t len = 0;
	uint32_t h, w, c;
	int depth;

	EXPECT(mkdtemp(dir) != NULL);
	fill(px, sizeof(px), 3);
	snprintf(path, sizeof(path), "%s/a.png", dir);
	EXPECT_EQ(rv_png_write(path, px, 5, 6, 1), 0);
	EXPECT_EQ(rv_slurp(path, &file, &len), 0);
	EXPECT_EQ(png_read_mem(file, len, &back, &h, &w, &c, &depth), 0);
	EXPECT(back && h == 5 && w == 6 && c == 1);
	EXPECT(back && memcmp(back, px, sizeof(px)) == 0);
	free(file);
	free(back);
	/* overwriting is atomic too, and no temp file stays behind */
	EXPECT_EQ(rv_png_write(path, px, 1, 10, 3), 0);
	EXPECT_EQ(count_entries(dir), 1);
	/* a missing directory names the path */
	snprintf(bad, sizeof(bad), "%s/no/such.png", dir);
	EXPECT_EQ(rv_png_write(bad, px, 1, 1, 1), -1);
	{
		char want[160];
		snprintf(want, sizeof(want), "'%s': No such file or directory",
		    bad);
		EXPECT_STR(rv_errmsg(), want);
	}
	EXPECT_EQ(count_entries(dir), 1);
	unlink(path);
	rmdir(dir);
}

/* A FIFO (or a device, /dev/stdout) is written in place, not replaced. */
static void
png_write_fifo(void)
{
	char dir[] = "/tmp/t_inspect.XXXXXX", path[64];
	unsigned char px[4 * 4 * 3], got[8192], *back = NULL;
	struct stat st;
	ssize_t n;
	uint32_t h, w, c;
	int fd, depth;

	EXPECT(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/fifo", dir);
	EXPECT_EQ(mkfifo(path, 0600), 0);
	/* O_RDWR: the writer's open does not block, the pipe holds it all */
	fd = open(path, O_RDWR);
	EXPECT(fd >= 0);
	fill(px, sizeof(px), 5);
	EXPECT_EQ(rv_png_write(path, px, 4, 4, 3), 0);
	n = read(fd, got, sizeof(got));
	EXPECT(n > 8);
	EXPECT_EQ(png_read_mem(got, (size_t)n, &back, &h, &w, &c, &depth),
	    0);
	EXPECT(back && h == 4 && w == 4 && c == 3);
	EXPECT(back && memcmp(back, px, sizeof(px)) == 0);
	free(back);
	close(fd);
	EXPECT(stat(path, &st) == 0 && S_ISFIFO(st.st_mode));
	EXPECT_EQ(count_entries(dir), 1);
	unlink(path);
	rmdir(dir);
}

/* ---- synthetic records ---- */

static void
mk_sample(struct rv_rec *r, uint32_t epoch, uint64_t id, int32_t label,
    const unsigned char *px, uint32_t h, uint32_t w, uint32_t c)
{
	rv_rec_init(r, RV_SAMPLE);
	r->epoch = epoch;
	r->id = id;
	r->label = label;
	r->dtype = RV_DT_U8;
	r->height = h;
	r->width = w;
	r->channels = c;
	r->payload_len = (uint64_t)h * w * c;
	r->payload = px;
}

/* A batch of n 2x2x1 samples: payload built in b. */
static void
mk_batch(struct rv_rec *r, struct rv_buf *b, uint32_t epoch, uint32_t n,
    const uint64_t *ids, const int32_t *labels, const float *weights)
{
	uint32_t i;
	unsigned char tmp[8];

	b->len = 0;
	for (i = 0; i < n; i++) {
		rv_put64(tmp, ids[i]);
		rv_buf_append(b, tmp, 8);
	}
	for (i = 0; i < n; i++) {
		rv_put32(tmp, (uint32_t)labels[i]);
		rv_buf_append(b, tmp, 4);
	}
	for (i = 0; i < n; i++) {
		uint32_t u;
		memcpy(&u, &weights[i], 4);
		rv_put32(tmp, u);
		rv_buf_append(b, tmp, 4);
	}
	for (i = 0; i < n * 4; i++) {
		tmp[0] = (unsigned char)(100 + i);
		rv_buf_append(b, tmp, 1);
	}
	rv_rec_init(r, RV_BATCH);
	r->epoch = epoch;
	r->dtype = RV_DT_U8;
	r->height = 2;
	r->width = 2;
	r->channels = 1;
	r->count = n;
	r->payload_len = b->len;
	r->payload = b->data;
}

static void
views_of_batch(void)
{
	static const uint64_t ids[3] = { 7, 8, 9 };
	static const int32_t labels[3] = { 1, -1, 4 };
	static const float weights[3] = { 1.0f, 0.5f, 2.0f };
	struct rv_buf b = { 0 };
	struct rv_rec r;
	struct rv_view v;

	mk_batch(&r, &b, 3, 3, ids, labels, weights);
	r.flags = RV_F_FINAL;
	EXPECT_EQ(rv_rec_nsamples(&r), 3);
	rv_rec_view(&r, 2, &v);
	EXPECT_EQ(v.id, 9);
	EXPECT_EQ(v.label, 4);
	EXPECT(v.weight == 2.0f);
	EXPECT_EQ(v.epoch, 3);
	EXPECT_EQ(v.flags, RV_F_FINAL);
	EXPECT_EQ(v.len, 4);
	EXPECT_EQ(v.data[0], 108);
	rv_rec_view(&r, 1, &v);
	EXPECT_EQ(v.label, -1);
	EXPECT(v.weight == 0.5f);
	EXPECT_EQ(v.data[3], 107);
	rv_rec_init(&r, RV_EPOCH_END);
	EXPECT_EQ(rv_rec_nsamples(&r), 0);
	rv_buf_release(&b);
}

static const char meta_text[] = "producer=test 1\nclass.0=zero\n"
    "class.1=one\nclass.2=two\n";

/* A small stream: meta, 3 samples in epoch 0, a batch of 2 in epoch 1. */
static void
feed(struct rv_summary *s)
{
	static const unsigned char px[12] = { 0 };
	static const uint64_t ids[2] = { 10, 11 };
	static const int32_t labels[2] = { 1, -1 };
	static const float weights[2] = { 1.0f, 0.5f };
	struct rv_buf b = { 0 };
	struct rv_rec r;

	rv_rec_init(&r, RV_META);
	r.payload = (const unsigned char *)meta_text;
	r.payload_len = strlen(meta_text);
	EXPECT_EQ(rv_summary_add(s, &r), 0);
	mk_sample(&r, 0, 0, 0, px, 2, 2, 3);
	EXPECT_EQ(rv_summary_add(s, &r), 0);
	mk_sample(&r, 0, 1, 1, px, 2, 2, 3);
	r.flags = RV_F_PARTIAL | RV_F_SCORED;
	r.score = 0.25f;
	r.uses = 2;
	EXPECT_EQ(rv_summary_add(s, &r), 0);
	mk_sample(&r, 0, 2, 1, px, 2, 2, 1);
	r.score = 0.75f;
	EXPECT_EQ(rv_summary_add(s, &r), 0);
	rv_rec_init(&r, RV_EPOCH_END);
	r.epoch = 0;
	r.count = 3;
	EXPECT_EQ(rv_summary_add(s, &r), 0);
	mk_batch(&r, &b, 1, 2, ids, labels, weights);
	r.flags = RV_F_FINAL;
	EXPECT_EQ(rv_summary_add(s, &r), 0);
	rv_rec_init(&r, RV_EPOCH_END);
	r.epoch = 1;
	r.count = 3;
	EXPECT_EQ(rv_summary_add(s, &r), 0);
	rv_summary_add_input(s, 1234);
	rv_buf_release(&b);
}

static void
summary_counts(void)
{
	struct rv_summary *s = rv_summary_new();
	struct rv_rec r;

	feed(s);
	EXPECT_EQ(rv_summary_records(s, 0), 7);
	EXPECT_EQ(rv_summary_records(s, RV_SAMPLE), 3);
	EXPECT_EQ(rv_summary_records(s, RV_BATCH), 1);
	EXPECT_EQ(rv_summary_records(s, RV_EPOCH_END), 2);
	EXPECT_EQ(rv_summary_records(s, RV_META), 1);
	EXPECT_EQ(rv_summary_samples(s), 5);
	EXPECT_EQ(rv_summary_label(s, 0), 1);
	EXPECT_EQ(rv_summary_label(s, 1), 3);
	EXPECT_EQ(rv_summary_label(s, -1), 1);
	EXPECT_EQ(rv_summary_label(s, 2), 0);
	EXPECT_EQ(rv_summary_epoch(s, 0), 3);
	EXPECT_EQ(rv_summary_epoch(s, 1), 2);
	EXPECT_EQ(rv_summary_input(s), 1234);
	EXPECT_STR(rv_meta_get(rv_summary_meta(s), "class.1"), "one");
	/* a META record that does not parse is an error */
	rv_rec_init(&r, RV_META);
	r.payload = (const unsigned char *)"novalue\n";
	r.payload_len = 8;
	EXPECT_EQ(rv_summary_add(s, &r), -1);
	EXPECT_STR(rv_errmsg(), "metadata line 1 has no '='");
	rv_summary_free(s);
	rv_summary_free(NULL);
}

/*
 * Epochs as rv-stream(5) defines them: consecutive epoch-ends of one
 * number join (cat of shards), another number between them does not (cat
 * of two runs), whatever the metadata between.
 */
static void
summary_epochs_joined(void)
{
	static const unsigned char px[1] = { 0 };
	static const uint32_t seg[][2] = {	/* epoch, samples */
		{ 0, 2 }, { 0, 3 }, { 1, 4 }, { 0, 1 }, { 0, 0 },
	};
	struct rv_summary *s = rv_summary_new();
	struct rv_buf b = { 0 };
	struct rv_rec r;
	uint64_t id = 0;
	size_t i;
	uint32_t k;

	for (i = 0; i < sizeof(seg) / sizeof(seg[0]); i++) {
		rv_rec_init(&r, RV_META);
		r.payload = (const unsigned char *)"source=x\n";
		r.payload_len = 9;
		EXPECT_EQ(rv_summary_add(s, &r), 0);
		for (k = 0; k < seg[i][1]; k++) {
			mk_sample(&r, seg[i][0], id++, 0, px, 1, 1, 1);
			EXPECT_EQ(rv_summary_add(s, &r), 0);
		}
		rv_rec_init(&r, RV_EPOCH_END);
		r.epoch = seg[i][0];
		r.count = seg[i][1];
		EXPECT_EQ(rv_summary_add(s, &r), 0);
	}
	/* samples after the last epoch-end reopen its epoch */
	mk_sample(&r, 0, id++, 0, px, 1, 1, 1);
	EXPECT_EQ(rv_summary_add(s, &r), 0);
	rv_summary_format(s, 0, &b);
	rv_buf_append(&b, "", 1);
	EXPECT(strstr((char *)b.data, "epochs       3\n"
	    "  0          5 samples, epoch-end 5 in 2 records\n"
	    "  1          4 samples, epoch-end 4\n"
	    "  0          2 samples, no epoch-end\n"));
	EXPECT_EQ(rv_summary_epoch(s, 0), 7);
	rv_buf_release(&b);
	rv_summary_free(s);
}

static void
summary_text(void)
{
	static const char want[] =
	    "records      7 (sample 3, batch 1, epoch-end 2, meta 1)\n"
	    "samples      5 (ids 0 to 11)\n"
	    "bytes        1234 input, 121 payload\n"
	    "epochs       2\n"
	    "  0          3 samples, epoch-end 3\n"
	    "  1          2 samples, epoch-end 3 (mismatch)\n"
	    "shapes       2x2x1 3, 2x2x3 2\n"
	    "dtypes       u8 5\n"
	    "flags        partial 1, final 2, cached 0, scored 1, "
	    "reweighted 0\n"
	    "uses         mean 0.4, max 2\n"
	    "weights      min 0.5, mean 0.9, max 1\n"
	    "scores       2 scored, min 0.25, mean 0.5, max 0.75\n"
	    "classes      3 (4 labelled, 1 unlabelled)\n"
	    "  0  zero  1   25.0%\n"
	    "  1  one   3   75.0%\n"
	    "  2  two   0    0.0%\n"
	    "meta         4 keys\n"
	    "  producer test 1\n"
	    "  class.0  zero\n"
	    "  class.1  one\n"
	    "  class.2  two\n";
	struct rv_summary *s = rv_summary_new();
	struct rv_buf b = { 0 };

	feed(s);
	rv_summary_format(s, 0, &b);
	rv_buf_append(&b, "", 1);
	EXPECT_STR((char *)b.data, want);
	rv_buf_release(&b);
	rv_summary_free(s);
}

static void
summary_empty_and_long(void)
{
	static const char want_empty[] =
	    "records      0 (sample 0, batch 0, epoch-end 0, meta 0)\n"
	    "samples      0\n"
	    "bytes        0 input, 0 payload\n"
	    "epochs       0\n"
	    "shapes       none\n"
	    "dtypes       none\n"
	    "flags        partial 0, final 0, cached 0, scored 0, "
	    "reweighted 0\n"
	    "uses         none\n"
	    "weights      all 1\n"
	    "scores       none\n"
	    "classes      none (0 unlabelled)\n"
	    "meta         none\n";
	static const unsigned char px[1] = { 0 };
	struct rv_summary *s = rv_summary_new();
	struct rv_buf b = { 0 };
	struct rv_rec r;
	uint32_t e;

	rv_summary_format(s, 0, &b);
	rv_buf_append(&b, "", 1);
	EXPECT_STR((char *)b.data, want_empty);
	/* 12 epochs of 40 labels: cut short unless verbose; epoch 3 alone
	 * has an epoch-end, with the wrong count */
	for (e = 0; e < 12; e++) {
		int32_t l;
		for (l = 0; l < 40; l++) {
			mk_sample(&r, e, (uint64_t)l, l, px, 1, 1, 1);
			rv_summary_add(s, &r);
		}
		if (e == 3) {
			rv_rec_init(&r, RV_EPOCH_END);
			r.epoch = 3;
			r.count = 39;
			rv_summary_add(s, &r);
		}
	}
	b.len = 0;
	rv_summary_format(s, 0, &b);
	rv_buf_append(&b, "", 1);
	EXPECT(strstr((char *)b.data, "epochs       12\n"
	    "  0-11       40 to 40 samples each, 11 with no epoch-end, "
	    "1 mismatched (-v lists every epoch)\n"));
	EXPECT(strstr((char *)b.data, "  31  12    2.5%\n"
	    "  ... 8 more (-v lists every class)\n"));
	b.len = 0;
	rv_summary_format(s, 1, &b);
	rv_buf_append(&b, "", 1);
	EXPECT(strstr((char *)b.data, "  11         40 samples, no "
	    "epoch-end\n"));
	EXPECT(strstr((char *)b.data, "  3          40 samples, epoch-end 39 "
	    "(mismatch)\n"));
	EXPECT(strstr((char *)b.data, "  39  12    2.5%\nmeta"));
	rv_buf_release(&b);
	rv_summary_free(s);
}

static void
dump_lines(void)
{
	static const unsigned char px[4] = { 0 };
	static const uint64_t ids[2] = { 10, 11 };
	static const int32_t labels[2] = { 1, -1 };
	static const float weights[2] = { 1.0f, 0.5f };
	struct rv_buf b = { 0 }, bb = { 0 };
	struct rv_rec r;

	rv_dump_header(&b);
	mk_sample(&r, 2, 42, 7, px, 2, 2, 1);
	r.flags = RV_F_FINAL | RV_F_CACHED | 0x100;
	r.uses = 3;
	r.weight = 0.5f;
	r.score = 0.125f;
	rv_dump_line(&r, 5, 1000, &b);
	mk_sample(&r, 0, 1, -1, px, 2, 2, 1);
	rv_dump_line(&r, 6, 1100, &b);
	mk_batch(&r, &bb, 1, 2, ids, labels, weights);
	rv_dump_line(&r, 7, 1200, &b);
	rv_rec_init(&r, RV_EPOCH_END);
	r.epoch = 1;
	r.count = 2;
	rv_dump_line(&r, 8, 1300, &b);
	rv_buf_append(&b, "", 1);
	EXPECT_STR((char *)b.data,
	    "index\toffset\tkind\tepoch\tid\tlabel\theight\twidth\tchannels\t"
	    "dtype\tcount\tflags\tuses\tweight\tscore\tbytes\n"
	    "5\t1000\tsample\t2\t42\t7\t2\t2\t1\tu8\t1\tfinal,cached,0x100\t3"
	    "\t0.5\t0.125\t4\n"
	    "6\t1100\tsample\t0\t1\t-\t2\t2\t1\tu8\t1\t-\t0\t1\t-\t4\n"
	    "7\t1200\tbatch\t1\t-\t-\t2\t2\t1\tu8\t2\t-\t0\t-\t-\t40\n"
	    "8\t1300\tepoch-end\t1\t-\t-\t0\t0\t0\tnone\t2\t-\t0\t-\t-\t0\n");
	rv_buf_release(&b);
	rv_buf_release(&bb);
}

static void
png_names(void)
{
	char buf[96];

	rv_png_name(buf, sizeof(buf), 0, 123, 4, 1);
	EXPECT_STR(buf, "e000-id000123-l4.png");
	rv_png_name(buf, sizeof(buf), 12, 1234567, -1, 1);
	EXPECT_STR(buf, "e012-id1234567.png");
	rv_png_name(buf, sizeof(buf), 1000, 5, 0, 3);
	EXPECT_STR(buf, "e1000-id000005-l0-n3.png");
}

static void
pngdir_files(void)
{
	char dir[] = "/tmp/t_inspect.XXXXXX", sub[64], path[128];
	unsigned char px[2 * 3 * 3], *file = NULL, *back = NULL;
	struct rv_pngdir *d;
	struct rv_rec r;
	struct rv_view v;
	size_t len;
	uint32_t h, w, c;
	int depth;

	EXPECT(mkdtemp(dir) != NULL);
	snprintf(sub, sizeof(sub), "%s/out/", dir);
	d = rv_pngdir_new(sub);
	EXPECT(d != NULL);
	if (!d)
		return;
	fill(px, sizeof(px), 9);
	mk_sample(&r, 1, 5, 2, px, 2, 3, 3);
	rv_rec_view(&r, 0, &v);
	EXPECT_EQ(rv_pngdir_put(d, &v, NULL), 0);
	EXPECT_EQ(rv_pngdir_put(d, &v, NULL), 0);
	EXPECT_EQ(rv_pngdir_count(d), 2);
	snprintf(path, sizeof(path), "%s/out/e001-id000005-l2.png", dir);
	EXPECT_EQ(rv_slurp(path, &file, &len), 0);
	EXPECT_EQ(png_read_mem(file, len, &back, &h, &w, &c, &depth), 0);
	EXPECT(back && h == 2 && w == 3 && c == 3);
	EXPECT(back && memcmp(back, px, sizeof(px)) == 0);
	free(file);
	free(back);
	unlink(path);
	snprintf(path, sizeof(path), "%s/out/e001-id000005-l2-n2.png", dir);
	EXPECT_EQ(access(path, F_OK), 0);
	unlink(path);
	/* an encoded sample without a decoder is refused, by id */
	r.dtype = RV_DT_JPEG;
	rv_rec_view(&r, 0, &v);
	EXPECT_EQ(rv_pngdir_put(d, &v, NULL), -1);
	EXPECT_STR(rv_errmsg(), "id 5: no decoder");
	rv_pngdir_free(d);
	rv_pngdir_free(NULL);
	snprintf(path, sizeof(path), "%s/out", dir);
	EXPECT_EQ(rmdir(path), 0);
	/* a file in the way */
	snprintf(path, sizeof(path), "%s/file", dir);
	EXPECT_EQ(rv_png_write(path, px, 1, 1, 1), 0);
	EXPECT(rv_pngdir_new(path) == NULL);
	{
		char want[160];
		snprintf(want, sizeof(want), "'%s': not a directory", path);
		EXPECT_STR(rv_errmsg(), want);
	}
	unlink(path);
	rmdir(dir);
}

static const unsigned char *
at(const struct rv_img *im, uint32_t y, uint32_t x)
{
	return im->data + ((size_t)y * im->w + x) * 3;
}

static void
sheet_layout(void)
{
	static const char meta_classes[] = "class.0=a\nclass.1=toolongname\n";
	unsigned char grey[4] = { 10, 20, 30, 40 };
	unsigned char rgba[3 * 2 * 4];
	struct rv_sheet *s = rv_sheet_new(3);
	struct rv_meta m;
	struct rv_img im = { 0 };
	struct rv_rec r;
	struct rv_view v;
	int i;

	rv_meta_init(&m);
	EXPECT_EQ(rv_meta_parse(&m, (const unsigned char *)meta_classes,
	    strlen(meta_classes)), 0);
	EXPECT_EQ(rv_sheet_render(s, 0, 0, &m, &im), -1);
	EXPECT_STR(rv_errmsg(), "no samples to draw");
	for (i = 0; i < (int)sizeof(rgba); i++)
		rgba[i] = (unsigned char)(i * 9);
	mk_sample(&r, 0, 0, 0, grey, 2, 2, 1);
	rv_rec_view(&r, 0, &v);
	EXPECT_EQ(rv_sheet_add(s, &v, NULL), 0);
	mk_sample(&r, 0, 1, 1, rgba, 3, 2, 4);
	rv_rec_view(&r, 0, &v);
	EXPECT_EQ(rv_sheet_add(s, &v, NULL), 0);
	mk_sample(&r, 0, 2, -1, grey, 1, 1, 1);
	rv_rec_view(&r, 0, &v);
	EXPECT_EQ(rv_sheet_add(s, &v, NULL), 0);
	EXPECT(rv_sheet_full(s));
	EXPECT_EQ(rv_sheet_add(s, &v, NULL), 0);	/* full: ignored */
	EXPECT_EQ(rv_sheet_count(s), 3);

	/* scale 1, 2 columns: cells 2 wide, 3 + 10 high */
	EXPECT_EQ(rv_sheet_render(s, 2, 1, &m, &im), 0);
	EXPECT_EQ(im.w, 2 * 2 + 3 * RV_SHEET_GAP);
	EXPECT_EQ(im.h, 2 * (3 + RV_SHEET_BAND) + 3 * RV_SHEET_GAP);
	EXPECT_EQ(im.c, 3);
	/* tile 0: 2x2 grey, centred vertically in a 3-row cell (offset 0) */
	EXPECT(at(&im, 2, 2)[0] == 10 && at(&im, 2, 2)[1] == 10 &&
	    at(&im, 2, 2)[2] == 10);
	EXPECT(at(&im, 3, 3)[0] == 40);
	/* tile 1 (x0 = 6): RGBA drawn as RGB */
	EXPECT(at(&im, 2, 6)[0] == 0 && at(&im, 2, 6)[1] == 9 &&
	    at(&im, 2, 6)[2] == 18);
	EXPECT(at(&im, 4, 7)[0] == 20 * 9);
	/* a gap pixel keeps the background */
	EXPECT(at(&im, 0, 0)[0] == 64);

	/* auto scale: the largest side 3 wants 22x, capped at 16x; cols
	 * ceil(sqrt 3) = 2 */
	EXPECT_EQ(rv_sheet_render(s, 0, 0, &m, &im), 0);
	EXPECT_EQ(im.w, 2 * 2 * 16 + 3 * RV_SHEET_GAP);
	EXPECT_EQ(im.h, 2 * (3 * 16 + RV_SHEET_BAND) + 3 * RV_SHEET_GAP);
	/* labels in white under tiles 0 and 1, none under 2 nor in tiles */
	{
		uint32_t y, x, row = 2 + 48;
		int white[3] = { 0, 0, 0 };
		for (y = 0; y < im.h; y++)
			for (x = 0; x < im.w; x++)
				if (at(&im, y, x)[0] == 255)
					white[y < row ? 2 : x < 36 ? 0 : 1]++;
		EXPECT(white[0] > 0 && white[1] > 0 && white[2] == 0);
	}
	/* more columns than tiles: one row */
	EXPECT_EQ(rv_sheet_render(s, 9, 1, &m, &im), 0);
	EXPECT_EQ(im.w, 3 * 2 + 4 * RV_SHEET_GAP);
	EXPECT_EQ(im.h, 3 + RV_SHEET_BAND + 2 * RV_SHEET_GAP);
	/* too large */
	EXPECT_EQ(rv_sheet_render(s, 1, 64 * 64, &m, &im), -1);
	rv_img_release(&im);
	rv_meta_release(&m);
	rv_sheet_free(s);
	rv_sheet_free(NULL);
}

/* rv_sheet_set_tile: larger samples area-averaged into the tile, smaller
 * ones magnified by the largest factor that stays within it. */
static void
sheet_tile(void)
{
	unsigned char big[8 * 6], one[1] = { 77 }, wide[600];
	struct rv_sheet *s = rv_sheet_new(2);
	struct rv_img im = { 0 };
	struct rv_rec r;
	struct rv_view v;
	uint32_t y, x;
	int ok = 1;

	/* 8x6 grey whose 2x2 blocks average exactly 20 Y + 2 X + 10 */
	for (y = 0; y < 8; y++)
		for (x = 0; x < 6; x++)
			big[y * 6 + x] = (unsigned char)(20 * (y / 2) +
			    2 * (x / 2) + 10 + (x % 2 ? 1 : -1));
	rv_sheet_set_tile(s, 4);
	mk_sample(&r, 0, 0, -1, big, 8, 6, 1);
	rv_rec_view(&r, 0, &v);
	EXPECT_EQ(rv_sheet_add(s, &v, NULL), 0);
	mk_sample(&r, 0, 1, -1, one, 1, 1, 1);
	rv_rec_view(&r, 0, &v);
	EXPECT_EQ(rv_sheet_add(s, &v, NULL), 0);
	/* 8x6 -> 4x3, the largest side 4 fits 4 once: scale 1; 2 columns
	 * of 3-wide cells, one row 4 high, no label band */
	EXPECT_EQ(rv_sheet_render(s, 0, 0, NULL, &im), 0);
	EXPECT_EQ(im.w, 2 * 3 + 3 * RV_SHEET_GAP);
	EXPECT_EQ(im.h, 4 + 2 * RV_SHEET_GAP);
	for (y = 0; y < 4; y++)
		for (x = 0; x < 3; x++)
			if (at(&im, 2 + y, 2 + x)[0] != 20 * y + 2 * x + 10)
				ok = 0;
	EXPECT(ok);
	/* the 1x1 tile centred in its 3x4 cell at x0 = 7 */
	EXPECT(at(&im, 2 + 1, 7 + 1)[0] == 77);
	EXPECT(at(&im, 2, 7)[0] == 64);
	rv_sheet_free(s);

	/* tile 8 and a 2x2 sample: magnified 4 times */
	s = rv_sheet_new(1);
	rv_sheet_set_tile(s, 8);
	mk_sample(&r, 0, 0, -1, big, 2, 2, 1);
	rv_rec_view(&r, 0, &v);
	EXPECT_EQ(rv_sheet_add(s, &v, NULL), 0);
	EXPECT_EQ(rv_sheet_render(s, 0, 0, NULL, &im), 0);
	EXPECT_EQ(im.w, 8 + 2 * RV_SHEET_GAP);
	EXPECT_EQ(im.h, 8 + 2 * RV_SHEET_GAP);
	/* an explicit scale still applies */
	EXPECT_EQ(rv_sheet_render(s, 0, 1, NULL, &im), 0);
	EXPECT_EQ(im.w, 2 + 2 * RV_SHEET_GAP);
	rv_sheet_free(s);

	/* a tile past RV_SHEET_MAX_SIDE is RV_SHEET_MAX_SIDE */
	memset(wide, 100, sizeof(wide));
	s = rv_sheet_new(1);
	rv_sheet_set_tile(s, 100000);
	mk_sample(&r, 0, 0, -1, wide, 1, 600, 1);
	rv_rec_view(&r, 0, &v);
	EXPECT_EQ(rv_sheet_add(s, &v, NULL), 0);
	EXPECT_EQ(rv_sheet_render(s, 0, 0, NULL, &im), 0);
	EXPECT_EQ(im.w, RV_SHEET_MAX_SIDE + 2 * RV_SHEET_GAP);
	rv_sheet_free(s);
	rv_img_release(&im);
}

/* Records through the real stream code, read back into a summary. */
static void
summary_from_stream(void)
{
	static const unsigned char px[4] = { 1, 2, 3, 4 };
	struct rv_enc *e = rv_enc_new(1);
	struct rv_buf frames = { 0 };
	struct rv_summary *s = rv_summary_new();
	struct rv_reader *rd;
	struct rv_rec r;
	int i, rc;

	for (i = 0; i < 5; i++) {
		mk_sample(&r, 0, (uint64_t)i, i % 2, px, 2, 2, 1);
		EXPECT_EQ(rv_enc_frame(e, &r, px, &frames), 0);
	}
	rd = rv_reader_mem(frames.data, frames.len, "mem");
	while ((rc = rv_reader_next(rd, &r)) == 1)
		EXPECT_EQ(rv_summary_add(s, &r), 0);
	EXPECT_EQ(rc, 0);
	rv_summary_add_input(s, rv_reader_bytes(rd));
	EXPECT_EQ(rv_summary_input(s), frames.len);
	EXPECT_EQ(rv_summary_samples(s), 5);
	EXPECT_EQ(rv_summary_label(s, 0), 3);
	EXPECT_EQ(rv_summary_label(s, 1), 2);
	rv_reader_close(rd);
	rv_summary_free(s);
	rv_buf_release(&frames);
	rv_enc_free(e);
}

int
main(int argc, char *argv[])
{
	(void)argc;
	rv_setprogname(argv[0]);
	RUN(png_roundtrip);
	RUN(png_appends);
	RUN(png_write_file);
	RUN(png_write_fifo);
	RUN(views_of_batch);
	RUN(summary_counts);
	RUN(summary_text);
	RUN(summary_empty_and_long);
	RUN(summary_epochs_joined);
	RUN(dump_lines);
	RUN(png_names);
	RUN(pngdir_files);
	RUN(sheet_layout);
	RUN(sheet_tile);
	RUN(summary_from_stream);
	return UNIT_DONE();
}
