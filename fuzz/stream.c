/*
 * libFuzzer harness for the stream reader (lib/stream/stream.c, lib/stream/record.c,
 * lib/stream/meta.c): arbitrary bytes read to the end as an rv stream, every META
 * payload parsed.  The same bytes are also read through a file descriptor,
 * and both readers must agree record for record and on the error: the
 * memory and fd paths share the framing code but not its buffering.  A
 * clean stream is also read repeated past the fd reader's buffer size.
 * Those passes read records as they lie (rv_reader_set_raw); a last pass
 * reads epochs joined (rv-stream(5), "Epochs"), from memory and from the
 * file, which must agree too.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "stream/meta.h"
#include "stream/record.h"
#include "stream/stream.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_RECORDS	4096

static char tmpdir[] = "/tmp/rv-fuzz-stream-XXXXXX";
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
	/* A record may legitimately be 2 GiB; keep within libFuzzer's
	 * memory limit so that only real bugs are reported. */
	setenv("RV_MAX_RECORD", "16M", 1);
	rv_setprogname("fuzz-stream");
	if (!mkdtemp(tmpdir))
		abort();
	snprintf(path, sizeof(path), "%s/in.rvs", tmpdir);
	atexit(cleanup);
	return 0;
}

/* What one record looked like, for the comparison of the two readers. */
struct seen {
	struct rv_rec h;
	uint64_t sum;		/* of the payload bytes: every one is read */
	uint64_t off;
};

static struct seen seen[MAX_RECORDS];

static uint64_t
payload_sum(const struct rv_rec *r)
{
	uint64_t s = 0, i;

	for (i = 0; i < r->payload_len; i++)
		s = s * 31 + r->payload[i];
	return s;
}

/* Check what the reader promises about a record it returned. */
static void
check_record(const struct rv_rec *r)
{
	struct rv_rec again;
	unsigned char hdr[RV_HDR_LEN];

	if (r->payload_len && !r->payload)
		abort();
	if (r->kind == RV_SAMPLE && r->dtype == RV_DT_U8 &&
	    r->payload_len != rv_rec_pixels_len(r))
		abort();
	if (r->kind == RV_BATCH && r->payload_len !=
	    rv_rec_pixels_len(r) + rv_batch_pixels_off(r->count))
		abort();
	/* What was read must encode back to a header that decodes. */
	rv_rec_encode(r, hdr);
	if (rv_rec_decode(&again, hdr, sizeof(hdr), r->payload_len) < 0)
		abort();
	if (r->kind == RV_META) {
		struct rv_meta m;
		struct rv_buf b = { 0 };

		rv_meta_init(&m);
		if (rv_meta_parse(&m, r->payload, r->payload_len) == 0) {
			struct rv_meta m2;
			size_t i;

			/* A parsed payload re-encodes to one that parses
			 * to the same pairs. */
			rv_meta_encode(&m, &b);
			rv_meta_init(&m2);
			if (rv_meta_parse(&m2, b.data, b.len) < 0 ||
			    m2.n != m.n)
				abort();
			for (i = 0; i < m.n; i++)
				if (strcmp(m.key[i], m2.key[i]) != 0 ||
				    strcmp(m.val[i], m2.val[i]) != 0)
					abort();
			rv_meta_release(&m2);
		}
		rv_buf_release(&b);
		rv_meta_release(&m);
	}
}

/*
 * A clean stream repeated is a clean stream (cat a a): read from a file
 * past the reader's 1 MiB input buffer, so that records and frame headers
 * straddle its refills, every copy must give the same records at the
 * same offsets plus the copy's start.
 */
