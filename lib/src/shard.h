/*
 * Sharding a dataset over the ranks of a data-parallel job.  The sources
 * (files) are laid end to end in an order, and rank r of n takes the
 * contiguous share [floor(r N / n), floor((r + 1) N / n)) of the N
 * samples: every rank's share is within one sample of every other's, and
 * a rank reads only the files its share touches (whole files, but for at
 * most one at each end of its share, which it shares with a neighbour).
 */
#ifndef RV_SHARD_H
#define RV_SHARD_H

#include <stddef.h>
#include <stdint.h>

/* Rank r of n's share of total samples: [*start, *end). */
void rv_shard_range(uint64_t total, uint32_t r, uint32_t n, uint64_t *start,
    uint64_t *end);

/* Samples [first, first + n) of source src (local indices). */
struct rv_shard_seg {
	size_t src;
	uint64_t first, n;
};

/*
 * Lay sources order[0..nord) end to end, source k holding count[k]
 * samples, and write rank r of n's share as segments, in that order, to
 * seg (room for nord).  Returns the number of segments.
 */
size_t rv_shard_segments(const uint64_t *count, const uint64_t *order,
    size_t nord, uint32_t r, uint32_t n, struct rv_shard_seg *seg);

/*
 * Elastic resume.  An epoch of a job sharded by files lays its samples
 * end to end, positions [0, total); rank r of n serves its share
 * (rv_shard_range) in an order: the share's positions as they lie or,
 * with shuffle, permuted by rv_rng (seed, RV_STAGE_DECODE_ORDER, op 2,
 * epoch, r), the order rv-decode --shuffle serves a rank's samples in;
 * cut to its first `cut` (--even drop, which leaves the rest out of the
 * epoch; UINT64_MAX for none).  The job stopped when rank r had served
 * served_k[r] samples of the epoch (past its share: padding, which
 * serves nothing new).  Mark in served[0..total) each position served or
 * left out; returns how many.
 */
uint64_t rv_shard_served(uint64_t total, uint32_t n, const uint64_t *served_k,
    uint64_t cut, uint64_t seed, uint32_t epoch, int shuffle,
    unsigned char *served);

/*
 * The rank and world size a launcher set in the environment, the first
 * pair found of: RANK and WORLD_SIZE (torchrun, torch.distributed),
 * SLURM_PROCID and SLURM_NTASKS (srun), OMPI_COMM_WORLD_RANK and
 * OMPI_COMM_WORLD_SIZE (Open MPI), PMI_RANK and PMI_SIZE (MPICH, Intel
 * MPI).  0 of 1 when none is set.  *from: "RANK/WORLD_SIZE" and so on,
 * or NULL when none is set.  -1 with rv_errmsg() for a pair half set,
 * not numbers, or a rank not below the size.
 */
int rv_shard_from_env(uint32_t *i, uint32_t *n, const char **from);

#endif
