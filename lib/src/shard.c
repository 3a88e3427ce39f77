#include "src/shard.h"

#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/opt.h"
#include "base/rng.h"
#include "base/xmem.h"

void
rv_shard_range(uint64_t total, uint32_t r, uint32_t n, uint64_t *start,
    uint64_t *end)
{
	uint64_t q = total / n, rem = total % n;

	/* floor(r total / n) without overflow: rem * r < n * n < 2^64 */
	*start = q * r + rem * r / n;
	*end = q * (r + 1) + rem * (r + 1) / n;
}

size_t
rv_shard_segments(const uint64_t *count, const uint64_t *order, size_t nord,
    uint32_t r, uint32_t n, struct rv_shard_seg *seg)
{
	uint64_t total = 0, start, end, at = 0;
	size_t k, nseg = 0;

	for (k = 0; k < nord; k++)
		total += count[order[k]];
	rv_shard_range(total, r, n, &start, &end);
	for (k = 0; k < nord && at < end; k++) {
		uint64_t c = count[order[k]], lo, hi;

		lo = start > at ? start - at : 0;
		hi = end - at < c ? end - at : c;
		if (lo < hi) {
			seg[nseg].src = (size_t)order[k];
			seg[nseg].first = lo;
			seg[nseg].n = hi - lo;
			nseg++;
		}
		at += c;
	}
	return nseg;
}

uint64_t
rv_shard_served(uint64_t total, uint32_t n, const uint64_t *served_k,
    uint64_t cut, uint64_t seed, uint32_t epoch, int shuffle,
    unsigned char *served)
{
	uint64_t start, end, len, i, k, done = 0, *pos = NULL;
	struct rv_rng rng;
	uint32_t r;

	memset(served, 0, (size_t)total);
	for (r = 0; r < n; r++) {
		uint64_t keep;

		rv_shard_range(total, r, n, &start, &end);
		len = end - start;
		keep = len < cut ? len : cut;	/* past it: left out */
		k = served_k[r] < keep ? served_k[r] : keep;
		if (k == 0 && keep == len)
			continue;
		if (!shuffle) {
			memset(served + start, 1, (size_t)k);
			memset(served + start + keep, 1, (size_t)(len - keep));
			done += k + len - keep;
			continue;
		}
		pos = xreallocarray(pos, (size_t)len, sizeof(*pos));
		for (i = 0; i < len; i++)
			pos[i] = start + i;
		rv_rng_init(&rng, seed, RV_STAGE_DECODE_ORDER, 2, epoch, r);
		rv_rng_shuffle_u64(&rng, pos, (size_t)len);
		for (i = 0; i < len; i++)
			if (i < k || i >= keep)
				served[pos[i]] = 1;
		done += k + len - keep;
	}
	free(pos);
	return done;
}

int
rv_shard_from_env(uint32_t *i, uint32_t *n, const char **from)
{
	static const char *const pairs[][3] = {
		{ "RANK", "WORLD_SIZE", "RANK/WORLD_SIZE" },
		{ "SLURM_PROCID", "SLURM_NTASKS", "SLURM_PROCID/SLURM_NTASKS" },
		{ "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
		    "OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE" },
		{ "PMI_RANK", "PMI_SIZE", "PMI_RANK/PMI_SIZE" },
	};
	size_t k;

	*i = 0;
	*n = 1;
	*from = NULL;
	for (k = 0; k < sizeof(pairs) / sizeof(pairs[0]); k++) {
		const char *a = getenv(pairs[k][0]), *b = getenv(pairs[k][1]);
		uint64_t r, w;

		if (!a && !b)
			continue;
		if (!a || !b)
			return rv_seterr("%s is set but not %s", a ?
			    pairs[k][0] : pairs[k][1], a ? pairs[k][1] :
			    pairs[k][0]);
		if (rv_parse_u64(a, 0, UINT32_MAX - 1, &r) < 0)
			return rv_seterr("%s='%s': not a rank", pairs[k][0],
			    a);
		if (rv_parse_u64(b, 1, UINT32_MAX, &w) < 0)
			return rv_seterr("%s='%s': not a world size",
			    pairs[k][1], b);
		if (r >= w)
			return rv_seterr("%s=%s is not below %s=%s",
			    pairs[k][0], a, pairs[k][1], b);
		*i = (uint32_t)r;
		*n = (uint32_t)w;
		*from = pairs[k][2];
		return 0;
	}
	return 0;
}
