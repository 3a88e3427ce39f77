/*
 * Golden tests: rv's augmentation ops against torchvision 0.14 on PIL
 * images.  tests/golden/cases.tsv (made by tests/golden/gen.py) names, per
 * case, an rv spec, an input PNG, the torchvision output and a tolerance;
 * this applies the spec with rv_spec_apply and compares.  It needs only the
 * committed PNGs, never torch.  Directory: $RV_GOLDEN, else tests/golden.
 * RV_GOLDEN_EXACT=1 demands bit-exact output of every case (the tolerances
 * allow for conventions a port need not copy; rv copies them).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aug/aug.h"
#include "base/err.h"
#include "base/rng.h"
#include "codec/codec.h"

#define NFIELDS 7

static const char *dir;
static int exact;	/* RV_GOLDEN_EXACT: ignore the tolerances */
static int nexact;	/* cases matching bit for bit */

/* The whole file into *buf (grown as needed); 0, or -1 with a message. */
static int
slurp(const char *name, unsigned char **buf, size_t *cap, size_t *len)
{
	char path[4096];
	size_t n = 0, r;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if ((f = fopen(path, "rb")) == NULL) {
		printf("# cannot open '%s'\n", path);
		return -1;
	}
	for (;;) {
		if (n == *cap) {
			*cap = *cap ? 2 * *cap : 65536;
			if ((*buf = realloc(*buf, *cap)) == NULL) {
				fclose(f);
				printf("# out of memory\n");
				return -1;
			}
		}
		r = fread(*buf + n, 1, *cap - n, f);
		n += r;
		if (r == 0)
			break;
	}
	if (ferror(f)) {
		printf("# cannot read '%s'\n", path);
		fclose(f);
		return -1;
	}
	fclose(f);
	*len = n;
	return 0;
}

/* Decode a PNG at its natural channel count (1 grey, 3 colour). */
static int
load(struct rv_codec *c, const char *name, unsigned char **buf, size_t *cap,
    struct rv_img *im)
{
	struct rv_decode_opts o = { 0 };
	uint32_t h, w, ch;
	size_t len;
	int dtype;

	if (slurp(name, buf, cap, &len) < 0)
		return -1;
	if (rv_codec_info(c, *buf, len, &dtype, &h, &w, &ch) < 0 ||
	    (o.channels = ch, rv_codec_decode(c, *buf, len, &o, im)) < 0) {
		printf("# '%s': %s\n", name, rv_errmsg());
		return -1;
	}
	return 0;
}

/* Split line at tabs into f[0..NFIELDS); returns the number of fields. */
static int
split(char *line, char **f)
{
	int n = 0;
	char *p = line, *t;

	line[strcspn(line, "\r\n")] = '\0';
	while (n < NFIELDS) {
		f[n++] = p;
		if ((t = strchr(p, '\t')) == NULL)
			break;
		*t = '\0';
		p = t + 1;
	}
	return n;
}

/*
 * Compare got against want: 0 if within (maxd, frac), where frac bounds
 * the share of pixels with any channel off by more than 1.
 */
static int
compare(const struct rv_img *got, const struct rv_img *want, int maxd,
    double frac)
{
	size_t i, npx, ngt1 = 0, ndiff = 0;
	uint32_t k;
	int m = 0, d, pm;

	if (got->h != want->h || got->w != want->w || got->c != want->c) {
		printf("# shape %ux%ux%u, expected %ux%ux%u\n", got->h, got->w,
		    got->c, want->h, want->w, want->c);
		return -1;
	}
	npx = (size_t)got->h * got->w;
	for (i = 0; i < npx; i++) {
		pm = 0;
		for (k = 0; k < got->c; k++) {
			d = got->data[i * got->c + k] -
			    want->data[i * got->c + k];
			if (d < 0)
				d = -d;
			if (d > pm)
				pm = d;
		}
		if (pm > m)
			m = pm;
		ndiff += pm > 0;
		ngt1 += pm > 1;
	}
	printf("# max diff %d, %.2f%% of pixels > 1, %.2f%% differ\n", m,
	    npx ? 100.0 * ngt1 / npx : 0.0, npx ? 100.0 * ndiff / npx : 0.0);
	nexact += m == 0;
	if (exact) {
		maxd = 0;
		frac = 0.0;
	}
	if (m > maxd || (double)ngt1 > frac * npx + 1e-9) {
		printf("# over the tolerance: max %d, %.2f%% of pixels > 1\n",
		    maxd, 100.0 * frac);
		return -1;
	}
	return 0;
}

int
main(void)
{
	char path[4096], *line = NULL, *f[NFIELDS];
	unsigned char *buf = NULL;
	size_t linecap = 0, cap = 0;
	struct rv_img in = { 0 }, want = { 0 };
	struct rv_aug_ctx ctx;
	struct rv_codec *codec;
	struct rv_spec s;
	int n = 0, failed = 0, bad;
	FILE *tsv;

	dir = getenv("RV_GOLDEN");
	if (dir == NULL || *dir == '\0')
		dir = "tests/golden";
	exact = getenv("RV_GOLDEN_EXACT") != NULL &&
	    strcmp(getenv("RV_GOLDEN_EXACT"), "1") == 0;
	snprintf(path, sizeof(path), "%s/cases.tsv", dir);
	if ((tsv = fopen(path, "r")) == NULL) {
		printf("not ok 1 - cannot open '%s'\n1..1\n", path);
		return 1;
	}
	if ((codec = rv_codec_new()) == NULL) {
		printf("not ok 1 - rv_codec_new\n1..1\n");
		fclose(tsv);
		return 1;
	}
	rv_aug_ctx_init(&ctx);
	while (getline(&line, &linecap, tsv) != -1) {
		if (line[0] == '#' || line[strspn(line, " \t\r\n")] == '\0')
			continue;
		n++;
		bad = 0;
		if (split(line, f) < 6) {
			printf("# malformed line in cases.tsv\n");
			bad = 1;
		} else if (rv_spec_parse(f[1], 0, &s) < 0) {
			printf("# spec '%s': %s\n", f[1], rv_errmsg());
			bad = 1;
		} else {
			if (load(codec, f[2], &buf, &cap, &in) < 0 ||
			    load(codec, f[3], &buf, &cap, &want) < 0)
				bad = 1;
			else if (rv_spec_apply(&s, &in, &ctx, 0,
			    RV_STAGE_AUGMENT, 0, 0) < 0) {
				printf("# '%s': %s\n", f[1], rv_errmsg());
				bad = 1;
			} else if (compare(&in, &want, atoi(f[4]),
			    strtod(f[5], NULL)) < 0) {
				printf("# spec '%s'\n", f[1]);
				bad = 1;
			}
			rv_spec_release(&s);
		}
		failed += bad;
		printf("%sok %d - %s\n", bad ? "not " : "", n, f[0]);
		fflush(stdout);
	}
	fclose(tsv);
	free(line);
	free(buf);
	rv_img_release(&in);
	rv_img_release(&want);
	rv_aug_ctx_release(&ctx);
	rv_codec_free(codec);
	if (n == 0) {
		printf("not ok 1 - no cases in '%s'\n1..1\n", path);
		return 1;
	}
	printf("# %d of %d cases bit-exact\n1..%d\n", nexact, n, n);
	return failed ? 1 : 0;
}
