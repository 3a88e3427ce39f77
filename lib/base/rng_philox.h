/*
 * The Philox4x32-10 block function, shared by lib/base/rng.c and the CUDA
 * kernels (nn_cuda_kern.cuh), which draw the same dropout masks on the
 * device: one definition, for the host and, under nvcc, the device.
 */
#ifndef RV_RNG_PHILOX_H
#define RV_RNG_PHILOX_H

#include <stdint.h>

#ifdef __CUDACC__
#define RV_PHILOX_FN static inline __host__ __device__
#else
#define RV_PHILOX_FN static inline
#endif

RV_PHILOX_FN void
rv_philox_block(uint32_t k0, uint32_t k1, uint32_t c0, uint32_t c1,
    uint32_t c2, uint32_t c3, uint32_t out[4])
{
	int i;

	for (i = 0; i < 10; i++) {
		uint64_t p0 = (uint64_t)0xD2511F53u * c0;
		uint64_t p1 = (uint64_t)0xCD9E8D57u * c2;
		uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
		uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;

		c1 = (uint32_t)p1;
		c3 = (uint32_t)p0;
		c0 = n0;
		c2 = n2;
		k0 += 0x9E3779B9u;	/* the Weyl sequence's constants */
		k1 += 0xBB67AE85u;
	}
	out[0] = c0;
	out[1] = c1;
	out[2] = c2;
	out[3] = c3;
}

#endif
