/*
 * What a thread that makes records from images holds (the workers of
 * rv-decode, rv-augment and rv-refurbish): a decoder, a frame encoder and
 * an image buffer, made once a thread and reused for every sample.  Never
 * shared between threads.
 */
#ifndef RV_CODER_H
#define RV_CODER_H

#include "codec/codec.h"

struct rv_enc;

struct rv_coder {
	struct rv_codec *codec;
	struct rv_enc *enc;	/* at the level given to rv_coder_init() */
	struct rv_img img;
};

/* Make k's decoder (strict: rv_codec_set_strict()) and encoder (level:
 * rv_enc_new()).  0, or -1 with rv_errmsg() set and nothing held. */
int rv_coder_init(struct rv_coder *k, int level, int strict);
/* Free what k holds; a zeroed or released k is fine. */
void rv_coder_release(struct rv_coder *k);

#endif
