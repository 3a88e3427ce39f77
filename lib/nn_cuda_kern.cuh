/*
 * The CUDA backend's own kernels (everything cuDNN and cuBLAS do not do),
 * private to nn_cuda.cu.  The per-element arithmetic lives in RV_HD
 * functions, compiled for the host too, so that tests/unit/t_nn_cuda.c
 * checks it against the CPU backend's kernels on machines without a GPU
 * (through the host entry points of nn_cuda_host.h).
 *
 * Activations are T (float or __nv_bfloat16) in NCHW or NHWC; per-sample
 * results, batch-norm statistics, parameters, their gradients and
 * momentum are float.
 */
#ifndef RV_NN_CUDA_KERN_CUH
#define RV_NN_CUDA_KERN_CUH

#include <cuda_bf16.h>
#include <math.h>
#include <stdint.h>

#define RV_HD __host__ __device__ inline

/* Float conversions for both activation types. */
RV_HD float
to_f(float v)
{
	return v;
}

RV_HD float
to_f(__nv_bfloat16 v)
{
	return __bfloat162float(v);
}

template <typename T> RV_HD T from_f(float v);

template <> RV_HD float
from_f<float>(float v)
{
	return v;
}

template <> RV_HD __nv_bfloat16
from_f<__nv_bfloat16>(float v)
{
	return __float2bfloat16_rn(v);
}

/* ---- Philox4x32-10, as lib/rng.c ------------------------------------- */

RV_HD void
philox(uint32_t k0, uint32_t k1, uint32_t c0, uint32_t c1, uint32_t c2,
    uint32_t c3, uint32_t out[4])
{
	for (int i = 0; i < 10; i++) {
		uint64_t p0 = (uint64_t)0xD2511F53u * c0;
		uint64_t p1 = (uint64_t)0xCD9E8D57u * c2;
		uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
		uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;

		c1 = (uint32_t)p1;
		c3 = (uint32_t)p0;
		c0 = n0;
		c2 = n2;
		k0 += 0x9E3779B9u;
		k1 += 0xBB67AE85u;
	}
	out[0] = c0;
	out[1] = c1;
	out[2] = c2;
	out[3] = c3;
}

/*
 * The scale dropout gives element e = ch * hw + j of sample `id`: draw e
 * of the stream rv_rng_init(seed, RV_STAGE_TRAIN, op, step, id) makes,
 * whose key is (k0, k1).  Each Philox block holds two uniforms (a u64 is
 * two u32 words, high first), so draw e is half of block e / 2.
 */
RV_HD float
drop_scale(uint32_t k0, uint32_t k1, uint32_t step, uint64_t id, uint64_t e,
    float p, float scale)
{
	uint32_t o[4];
	uint64_t u;

	philox(k0, k1, (uint32_t)(e >> 1), step, (uint32_t)id,
	    (uint32_t)(id >> 32), o);
	u = (e & 1) ? (uint64_t)o[2] << 32 | o[3] : (uint64_t)o[0] << 32 | o[1];
	return (double)(u >> 11) * 0x1.0p-53 < (double)p ? 0.0f : scale;
}

/* Sample, channel and plane offset of element idx of an [n][c][hw]
 * tensor in NCHW (nhwc 0) or NHWC order. */
RV_HD void
unindex(uint64_t idx, int c, int hw, int nhwc, int *i, int *ch, int *j)
{
	if (nhwc) {
		*ch = (int)(idx % (uint64_t)c);
		idx /= (uint64_t)c;
		*j = (int)(idx % (uint64_t)hw);
		*i = (int)(idx / (uint64_t)hw);
	} else {
		*j = (int)(idx % (uint64_t)hw);
		idx /= (uint64_t)hw;
		*ch = (int)(idx % (uint64_t)c);
		*i = (int)(idx / (uint64_t)c);
	}
}

/*
 * Softmax cross-entropy of one sample, as rv_k_softmax_ce: z[j * zs] for
 * class j; target (1 - ls) onehot + ls / k; dz[j * zs] = (p - q) w / n
 * when dz is not NULL.  Returns the loss; *pq = ||p - q||, *pred the
 * first argmax.
 */
template <typename T>
RV_HD double
softmax_ce1(int k, int n, const T *z, long zs, int label, double w,
    double ls, T *dz, float *pq, int32_t *pred)
{
	double mx = to_f(z[0]), se = 0.0, lse, l = 0.0, d2 = 0.0;
	double on = 1.0 - ls, off = ls / k;
	int am = 0, j;

	for (j = 1; j < k; j++)
		if (to_f(z[j * zs]) > mx) {
			mx = to_f(z[j * zs]);
			am = j;
		}
	for (j = 0; j < k; j++)
		se += exp(to_f(z[j * zs]) - mx);
	lse = mx + log(se);
	for (j = 0; j < k; j++) {
		double zj = to_f(z[j * zs]);
		double q = off + (j == label ? on : 0.0);
		double d = exp(zj - lse) - q;

		l -= q * (zj - lse);
		d2 += d * d;
		if (dz != NULL)
			dz[j * zs] = from_f<T>((float)(d * w / n));
	}
	*pq = (float)sqrt(d2);
	*pred = am;
	return l;
}

/* SGD as rv_k_sgd, one element. */
RV_HD void
sgd1(float *p, float grad, float *v, float lr, float mom, float wd,
    int nesterov)
{
	float g = grad + wd * *p;
	float vj = mom * *v + g;

	*v = vj;
	*p -= lr * (nesterov ? g + mom * vj : vj);
}

/* Where element (ko, ci, r, s) of a KCRS weight goes in KRSC order. */
RV_HD uint64_t
krsc_index(uint64_t kcrs, int c, int rs)
{
	int s = (int)(kcrs % (uint64_t)rs);
	uint64_t t = kcrs / (uint64_t)rs;
	int ci = (int)(t % (uint64_t)c);
	uint64_t ko = t / (uint64_t)c;

	return (ko * rs + s) * c + ci;
}

#endif
