/*
 * rv-refurbish's input (lib/refurb/refsrc.c): a regular file indexed in place and
 * a FIFO spilled give the same samples by position; metadata merged; the
 * first epoch only; batches refused; grouped reads (one pread for
 * neighbours, one per far-apart frame); a file changed under the index is
 * caught; readers on several threads share a batch; no allocation per
 * sample once the buffers have grown.
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/err.h"
#include "base/io.h"
#include "base/xmem.h"
#include "refurb/refsrc.h"
#include "stream/meta.h"
#include "stream/record.h"
#include "stream/stream.h"
#include "unit.h"

/* Count allocations by interposing malloc, as t_stream_read.c does (not under
 * AddressSanitizer, which owns malloc). */
#if defined(__SANITIZE_ADDRESS__)
#define COUNT_MALLOC 0
#else
#define COUNT_MALLOC 1
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

static size_t nalloc;

void *
malloc(size_t n)
{
	nalloc++;
	return __libc_malloc(n);
}

void *
calloc(size_t n, size_t s)
{
	nalloc++;
	return __libc_calloc(n, s);
}

void *
realloc(void *p, size_t n)
{
	nalloc++;
	return __libc_realloc(p, n);
}

void
free(void *p)
{
	__libc_free(p);
}
#endif

#define NS	300		/* samples in the test stream */

static char dir[256];

/*
 * Sample k: pixels and a k-dependent size; big 1: samples 7, 57, ... are
 * 300x301x3, so frames around them are far apart; big 2: all 12x13x3.
 */
static void
sample(uint64_t k, int big, struct rv_rec *r, unsigned char **px)
{
	uint32_t side = big == 1 && k % 50 == 7 ? 300 :
	    big == 2 ? 12 : 4 + (uint32_t)(k % 13);
	size_t n, i;

	rv_rec_init(r, RV_SAMPLE);
	r->dtype = RV_DT_U8;
	r->id = 1000 + k;
	r->label = (int32_t)(k % 10);
	r->weight = 0.5f + (float)k;
	r->epoch = 7;
	r->height = side;
	r->width = side + 1;
	r->channels = k % 2 || big == 2 ? 3 : 1;
	n = (size_t)r->height * r->width * r->channels;
	r->payload_len = n;
	*px = xmalloc(n);
	for (i = 0; i < n; i++)
		(*px)[i] = (unsigned char)(i * 31 + k * 7);
}

static void
put_meta(struct rv_writer *w, const char *k, const char *v)
{
	struct rv_meta m;

	rv_meta_init(&m);
	EXPECT(rv_meta_set(&m, k, v) == 0);
	EXPECT(rv_meta_put(w, &m) == 0);
	rv_meta_release(&m);
}

/*
 * A stream of NS samples of epoch 7 (a metadata record first and one in
 * the middle), its epoch end, then metadata.
 */
