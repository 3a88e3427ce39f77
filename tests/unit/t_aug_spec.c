/*
 * The op-spec layer: the parser (every value type, every error with its
 * exact message), the canonical text and its round trip, blank ops, op
 * numbering, the generic p=, the policies' draws and their magnitude
 * tables against torchvision's (pinned from torch 1.13), determinism per
 * (seed, stage, op, epoch, id) and across a split chain, the decode hint's
 * promise, and the registry's own consistency.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "aug/aug.h"
#include "aug/aug_policy.h"
#include "aug/aug_text.h"
#include "base/err.h"
#include "stream/stream.h"
#include "unit.h"

/*
 * torchvision 0.14 (torch 1.13) tables, printed with
 * RandAugment()._augmentation_space(bins, (h, w)) and
 * TrivialAugmentWide()._augmentation_space(bins).
 */
static const float ra_shear[] = {
	0.0f, 0.0100000007f, 0.0200000014f, 0.0300000012f, 0.0400000028f,
	0.0500000045f, 0.0600000024f, 0.0700000077f, 0.0800000057f,
	0.0900000036f, 0.100000009f, 0.110000007f, 0.120000005f, 0.13000001f,
	0.140000015f, 0.150000006f, 0.159999996f, 0.170000002f, 0.180000007f,
	0.189999998f, 0.200000003f, 0.210000008f, 0.219999999f, 0.230000004f,
	0.24000001f, 0.25f, 0.26000002f, 0.270000011f, 0.280000001f,
	0.290000021f, 0.300000012f,
};
static const float ra_translate224[] = {
	0.0f, 3.38368583f, 6.76737165f, 10.1510572f, 13.5347433f, 16.9184284f,
	20.3021145f, 23.6858006f, 27.0694866f, 30.4531727f, 33.8368568f,
	37.2205429f, 40.604229f, 43.987915f, 47.3716011f, 50.7552872f,
	54.1389732f, 57.5226593f, 60.9063454f, 64.2900314f, 67.6737137f,
	71.0574036f, 74.4410858f, 77.8247757f, 81.2084579f, 84.5921478f,
	87.9758301f, 91.35952f, 94.7432022f, 98.1268921f, 101.510574f,
};
static const float ra_rotate[] = {
	0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f, 9.0f, 10.0f,
	11.0f, 12.0f, 13.0f, 14.0f, 15.0f, 16.0f, 17.0f, 18.0f, 19.0f, 20.0f,
	21.0f, 22.0f, 23.0f, 24.0f, 25.0f, 26.0f, 27.0f, 28.0f, 29.0f, 30.0f,
};
static const float ra_enhance[] = {
	0.0f, 0.0299999993f, 0.0599999987f, 0.0899999961f, 0.119999997f,
	0.149999991f, 0.179999992f, 0.209999993f, 0.239999995f, 0.269999981f,
	0.299999982f, 0.329999983f, 0.359999985f, 0.389999986f, 0.419999987f,
	0.449999988f, 0.479999989f, 0.50999999f, 0.539999962f, 0.569999993f,
	0.599999964f, 0.629999995f, 0.659999967f, 0.689999998f, 0.719999969f,
	0.75f, 0.779999971f, 0.810000002f, 0.839999974f, 0.870000005f,
	0.899999976f,
};
static const float ra_solarize[] = {
	255.0f, 246.5f, 238.0f, 229.5f, 221.0f, 212.5f, 204.0f, 195.5f,
	187.0f, 178.5f, 170.0f, 161.5f, 153.0f, 144.5f, 136.0f, 127.5f,
	119.0f, 110.5f, 102.0f, 93.5f, 85.0f, 76.5f, 68.0f, 59.5f, 51.0f,
	42.5f, 34.0f, 25.5f, 17.0f, 8.5f, 0.0f,
};
static const float ra_posterize[] = {
	8.0f, 8.0f, 8.0f, 8.0f, 7.0f, 7.0f, 7.0f, 7.0f, 7.0f, 7.0f, 7.0f,
	7.0f, 6.0f, 6.0f, 6.0f, 6.0f, 6.0f, 6.0f, 6.0f, 5.0f, 5.0f, 5.0f,
	5.0f, 5.0f, 5.0f, 5.0f, 5.0f, 4.0f, 4.0f, 4.0f, 4.0f,
};
static const float ta_shear[] = {
	0.0f, 0.0329999998f, 0.0659999996f, 0.0989999995f, 0.131999999f,
	0.164999992f, 0.197999999f, 0.231000006f, 0.263999999f, 0.296999991f,
	0.329999983f, 0.363000005f, 0.395999998f, 0.42899999f, 0.462000012f,
	0.495000005f, 0.527999997f, 0.56099999f, 0.593999982f, 0.627000034f,
	0.660000026f, 0.693000019f, 0.726000011f, 0.759000003f, 0.791999996f,
	0.824999988f, 0.85800004f, 0.891000032f, 0.924000025f, 0.957000017f,
	0.99000001f,
};
static const float ta_translate[] = {
	0.0f, 1.06666672f, 2.13333344f, 3.20000029f, 4.26666689f, 5.33333349f,
	6.40000057f, 7.46666718f, 8.53333378f, 9.60000038f, 10.666667f,
	11.7333336f, 12.8000011f, 13.8666668f, 14.9333344f, 16.0f,
	17.0666656f, 18.1333332f, 19.1999989f, 20.2666664f, 21.3333321f,
	22.3999996f, 23.4666672f, 24.5333328f, 25.6000004f, 26.666666f,
	27.7333336f, 28.7999992f, 29.8666668f, 30.9333324f, 32.0f,
};
static const float ta_rotate[] = {
	0.0f, 4.5f, 9.0f, 13.5f, 18.0f, 22.5f, 27.0f, 31.5f, 36.0f, 40.5f,
	45.0f, 49.5f, 54.0f, 58.5f, 63.0f, 67.5f, 72.0f, 76.5f, 81.0f, 85.5f,
	90.0f, 94.5f, 99.0f, 103.5f, 108.0f, 112.5f, 117.0f, 121.5f, 126.0f,
	130.5f, 135.0f,
};
static const float ta_enhance[] = {
	0.0f, 0.0329999998f, 0.0659999996f, 0.0989999995f, 0.131999999f,
	0.164999992f, 0.197999999f, 0.231000006f, 0.263999999f, 0.296999991f,
	0.329999983f, 0.363000005f, 0.395999998f, 0.42899999f, 0.462000012f,
	0.495000005f, 0.527999997f, 0.56099999f, 0.593999982f, 0.627000034f,
	0.660000026f, 0.693000019f, 0.726000011f, 0.759000003f, 0.791999996f,
	0.824999988f, 0.85800004f, 0.891000032f, 0.924000025f, 0.957000017f,
	0.99000001f,
};
static const float ta_posterize[] = {
	8.0f, 8.0f, 8.0f, 7.0f, 7.0f, 7.0f, 7.0f, 7.0f, 6.0f, 6.0f, 6.0f,
	6.0f, 6.0f, 5.0f, 5.0f, 5.0f, 5.0f, 5.0f, 4.0f, 4.0f, 4.0f, 4.0f,
	4.0f, 3.0f, 3.0f, 3.0f, 3.0f, 3.0f, 2.0f, 2.0f, 2.0f,
};
static const float ra_translate500_16[] = {
	0.0f, 15.1057405f, 30.2114811f, 45.3172226f, 60.4229622f, 75.5287018f,
	90.6344452f, 105.740181f, 120.845924f, 135.95166f, 151.057404f,
	166.163147f, 181.26889f, 196.374634f, 211.480377f, 226.586105f,
};
static const float ra_translatey331_16[] = {
	0.0f, 10.0f, 20.0f, 30.0f, 40.0f, 50.0f, 60.0f, 70.0f, 80.0f, 90.0f,
	100.0f, 110.0f, 120.0f, 130.0f, 140.0f, 150.0f,
};
static const float ra_translate500_17[] = {
	0.0f, 14.1616316f, 28.3232632f, 42.4848938f, 56.6465263f, 70.8081589f,
	84.9697876f, 99.131424f, 113.293053f, 127.454681f, 141.616318f,
	155.777954f, 169.939575f, 184.101212f, 198.262848f, 212.424469f,
	226.586105f,
};
static const float ra_translatey331_17[] = {
	0.0f, 9.375f, 18.75f, 28.125f, 37.5f, 46.875f, 56.25f, 65.625f, 75.0f,
	84.375f, 93.75f, 103.125f, 112.5f, 121.875f, 131.25f, 140.625f,
	150.0f,
};
static const float ra_translate500_40[] = {
	0.0f, 5.80990028f, 11.6198006f, 17.4297009f, 23.2396011f, 29.0495014f,
	34.8594017f, 40.6693039f, 46.4792023f, 52.2891006f, 58.0990028f,
	63.908905f, 69.7188034f, 75.5287018f, 81.3386078f, 87.1485062f,
	92.9584045f, 98.7683029f, 104.578201f, 110.388107f, 116.198006f,
	122.007904f, 127.81781f, 133.627716f, 139.437607f, 145.247513f,
	151.057404f, 156.86731f, 162.677216f, 168.487106f, 174.297012f,
	180.106903f, 185.916809f, 191.7267f, 197.536606f, 203.346497f,
	209.156403f, 214.966309f, 220.776199f, 226.586105f,
};
static const float ra_translatey331_40[] = {
	0.0f, 3.84615374f, 7.69230747f, 11.5384617f, 15.3846149f, 19.2307682f,
	23.0769234f, 26.9230766f, 30.7692299f, 34.6153831f, 38.4615364f,
	42.3076935f, 46.1538467f, 50.0f, 53.8461533f, 57.6923065f,
	61.5384598f, 65.384613f, 69.2307663f, 73.0769196f, 76.9230728f,
	80.7692261f, 84.615387f, 88.4615326f, 92.3076935f, 96.1538467f,
	100.0f, 103.846153f, 107.692307f, 111.53846f, 115.384613f,
	119.230774f, 123.076927f, 126.92308f, 130.769226f, 134.615387f,
	138.461533f, 142.307693f, 146.153839f, 150.0f,
};
static const float ra_translate500_100[] = {
	0.0f, 2.2887485f, 4.57749701f, 6.86624527f, 9.15499401f, 11.4437428f,
	13.7324905f, 16.0212402f, 18.309988f, 20.5987358f, 22.8874855f,
	25.1762333f, 27.4649811f, 29.7537308f, 32.0424805f, 34.3312302f,
	36.619976f, 38.9087257f, 41.1974716f, 43.4862213f, 45.774971f,
	48.0637207f, 50.3524666f, 52.6412163f, 54.9299622f, 57.2187119f,
	59.5074577f, 61.7962074f, 64.0849533f, 66.373703f, 68.6624527f,
	70.9512024f, 73.2399521f, 75.5287018f, 77.8174515f, 80.1062012f,
	82.3949432f, 84.6836929f, 86.9724426f, 89.2611923f, 91.549942f,
	93.8386917f, 96.1274414f, 98.4161835f, 100.704933f, 102.993683f,
	105.282433f, 107.571182f, 109.859924f, 112.148674f, 114.437424f,
	116.726166f, 119.014915f, 121.303665f, 123.592415f, 125.881165f,
	128.169922f, 130.458664f, 132.747421f, 135.036163f, 137.324921f,
	139.613663f, 141.902405f, 144.191162f, 146.479904f, 148.768646f,
	151.057404f, 153.346146f, 155.634903f, 157.923645f, 160.212402f,
	162.501144f, 164.789902f, 167.078644f, 169.367401f, 171.656143f,
	173.944901f, 176.233643f, 178.5224f, 180.811142f, 183.099884f,
	185.388626f, 187.677383f, 189.966125f, 192.254883f, 194.543625f,
	196.832367f, 199.121124f, 201.409866f, 203.698608f, 205.987366f,
	208.276108f, 210.564865f, 212.853607f, 215.142365f, 217.431107f,
	219.719864f, 222.008606f, 224.297363f, 226.586105f,
};
static const float ra_translatey331_100[] = {
	0.0f, 1.5151515f, 3.030303f, 4.5454545f, 6.060606f, 7.5757575f,
	9.090909f, 10.60606f, 12.121212f, 13.636364f, 15.151515f, 16.666666f,
	18.181818f, 19.69697f, 21.2121201f, 22.727272f, 24.242424f,
	25.757576f, 27.272728f, 28.787878f, 30.30303f, 31.818182f,
	33.3333321f, 34.848484f, 36.363636f, 37.878788f, 39.39394f,
	40.9090919f, 42.4242401f, 43.9393921f, 45.4545441f, 46.969696f,
	48.484848f, 50.0f, 51.515152f, 53.030304f, 54.5454559f, 56.0606041f,
	57.5757561f, 59.0909081f, 60.60606f, 62.121212f, 63.636364f,
	65.1515121f, 66.6666641f, 68.1818161f, 69.6969681f, 71.2121201f,
	72.727272f, 74.242424f, 75.757576f, 77.272728f, 78.7878799f,
	80.3030319f, 81.8181839f, 83.3333282f, 84.8484879f, 86.3636398f,
	87.8787918f, 89.3939438f, 90.9090958f, 92.4242477f, 93.9393997f,
	95.4545441f, 96.969696f, 98.484848f, 100.0f, 101.515152f, 103.030304f,
	104.545456f, 106.060608f, 107.57576f, 109.090912f, 110.606064f,
	112.121216f, 113.636368f, 115.15152f, 116.666672f, 118.181824f,
	119.696976f, 121.21212f, 122.727272f, 124.242424f, 125.757576f,
	127.272728f, 128.787872f, 130.303024f, 131.818176f, 133.333328f,
	134.84848f, 136.363632f, 137.878784f, 139.393936f, 140.909088f,
	142.42424f, 143.939392f, 145.454544f, 146.969696f, 148.484848f,
	150.0f,
};


