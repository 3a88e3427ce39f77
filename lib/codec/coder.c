/* A worker's decoder, encoder and image buffer (coder.h). */
#include "codec/coder.h"

#include <string.h>

#include "stream/stream.h"

int
rv_coder_init(struct rv_coder *k, int level, int strict)
{
	memset(k, 0, sizeof(*k));
	if ((k->enc = rv_enc_new(level)) == NULL)
		return -1;
	k->codec = rv_codec_new();
	rv_codec_set_strict(k->codec, strict);
	return 0;
}

void
rv_coder_release(struct rv_coder *k)
{
	rv_codec_free(k->codec);
	rv_enc_free(k->enc);
	rv_img_release(&k->img);
	memset(k, 0, sizeof(*k));
}