static char *
make_stream(const char *name, int big, int level)
{
	char *path = xasprintf("%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	struct rv_writer *w = rv_writer_new(fd, path, level);
	struct rv_rec r;
	unsigned char *px;
	uint64_t k;

	put_meta(w, "classes", "10");
	for (k = 0; k < NS; k++) {
		if (k == NS / 2)
			put_meta(w, "source", "t_refsrc");
		sample(k, big, &r, &px);
		EXPECT(rv_writer_put(w, &r, px) == 0);
		free(px);
	}
	rv_rec_init(&r, RV_EPOCH_END);
	r.epoch = 7;
	r.count = NS;
	EXPECT(rv_writer_put(w, &r, NULL) == 0);
	put_meta(w, "after", "the epoch");
	EXPECT(rv_writer_close(w) == 0);
	close(fd);
	return path;
}

/* Every position, in a scrambled order, fetched in batches of bsize and
 * compared with what was written. */
static void
check_all(struct rv_refsrc *s, int big, size_t bsize)
{
	struct rv_refsrc_batch b;
	struct rv_refsrc_reader *rd = rv_refsrc_reader_new(s);
	uint64_t pos[NS];
	size_t i, j, k;

	rv_refsrc_batch_init(&b);
	for (i = 0; i < NS; i++)
		pos[i] = (i * 7919) % NS;
	for (i = 0; i < NS; i += bsize) {
		k = NS - i < bsize ? NS - i : bsize;
		EXPECT(rv_refsrc_load(s, pos + i, k, &b) == 0);
		for (j = 0; j < k; j++) {
			struct rv_rec got, want;
			unsigned char *px;

			EXPECT(rv_refsrc_decode(rd, &b, j, &got) == 0);
			sample(pos[i + j], big, &want, &px);
			EXPECT_EQ(got.id, want.id);
			EXPECT_EQ(got.label, want.label);
			EXPECT_EQ(got.height, want.height);
			EXPECT_EQ(got.channels, want.channels);
			EXPECT_EQ(got.payload_len, want.payload_len);
			EXPECT(memcmp(got.payload, px, want.payload_len) == 0);
			free(px);
		}
	}
	rv_refsrc_reader_free(rd);
	rv_refsrc_batch_release(&b);
}

static void
check_index(const struct rv_refsrc *s, int big)
{
	const struct rv_meta *m = rv_refsrc_meta(s);
	uint64_t k;

	EXPECT_EQ(rv_refsrc_count(s), NS);
	EXPECT(rv_meta_get(m, "classes") &&
	    strcmp(rv_meta_get(m, "classes"), "10") == 0);
	EXPECT(rv_meta_get(m, "source") &&
	    strcmp(rv_meta_get(m, "source"), "t_refsrc") == 0);
	for (k = 0; k < NS; k++) {
		const struct rv_refsrc_item *it = rv_refsrc_item(s, k);
		EXPECT_EQ(it->id, 1000 + k);
		EXPECT_EQ(it->label, (int32_t)(k % 10));
		EXPECT(it->weight == 0.5f + (float)k);
		/* record 0 is metadata, another one sits before NS/2 */
		EXPECT_EQ(it->recno, k + 1 + (k >= NS / 2));
	}
	(void)big;
}

static void
test_file(void)
{
	char *path = make_stream("file.rvs", 0, -1);
	struct rv_refsrc *s = rv_refsrc_open(path, "/nonexistent");

	/* a regular file is read in place: no spill, so no spill dir */
	EXPECT(s != NULL);
	if (!s) {
		printf("# %s\n", rv_errmsg());
		free(path);
		return;
	}
	EXPECT(!rv_refsrc_spilled(s));
	EXPECT(strcmp(rv_refsrc_name(s), path) == 0);
	check_index(s, 0);
	check_all(s, 0, 1);
	check_all(s, 0, 64);
	check_all(s, 0, NS);
	rv_refsrc_free(s);
	free(path);
}

/*
 * A second epoch after the dataset's is samples refurbishing would never
 * use: an error naming it, not a silent drop.  Shards of one epoch joined
 * by cat are one epoch (rv-stream(5)): read whole.
 */
static void
test_second_epoch(void)
{
	char *path = make_stream("two.rvs", 0, 0);
	char *cat = xasprintf("%s/cat.rvs", dir);
	char *cmd = xasprintf("cat '%s' '%s' > '%s'", path, path, cat);
	int fd = open(path, O_WRONLY | O_APPEND);
	struct rv_writer *w = rv_writer_new(fd, path, 0);
	struct rv_refsrc *s;
	struct rv_rec r;
	unsigned char *px;

	/* the same epoch twice: one epoch of both shards */
	EXPECT(system(cmd) == 0);
	s = rv_refsrc_open(cat, dir);
	EXPECT(s != NULL);
	if (s)
		EXPECT_EQ(rv_refsrc_count(s), 2 * NS);
	rv_refsrc_free(s);
	/* then a sample of epoch 8 and its end */
	sample(0, 0, &r, &px);
	r.epoch = 8;
	EXPECT(rv_writer_put(w, &r, px) == 0);
	free(px);
	rv_rec_init(&r, RV_EPOCH_END);
	r.epoch = 8;
	r.count = 1;
	EXPECT(rv_writer_put(w, &r, NULL) == 0);
	EXPECT(rv_writer_close(w) == 0);
	close(fd);
	EXPECT((s = rv_refsrc_open(path, dir)) == NULL);
	EXPECT(strstr(rv_errmsg(), ": a second epoch (epoch 8) after the "
	    "dataset's") != NULL);
	rv_refsrc_free(s);
	free(cmd);
	free(cat);
	free(path);
}

/* Standard input redirected from a file is indexed in place too, with
 * offsets counted from the file's start. */
static void
test_stdin_file(void)
{
	char *path = make_stream("stdin.rvs", 0, 0);
	int save = dup(STDIN_FILENO), fd = open(path, O_RDONLY);
	struct rv_refsrc *s;

	dup2(fd, STDIN_FILENO);
	close(fd);
	s = rv_refsrc_open("-", NULL);
	EXPECT(s != NULL);
	if (s) {
		EXPECT(!rv_refsrc_spilled(s));
		EXPECT(strcmp(rv_refsrc_name(s), "<stdin>") == 0);
		check_index(s, 0);
		check_all(s, 0, 37);
		rv_refsrc_free(s);
	}
	dup2(save, STDIN_FILENO);
	close(save);
	free(path);
}

/* Files in dir named like a spill file. */
static int
spill_files(void)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	while (d && (de = readdir(d)) != NULL)
		n += strncmp(de->d_name, "rv-refurbish.", 13) == 0;
	if (d)
		closedir(d);
	return n;
}