static void
check_concat(const uint8_t *data, size_t size, size_t n)
{
	size_t copies = ((size_t)1 << 20) / size + 2, c, i;
	struct rv_reader *r;
	struct rv_rec rec;
	FILE *f;

	if (!(f = fopen(path, "wb")))
		abort();
	for (c = 0; c < copies; c++)
		if (fwrite(data, 1, size, f) != size)
			abort();
	if (fclose(f) != 0 || !(r = rv_reader_open(path)))
		abort();
	rv_reader_set_raw(r, 1);
	for (c = 0; c < copies; c++)
		for (i = 0; i < n; i++)
			if (rv_reader_next(r, &rec) != 1 ||
			    rec.payload_len != seen[i].h.payload_len ||
			    rec.kind != seen[i].h.kind ||
			    rv_reader_offset(r) != c * size + seen[i].off ||
			    payload_sum(&rec) != seen[i].sum)
				abort();
	if (rv_reader_next(r, &rec) != 0)
		abort();
	rv_reader_close(r);
}

/*
 * Epochs joined: a digest of what the reader returns (kind, epoch, count,
 * index, offset, joined ends) and how it ends.  Memory and file must
 * give the same.
 */
static uint64_t
joined(struct rv_reader *r, int *rc)
{
	struct rv_rec rec;
	uint64_t h = 1469598103934665603ull;
	size_t n = 0;

	while (n++ < MAX_RECORDS && (*rc = rv_reader_next(r, &rec)) == 1) {
		uint64_t v[6] = { rec.kind, rec.epoch, rec.count,
		    rv_reader_records(r), rv_reader_offset(r),
		    rv_reader_merged(r) };
		size_t k;

		if (rec.kind != RV_EPOCH_END && rv_reader_merged(r) != 0)
			abort();
		for (k = 0; k < 6; k++)
			h = (h ^ v[k]) * 1099511628211ull;
	}
	return h;
}

static void
check_joined(const uint8_t *data, size_t size)
{
	struct rv_reader *r;
	uint64_t a, b;
	int rca = 0, rcb = 0;

	if (!(r = rv_reader_mem(data, size, "fuzz")))
		abort();
	a = joined(r, &rca);
	rv_reader_close(r);
	if (!(r = rv_reader_open(path)))
		abort();
	b = joined(r, &rcb);
	rv_reader_close(r);
	if (a != b || rca != rcb)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rv_reader *r;
	struct rv_rec rec;
	char err[1024];
	size_t n = 0, i;
	int rc = 0, rc2;
	FILE *f;

	r = rv_reader_mem(data, size, "fuzz");
	if (!r)
		abort();
	rv_reader_set_raw(r, 1);
	while (n < MAX_RECORDS && (rc = rv_reader_next(r, &rec)) == 1) {
		check_record(&rec);
		seen[n].h = rec;
		seen[n].sum = payload_sum(&rec);
		seen[n].off = rv_reader_offset(r);
		n++;
	}
	snprintf(err, sizeof(err), "%s", rc < 0 ? rv_errmsg() : "");
	/* A spent reader stays spent. */
	if (rc < 0 && rv_reader_next(r, &rec) != -1)
		abort();
	rv_reader_close(r);

	/* The same bytes from a file. */
	if (!(f = fopen(path, "wb")))
		abort();
	if (size && fwrite(data, 1, size, f) != size)
		abort();
	if (fclose(f) != 0)
		abort();
	r = rv_reader_open(path);
	if (!r)
		abort();
	rv_reader_set_raw(r, 1);
	rv_seterr("%s", "");
	for (i = 0; i < n; i++) {
		rc2 = rv_reader_next(r, &rec);
		if (rc2 != 1 || rec.payload_len != seen[i].h.payload_len ||
		    rec.kind != seen[i].h.kind || rec.id != seen[i].h.id ||
		    rv_reader_offset(r) != seen[i].off ||
		    payload_sum(&rec) != seen[i].sum)
			abort();
	}
	if (n < MAX_RECORDS) {
		rc2 = rv_reader_next(r, &rec);
		if (rc2 != rc)
			abort();
		/* The messages differ only in the name. */
		if (rc < 0) {
			const char *m = rv_errmsg(), *a, *b;

			a = strstr(err, "': ");
			b = strstr(m, "': ");
			if (!a || !b || strcmp(a, b) != 0)
				abort();
		}
	}
	rv_reader_close(r);
	check_joined(data, size);
	if (rc == 0 && n > 0 && n < MAX_RECORDS && size >= 512)
		check_concat(data, size, n);
	return 0;
}
