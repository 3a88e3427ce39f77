/*
 * libFuzzer harness for the collator (lib/stream/batch.c) fed by the stream
 * reader.  Byte 0 sets the batch size (bits 0-2, plus one), --drop-last
 * (bit 3) and the shuffle buffer (bits 4-7), byte 1 the seed; the rest is
 * a stream.  Every batch emitted must be a record the writer accepts and
 * the reader reads back unchanged, and no sample may be lost: those
 * added equal those emitted plus those dropped.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "stream/batch.h"
#include "stream/record.h"
#include "stream/stream.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_RECORDS	4096

struct sink {
	const struct rv_batch_conf *conf;
	struct rv_enc *enc;
	struct rv_buf frame;
	uint64_t members;
	uint32_t h, w, c;
	int shaped;
};

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	setenv("RV_MAX_RECORD", "16M", 1);
	rv_setprogname("fuzz-batch");
	return 0;
}

static int
on_batch(void *ctx, const struct rv_rec *b)
{
	struct sink *s = ctx;
	struct rv_reader *r;
	struct rv_rec back;

	if (b->kind != RV_BATCH || b->count == 0 ||
	    b->count > s->conf->size)
		abort();
	if (s->shaped && (b->height != s->h || b->width != s->w ||
	    b->channels != s->c))
		abort();
	s->h = b->height;
	s->w = b->width;
	s->c = b->channels;
	s->shaped = 1;
	s->members += b->count;
	/* written and read back, it is the same record */
	s->frame.len = 0;
	if (rv_enc_frame(s->enc, b, b->payload, &s->frame) < 0)
		abort();
	r = rv_reader_mem(s->frame.data, s->frame.len, "batch");
	if (!r || rv_reader_next(r, &back) != 1 ||
	    back.payload_len != b->payload_len || back.count != b->count ||
	    back.epoch != b->epoch || back.flags != b->flags ||
	    memcmp(back.payload, b->payload, b->payload_len) != 0 ||
	    rv_reader_next(r, &back) != 0)
		abort();
	rv_reader_close(r);
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rv_batch_conf conf;
	const struct rv_batch_stats *st;
	struct sink s;
	struct rv_batcher *b;
	struct rv_reader *r;
	struct rv_rec rec;
	size_t n = 0;
	int rc = 0, failed = 0;

	if (size < 2)
		return 0;
	rv_batch_conf_init(&conf);
	conf.size = 1 + (data[0] & 7);
	conf.drop_last = data[0] >> 3 & 1;
	conf.shuffle = data[0] >> 4;
	conf.seed = data[1];
	memset(&s, 0, sizeof(s));
	s.conf = &conf;
	s.enc = rv_enc_new(RV_LEVEL_STORED);
	if (!s.enc || !(b = rv_batcher_new(&conf, on_batch, &s)))
		abort();
	r = rv_reader_mem(data + 2, size - 2, "fuzz");
	if (!r)
		abort();
	while (n++ < MAX_RECORDS && (rc = rv_reader_next(r, &rec)) == 1) {
		if (rec.kind == RV_META)
			continue;
		if (rec.kind == RV_EPOCH_END)
			rc = rv_batcher_end_epoch(b);
		else
			rc = rv_batcher_add(b, &rec);
		if (rc < 0) {
			if (rv_errmsg()[0] == '\0')
				abort();
			/* a failed batcher stays failed */
			if (rv_batcher_add(b, &rec) != -1 ||
			    rv_batcher_end_epoch(b) != -1)
				abort();
			failed = 1;
			break;
		}
	}
	if (!failed) {
		if (rv_batcher_end_epoch(b) < 0 || rv_batcher_held(b) != 0)
			abort();
		st = rv_batcher_stats(b);
		if (st->samples != s.members + st->samples_dropped ||
		    st->batches < st->short_out)
			abort();
	}
	rv_reader_close(r);
	rv_batcher_free(b);
	rv_enc_free(s.enc);
	rv_buf_release(&s.frame);
	return 0;
}