/* Feed path into a FIFO from a child process; returns the FIFO's path. */
static char *
fifo_from(const char *path, pid_t *pid)
{
	char *fifo = xasprintf("%s/fifo", dir);

	unlink(fifo);
	EXPECT(mkfifo(fifo, 0600) == 0);
	*pid = fork();
	if (*pid == 0) {
		unsigned char *buf;
		size_t len;
		int fd = open(fifo, O_WRONLY);
		if (rv_slurp(path, &buf, &len) < 0 ||
		    rv_write_full(fd, buf, len) < 0)
			_exit(1);
		_exit(0);
	}
	return fifo;
}

static void
test_fifo(void)
{
	char *path = make_stream("fifo.rvs", 1, 3);
	struct rv_refsrc *s;
	pid_t pid;
	char *fifo = fifo_from(path, &pid);
	int status = 1;

	s = rv_refsrc_open(fifo, dir);
	/* the writer may be cut short once the first epoch is read */
	waitpid(pid, &status, 0);
	EXPECT(s != NULL);
	if (s) {
		EXPECT(rv_refsrc_spilled(s));
		check_index(s, 1);
		check_all(s, 1, 1);
		check_all(s, 1, 100);
		rv_refsrc_free(s);
	}
	/* the spill file was removed as soon as it was made */
	EXPECT_EQ(spill_files(), 0);
	unlink(fifo);
	free(fifo);
	free(path);
}

/* A spill directory that does not exist fails, naming it. */
static void
test_fifo_bad_dir(void)
{
	char *path = make_stream("fifo2.rvs", 0, 0);
	pid_t pid;
	char *fifo = fifo_from(path, &pid);
	struct rv_refsrc *s;
	int fd;

	s = rv_refsrc_open(fifo, "/nonexistent/dir");
	EXPECT(s == NULL);
	EXPECT(strcmp(rv_errmsg(), "spill file: '/nonexistent/dir': create "
	    "file: No such file or directory") == 0);
	/* unblock the child if it still waits for a reader */
	fd = open(fifo, O_RDONLY | O_NONBLOCK);
	if (fd >= 0)
		close(fd);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	unlink(fifo);
	free(fifo);
	free(path);
}

/* Neighbouring frames come with one pread; far-apart ones with one each. */
static void
test_grouping(void)
{
	char *path = make_stream("group.rvs", 1, 0);
	struct rv_refsrc *s = rv_refsrc_open(path, NULL);
	struct rv_refsrc_batch b;
	uint64_t pos[NS], k;

	EXPECT(s != NULL);
	if (!s) {
		free(path);
		return;
	}
	rv_refsrc_batch_init(&b);
	/* positions 0..6: small frames side by side, shuffled */
	for (k = 0; k < 7; k++)
		pos[k] = 6 - k;
	EXPECT(rv_refsrc_load(s, pos, 7, &b) == 0);
	EXPECT_EQ(b.preads, 1);
	/* 6 and 8 lie on either side of a 270 KB sample: two reads */
	pos[0] = 8;
	pos[1] = 6;
	EXPECT(rv_refsrc_load(s, pos, 2, &b) == 0);
	EXPECT_EQ(b.preads, 1 + 2);
	/* with it, they are one run again */
	pos[2] = 7;
	EXPECT(rv_refsrc_load(s, pos, 3, &b) == 0);
	EXPECT_EQ(b.preads, 1 + 2 + 1);
	/* everything (1.8 MB): one read */
	for (k = 0; k < NS; k++)
		pos[k] = NS - 1 - k;
	EXPECT(rv_refsrc_load(s, pos, NS, &b) == 0);
	EXPECT_EQ(b.preads, 1 + 2 + 1 + 1);
	check_all(s, 1, NS);
	rv_refsrc_batch_release(&b);
	rv_refsrc_free(s);
	free(path);
}

