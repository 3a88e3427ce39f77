/*
 * libFuzzer harness for archive ingest (lib/src/src.c, lib/src/src_archive.c
 * through libarchive, lib/src/unz.c): the input is written to a file,
 * opened as a dataset, every sample fetched and decoded; then read again
 * from a pipe, as standard input, where nothing can seek, which must give
 * as many samples (or a refusal too) but where rv-decode(1) says a file is
 * read by seeking.  When the lenient open skipped anything, the archive
 * is opened again under --strict, whose early failures take the error
 * paths of the reader.
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "base/io.h"
#include "codec/codec.h"
#include "src/src.h"
#include "src/src_warn.h"
#include "stream/meta.h"
#include "stream/record.h"
#include "stream/stream.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_PIXELS	((uint64_t)1 << 22)
#define MAX_FETCH	256

static char tmpdir[] = "/tmp/rv-fuzz-archive-XXXXXX";
/* Decoded pixels are read into this, so that a short buffer shows. */
static volatile unsigned sink;
static char path[64];

static void
cleanup(void)
{
	unlink(path);
	rmdir(tmpdir);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	rv_setprogname("fuzz-archive");
	/* A reader that stops early closes the pipe on its feeder. */
	signal(SIGPIPE, SIG_IGN);
	if (!mkdtemp(tmpdir))
		abort();
	/* No extension: the format is found from the bytes alone. */
	snprintf(path, sizeof(path), "%s/input", tmpdir);
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

/* The dataset's metadata must make a valid META payload. */
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

/* Fetch and decode every sample (the first MAX_FETCH of them). */
static void
walk(struct rv_dataset *d)
{
	struct rv_decode_opts o = { 3, 32, MAX_PIXELS };
	struct rv_buf scratch = { 0 };
	struct rv_img im = { 0 };
	struct rv_codec *c = rv_codec_new();
	struct rv_item it;
	uint64_t n = rv_dataset_count(d), i;
	size_t k;

	for (k = 0; k < rv_dataset_nwarnings(d); k++)
		if (strlen(rv_dataset_warning(d, k)) == 0)
			abort();
	check_meta(rv_dataset_meta(d));
	for (i = 0; i < n && i < MAX_FETCH; i++) {
		if (rv_dataset_fetch(d, i, &scratch, &it) < 0)
			continue;
		if (it.id != i || (it.len && !it.data) ||
		    memchr(it.name, '\0', sizeof(it.name)) == NULL)
			abort();
		if (it.dtype == RV_DT_U8) {
			if (it.len != (size_t)it.h * it.w * it.c)
				abort();
			o.channels = it.c == 1 ? 1 : 3;
			if (rv_img_from_pixels(it.data, it.h, it.w, it.c, &o,
			    &im) == 0)
				sink += im.data[0];
			continue;
		}
		/* encoded: JPEG, PNG, or another format (no stream dtype) */
		if (it.dtype != RV_DT_JPEG && it.dtype != RV_DT_PNG &&
		    it.dtype != RV_DT_NONE)
			abort();
		o.channels = i & 1 ? 1 : 3;
		if (rv_codec_decode(c, it.data, it.len, &o, &im) == 0)
			sink += im.data[(size_t)im.h * im.w * im.c - 1];
	}
	if (rv_dataset_fetch(d, n, &scratch, &it) != -1)
		abort();
	rv_codec_free(c);
	rv_img_release(&im);
	rv_buf_release(&scratch);
}

/*
 * Sharding by files lists the archive (its image bytes skipped over) and
 * reads it later: the listing counts at least the samples the open found
 * (more when a member's bytes turn out unreadable), and the load reads
 * exactly those.
 */
static void
list_load(char *paths[], uint64_t n_open, int class_level)
{
	struct rv_src_opts o = { 0, 1 };
	struct rv_dataset *d;
	uint64_t base, listed;
	int64_t have;

	o.class_level = class_level;
	d = rv_dataset_list(paths, 1, &o);
	if (!d) {
		if (rv_errmsg()[0] == '\0')
			abort();
		return;
	}
	rv_dataset_source(d, 0, &base, &listed);
	if (base != 0 || listed != rv_dataset_count(d) || listed < n_open)
		abort();
	have = rv_dataset_load(d, 0);
	if (have >= 0) {
		if ((uint64_t)have != n_open)
			abort();
		walk(d);
	} else if (rv_errmsg()[0] == '\0') {
		abort();
	}
	rv_dataset_free(d);
}

struct feed {
	int fd;
	const uint8_t *p;
	size_t n;
};

static void *
feed(void *arg)
{
	struct feed *f = arg;

	/* A reader that stops early closes the pipe: the write fails. */
	(void)rv_write_full(f->fd, f->p, f->n);
	close(f->fd);
	return NULL;
}

/* The same bytes on standard input, a pipe a thread writes: the count of
 * samples, or -1 when the open failed. */
static int64_t
from_pipe(const uint8_t *data, size_t size, int class_level)
{
	struct rv_src_opts o = { 0, 1 };
	char *paths[1] = { "-" };
	struct rv_dataset *d;
	struct feed f;
	pthread_t t;
	int p[2], saved = dup(STDIN_FILENO);
	int64_t n = -1;

	if (saved < 0 || pipe(p) < 0 || dup2(p[0], STDIN_FILENO) < 0)
		abort();
	close(p[0]);
	f.fd = p[1];
	f.p = data;
	f.n = size;
	if (pthread_create(&t, NULL, feed, &f) != 0)
		abort();
	o.class_level = class_level;
	d = rv_dataset_open(paths, 1, &o, NULL);
	if (d) {
		n = (int64_t)rv_dataset_count(d);
		walk(d);
		rv_dataset_free(d);
	} else if (rv_errmsg()[0] == '\0') {
		abort();
	}
	/* The pipe's last reader goes: the feeder stops. */
	if (dup2(saved, STDIN_FILENO) < 0)
		abort();
	close(saved);
	pthread_join(t, NULL);
	return n;
}

/*
 * A file is read as a pipe is (rv-decode(1)), but where it begins with a
 * zip (read by seeking when it is the whole file), a 7-zip archive or a
 * RAR or ISO 9660 image (read by seeking, at a file's start only).
 */
static int
read_as_pipe(const uint8_t *p, size_t n)
{
	return !(n >= 2 && p[0] == 'P' && p[1] == 'K') &&
	    !(n >= 6 && memcmp(p, "7z\xbc\xaf\x27\x1c", 6) == 0) &&
	    !(n >= 4 && memcmp(p, "Rar!", 4) == 0) &&
	    !(n >= 32774 && memcmp(p + 32769, "CD001", 5) == 0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rv_src_opts o = { 0, 1 };
	char *paths[1] = { path };
	struct rv_dataset *d;
	uint64_t skipped = 0;
	int64_t piped;
	int again;

	write_file(path, data, size);
	/* Directory classes from the parent, or from higher up. */
	o.class_level = (int)(size % 3) + 1;
	piped = from_pipe(data, size, o.class_level);
	d = rv_dataset_open(paths, 1, &o, &skipped);
	/* the same samples from a file as on a pipe, or the same refusal */
	if (read_as_pipe(data, size) &&
	    piped != (d ? (int64_t)rv_dataset_count(d) : -1))
		abort();
	if (!d) {
		if (rv_errmsg()[0] == '\0')
			abort();
		return 0;
	}
	walk(d);
	again = skipped > 0 || rv_dataset_nwarnings(d) > 0;
	list_load(paths, rv_dataset_count(d), o.class_level);
	rv_dataset_free(d);
	if (again) {
		uint64_t lenient = skipped;

		o.strict = 1;
		d = rv_dataset_open(paths, 1, &o, &skipped);
		/* under --strict a lost sample fails the open */
		if (d && (lenient > 0 || skipped > 0))
			abort();
		if (d) {
			walk(d);
			rv_dataset_free(d);
		}
	}
	return 0;
}