/* ---- helpers ---- */

/* Parse text; on failure print the message and return -1. */
static int
parse(const char *text, uint32_t first, struct rv_spec *s)
{
	if (rv_spec_parse(text, first, s) < 0) {
		printf("# parse '%s': %s\n", text, rv_errmsg());
		return -1;
	}
	return 0;
}

/* The canonical text of text, or "" (with a note) if it does not parse. */
static const char *
canon(const char *text, char *buf, size_t n)
{
	struct rv_spec s;

	buf[0] = '\0';
	if (parse(text, 0, &s) == 0) {
		snprintf(buf, n, "%s", s.text);
		rv_spec_release(&s);
	}
	return buf;
}

/* The message a bad spec gives ("" if it parses). */
static const char *
error_of(const char *text)
{
	struct rv_spec s;

	if (rv_spec_parse(text, 0, &s) == 0) {
		rv_spec_release(&s);
		return "";
	}
	return rv_errmsg();
}

/* A deterministic h x w x c test picture: gradients and a square. */
static void
picture(struct rv_img *im, uint32_t h, uint32_t w, uint32_t c)
{
	uint32_t y, x, k;

	rv_img_reserve(im, h, w, c);
	for (y = 0; y < h; y++)
		for (x = 0; x < w; x++)
			for (k = 0; k < c; k++)
				im->data[((size_t)y * w + x) * c + k] =
				    (unsigned char)((x * 255 / w + y * 97 / h +
				    k * 60 + ((x / 4 + y / 4) % 2) * 40) & 255);
}