/* Readers on four threads decode requests of one batch at once. */
struct par_arg {
	struct rv_refsrc *s;
	const struct rv_refsrc_batch *b;
	const uint64_t *pos;
	size_t first;
	int bad;
};

static void *
decode_share(void *p)
{
	struct par_arg *a = p;
	struct rv_refsrc_reader *rd = rv_refsrc_reader_new(a->s);
	struct rv_rec got, want;
	unsigned char *px;
	size_t i;

	for (i = a->first; i < NS; i += 4) {
		sample(a->pos[i], 0, &want, &px);
		if (rv_refsrc_decode(rd, a->b, i, &got) < 0 ||
		    got.id != want.id || got.payload_len != want.payload_len ||
		    memcmp(got.payload, px, want.payload_len) != 0)
			a->bad++;
		free(px);
	}
	rv_refsrc_reader_free(rd);
	return NULL;
}

static void
test_threads(void)
{
	char *path = make_stream("threads.rvs", 0, -1);
	struct rv_refsrc *s = rv_refsrc_open(path, NULL);
	struct rv_refsrc_batch b;
	struct par_arg a[4];
	pthread_t t[4];
	uint64_t pos[NS];
	size_t i;

	EXPECT(s != NULL);
	if (!s) {
		free(path);
		return;
	}
	for (i = 0; i < NS; i++)
		pos[i] = (i * 101) % NS;
	rv_refsrc_batch_init(&b);
	EXPECT(rv_refsrc_load(s, pos, NS, &b) == 0);
	for (i = 0; i < 4; i++) {
		a[i] = (struct par_arg){ s, &b, pos, i, 0 };
		EXPECT(pthread_create(&t[i], NULL, decode_share, &a[i]) == 0);
	}
	for (i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		EXPECT_EQ(a[i].bad, 0);
	}
	rv_refsrc_batch_release(&b);
	rv_refsrc_free(s);
	free(path);
}

/*
 * Once the buffers have grown, loading and decoding allocate nothing.
 * (Samples of one size: zstd's decoder itself reallocates its buffers
 * now and then when frame sizes vary, by its own oversize heuristic.)
 */
static void
test_no_alloc(void)
{
	char *path = make_stream("alloc.rvs", 2, -1);
	struct rv_refsrc *s = rv_refsrc_open(path, NULL);
	struct rv_refsrc_reader *rd;
	struct rv_refsrc_batch b;
	struct rv_rec rec;
	uint64_t pos[64];
	size_t round, i;

	EXPECT(s != NULL);
	if (!s) {
		free(path);
		return;
	}
	rd = rv_refsrc_reader_new(s);
	rv_refsrc_batch_init(&b);
	for (round = 0; round < 20; round++) {
#if COUNT_MALLOC
		if (round == 10)
			nalloc = 0;
#endif
		for (i = 0; i < 64; i++)
			pos[i] = (round * 64 + i * 13) % NS;
		EXPECT(rv_refsrc_load(s, pos, 64, &b) == 0);
		for (i = 0; i < 64; i++)
			EXPECT(rv_refsrc_decode(rd, &b, i, &rec) == 0);
	}
#if COUNT_MALLOC
	EXPECT_EQ(nalloc, 0);
#endif
	rv_refsrc_batch_release(&b);
	rv_refsrc_reader_free(rd);
	rv_refsrc_free(s);
	free(path);
}

