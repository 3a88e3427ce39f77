/*
 * The op registry and the per-thread working memory of the augmentation
 * modules.  The registry joins the families' tables (geometry, colour,
 * policy) in that order, once, so rv_ops() is a fixed list that the spec
 * parser, --list-ops and the man-page test all read the same way.
 */
#include "aug/aug.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "aug/aug_impl.h"
#include "base/err.h"
#include "base/xmem.h"

#define MAXOPS	256

static const struct rv_op_def *registry[MAXOPS + 1];
static pthread_once_t registry_once = PTHREAD_ONCE_INIT;

static void
registry_build(void)
{
	const struct rv_op_def *const *fam[] = {
		rv_geom_ops, rv_colour_ops, rv_policy_ops
	};
	size_t f, i, n = 0;

	for (f = 0; f < sizeof(fam) / sizeof(fam[0]); f++)
		for (i = 0; fam[f][i] != NULL && n < MAXOPS; i++)
			registry[n++] = fam[f][i];
	registry[n] = NULL;
}

const struct rv_op_def *const *
rv_ops(void)
{
	pthread_once(&registry_once, registry_build);
	return registry;
}

const struct rv_op_def *
rv_op_find(const char *name)
{
	const struct rv_op_def *const *d;

	for (d = rv_ops(); *d != NULL; d++)
		if (strcmp((*d)->name, name) == 0)
			return *d;
	return NULL;
}

/* The bound in pixels for an op on img: its input is let in already. */
static uint64_t
bound(const struct rv_img *img)
{
	uint64_t in = (uint64_t)img->h * img->w;

	return in > RV_AUG_MAX_PIXELS ? in : RV_AUG_MAX_PIXELS;
}

int
rv_aug_check_size(const struct rv_img *img, uint64_t h, uint64_t w)
{
	uint64_t lim = bound(img);

	/* The sides of an rv_img first, so that the product cannot wrap. */
	if (h <= UINT32_MAX && w <= UINT32_MAX && h * w <= lim)
		return 0;
	return rv_seterr("makes a %llux%llu image, over the %llu-pixel limit",
	    (unsigned long long)w, (unsigned long long)h,
	    (unsigned long long)lim);
}

int
rv_aug_check_work(const struct rv_img *img, double n)
{
	double lim = (double)bound(img) * 4;

	if (n <= lim)
		return 0;
	return rv_seterr("needs %.0f bytes to work in, over the %.0f-byte "
	    "limit", n, lim);
}

void
rv_aug_ctx_init(struct rv_aug_ctx *ctx)
{
	memset(ctx, 0, sizeof(*ctx));
}

void
rv_aug_ctx_release(struct rv_aug_ctx *ctx)
{
	rv_img_release(&ctx->tmp);
	free(ctx->scratch);
	memset(ctx, 0, sizeof(*ctx));
}

void
rv_aug_tmp(struct rv_aug_ctx *ctx, uint32_t h, uint32_t w, uint32_t c)
{
	rv_img_reserve(&ctx->tmp, h, w, c);
}

void
rv_aug_swap(struct rv_img *img, struct rv_aug_ctx *ctx)
{
	struct rv_img t = *img;

	*img = ctx->tmp;
	ctx->tmp = t;
}

/*
 * Grows by at least half again, so a worker whose images vary in size
 * settles on one buffer quickly.  The contents are kept (xrealloc): an op
 * may ask twice while it works.
 */
void *
rv_aug_scratch(struct rv_aug_ctx *ctx, size_t n)
{
	if (n > ctx->scratch_cap) {
		size_t cap = ctx->scratch_cap + ctx->scratch_cap / 2;
		if (cap < n)
			cap = n;
		ctx->scratch = xrealloc(ctx->scratch, cap);
		ctx->scratch_cap = cap;
	}
	return ctx->scratch;
}