static int
same_img(const struct rv_img *a, const struct rv_img *b)
{
	return a->h == b->h && a->w == b->w && a->c == b->c &&
	    memcmp(a->data, b->data, (size_t)a->h * a->w * a->c) == 0;
}

/* Apply text to a fresh picture for (seed, stage, epoch, id). */
static int
run_spec(const char *text, uint32_t first, struct rv_img *im, uint32_t h,
    uint32_t w, uint32_t c, uint64_t seed, uint32_t stage, uint32_t epoch,
    uint64_t id)
{
	struct rv_spec s;
	struct rv_aug_ctx ctx;
	int rc;

	picture(im, h, w, c);
	if (parse(text, first, &s) < 0)
		return -1;
	rv_aug_ctx_init(&ctx);
	rc = rv_spec_apply(&s, im, &ctx, seed, stage, epoch, id);
	if (rc < 0)
		printf("# apply '%s': %s\n", text, rv_errmsg());
	rv_aug_ctx_release(&ctx);
	rv_spec_release(&s);
	return rc;
}

/* ---- the parser ---- */

static void
t_value_types(void)
{
	struct rv_spec s;
	const struct rv_op *op;

	/* INT, PAIR, ENUM */
	EXPECT(parse("rrc size=224 scale=0.25,1 ratio=0.5,2 interp=bicubic",
	    0, &s) == 0);
	EXPECT_EQ(s.n, 1);
	op = &s.ops[0];
	EXPECT_STR(op->def->name, "rrc");
	EXPECT(op->v[0][0] == 224);
	EXPECT(op->v[1][0] == 0.25 && op->v[1][1] == 1);
	EXPECT(op->v[2][0] == 0.5 && op->v[2][1] == 2);
	EXPECT(op->v[3][0] == 2);
	EXPECT(op->p == 1);
	rv_spec_release(&s);

	/* FLOAT, FILL as r,g,b and as one value, tabs between tokens */
	EXPECT(parse("rotate\tdeg=-12.5  fill=1,2,3 ;rotate fill=7", 0,
	    &s) == 0);
	EXPECT_EQ(s.n, 2);
	EXPECT(s.ops[0].v[0][0] == -12.5);
	EXPECT(s.ops[0].v[2][0] == 1 && s.ops[0].v[2][1] == 2 &&
	    s.ops[0].v[2][2] == 3);
	EXPECT(s.ops[1].v[2][0] == 7 && s.ops[1].v[2][1] == 7 &&
	    s.ops[1].v[2][2] == 7);
	rv_spec_release(&s);

	/* BOOL in every spelling */
	{
		static const char *const t[] = { "1", "yes", "true", "YES",
		    "True" };
		static const char *const f[] = { "0", "no", "false", "No" };
		char text[64];
		size_t i;
		for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
			snprintf(text, sizeof(text), "resize size=9 "
			    "antialias=%s", t[i]);
			EXPECT(parse(text, 0, &s) == 0);
			EXPECT(s.n == 1 && s.ops[0].v[2][0] == 1);
			rv_spec_release(&s);
		}
		for (i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
			snprintf(text, sizeof(text), "resize size=9 "
			    "antialias=%s", f[i]);
			EXPECT(parse(text, 0, &s) == 0);
			EXPECT(s.n == 1 && s.ops[0].v[2][0] == 0);
			rv_spec_release(&s);
		}
	}

	/* the generic p= and its default from the def */
	EXPECT(parse("flip; flip p=0.25; invert; erase", 0, &s) == 0);
	EXPECT(s.ops[0].p == 0.5);
	EXPECT(s.ops[1].p == 0.25);
	EXPECT(s.ops[2].p == 1);
	EXPECT(s.ops[3].p == 0.5);
	rv_spec_release(&s);
}

