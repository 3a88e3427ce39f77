/*
 * libFuzzer harness for the augmentation spec parser (lib/aug/aug_spec.c):
 * arbitrary text parsed as an op spec.  A spec that parses has a
 * canonical text, which must parse again to the same canonical text and
 * the same ops (the metadata key augment.* relies on it), and its decode
 * hint must be sane for any image size.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "aug/aug.h"
#include "base/err.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	rv_setprogname("fuzz-spec");
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint32_t dims[4][2] = {
		{ 1, 1 }, { 480, 640 }, { 7, 10000 }, { 65535, 3 },
	};
	struct rv_spec s, s2;
	uint32_t first;
	char *text;
	size_t i, k;

	if (size < 1)
		return 0;
	/* byte 0: the index of the first op (usually 0; a few near the top
	 * of the range check the index arithmetic) */
	first = data[0] < 250 ? data[0] :
	    UINT32_MAX - (uint32_t)(255 - data[0]);
	text = malloc(size);
	if (!text)
		abort();
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	if (rv_spec_parse(text, first, &s) < 0) {
		if (rv_errmsg()[0] == '\0')
			abort();
		free(text);
		return 0;
	}
	if (!s.text)
		abort();
	for (i = 0; i < s.n; i++)
		if (!s.ops[i].def || s.ops[i].index != first + i ||
		    !(s.ops[i].p >= 0 && s.ops[i].p <= 1))
			abort();
	if (rv_spec_parse(s.text, first, &s2) < 0)
		abort();
	if (strcmp(s.text, s2.text) != 0 || s.n != s2.n)
		abort();
	for (i = 0; i < s.n; i++) {
		if (s.ops[i].def != s2.ops[i].def || s.ops[i].p != s2.ops[i].p)
			abort();
		for (k = 0; k < RV_AUG_MAXARGS; k++)
			if (s.ops[i].v[k][0] != s2.ops[i].v[k][0] ||
			    s.ops[i].v[k][1] != s2.ops[i].v[k][1] ||
			    s.ops[i].v[k][2] != s2.ops[i].v[k][2])
				abort();
	}
	for (i = 0; i < 4; i++)
		(void)rv_spec_decode_hint(&s, dims[i][0], dims[i][1]);
	rv_spec_release(&s2);
	rv_spec_release(&s);
	free(text);
	return 0;
}
