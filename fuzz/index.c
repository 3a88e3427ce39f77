/*
 * libFuzzer harness for the dataset index (lib/src/index.c, rv-index(5)):
 * arbitrary bytes for rv_index_parse.  An index it takes must format to
 * text that parses back to the same index (formatting is a fixed point),
 * and an error must be one line naming the file.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "src/index.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	rv_setprogname("fuzz-index");
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rv_index ix, iy;
	struct rv_buf a = { 0 }, b = { 0 };
	const char *e;

	if (rv_index_parse((const char *)data, size, "f.idx", &ix) < 0) {
		e = rv_errmsg();
		if (strncmp(e, "'f.idx': ", 9) != 0 || strchr(e, '\n'))
			abort();
		return 0;
	}
	rv_index_format(&ix, &a);
	if (rv_index_parse((const char *)a.data, a.len, "f.idx", &iy) < 0)
		abort();
	rv_index_format(&iy, &b);
	if (a.len != b.len || memcmp(a.data, b.data, a.len) != 0 ||
	    ix.nshards != iy.nshards || ix.samples != iy.samples ||
	    ix.nnames != iy.nnames)
		abort();
	rv_index_release(&ix);
	rv_index_release(&iy);
	rv_buf_release(&a);
	rv_buf_release(&b);
	return 0;
}