static void
t_errors(void)
{
	static const struct {
		const char *spec, *msg;
	} t[] = {
		{ "rotat", "op 1: unknown op 'rotat' (did you mean 'rotate'? "
		    "rv-augment --list-ops lists them)" },
		{ "flip; size=3", "op 2: unknown op 'size=3' (rv-augment "
		    "--list-ops lists them)" },
		{ "flip; rotate angel=3", "op 2 'rotate': unknown argument "
		    "'angel' (rotate takes deg, interp, fill, p)" },
		{ "flip; ; flip 3", "op 2 'flip': '3': expected key=value" },
		{ "flip =3", "op 1 'flip': '=3': expected key=value" },
		{ "rrc size=0", "op 1 'rrc': size: '0': out of range "
		    "[1, 65536]" },
		{ "rrc size=22x", "op 1 'rrc': size: '22x': not an integer" },
		{ "rrc size=2.5", "op 1 'rrc': size: '2.5': not an integer" },
		{ "rrc size=", "op 1 'rrc': size: '': not an integer" },
		{ "rrc", "op 1 'rrc': missing argument 'size'" },
		{ "rrc size=3 size=4", "op 1 'rrc': argument 'size' given "
		    "twice" },
		{ "rotate deg=abc", "op 1 'rotate': deg: 'abc': not a "
		    "number" },
		{ "rotate deg=361", "op 1 'rotate': deg: '361': out of range "
		    "[-360, 360]" },
		{ "rotate deg=nan", "op 1 'rotate': deg: 'nan': not a "
		    "number" },
		{ "resize size=3 antialias=maybe", "op 1 'resize': "
		    "antialias: 'maybe': not a boolean (yes, no, true, false, "
		    "1 or 0)" },
		{ "rotate interp=cubic", "op 1 'rotate': interp: 'cubic': "
		    "not one of nearest, bilinear" },
		{ "rrc size=3 interp=Bilinear", "op 1 'rrc': interp: "
		    "'Bilinear': not one of nearest, bilinear, bicubic" },
		{ "rrc size=3 scale=0.5", "op 1 'rrc': scale: '0.5': not a "
		    "pair a,b" },
		{ "rrc size=3 scale=0.1,0.2,0.3", "op 1 'rrc': scale: "
		    "'0.1,0.2,0.3': more than 2 values" },
		{ "rrc size=3 scale=0.9,0.1", "op 1 'rrc': scale: "
		    "'0.9,0.1': the first value is above the second" },
		{ "rrc size=3 scale=0.1,2", "op 1 'rrc': scale: '2': out of "
		    "range [0, 1]" },
		{ "rrc size=3 scale=0.1,", "op 1 'rrc': scale: '': not a "
		    "number" },
		{ "rotate fill=1,2", "op 1 'rotate': fill: '1,2': not v or "
		    "r,g,b" },
		{ "rotate fill=300", "op 1 'rotate': fill: '300': out of "
		    "range [0, 255]" },
		{ "rotate fill=1,2,3,4", "op 1 'rotate': fill: '1,2,3,4': "
		    "more than 3 values" },
		{ "flip p=2", "op 1 'flip': p: '2': out of range [0, 1]" },
		{ "flip p=0.5 p=0.5", "op 1 'flip': argument 'p' given "
		    "twice" },
		{ "randaugment m=31", "op 1 'randaugment': m: '31': out of "
		    "range [0, 30] for bins=31" },
		{ "randaugment bins=11 m=11", "op 1 'randaugment': m: '11': "
		    "out of range [0, 10] for bins=11" },
		{ "randaugment n=17", "op 1 'randaugment': n: '17': out of "
		    "range [0, 16]" },
		{ "trivialaugment bins=1", "op 1 'trivialaugment': bins: "
		    "'1': out of range [2, 1000]" },
	};
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		EXPECT_STR(error_of(t[i].spec), t[i].msg);
	/* a failed parse leaves nothing to release, and a clean struct */
	{
		struct rv_spec s;
		EXPECT(rv_spec_parse("flip; rotat", 0, &s) < 0);
		EXPECT(s.ops == NULL && s.n == 0 && s.text == NULL);
		rv_spec_release(&s);
	}
}