/* The input rewritten after indexing: the frame read back is refused. */
static void
test_changed(void)
{
	char *path = make_stream("changed.rvs", 0, 0);
	struct rv_refsrc *s = rv_refsrc_open(path, NULL);
	struct rv_refsrc_reader *rd;
	struct rv_refsrc_batch b;
	struct rv_rec rec;
	uint64_t pos = 5;
	char *want;
	int fd;

	EXPECT(s != NULL);
	if (!s) {
		free(path);
		return;
	}
	/* overwrite the sample's frame with another sample's */
	fd = open(path, O_WRONLY);
	EXPECT(pwrite(fd, "\x28\xb5\x2f\xfd\x00\x00\x00\x00", 8,
	    (off_t)rv_refsrc_item(s, pos)->off) == 8);
	close(fd);
	rd = rv_refsrc_reader_new(s);
	rv_refsrc_batch_init(&b);
	EXPECT(rv_refsrc_load(s, &pos, 1, &b) == 0);
	EXPECT(rv_refsrc_decode(rd, &b, 0, &rec) < 0);
	want = xasprintf("'%s': record 6 at byte %llu: ", path,
	    (unsigned long long)rv_refsrc_item(s, pos)->off);
	EXPECT(strncmp(rv_errmsg(), want, strlen(want)) == 0);
	printf("# %s\n", rv_errmsg());
	free(want);
	/* a file cut short under the index */
	EXPECT(truncate(path, 100) == 0);
	EXPECT(rv_refsrc_load(s, &pos, 1, &b) < 0);
	printf("# %s\n", rv_errmsg());
	rv_refsrc_batch_release(&b);
	rv_refsrc_reader_free(rd);
	rv_refsrc_free(s);
	free(path);
}

/* A batch record and a bad sample are refused with their record. */
static void
test_refused(void)
{
	char *path = xasprintf("%s/batch.rvs", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	struct rv_writer *w = rv_writer_new(fd, path, 0);
	struct rv_rec r;
	unsigned char buf[64] = { 0 }, *px;
	char *want;

	sample(0, 0, &r, &px);
	EXPECT(rv_writer_put(w, &r, px) == 0);
	free(px);
	rv_rec_init(&r, RV_BATCH);
	r.epoch = 7;	/* the samples' */
	r.dtype = RV_DT_U8;
	r.count = 1;
	r.height = r.width = r.channels = 1;
	r.payload_len = rv_batch_pixels_off(1) + 1;
	EXPECT(rv_writer_put(w, &r, buf) == 0);
	EXPECT(rv_writer_close(w) == 0);
	close(fd);
	EXPECT(rv_refsrc_open(path, NULL) == NULL);
	want = xasprintf("'%s': record 1 is a batch; refurbish before "
	    "rv-batch", path);
	EXPECT_STR(rv_errmsg(), want);
	free(want);

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	w = rv_writer_new(fd, path, 0);
	rv_rec_init(&r, RV_SAMPLE);
	r.dtype = RV_DT_U8;
	r.id = 42;
	r.height = r.width = 2;
	r.channels = 4;
	r.payload_len = 16;
	EXPECT(rv_writer_put(w, &r, buf) == 0);
	EXPECT(rv_writer_close(w) == 0);
	close(fd);
	EXPECT(rv_refsrc_open(path, NULL) == NULL);
	want = xasprintf("'%s': record 0 (id 42): sample has 4 channels; ops "
	    "take 1 or 3", path);
	EXPECT_STR(rv_errmsg(), want);
	free(want);

	/* an empty input is N = 0, not an error here */
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	close(fd);
	{
		struct rv_refsrc *s = rv_refsrc_open(path, NULL);
		EXPECT(s != NULL && rv_refsrc_count(s) == 0);
		rv_refsrc_free(s);
	}
	free(path);
}

int
main(void)
{
	const char *t = getenv("TMPDIR");

	rv_setprogname("t_refsrc");
	snprintf(dir, sizeof(dir), "%s/t_refsrc.XXXXXX", t && *t ? t : "/tmp");
	if (!mkdtemp(dir)) {
		perror(dir);
		return 1;
	}
	RUN(test_file);
	RUN(test_stdin_file);
	RUN(test_fifo);
	RUN(test_fifo_bad_dir);
	RUN(test_grouping);
	RUN(test_threads);
	RUN(test_no_alloc);
	RUN(test_changed);
	RUN(test_refused);
	RUN(test_second_epoch);
	{
		char *cmd = xasprintf("rm -rf '%s'", dir);
		if (system(cmd) != 0)
			printf("# could not remove %s\n", dir);
		free(cmd);
	}
	return UNIT_DONE();
}
