/*
 * tjloop: the raw TurboJPEG baseline of bench/decode.sh.  Reads every file
 * into memory first, then times tjDecompressHeader3 + tjDecompress2 to RGB
 * for each, on one thread, into one output buffer that is allocated and
 * touched before the clock starts.  The floor any JPEG decoder built on
 * TurboJPEG can reach: no file I/O, no allocation, no output.
 *
 * usage: tjloop [-m MAXSIDE] [-n PASSES | -t SECONDS] file ...
 *   -m  decode at the TurboJPEG scale rv-decode --max-side MAXSIDE asks
 *       for (the smallest 1/N covering the fitted size; see pick_scale)
 *   -n  passes over the files (default: as many as fill -t seconds)
 *   -t  seconds to run for when -n is not given (default 1)
 * Prints one line: images=N seconds=S rate=R loop_minflt=F pixels=P
 * loop_cpu=C (F: minor page faults inside the timed loop; P: output pixels
 * per pass; C: the loop's process CPU seconds).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <turbojpeg.h>
#include <unistd.h>

struct file {
	unsigned char *data;
	unsigned long len;
	int w, h;		/* output size at the chosen scale */
};

static double
now(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long
minflt(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

static unsigned char *
slurp(const char *path, unsigned long *len)
{
	FILE *f = fopen(path, "rb");
	unsigned char *p;
	long n;

	if (!f || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) <= 0 ||
	    fseek(f, 0, SEEK_SET) != 0) {
		fprintf(stderr, "tjloop: '%s': %s\n", path, strerror(errno));
		exit(1);
	}
	if (!(p = malloc((size_t)n)) || fread(p, 1, (size_t)n, f) !=
	    (size_t)n) {
		fprintf(stderr, "tjloop: '%s': read failed\n", path);
		exit(1);
	}
	fclose(f);
	*len = (unsigned long)n;
	return p;
}

/*
 * The scale rv-decode's codec (lib/codec/codec_jpeg.c) picks for max_side: the
 * size rv_fit_max_side() gives (longer side max_side, shorter side rounded
 * half up), then the smallest 1/N scale that still covers it in both
 * directions; 1/1 when max_side is 0 or the image already fits.  rv then
 * resizes the rest of the way; tjloop stops at the DCT-scaled size.
 */
static tjscalingfactor
pick_scale(int w, int h, int max_side)
{
	tjscalingfactor best = { 1, 1 }, *sf;
	long hi = w > h ? w : h, lo = w > h ? h : w, s, tw, th, area;
	int i, n;

	if (max_side <= 0 || hi <= max_side)
		return best;
	s = (2 * lo * max_side + hi) / (2 * hi);
	if (s == 0)
		s = 1;
	tw = w > h ? max_side : s;
	th = w > h ? s : max_side;
	area = (long)w * h;
	if (!(sf = tjGetScalingFactors(&n)))
		return best;
	for (i = 0; i < n; i++) {
		long a = TJSCALED(w, sf[i]), b = TJSCALED(h, sf[i]);
		if (sf[i].num != 1)
			continue;
		if (a >= tw && b >= th && a * b < area) {
			area = a * b;
			best = sf[i];
		}
	}
	return best;
}

int
main(int argc, char *argv[])
{
	struct file *fs;
	tjhandle tj;
	unsigned char *out;
	size_t cap = 0;
	double c0, t0, t, seconds = 1.0;
	long passes = 0, done = 0, f0, i, nf, px = 0;
	int ch, max_side = 0;

	while ((ch = getopt(argc, argv, "m:n:t:")) != -1) {
		switch (ch) {
		case 'm':
			max_side = atoi(optarg);
			break;
		case 'n':
			passes = atol(optarg);
			break;
		case 't':
			seconds = atof(optarg);
			break;
		default:
			fprintf(stderr, "usage: tjloop [-m MAXSIDE] "
			    "[-n PASSES | -t SECONDS] file ...\n");
			return 2;
		}
	}
	nf = argc - optind;
	if (nf <= 0) {
		fprintf(stderr, "tjloop: no files\n");
		return 2;
	}
	if (!(tj = tjInitDecompress()) || !(fs = calloc((size_t)nf,
	    sizeof(*fs)))) {
		fprintf(stderr, "tjloop: initialisation failed\n");
		return 1;
	}
	for (i = 0; i < nf; i++) {
		int w, h, ss, cs;
		tjscalingfactor sf;
		fs[i].data = slurp(argv[optind + i], &fs[i].len);
		if (tjDecompressHeader3(tj, fs[i].data, fs[i].len, &w, &h,
		    &ss, &cs) != 0) {
			fprintf(stderr, "tjloop: '%s': %s\n", argv[optind + i],
			    tjGetErrorStr2(tj));
			return 1;
		}
		sf = pick_scale(w, h, max_side);
		fs[i].w = TJSCALED(w, sf);
		fs[i].h = TJSCALED(h, sf);
		px += (long)fs[i].w * fs[i].h;
		if ((size_t)fs[i].w * (size_t)fs[i].h * 3 > cap)
			cap = (size_t)fs[i].w * (size_t)fs[i].h * 3;
	}
	/* Touched before timing: the loop measures decoding, not faults. */
	if (!(out = malloc(cap))) {
		fprintf(stderr, "tjloop: out of memory\n");
		return 1;
	}
	memset(out, 0, cap);

	f0 = minflt();
	c0 = now(CLOCK_PROCESS_CPUTIME_ID);
	t0 = now(CLOCK_MONOTONIC);
	for (;;) {
		for (i = 0; i < nf; i++) {
			int w, h, ss, cs;
			if (tjDecompressHeader3(tj, fs[i].data, fs[i].len, &w,
			    &h, &ss, &cs) != 0 ||
			    tjDecompress2(tj, fs[i].data, fs[i].len, out,
			    fs[i].w, 0, fs[i].h, TJPF_RGB, 0) != 0) {
				fprintf(stderr, "tjloop: '%s': %s\n",
				    argv[optind + i], tjGetErrorStr2(tj));
				return 1;
			}
		}
		done++;
		t = now(CLOCK_MONOTONIC) - t0;
		if (passes ? done >= passes : t >= seconds)
			break;
	}
	printf("images=%ld seconds=%.4f rate=%.1f loop_minflt=%ld "
	    "pixels=%ld loop_cpu=%.4f\n", done * nf, t, (double)(done * nf) / t,
	    minflt() - f0, px, now(CLOCK_PROCESS_CPUTIME_ID) - c0);
	for (i = 0; i < nf; i++)
		free(fs[i].data);
	free(fs);
	free(out);
	tjDestroy(tj);
	return 0;
}