static void
t_blank_ops(void)
{
	struct rv_spec s;

	EXPECT(parse("", 0, &s) == 0);
	EXPECT_EQ(s.n, 0);
	EXPECT_STR(s.text, "");
	rv_spec_release(&s);
	EXPECT(parse(" ;\t; \n", 0, &s) == 0);
	EXPECT_EQ(s.n, 0);
	EXPECT_STR(s.text, "");
	rv_spec_release(&s);
	EXPECT(parse(";flip;; invert ;", 0, &s) == 0);
	EXPECT_EQ(s.n, 2);
	EXPECT_STR(s.text, "flip p=0.5; invert p=1");
	rv_spec_release(&s);
}

static void
t_canonical(void)
{
	char a[1024], b[1024];
	const struct rv_op_def *const *d;

	EXPECT_STR(canon("rrc size=224; flip; randaugment n=2 m=9 "
	    "interp=bilinear", a, sizeof(a)),
	    "rrc size=224 scale=0.08,1 ratio=0.75,1.3333333333333333 "
	    "interp=bilinear p=1; flip p=0.5; randaugment n=2 m=9 bins=31 "
	    "interp=bilinear fill=0 p=1");
	EXPECT_STR(canon("random_crop size=32 padding=4", a, sizeof(a)),
	    "random_crop size=32 padding=4 fill=0 pad_mode=constant p=1");
	EXPECT_STR(canon("rotate deg=1e1 fill=1,1,1 p=.5", a, sizeof(a)),
	    "rotate deg=10 interp=nearest fill=1 p=0.5");
	EXPECT_STR(error_of("rotate fill=0,128,255.5"), "op 1 'rotate': "
	    "fill: '255.5': out of range [0, 255]");
	EXPECT_STR(canon("rotate fill=0,128,25.5 deg=-0", a, sizeof(a)),
	    "rotate deg=0 interp=nearest fill=0,128,25.5 p=1");
	EXPECT_STR(canon("resize size=7 antialias=no", a, sizeof(a)),
	    "resize size=7 interp=bilinear antialias=0 p=1");
	EXPECT_STR(canon("brightness f=0.1", a, sizeof(a)),
	    "brightness f=0.1 p=1");
	EXPECT_STR(canon("brightness f=0.30000000000000004", a, sizeof(a)),
	    "brightness f=0.30000000000000004 p=1");
	EXPECT_STR(canon("erase value=1,2,3 random=true", a, sizeof(a)),
	    "erase scale=0.02,0.33 ratio=0.3,3.3 value=1,2,3 random=1 "
	    "p=0.5");

	/* parse(canonical(x)) == canonical(x), for every op */
	for (d = rv_ops(); *d; d++) {
		char spec[256];
		size_t k, j = 0;
		j += (size_t)snprintf(spec + j, sizeof(spec) - j, "%s",
		    (*d)->name);
		for (k = 0; (*d)->args[k].name; k++) {
			const struct rv_arg_def *ar = &(*d)->args[k];
			if ((ar->type == RV_ARG_INT ||
			    ar->type == RV_ARG_FLOAT) &&
			    (ar->def[0] < ar->min || ar->def[0] > ar->max))
				j += (size_t)snprintf(spec + j,
				    sizeof(spec) - j, " %s=%.17g", ar->name,
				    ar->min);
		}
		canon(spec, a, sizeof(a));
		EXPECT(a[0] != '\0');
		canon(a, b, sizeof(b));
		if (strcmp(a, b) != 0)
			printf("# '%s' -> '%s' -> '%s'\n", spec, a, b);
		EXPECT_STR(a, b);
	}
	/* and for a chain with odd values */
	canon("rrc size=3 scale=0.1234567,0.7 ratio=0.333,3; rotate "
	    "deg=33.333333333 fill=1,2,3 p=0.123456789; jitter hue=0.1 "
	    "brightness=0.4", a, sizeof(a));
	canon(a, b, sizeof(b));
	EXPECT(a[0] != '\0');
	EXPECT_STR(a, b);
}

static void
t_indices(void)
{
	struct rv_spec s;

	EXPECT(parse("flip;; invert; rrc size=3", 7, &s) == 0);
	EXPECT_EQ(s.n, 3);
	EXPECT_EQ(s.ops[0].index, 7);
	EXPECT_EQ(s.ops[1].index, 8);
	EXPECT_EQ(s.ops[2].index, 9);
	rv_spec_release(&s);
}

/* ---- applying ---- */

static void
t_p_zero_one(void)
{
	struct rv_img ref = { 0 }, im = { 0 };
	uint64_t id;
	size_t i, n = 32 * 24 * 3;
	int applied = 0;

	picture(&ref, 24, 32, 3);
	for (id = 0; id < 200; id++) {
		EXPECT(run_spec("invert p=0", 0, &im, 24, 32, 3, 1,
		    RV_STAGE_AUGMENT, 0, id) == 0);
		EXPECT(same_img(&im, &ref));
		EXPECT(run_spec("invert p=1", 0, &im, 24, 32, 3, 1,
		    RV_STAGE_AUGMENT, 0, id) == 0);
		for (i = 0; i < n; i++)
			if (im.data[i] != 255 - ref.data[i])
				break;
		EXPECT(i == n);
	}
	/* p=0.3 applies about 30% of the time (binomial sd 1.45%) */
	for (id = 0; id < 1000; id++) {
		EXPECT(run_spec("invert p=0.3", 0, &im, 4, 4, 1, 9,
		    RV_STAGE_AUGMENT, 2, id) == 0);
		picture(&ref, 4, 4, 1);
		applied += !same_img(&im, &ref);
	}
	printf("# invert p=0.3: %d of 1000\n", applied);
	EXPECT(applied > 250 && applied < 350);
	rv_img_release(&ref);
	rv_img_release(&im);
}

static void
t_randaugment_draws(void)
{
	unsigned count[RA_NOPS] = { 0 }, neg[RA_NOPS] = { 0 };
	struct rv_policy_draw d;
	struct rv_rng g;
	uint64_t id;
	const unsigned n = 28000;
	double chi = 0, e = (double)n / RA_NOPS;
	int o;

	for (id = 0; id < n; id++) {
		rv_rng_init(&g, 5, RV_STAGE_AUGMENT, 3, 1, id);
		rv_randaugment_draw(&g, 31, 9, 224, 224, &d);
		EXPECT((unsigned)d.op < RA_NOPS);
		EXPECT_EQ(d.bin, 9);
		count[d.op]++;
		if (d.mag < 0)
			neg[d.op]++;
		EXPECT(fabs(d.mag) == rv_policy_magnitude(d.op, 31, 9, 224,
		    224, 0));
	}
	for (o = 0; o < RA_NOPS; o++)
		chi += (count[o] - e) * (count[o] - e) / e;
	/* 13 degrees of freedom: p = 0.001 at 34.5 */
	printf("# randaugment op chi-square %.1f\n", chi);
	EXPECT(chi < 34.5);
	for (o = 0; o < RA_NOPS; o++) {
		if (rv_policy_signed(o)) {
			/* half negative: sd of the count is ~22 */
			EXPECT(fabs(neg[o] - count[o] / 2.0) < 100);
		} else {
			EXPECT_EQ(neg[o], 0);
		}
	}
	EXPECT(rv_policy_signed(RA_SHEAR_X) && rv_policy_signed(RA_SHARPNESS));
	EXPECT(!rv_policy_signed(RA_POSTERIZE) &&
	    !rv_policy_signed(RA_IDENTITY) && !rv_policy_signed(RA_EQUALIZE));
	EXPECT_STR(rv_policy_op_name(RA_TRANSLATE_Y), "TranslateY");
}

static void
t_trivialaugment_draws(void)
{
	unsigned bins[31] = { 0 }, ops[RA_NOPS] = { 0 };
	struct rv_policy_draw d;
	struct rv_rng g;
	uint64_t id;
	double chi = 0, e;
	int b, o;

	for (id = 0; id < 31000; id++) {
		rv_rng_init(&g, 5, RV_STAGE_AUGMENT, 0, 0, id);
		rv_trivialaugment_draw(&g, 31, 32, 32, &d);
		ops[d.op]++;
		if (d.op == RA_IDENTITY || d.op == RA_AUTOCONTRAST ||
		    d.op == RA_EQUALIZE) {
			EXPECT(d.bin == 0 && d.mag == 0);
			continue;
		}
		EXPECT(d.bin < 31);
		bins[d.bin]++;
		EXPECT(fabs(d.mag) == rv_policy_magnitude(d.op, 31, d.bin,
		    32, 32, 1));
	}
	e = 0;
	for (b = 0; b < 31; b++)
		e += bins[b];
	e /= 31;
	for (b = 0; b < 31; b++)
		chi += (bins[b] - e) * (bins[b] - e) / e;
	/* 30 degrees of freedom: p = 0.001 at 59.7 */
	printf("# trivialaugment bin chi-square %.1f\n", chi);
	EXPECT(chi < 59.7);
	for (o = 0; o < RA_NOPS; o++)
		EXPECT(ops[o] > 1900 && ops[o] < 2550);
}

/* Compare a whole magnitude table with torchvision's. */
static void
table_is(enum ra_op o, uint32_t bins, uint32_t h, uint32_t w, int wide,
    const float *want)
{
	uint32_t i;
	int bad = 0;

	for (i = 0; i < bins; i++) {
		float got = (float)rv_policy_magnitude(o, bins, i, h, w,
		    wide);
		if (got != want[i] && bad++ < 3)
			printf("# %s bins %u bin %u: %.9g != %.9g\n",
			    rv_policy_op_name(o), bins, i, got, want[i]);
	}
	EXPECT_EQ(bad, 0);
}

static void
t_tables(void)
{
	table_is(RA_SHEAR_X, 31, 224, 224, 0, ra_shear);
	table_is(RA_SHEAR_Y, 31, 224, 224, 0, ra_shear);
	table_is(RA_TRANSLATE_X, 31, 224, 224, 0, ra_translate224);
	table_is(RA_TRANSLATE_Y, 31, 224, 224, 0, ra_translate224);
	table_is(RA_ROTATE, 31, 224, 224, 0, ra_rotate);
	table_is(RA_BRIGHTNESS, 31, 224, 224, 0, ra_enhance);
	table_is(RA_COLOR, 31, 224, 224, 0, ra_enhance);
	table_is(RA_CONTRAST, 31, 224, 224, 0, ra_enhance);
	table_is(RA_SHARPNESS, 31, 224, 224, 0, ra_enhance);
	table_is(RA_SOLARIZE, 31, 224, 224, 0, ra_solarize);
	table_is(RA_SOLARIZE, 31, 224, 224, 1, ra_solarize);
	table_is(RA_POSTERIZE, 31, 224, 224, 0, ra_posterize);
	table_is(RA_SHEAR_X, 31, 9, 9, 1, ta_shear);
	table_is(RA_TRANSLATE_Y, 31, 9, 9, 1, ta_translate);
	table_is(RA_ROTATE, 31, 9, 9, 1, ta_rotate);
	table_is(RA_SHARPNESS, 31, 9, 9, 1, ta_enhance);
	table_is(RA_POSTERIZE, 31, 9, 9, 1, ta_posterize);
	/* the vectorised part of torch.linspace (16 bins and more) */
	table_is(RA_TRANSLATE_X, 16, 331, 500, 0, ra_translate500_16);
	table_is(RA_TRANSLATE_X, 17, 331, 500, 0, ra_translate500_17);
	table_is(RA_TRANSLATE_X, 40, 331, 500, 0, ra_translate500_40);
	table_is(RA_TRANSLATE_X, 100, 331, 500, 0, ra_translate500_100);
	table_is(RA_TRANSLATE_Y, 16, 331, 500, 0, ra_translatey331_16);
	table_is(RA_TRANSLATE_Y, 17, 331, 500, 0, ra_translatey331_17);
	table_is(RA_TRANSLATE_Y, 40, 331, 500, 0, ra_translatey331_40);
	table_is(RA_TRANSLATE_Y, 100, 331, 500, 0, ra_translatey331_100);
	/* the figures the man page quotes */
	EXPECT((int)rv_policy_magnitude(RA_TRANSLATE_X, 31, 9, 224, 224,
	    0) == 30);
	EXPECT(rv_policy_magnitude(RA_POSTERIZE, 31, 9, 1, 1, 0) == 7);
	EXPECT(rv_policy_magnitude(RA_SOLARIZE, 31, 9, 1, 1, 0) == 178.5);
	EXPECT(rv_policy_magnitude(RA_IDENTITY, 31, 9, 1, 1, 0) == 0);
	/* posterize with ties: bins 9 gives 8 8 7 6 6 6 5 4 4 */
	{
		static const int want[9] = { 8, 8, 7, 6, 6, 6, 5, 4, 4 };
		uint32_t i;
		for (i = 0; i < 9; i++)
			EXPECT(rv_policy_magnitude(RA_POSTERIZE, 9, i, 1, 1,
			    0) == want[i]);
	}
}

/* Every policy op runs on grey and RGB pictures of awkward sizes. */
static void
t_policies_run(void)
{
	struct rv_img im = { 0 };
	uint64_t id;

	for (id = 0; id < 60; id++) {
		EXPECT(run_spec("randaugment n=4 m=30", 0, &im, 17, 23, 3, 1,
		    RV_STAGE_AUGMENT, 0, id) == 0);
		EXPECT(im.h == 17 && im.w == 23 && im.c == 3);
		EXPECT(run_spec("randaugment n=3 m=0 interp=bilinear fill=9",
		    0, &im, 8, 5, 1, 1, RV_STAGE_AUGMENT, 0, id) == 0);
		EXPECT(run_spec("trivialaugment interp=bilinear fill=1,2,3",
		    0, &im, 31, 16, 3, 2, RV_STAGE_AUGMENT, 1, id) == 0);
		EXPECT(run_spec("trivialaugment; identity", 0, &im, 1, 1, 1, 2,
		    RV_STAGE_AUGMENT, 1, id) == 0);
		EXPECT(im.h == 1 && im.w == 1 && im.c == 1);
	}
	/* n=0 is the identity */
	{
		struct rv_img ref = { 0 };
		picture(&ref, 9, 9, 3);
		EXPECT(run_spec("randaugment n=0; identity", 0, &im, 9, 9, 3,
		    1, RV_STAGE_AUGMENT, 0, 1) == 0);
		EXPECT(same_img(&im, &ref));
		rv_img_release(&ref);
	}
	rv_img_release(&im);
}

static void
t_determinism(void)
{
	static const char spec[] = "rrc size=12; jitter brightness=0.4 "
	    "contrast=0.4 saturation=0.4 hue=0.1; erase p=1 random=1; "
	    "randaugment";
	struct rv_img a = { 0 }, b = { 0 };

	EXPECT(run_spec(spec, 0, &a, 40, 30, 3, 11, RV_STAGE_AUGMENT, 3,
	    77) == 0);
	EXPECT(run_spec(spec, 0, &b, 40, 30, 3, 11, RV_STAGE_AUGMENT, 3,
	    77) == 0);
	EXPECT(same_img(&a, &b));
	EXPECT(a.h == 12 && a.w == 12);
	/* every part of the key matters */
	EXPECT(run_spec(spec, 0, &b, 40, 30, 3, 12, RV_STAGE_AUGMENT, 3,
	    77) == 0);
	EXPECT(!same_img(&a, &b));
	EXPECT(run_spec(spec, 0, &b, 40, 30, 3, 11, RV_STAGE_FINAL, 3,
	    77) == 0);
	EXPECT(!same_img(&a, &b));
	EXPECT(run_spec(spec, 0, &b, 40, 30, 3, 11, RV_STAGE_AUGMENT, 4,
	    77) == 0);
	EXPECT(!same_img(&a, &b));
	EXPECT(run_spec(spec, 0, &b, 40, 30, 3, 11, RV_STAGE_AUGMENT, 3,
	    78) == 0);
	EXPECT(!same_img(&a, &b));
	EXPECT(run_spec(spec, 1, &b, 40, 30, 3, 11, RV_STAGE_AUGMENT, 3,
	    77) == 0);
	EXPECT(!same_img(&a, &b));
	rv_img_release(&a);
	rv_img_release(&b);
}

/* "a; b" equals "a" (ops from 0) then "b" (ops from 1). */
static void
t_split_chain(void)
{
	struct rv_spec whole, first, second;
	struct rv_aug_ctx ctx;
	struct rv_img a = { 0 }, b = { 0 };
	uint64_t id;

	EXPECT(parse("rrc size=16; flip; randaugment n=2 m=9; erase", 0,
	    &whole) == 0);
	EXPECT(parse("rrc size=16; flip", 0, &first) == 0);
	EXPECT(parse("randaugment n=2 m=9; erase", 2, &second) == 0);
	rv_aug_ctx_init(&ctx);
	for (id = 0; id < 50; id++) {
		picture(&a, 33, 21, 3);
		picture(&b, 33, 21, 3);
		EXPECT(rv_spec_apply(&whole, &a, &ctx, 4, RV_STAGE_AUGMENT, 1,
		    id) == 0);
		EXPECT(rv_spec_apply(&first, &b, &ctx, 4, RV_STAGE_AUGMENT, 1,
		    id) == 0);
		EXPECT(rv_spec_apply(&second, &b, &ctx, 4, RV_STAGE_AUGMENT,
		    1, id) == 0);
		EXPECT(same_img(&a, &b));
	}
	rv_aug_ctx_release(&ctx);
	rv_spec_release(&whole);
	rv_spec_release(&first);
	rv_spec_release(&second);
	rv_img_release(&a);
	rv_img_release(&b);
}

/* ---- the decode hint ---- */

static uint32_t
hint(const char *text, uint32_t h, uint32_t w)
{
	struct rv_spec s;
	uint32_t r = 0;

	if (parse(text, 0, &s) == 0) {
		r = rv_spec_decode_hint(&s, h, w);
		rv_spec_release(&s);
	}
	return r;
}

/* torchvision Resize(size): the shorter side to s. */
static void
resized(uint32_t h, uint32_t w, uint32_t s, uint32_t *oh, uint32_t *ow)
{
	uint32_t lo = w <= h ? w : h, hi = w <= h ? h : w;
	uint32_t nl = (uint32_t)((double)((uint64_t)s * hi) / lo);

	*oh = w <= h ? nl : s;
	*ow = w <= h ? s : nl;
}

static void
t_decode_hint(void)
{
	uint32_t h, w, s, l, rh, rw, eh, ew, oh, ow;
	int hinted = 0;

	/* resize 256 of 750x1000: 342 would give 257x342 -> 256x340 */
	EXPECT_EQ(hint("resize size=256", 750, 1000), 343);
	EXPECT_EQ(hint("resize size=256; center_crop size=224", 1000, 750),
	    343);
	EXPECT_EQ(hint("resize size=400", 750, 1000), 0);
	EXPECT_EQ(hint("resize size=256 p=0.9", 750, 1000), 0);
	EXPECT_EQ(hint("flip; resize size=256", 750, 1000), 0);
	EXPECT_EQ(hint("center_crop size=100", 750, 1000), 0);
	EXPECT_EQ(hint("", 750, 1000), 0);
	/* rrc: ImageNet-sized photos keep every pixel at scale 0.08; a
	 * 12-megapixel one: the smallest crop is 848 px, 226 are needed */
	EXPECT_EQ(hint("rrc size=224", 375, 500), 0);
	EXPECT_EQ(hint("rrc size=224", 3000, 4000), 1066);
	/* smallest crop of 3000x4000 at 0.5 and 3/4: 2121 px */
	l = hint("rrc size=224 scale=0.5,1", 3000, 4000);
	EXPECT(l > 0 && l <= 2000);
	printf("# rrc size=224 scale=0.5,1 of 4000x3000: %u\n", l);
	EXPECT_EQ(hint("rrc size=224 scale=0,1", 3000, 4000), 0);

	/* the promise, over many shapes */
	for (h = 40; h < 3000; h = h * 5 / 4 + 7) {
		for (w = 40; w < 3000; w = w * 4 / 3 + 5) {
			for (s = 8; s < 600; s = s * 2 + 1) {
				char spec[64];
				snprintf(spec, sizeof(spec), "resize size=%u",
				    s);
				l = hint(spec, h, w);
				if (l) {
					hinted++;
					EXPECT(2 * l <= (h > w ? h : w));
					rv_fit_max_side(h, w, l, &rh, &rw);
					EXPECT((rh < rw ? rh : rw) >= s);
					resized(h, w, s, &eh, &ew);
					resized(rh, rw, s, &oh, &ow);
					EXPECT(oh == eh && ow == ew);
				}
				snprintf(spec, sizeof(spec), "rrc size=%u "
				    "scale=0.3,1 ratio=0.5,1.5", s);
				l = hint(spec, h, w);
				if (l) {
					double m;
					hinted++;
					EXPECT(2 * l <= (h > w ? h : w));
					rv_fit_max_side(h, w, l, &rh, &rw);
					/* the smallest crop side possible */
					m = sqrt((double)rh * rw * 0.3 * 0.5);
					EXPECT(m >= s + 1);
				}
			}
		}
	}
	printf("# %d hints checked\n", hinted);
	EXPECT(hinted > 100);
}

/* ---- the registry ---- */

static void
t_registry(void)
{
	const struct rv_op_def *const *d, *const *e;
	static const char *const family[] = { "geometry", "colour", "policy" };
	size_t fam = 0, nops = 0;
	struct rv_buf list = { 0 };

	rv_ops_describe(&list);
	rv_buf_append(&list, "", 1);
	for (d = rv_ops(); *d; d++, nops++) {
		const struct rv_op_def *def = *d;
		char head[128];
		size_t k;
		/* families in order: geometry, colour, policy */
		while (fam < 3 && strcmp(def->family, family[fam]) != 0)
			fam++;
		EXPECT(fam < 3);
		EXPECT(rv_op_find(def->name) == def);
		for (e = d + 1; *e; e++)
			EXPECT(strcmp((*e)->name, def->name) != 0);
		EXPECT(def->help && *def->help && def->apply);
		EXPECT(def->p_default >= 0 && def->p_default <= 1);
		for (k = 0; def->args[k].name; k++) {
			const struct rv_arg_def *a = &def->args[k];
			EXPECT(strcmp(a->name, "p") != 0);
			EXPECT(a->help && *a->help);
			EXPECT(a->type != RV_ARG_ENUM || (a->choices &&
			    a->def[0] >= 0));
		}
		EXPECT(k <= RV_AUG_MAXARGS);
		snprintf(head, sizeof(head), "\n%s (%s): ", def->name,
		    def->family);
		EXPECT(strstr((char *)list.data, head) != NULL ||
		    strncmp((char *)list.data, head + 1,
		    strlen(head + 1)) == 0);
	}
	EXPECT(rv_op_find("nope") == NULL);
	EXPECT(rv_op_find("randaugment") != NULL);
	EXPECT(nops >= 29);
	rv_buf_release(&list);
}

int
main(void)
{
	rv_setprogname("t_aug_spec");
	RUN(t_value_types);
	RUN(t_errors);
	RUN(t_blank_ops);
	RUN(t_canonical);
	RUN(t_indices);
	RUN(t_p_zero_one);
	RUN(t_randaugment_draws);
	RUN(t_trivialaugment_draws);
	RUN(t_tables);
	RUN(t_policies_run);
	RUN(t_determinism);
	RUN(t_split_chain);
	RUN(t_decode_hint);
	RUN(t_registry);
	return UNIT_DONE();
}
