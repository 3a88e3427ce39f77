/*
 * The CUDA backend: trains a whole struct rv_net on one device, with
 * cuDNN for convolutions and (fp32, tf32) batch norm, cuBLAS for linear
 * layers, and the kernels of nn_cuda_kern.cuh for the rest (input
 * normalisation, ReLU, residual adds, pools, dropout, bf16 batch norm,
 * the loss with its per-sample gradient norms, SGD).  Built when nvcc
 * is found (Makefile, CUDA=0 skips it); the same struct rv_nn_ops as the
 * CPU backend.  It is the plugin librv-cuda.so, alone in linking the CUDA
 * libraries, which nn_cuda_load.c opens when a program asks for it: its
 * entry points are those of nn_cuda_plugin.h (and nn_cuda_host.h's for
 * the tests), and the rv_* functions it calls are the program's own.
 *
 * Memory.  Everything is sized for batch_max and allocated in create():
 * one output tensor a layer (ReLU and residual adds in place where
 * nothing reads their input again), two gradient buffers used in turn,
 * one cuDNN workspace sized by the convolution algorithms chosen.  A
 * smaller batch uses the first n samples' worth of each tensor.
 *
 * Algorithms.  Only deterministic ones, each convolution's forward,
 * backward-data and backward-filter algorithm chosen at create(): by
 * default cuDNN's heuristic choice (cudnnGet*Algorithm_v7), the first
 * deterministic one that fits the workspace, which depends only on the
 * device, cuDNN and the shapes, so a run repeats bit for bit on the same
 * device.  With config.tune every one is timed on the real tensors
 * (cudnnFind*AlgorithmEx) and the fastest kept: faster where the
 * heuristics guess wrong, but timing noise can pick another algorithm
 * in the next run, and another algorithm rounds otherwise.  Layers of
 * the same geometry share the result.  A batch of another size takes
 * the heuristic choice that fits the workspace.
 *
 * Input.  A step copies the batch into one of two pinned host buffers
 * and uploads it on a transfer stream, which waits only for the step two
 * back to be done with that slot; the compute stream waits for the
 * upload.  With config.async the step returns once queued and its
 * per-sample results (loss, gradient norm, prediction: computed on the
 * device) come back with an asynchronous copy that wait() collects, so
 * the next batch is copied and uploaded while this one computes.
 *
 * Precision.  FP32 and TF32 keep activations in fp32 NCHW; BF16 keeps
 * them in bf16 NHWC (channels-last, what cuDNN's tensor-core kernels
 * want), with bf16 copies of the convolution and linear weights made
 * from the fp32 master weights before each step, and weight gradients
 * widened back to fp32 for the update.  Batch norm keeps fp32 scale,
 * shift and statistics in every mode; no loss scaling is needed for bf16.
 *
 * Slots.  Input slot s on the host and the device: u8 pixels (padded to
 * 8 bytes), then ids, labels and weights, batch_max of each.  Output
 * slot s (pinned): loss, gradient norm and prediction, batch_max each.
 */
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "base/err.h"
#include "base/rng.h"
#include "nn/nn.h"
}
#include "nn/nn_cuda_host.h"
#include "nn/nn_cuda_kern.cuh"
#include "nn/nn_cuda_plugin.h"

typedef __nv_bfloat16 bf16;

#define NSLOT 2			/* input and output buffers in turn */
#define TPB 256			/* threads a block, elementwise */
#define MIN_WS ((size_t)64 << 20)	/* the least cuDNN workspace */

/* ---- Errors ----------------------------------------------------------- */

#define CK(call) do {							\
	cudaError_t e_ = (call);					\
	if (e_ != cudaSuccess)						\
		return rv_seterr("cuda: %s: %s", #call,			\
		    cudaGetErrorString(e_));				\
} while (0)
#define DK(call) do {							\
	cudnnStatus_t s_ = (call);					\
	if (s_ != CUDNN_STATUS_SUCCESS)					\
		return rv_seterr("cudnn: %s: %s", #call,		\
		    cudnnGetErrorString(s_));				\
} while (0)
#define BK(call) do {							\
	cublasStatus_t s_ = (call);					\
	if (s_ != CUBLAS_STATUS_SUCCESS)				\
		return rv_seterr("cublas: %s: %s", #call,		\
		    cublasGetStatusString(s_));				\
} while (0)
/* A kernel launch: its configuration errors show at once. */
#define LAUNCHED() CK(cudaGetLastError())

/* ---- Kernels ---------------------------------------------------------- */

static unsigned
blocks(uint64_t n)
{
	uint64_t b = (n + TPB - 1) / TPB;

	return (unsigned)(b > 65535u * 8 ? 65535u * 8 : (b ? b : 1));
}

#define GRID_LOOP(idx, len)						\
	for (uint64_t idx = (uint64_t)blockIdx.x * blockDim.x +		\
	    threadIdx.x; idx < (len);					\
	    idx += (uint64_t)gridDim.x * blockDim.x)

/* u8 HWC samples -> T in NCHW or NHWC through the per-channel table
 * lut[ch][v] = (v / 255 - mean) / std, the CPU's exact values. */
template <typename T>
__global__ void
k_input(int n, int h, int w, int c, int nhwc, const uint8_t *px,
    const float *lut, T *x)
{
	uint64_t len = (uint64_t)n * c * h * w;
	int hw = h * w;

	GRID_LOOP(idx, len) {
		int ch;
		uint64_t at = input_src(idx, c, hw, nhwc, &ch);

		x[idx] = from_f<T>(lut[ch * 256 + px[at]]);
	}
}

template <typename T>
__global__ void
k_relu_fwd(uint64_t len, const T *x, T *y)
{
	GRID_LOOP(idx, len) {
		float v = to_f(x[idx]);

		y[idx] = from_f<T>(v > 0.0f ? v : 0.0f);
	}
}

template <typename T>
__global__ void
k_relu_bwd(uint64_t len, const T *y, const T *dy, T *dx)
{
	GRID_LOOP(idx, len)
		dx[idx] = to_f(y[idx]) > 0.0f ? dy[idx] : from_f<T>(0.0f);
}

template <typename T>
__global__ void
k_add(uint64_t len, const T *a, const T *b, T *y)
{
	GRID_LOOP(idx, len)
		y[idx] = from_f<T>(to_f(a[idx]) + to_f(b[idx]));
}

template <typename T>
__global__ void
k_dropout_fwd(int n, int c, int hw, int nhwc, float p, float scale,
    uint32_t k0, uint32_t k1, uint32_t step, const uint64_t *ids,
    const T *x, T *y, float *mask)
{
	uint64_t len = (uint64_t)n * c * hw;

	GRID_LOOP(idx, len) {
		int i, ch, j;
		float s;

		unindex(idx, c, hw, nhwc, &i, &ch, &j);
		s = drop_scale(k0, k1, step, ids[i], (uint64_t)ch * hw + j,
		    p, scale);
		mask[idx] = s;
		y[idx] = from_f<T>(to_f(x[idx]) * s);
	}
}

template <typename T>
__global__ void
k_scale(uint64_t len, const float *mask, const T *dy, T *dx)
{
	GRID_LOOP(idx, len)
		dx[idx] = from_f<T>(to_f(dy[idx]) * mask[idx]);
}

/* y += b[channel] */
template <typename T>
__global__ void
k_bias_add(int n, int c, int hw, int nhwc, const float *b, T *y)
{
	uint64_t len = (uint64_t)n * c * hw;

	GRID_LOOP(idx, len) {
		int i, ch, j;

		unindex(idx, c, hw, nhwc, &i, &ch, &j);
		y[idx] = from_f<T>(to_f(y[idx]) + b[ch]);
	}
}

/* The sum of every thread's s in a block of TPB threads, in a tree
 * fixed by the block size (deterministic); valid in thread 0. */
template <typename A>
__device__ A
block_sum(A s)
{
	__shared__ A part[TPB];

	part[threadIdx.x] = s;
	__syncthreads();
	for (int k = TPB / 2; k > 0; k /= 2) {
		if ((int)threadIdx.x < k)
			part[threadIdx.x] += part[threadIdx.x + k];
		__syncthreads();
	}
	return part[0];
}

/* out[ch] = sum of dy over samples and plane: a block a channel. */
template <typename T>
__global__ void
k_chan_sum(int n, int c, int hw, int nhwc, const T *dy, float *out)
{
	int ch = blockIdx.x;
	uint64_t m = (uint64_t)n * hw;
	float s = 0.0f;

	for (uint64_t t = threadIdx.x; t < m; t += blockDim.x)
		s += to_f(dy[pool_at(nhwc, c, 1, hw, (int)(t / hw), ch, 0,
		    (int)(t % hw))]);
	s = block_sum<float>(s);
	if (threadIdx.x == 0)
		out[ch] = s;
}

/* fp32 KCRS -> bf16 (KRSC when nhwc), and back for the gradients. */
__global__ void
k_cast_w(uint64_t len, int c, int rs, int nhwc, const float *src, bf16 *dst)
{
	GRID_LOOP(idx, len)
		dst[nhwc ? krsc_index(idx, c, rs) : idx] =
		    __float2bfloat16_rn(src[idx]);
}

__global__ void
k_uncast_w(uint64_t len, int c, int rs, int nhwc, const bf16 *src,
    float *dst)
{
	GRID_LOOP(idx, len)
		dst[idx] = __bfloat162float(src[nhwc ?
		    krsc_index(idx, c, rs) : idx]);
}

/* [n][c][hw] between NHWC and NCHW (to_nchw 1: NHWC -> NCHW). */
template <typename T>
__global__ void
k_permute(int n, int c, int hw, int to_nchw, const T *src, T *dst)
{
	uint64_t len = (uint64_t)n * c * hw;

	GRID_LOOP(idx, len)
		dst[idx] = src[permute_src(idx, c, hw, to_nchw)];
}

/* Loss, ||p - q||, prediction and dz for each sample; logits z[n][k]. */
template <typename T>
__global__ void
k_softmax_ce(int k, int n, const T *z, const int32_t *label,
    const float *wt, float ls, float *loss, T *dz, float *pq, int32_t *pred)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= n)
		return;
	loss[i] = (float)softmax_ce1<T>(k, n, z + (uint64_t)i * k, 1,
	    label[i], wt != NULL ? wt[i] : 1.0, ls,
	    dz != NULL ? dz + (uint64_t)i * k : NULL, &pq[i], &pred[i]);
}

/* gn[i] = pq[i] sqrt(||h_i||^2 + bias), h[n][f] the last layer's input. */
template <typename T>
__global__ void
k_gradnorm(int n, uint64_t f, const T *h, int bias, const float *pq,
    float *gn)
{
	int i = blockIdx.x;
	double s = 0.0;

	for (uint64_t j = threadIdx.x; j < f; j += blockDim.x) {
		double v = to_f(h[(uint64_t)i * f + j]);

		s += v * v;
	}
	s = block_sum<double>(s);
	if (threadIdx.x == 0)
		gn[i] = (float)(pq[i] * sqrt(s + (bias ? 1.0 : 0.0)));
}

__global__ void
k_sgd(uint64_t len, float *p, const float *g, float *v, float lr, float mom,
    float wd, int nesterov)
{
	GRID_LOOP(idx, len)
		sgd1(&p[idx], g[idx], &v[idx], lr, mom, wd, nesterov);
}

/* Batch norm, NHWC (bf16): see nn_cuda_kern.cuh.  part is
 * [chunks][2][C]: each chunk's two sums. */
template <typename T>
__global__ void
k_bn_part(enum bn_sum what, int C, uint64_t m, int chunks, const T *x,
    const T *dy, const float *mean, const float *invstd, double *part)
{
	__shared__ double sa[BN_TR][BN_TC], sb[BN_TR][BN_TC];
	int ch = blockIdx.x * BN_TC + threadIdx.x, k = blockIdx.y;
	uint64_t lo, hi;
	double a = 0.0, b = 0.0;

	bn_chunk(m, chunks, k, &lo, &hi);
	if (ch < C)
		bn_acc<T>(what, C, ch, lo, hi, threadIdx.y, x, dy,
		    mean != NULL ? mean[ch] : 0.0f,
		    invstd != NULL ? invstd[ch] : 0.0f, &a, &b);
	sa[threadIdx.y][threadIdx.x] = a;
	sb[threadIdx.y][threadIdx.x] = b;
	__syncthreads();
	if (threadIdx.y == 0 && ch < C) {
		for (int t = 1; t < BN_TR; t++) {
			a += sa[t][threadIdx.x];
			b += sb[t][threadIdx.x];
		}
		part[(uint64_t)k * 2 * C + ch] = a;
		part[((uint64_t)k * 2 + 1) * C + ch] = b;
	}
}

__global__ void
k_bn_stats(int C, uint64_t m, int chunks, const double *part, int var,
    float *mean, float *invstd, float *rmean, float *rvar, float mom)
{
	int ch = blockIdx.x * blockDim.x + threadIdx.x;

	if (ch < C)
		bn_stats1(ch, C, m, chunks, part, var, mean, invstd, rmean,
		    rvar, mom);
}

__global__ void
k_bn_gsum(int C, int chunks, const double *part, float *dgamma,
    float *dbeta)
{
	int ch = blockIdx.x * blockDim.x + threadIdx.x;

	if (ch < C)
		bn_gsum1(ch, C, chunks, part, dgamma, dbeta);
}

/* Training: (a, b) = the batch's mean and 1/std; evaluation (eval 1):
 * the running mean and variance. */
template <typename T>
__global__ void
k_bn_apply(int C, uint64_t len, int eval, const T *x, const float *a,
    const float *b, const float *gamma, const float *beta, T *y)
{
	GRID_LOOP(idx, len) {
		int ch = (int)(idx % (uint64_t)C);
		float v = to_f(x[idx]);

		y[idx] = from_f<T>(eval ? bn_eval(v, a[ch], b[ch], gamma[ch],
		    beta[ch]) : bn_y(v, a[ch], b[ch], gamma[ch], beta[ch]));
	}
}

template <typename T>
__global__ void
k_bn_dx(int C, uint64_t len, double m, const T *x, const T *dy,
    const float *mean, const float *invstd, const float *gamma,
    const float *dgamma, const float *dbeta, T *dx)
{
	GRID_LOOP(idx, len) {
		int ch = (int)(idx % (uint64_t)C);

		dx[idx] = from_f<T>(bn_dx(to_f(x[idx]), to_f(dy[idx]),
		    mean[ch], invstd[ch], gamma[ch], dgamma[ch], dbeta[ch],
		    m));
	}
}

/* Pools: an output element a thread forward, an input element a thread
 * backward (gathering its windows: no atomics). */
template <typename T>
__global__ void
k_pool_fwd(struct pool_g g, const T *x, T *y, int32_t *argmax)
{
	uint64_t len = (uint64_t)g.n * g.c * g.oh * g.ow;

	GRID_LOOP(idx, len) {
		int32_t at;

		y[idx] = from_f<T>(pool_fwd1<T>(&g, x, idx, &at));
		if (argmax != NULL)
			argmax[idx] = at;
	}
}

template <typename T>
__global__ void
k_pool_bwd(struct pool_g g, const T *dy, const int32_t *argmax, T *dx)
{
	uint64_t len = (uint64_t)g.n * g.c * g.h * g.w;

	GRID_LOOP(idx, len)
		dx[idx] = from_f<T>(pool_bwd1<T>(&g, dy, argmax, idx));
}

/* ---- The backend ------------------------------------------------------ */

struct algos {
	cudnnConvolutionFwdAlgo_t fwd;
	cudnnConvolutionBwdDataAlgo_t bwd;
	cudnnConvolutionBwdFilterAlgo_t wgt;
	cudnnMathType_t mf, mb, mw;
	size_t ws;		/* the most of the three's workspaces */
};

struct conv {
	cudnnFilterDescriptor_t wd;
	cudnnConvolutionDescriptor_t cf, cb, cw;	/* one a direction:
							 * math types differ */
	struct algos tuned;	/* for batch_max */
	struct algos cur;	/* for the batch size of the descriptors */
	int ci, co, k;		/* weight [co][ci][k][k] */
	int need_dx;		/* its input needs a gradient */
	cudnnMathType_t math0;	/* the precision's math type */
	int stride, pad;
	struct rv_shape in;
};

struct cu_layer {
	void *y;		/* output; aliases the input for RES and
				 * in-place RELU/ADD */
	cudnnTensorDescriptor_t yd;	/* output, for the current n */
	cudnnTensorDescriptor_t bnd;	/* BN, ADD proj: scale/shift desc */
	struct conv cv;		/* CONV, ADD proj */
	int has_conv;
	float *save_mean, *save_invstd;	/* BN, ADD proj */
	float *mask;		/* DROPOUT */
	int32_t *argmax;	/* MAXPOOL: each output's winner */
	void *sc_x;		/* ADD proj: the 1x1 conv's output */
	void *dsc;		/* RES: gradient come through the shortcut */
	void *xt;		/* LINEAR in NHWC with h*w > 1: its input
				 * in NCHW order, which backward reads */
	size_t off;		/* its parameters on the device (params,
				 * grads, mom, wh): 256-byte aligned */
	int inplace, needg;
};

struct dev_in {			/* one input slot, on the device */
	uint8_t *px;
	int32_t *labels;
	float *weights;
	uint64_t *ids;
};

struct cu {
	struct rv_net net;	/* layers copied; spec not kept */
	int batch_max, async;
	int tune;		/* config.tune: time the algorithms */
	int dev_ready;		/* a device is set: CUDA state exists */
	enum rv_precision prec;
	int nhwc;		/* bf16 */
	size_t tsz;		/* bytes an activation */
	cudnnDataType_t dt;
	cudnnTensorFormat_t fmt;
	uint64_t seed;
	float ls;		/* eval()'s label smoothing */
	struct cu_layer *l;
	cudnnHandle_t dnn;
	cublasHandle_t blas;
	cudaStream_t cs, ts;	/* compute, transfer */
	cudnnTensorDescriptor_t xd;	/* the input */
	int cur_n;		/* batch size the descriptors are set for */

	/* Device, fp32: parameters, gradients and momentum in the canonical
	 * order but each layer's block 256-byte aligned (cl->off), for the
	 * tensor-core kernels; zeros between blocks.  Buffers canonical. */
	float *params, *grads, *mom, *bufs;
	size_t dev_np;		/* floats of params, grads, mom */
	float *stage;		/* host: dev_np floats, for packing */
	bf16 *wh;		/* bf16: weight copies, params' offsets */
	bf16 *gwh;		/* bf16: one conv weight gradient */
	float *lut;		/* [4][256] input table */
	void *x;		/* the input tensor */
	void *g[2];		/* gradient buffers (and forward scratch) */
	void *lin_dx;		/* LINEAR NHWC h*w > 1: dx in NCHW */
	double *bn_part;	/* NHWC batch norm: the chunks' sums */
	float *pq, *d_loss, *d_gn;
	int32_t *d_pred;
	void *ws;
	size_t ws_size;

	/* Input and output slots (see the top of this file). */
	size_t px_pad;		/* bytes of pixels a slot, 8-aligned */
	uint8_t *h_in[NSLOT];	/* pinned */
	struct dev_in d_in[NSLOT];
	void *d_in_base[NSLOT];
	cudaEvent_t ev_up[NSLOT], ev_done[NSLOT];
	char *h_out[NSLOT];	/* pinned: loss, gn, pred */
	struct rv_nn_out pend_out[NSLOT];
	int pend_n[NSLOT];
	int slot;		/* the next step's */
	int inflight;
	char desc[320];
};

/* The input of layer i and its descriptor. */
static void *
lin(struct cu *c, int i)
{
	return i > 0 ? c->l[i - 1].y : c->x;
}

static cudnnTensorDescriptor_t
lind(struct cu *c, int i)
{
	return i > 0 ? c->l[i - 1].yd : c->xd;
}

/* Weights as the convolution or GEMM reads them. */
static void *
wptr(struct cu *c, size_t off)
{
	if (c->prec == RV_PREC_BF16)
		return c->wh + off;
	return c->params + off;
}

static const float one = 1.0f, zero = 0.0f;

/* lut[ch][v] = (v / 255 - mean) / std: rv_k_input's values. */
static void
input_lut(int c, const float *mean, const float *std, float *lut)
{
	for (int i = 0; i < 4 * 256; i++) {
		int ch = i / 256 < c ? i / 256 : 0;

		lut[i] = ((float)(i % 256) / 255.0f - mean[ch]) / std[ch];
	}
}

/* A MAXPOOL, AVGPOOL or GAP layer over n samples. */
static struct pool_g
pool_geom(const struct cu *c, const struct rv_layer *ly, int n)
{
	struct pool_g g;

	g.n = n;
	g.c = ly->in.c;
	g.h = ly->in.h;
	g.w = ly->in.w;
	g.oh = ly->outs.h;
	g.ow = ly->outs.w;
	g.nhwc = c->nhwc;
	g.max = ly->kind == RV_LAYER_MAXPOOL;
	if (ly->kind == RV_LAYER_GAP) {
		g.kh = ly->in.h;
		g.kw = ly->in.w;
		g.stride = 1;
		g.pad = 0;
	} else {
		g.kh = g.kw = ly->k;
		g.stride = ly->stride;
		g.pad = ly->pad;
	}
	return g;
}

/* ---- Descriptors and algorithms -------------------------------------- */

static int
conv_init(struct cu *c, struct conv *cv, int ci, int co, int k, int stride,
    int pad, struct rv_shape in)
{
	cudnnConvolutionDescriptor_t *d[3] = { &cv->cf, &cv->cb, &cv->cw };
	cudnnMathType_t m = c->prec == RV_PREC_FP32 ? CUDNN_FMA_MATH :
	    c->prec == RV_PREC_TF32 ? CUDNN_DEFAULT_MATH :
	    CUDNN_TENSOR_OP_MATH;

	cv->ci = ci;
	cv->co = co;
	cv->k = k;
	cv->stride = stride;
	cv->pad = pad;
	cv->in = in;
	cv->math0 = m;
	DK(cudnnCreateFilterDescriptor(&cv->wd));
	DK(cudnnSetFilter4dDescriptor(cv->wd, c->dt, c->fmt, co, ci, k, k));
	for (int j = 0; j < 3; j++) {
		DK(cudnnCreateConvolutionDescriptor(d[j]));
		DK(cudnnSetConvolution2dDescriptor(*d[j], pad, pad, stride,
		    stride, 1, 1, CUDNN_CROSS_CORRELATION,
		    CUDNN_DATA_FLOAT));
		DK(cudnnSetConvolutionMathType(*d[j], m));
	}
	return 0;
}

/* FP32: FMA kernels only (DEFAULT_MATH allows TF32 on Ampere and
 * later); TF32: never down-converted to fp16; BF16: anything. */
static int
math_ok(const struct cu *c, cudnnMathType_t m)
{
	if (c->prec == RV_PREC_FP32)
		return m == CUDNN_FMA_MATH;
	if (c->prec == RV_PREC_TF32)
		return m != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
	return 1;
}

static int
set_math(struct conv *cv, const struct algos *a)
{
	DK(cudnnSetConvolutionMathType(cv->cf, a->mf));
	DK(cudnnSetConvolutionMathType(cv->cb, a->mb));
	DK(cudnnSetConvolutionMathType(cv->cw, a->mw));
	return 0;
}

/* The first deterministic algorithm of perf[0..got) within fit bytes
 * (cuDNN lists them fastest first), its math type, and the workspace. */
#define PICK(perf, got, fit, out, mout) do {				\
	int k_;								\
	for (k_ = 0; k_ < (got); k_++)					\
		if ((perf)[k_].status == CUDNN_STATUS_SUCCESS &&	\
		    (perf)[k_].determinism == CUDNN_DETERMINISTIC &&	\
		    math_ok(c, (perf)[k_].mathType) &&			\
		    (perf)[k_].memory <= (fit))				\
			break;						\
	if (k_ == (got))						\
		return rv_seterr("cudnn: no deterministic algorithm "	\
		    "fits %zu bytes of workspace", (size_t)(fit));	\
	(out) = (perf)[k_].algo;					\
	(mout) = (perf)[k_].mathType;					\
	if ((perf)[k_].memory > a->ws)					\
		a->ws = (perf)[k_].memory;				\
} while (0)

/*
 * Algorithms for each direction of a convolution: with `find`, every one
 * timed on the real tensors (x, y, w, dw, dx, workspace ws: batch_max)
 * and the fastest deterministic one that fits `fit` bytes kept; without,
 * cuDNN's first deterministic suggestion for the descriptors as set now
 * that fits (no tensors needed).
 */
static int
choose(struct cu *c, struct conv *cv, cudnnTensorDescriptor_t xd, void *x,
    cudnnTensorDescriptor_t yd, void *y, void *w, void *dw, void *dx,
    void *ws, size_t fit, int find, struct algos *a)
{
	cudnnConvolutionFwdAlgoPerf_t pf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
	cudnnConvolutionBwdDataAlgoPerf_t pb[
	    CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
	cudnnConvolutionBwdFilterAlgoPerf_t pw[
	    CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
	int got;

	a->ws = 0;
	if (find)
		DK(cudnnFindConvolutionForwardAlgorithmEx(c->dnn, xd, x,
		    cv->wd, w, cv->cf, yd, y,
		    CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, pf, ws, fit));
	else
		DK(cudnnGetConvolutionForwardAlgorithm_v7(c->dnn, xd, cv->wd,
		    cv->cf, yd, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, pf));
	PICK(pf, got, fit, a->fwd, a->mf);
	a->bwd = CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
	a->mb = cv->math0;
	if (cv->need_dx) {
		if (find)
			DK(cudnnFindConvolutionBackwardDataAlgorithmEx(c->dnn,
			    cv->wd, w, yd, y, cv->cb, xd, dx,
			    CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &got, pb,
			    ws, fit));
		else
			DK(cudnnGetConvolutionBackwardDataAlgorithm_v7(c->dnn,
			    cv->wd, yd, cv->cb, xd,
			    CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &got, pb));
		PICK(pb, got, fit, a->bwd, a->mb);
	}
	if (find)
		DK(cudnnFindConvolutionBackwardFilterAlgorithmEx(c->dnn, xd, x,
		    yd, y, cv->cw, cv->wd, dw,
		    CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &got, pw, ws,
		    fit));
	else
		DK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(c->dnn, xd,
		    yd, cv->cw, cv->wd,
		    CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &got, pw));
	PICK(pw, got, fit, a->wgt, a->mw);
	return set_math(cv, a);
}

static int
set4d(struct cu *c, cudnnTensorDescriptor_t d, int n, struct rv_shape s)
{
	DK(cudnnSetTensor4dDescriptor(d, c->fmt, c->dt, n, s.c, s.h, s.w));
	return 0;
}

/* The proj conv of ADD layer i reads its RES layer's input. */
static cudnnTensorDescriptor_t
proj_xd(struct cu *c, int i)
{
	return c->l[c->net.layers[i].res].yd;
}

/* Point every tensor descriptor at batch size n, with algorithms to
 * match: the tuned ones at batch_max, else heuristics. */
static int
set_batch(struct cu *c, int n)
{
	int i;

	if (n == c->cur_n)
		return 0;
	c->cur_n = 0;		/* until every descriptor is set */
	if (set4d(c, c->xd, n, c->net.in) < 0)
		return -1;
	for (i = 0; i < c->net.nlayers; i++)
		if (set4d(c, c->l[i].yd, n, c->net.layers[i].outs) < 0)
			return -1;
	for (i = 0; i < c->net.nlayers; i++) {
		struct cu_layer *cl = &c->l[i];
		cudnnTensorDescriptor_t xd;

		if (!cl->has_conv)
			continue;
		xd = c->net.layers[i].kind == RV_LAYER_CONV ? lind(c, i) :
		    proj_xd(c, i);
		if (n == c->batch_max) {
			cl->cv.cur = cl->cv.tuned;
			if (set_math(&cl->cv, &cl->cv.cur) < 0)
				return -1;
		} else if (choose(c, &cl->cv, xd, NULL, cl->yd, NULL, NULL,
		    NULL, NULL, NULL, c->ws_size, 0, &cl->cv.cur) < 0)
			return rv_preferr("cuda: layer %d, batch of %d", i + 1,
			    n);
	}
	c->cur_n = n;
	return 0;
}

/* ---- Set-up ----------------------------------------------------------- */

static void
mark_layers(struct cu *c)
{
	const struct rv_net *net = &c->net;

	for (int i = 0; i < net->nlayers; i++) {
		const struct rv_layer *ly = &net->layers[i];
		struct cu_layer *cl = &c->l[i];
		int din = i > 0 && c->l[i - 1].needg;
		enum rv_layer_kind prev = i > 0 ? net->layers[i - 1].kind :
		    RV_LAYER_CONV;
		/* RELU's backward reads its output; RES is read by its
		 * shortcut.  Nothing else's backward reads its output. */
		int keep = prev == RV_LAYER_RES || prev == RV_LAYER_RELU;

		cl->inplace = (ly->kind == RV_LAYER_RELU ||
		    ly->kind == RV_LAYER_ADD) && !keep;
		cl->needg = rv_layer_needg(ly, din);
	}
}

/* A device allocation, counted for the message when it fails. */
static int
dalloc(void *p, size_t bytes, size_t *total)
{
	void **pp = (void **)p;

	*total += bytes;
	if (bytes == 0) {
		*pp = NULL;
		return 0;
	}
	if (cudaMalloc(pp, bytes) != cudaSuccess) {
		*pp = NULL;
		(void)cudaGetLastError();
		return rv_seterr("cuda: out of device memory after %.0f MiB "
		    "(%.0f MiB more asked)", (*total - bytes) / 1048576.0,
		    bytes / 1048576.0);
	}
	return 0;
}

/* Each layer's parameters at a 256-byte boundary on the device. */
static void
layout_params(struct cu *c)
{
	size_t off = 0;

	for (int i = 0; i < c->net.nlayers; i++) {
		off = (off + 63) & ~(size_t)63;
		c->l[i].off = off;
		off += c->net.layers[i].nparam;
	}
	c->dev_np = ((off + 63) & ~(size_t)63) + 64;
}

/* Canonical parameters (or momentum) into the device layout in stage. */
static void
pack(struct cu *c, const float *canon)
{
	memset(c->stage, 0, c->dev_np * sizeof(float));
	for (int i = 0; i < c->net.nlayers; i++) {
		const struct rv_layer *ly = &c->net.layers[i];

		memcpy(c->stage + c->l[i].off, canon + ly->param_off,
		    ly->nparam * sizeof(float));
	}
}

static void
unpack(struct cu *c, float *canon)
{
	for (int i = 0; i < c->net.nlayers; i++) {
		const struct rv_layer *ly = &c->net.layers[i];

		memcpy(canon + ly->param_off, c->stage + c->l[i].off,
		    ly->nparam * sizeof(float));
	}
}

static int
alloc_all(struct cu *c)
{
	const struct rv_net *net = &c->net;
	size_t bm = (size_t)c->batch_max, gmax = rv_shape_len(net->in) * bm;
	size_t tot = 0, maxw = 0, maxlin = 0, ts = c->tsz, maxpart = 0;
	int i;

	if (dalloc(&c->params, c->dev_np * 4, &tot) < 0 ||
	    dalloc(&c->grads, c->dev_np * 4, &tot) < 0 ||
	    dalloc(&c->mom, c->dev_np * 4, &tot) < 0 ||
	    dalloc(&c->bufs, net->nbufs * 4, &tot) < 0 ||
	    dalloc(&c->lut, 4 * 256 * 4, &tot) < 0 ||
	    dalloc(&c->x, rv_shape_len(net->in) * bm * ts, &tot) < 0)
		return -1;
	if (c->prec == RV_PREC_BF16 &&
	    dalloc(&c->wh, c->dev_np * sizeof(bf16), &tot) < 0)
		return -1;
	for (i = 0; i < net->nlayers; i++) {
		const struct rv_layer *ly = &net->layers[i];
		struct cu_layer *cl = &c->l[i];
		size_t out = rv_shape_len(ly->outs) * bm;

		if (out > gmax)
			gmax = out;
		if (!cl->inplace && ly->kind != RV_LAYER_RES &&
		    dalloc(&cl->y, out * ts, &tot) < 0)
			return -1;
		if (ly->kind == RV_LAYER_BN || (ly->kind == RV_LAYER_ADD &&
		    ly->proj)) {
			size_t np = (size_t)bn_chunks(bm *
			    rv_shape_hw(ly->outs)) * 2 * ly->outs.c;

			if (np > maxpart)
				maxpart = np;
		}
		switch (ly->kind) {
		case RV_LAYER_CONV:
			if (rv_layer_wlen(ly) > maxw)
				maxw = rv_layer_wlen(ly);
			break;
		case RV_LAYER_BN:
			if (dalloc(&cl->save_mean, ly->in.c * 4, &tot) < 0 ||
			    dalloc(&cl->save_invstd, ly->in.c * 4, &tot) < 0)
				return -1;
			break;
		case RV_LAYER_DROPOUT:
			if (dalloc(&cl->mask, out * 4, &tot) < 0)
				return -1;
			break;
		case RV_LAYER_MAXPOOL:
			if (dalloc(&cl->argmax, out * 4, &tot) < 0)
				return -1;
			break;
		case RV_LAYER_LINEAR:
			if (c->nhwc && rv_shape_hw(ly->in) > 1) {
				if (dalloc(&cl->xt, rv_shape_len(ly->in) * bm *
				    ts, &tot) < 0)
					return -1;
				if (rv_shape_len(ly->in) * bm > maxlin)
					maxlin = rv_shape_len(ly->in) * bm;
			}
			break;
		case RV_LAYER_RES:
			if (i > 0 && c->l[i - 1].needg &&
			    dalloc(&cl->dsc, rv_shape_len(ly->in) * bm * ts,
			    &tot) < 0)
				return -1;
			break;
		case RV_LAYER_ADD:
			if (!ly->proj)
				break;
			if (dalloc(&cl->sc_x, out * ts, &tot) < 0 ||
			    dalloc(&cl->save_mean, ly->outs.c * 4, &tot) < 0 ||
			    dalloc(&cl->save_invstd, ly->outs.c * 4, &tot) < 0)
				return -1;
			if ((size_t)ly->outs.c *
			    net->layers[ly->res].in.c > maxw)
				maxw = (size_t)ly->outs.c *
				    net->layers[ly->res].in.c;
			break;
		default:
			break;
		}
	}
	if (dalloc(&c->g[0], gmax * ts, &tot) < 0 ||
	    dalloc(&c->g[1], gmax * ts, &tot) < 0 ||
	    dalloc(&c->pq, bm * 4, &tot) < 0 ||
	    dalloc(&c->d_loss, bm * 4, &tot) < 0 ||
	    dalloc(&c->d_gn, bm * 4, &tot) < 0 ||
	    dalloc(&c->d_pred, bm * 4, &tot) < 0)
		return -1;
	if (c->prec == RV_PREC_BF16 &&
	    dalloc(&c->gwh, maxw * sizeof(bf16), &tot) < 0)
		return -1;
	if (maxlin > 0 && dalloc(&c->lin_dx, maxlin * ts, &tot) < 0)
		return -1;
	if (c->nhwc && dalloc(&c->bn_part, maxpart * sizeof(double), &tot) < 0)
		return -1;
	c->px_pad = (rv_shape_len(net->in) * bm + 7) & ~(size_t)7;
	for (i = 0; i < NSLOT; i++) {
		size_t in_bytes = c->px_pad + bm * 16;
		char *b;

		if (dalloc(&c->d_in_base[i], in_bytes, &tot) < 0)
			return -1;
		if (cudaMallocHost((void **)&c->h_in[i], in_bytes) !=
		    cudaSuccess || cudaMallocHost((void **)&c->h_out[i],
		    bm * 12) != cudaSuccess) {
			(void)cudaGetLastError();
			return rv_seterr("cuda: %.0f MiB of pinned host "
			    "memory: out of memory", (double)(in_bytes +
			    bm * 12) / 1048576.0);
		}
		b = (char *)c->d_in_base[i];
		c->d_in[i].px = (uint8_t *)b;
		c->d_in[i].ids = (uint64_t *)(b + c->px_pad);
		c->d_in[i].labels = (int32_t *)(b + c->px_pad + bm * 8);
		c->d_in[i].weights = (float *)(b + c->px_pad + bm * 12);
	}
	return 0;
}

static int
create_descs(struct cu *c)
{
	const struct rv_net *net = &c->net;

	DK(cudnnCreateTensorDescriptor(&c->xd));
	for (int i = 0; i < net->nlayers; i++) {
		const struct rv_layer *ly = &net->layers[i];
		struct cu_layer *cl = &c->l[i];

		DK(cudnnCreateTensorDescriptor(&cl->yd));
		switch (ly->kind) {
		case RV_LAYER_CONV:
			cl->has_conv = 1;
			if (conv_init(c, &cl->cv, ly->in.c, ly->out, ly->k,
			    ly->stride, ly->pad, ly->in) < 0)
				return -1;
			cl->cv.need_dx = i > 0 && c->l[i - 1].needg;
			break;
		case RV_LAYER_ADD:
			if (!ly->proj)
				break;
			cl->has_conv = 1;
			if (conv_init(c, &cl->cv, net->layers[ly->res].in.c,
			    ly->outs.c, 1, ly->proj_stride, 0,
			    net->layers[ly->res].in) < 0)
				return -1;
			cl->cv.need_dx = ly->res > 0 &&
			    c->l[ly->res - 1].needg;
			[[fallthrough]];
		case RV_LAYER_BN:
			DK(cudnnCreateTensorDescriptor(&cl->bnd));
			break;
		default:
			break;
		}
	}
	return 0;
}

/* Descriptors at batch_max, batch-norm parameter descriptors, and every
 * convolution's algorithms at batch_max: within what memory is left (at
 * most 4 GiB), timed in a scratch workspace of that size with c->tune,
 * else cuDNN's heuristics. */
static int
plan_convs(struct cu *c)
{
	const struct rv_net *net = &c->net;
	size_t fre, total, fit, need = 0;
	void *scratch = NULL;
	int i, rc = -1;

	c->cur_n = 0;
	for (i = 0; i < net->nlayers; i++)
		if (set4d(c, c->l[i].yd, c->batch_max, net->layers[i].outs) < 0)
			return -1;
	if (set4d(c, c->xd, c->batch_max, net->in) < 0)
		return -1;
	for (i = 0; i < net->nlayers; i++)
		if (c->l[i].bnd != NULL)
			DK(cudnnDeriveBNTensorDescriptor(c->l[i].bnd,
			    c->l[i].yd, CUDNN_BATCHNORM_SPATIAL));
	CK(cudaMemGetInfo(&fre, &total));
	/* Leave a little for cuDNN's and cuBLAS's own needs. */
	fit = fre > ((size_t)768 << 20) ? fre - ((size_t)768 << 20) : 0;
	if (fit > ((size_t)4 << 30))
		fit = (size_t)4 << 30;
	while (c->tune && fit >= ((size_t)16 << 20) &&
	    cudaMalloc(&scratch, fit) != cudaSuccess) {
		(void)cudaGetLastError();
		scratch = NULL;
		fit /= 2;
	}
	if (c->tune && scratch == NULL)
		fit = 0;
	for (i = 0; i < net->nlayers; i++) {
		const struct rv_layer *ly = &net->layers[i];
		struct cu_layer *cl = &c->l[i];
		struct conv *cv = &cl->cv;
		cudnnTensorDescriptor_t xd;
		void *x, *y, *dx;
		int j;

		if (!cl->has_conv)
			continue;
		/* The same geometry as an earlier layer: its choice. */
		for (j = 0; j < i; j++) {
			struct conv *o = &c->l[j].cv;

			if (c->l[j].has_conv && o->ci == cv->ci &&
			    o->co == cv->co && o->k == cv->k &&
			    o->stride == cv->stride && o->pad == cv->pad &&
			    o->in.h == cv->in.h && o->in.w == cv->in.w &&
			    o->need_dx == cv->need_dx)
				break;
		}
		if (j < i) {
			cv->tuned = c->l[j].cv.tuned;
			if (set_math(cv, &cv->tuned) < 0)
				goto end;
			continue;
		}
		if (ly->kind == RV_LAYER_CONV) {
			xd = lind(c, i);
			x = lin(c, i);
			y = cl->y;
		} else {
			xd = proj_xd(c, i);
			x = c->l[ly->res].y;
			y = cl->sc_x;
		}
		/* Any buffer of the input's size takes dx while tuning. */
		dx = c->g[1];
		if (choose(c, cv, xd, x, cl->yd, y, wptr(c, cl->off),
		    c->prec == RV_PREC_BF16 ? (void *)c->gwh :
		    (void *)(c->grads + cl->off), dx, scratch, fit, c->tune,
		    &cv->tuned) < 0) {
			rv_preferr("cuda: layer %d", i + 1);
			goto end;
		}
		if (cv->tuned.ws > need)
			need = cv->tuned.ws;
	}
	rc = 0;
end:
	if (scratch != NULL)
		cudaFree(scratch);
	if (rc == 0) {
		size_t tot = 0;

		/* Room for the heuristics' choices at other batch sizes. */
		if (need < MIN_WS)
			need = MIN_WS;
		c->ws_size = need;
		rc = dalloc(&c->ws, need, &tot);
		for (i = 0; rc == 0 && i < net->nlayers; i++)
			c->l[i].cv.cur = c->l[i].cv.tuned;
		c->cur_n = c->batch_max;
	}
	return rc;
}

static void cu_destroy(void *be);
static int cu_set_state(void *be, const float *params,
    const float *momentum, const float *bufs);

static int
pick_device(struct cu *c, int dev)
{
	struct cudaDeviceProp p;
	int n = 0;

	if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
		(void)cudaGetLastError();
		return rv_seterr("cuda: no CUDA device found");
	}
	if (dev < 0 || dev >= n)
		return rv_seterr("cuda: device %d: there %s %d (0 to %d)", dev,
		    n == 1 ? "is" : "are", n, n - 1);
	CK(cudaSetDevice(dev));
	CK(cudaGetDeviceProperties(&p, dev));
	if (c->prec != RV_PREC_FP32 && p.major < 8)
		return rv_seterr("cuda: %s (compute capability %d.%d): %s "
		    "needs 8.0 or later", p.name, p.major, p.minor,
		    rv_precision_name(c->prec));
	snprintf(c->desc, sizeof(c->desc), "%s, %s%s", p.name,
	    rv_precision_name(c->prec), c->tune ? ", autotuned" : "");
	c->dev_ready = 1;
	return 0;
}

static void *
cu_create(const struct rv_nn_config *cfg)
{
	const struct rv_net *net = cfg->net;
	float lut[4 * 256];
	struct cu *c;
	int i;

	if (net == NULL || cfg->batch_max < 1) {
		rv_seterr("cuda: bad configuration: need a model and "
		    "batch_max >= 1");
		return NULL;
	}
	if (rv_nn_check_net(net, "cuda") < 0 ||
	    rv_nn_check_norm(cfg, "cuda") < 0)
		return NULL;
	if ((c = (struct cu *)calloc(1, sizeof(*c))) == NULL ||
	    (c->l = (struct cu_layer *)calloc(net->nlayers,
	    sizeof(*c->l))) == NULL || rv_net_copy(&c->net, net) < 0) {
		rv_seterr("cuda: out of memory");
		cu_destroy(c);
		return NULL;
	}
	c->batch_max = cfg->batch_max;
	c->seed = cfg->seed;
	c->ls = cfg->label_smoothing;
	c->async = cfg->async;
	c->tune = cfg->tune;
	c->prec = cfg->precision;
	c->nhwc = c->prec == RV_PREC_BF16;
	c->tsz = c->nhwc ? sizeof(bf16) : sizeof(float);
	c->dt = c->nhwc ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
	c->fmt = c->nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
	mark_layers(c);
	if (pick_device(c, cfg->device) < 0)
		goto fail;
	if (cudaStreamCreateWithFlags(&c->cs, cudaStreamNonBlocking) !=
	    cudaSuccess || cudaStreamCreateWithFlags(&c->ts,
	    cudaStreamNonBlocking) != cudaSuccess) {
		rv_seterr("cuda: cannot create streams: %s",
		    cudaGetErrorString(cudaGetLastError()));
		goto fail;
	}
	for (i = 0; i < NSLOT; i++)
		if (cudaEventCreateWithFlags(&c->ev_up[i],
		    cudaEventDisableTiming) != cudaSuccess ||
		    cudaEventCreateWithFlags(&c->ev_done[i],
		    cudaEventDisableTiming) != cudaSuccess) {
			rv_seterr("cuda: cannot create events");
			goto fail;
		}
	if (cudnnCreate(&c->dnn) != CUDNN_STATUS_SUCCESS) {
		rv_seterr("cudnn: cannot initialise (is libcudnn 9 "
		    "installed?)");
		goto fail;
	}
	if (cublasCreate(&c->blas) != CUBLAS_STATUS_SUCCESS) {
		rv_seterr("cublas: cannot initialise");
		goto fail;
	}
	if (cudnnSetStream(c->dnn, c->cs) != CUDNN_STATUS_SUCCESS ||
	    cublasSetStream(c->blas, c->cs) != CUBLAS_STATUS_SUCCESS ||
	    cublasSetMathMode(c->blas, c->prec == RV_PREC_FP32 ?
	    CUBLAS_PEDANTIC_MATH : c->prec == RV_PREC_BF16 ?
	    (cublasMath_t)(CUBLAS_DEFAULT_MATH |
	    CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION) :
	    CUBLAS_DEFAULT_MATH) !=
	    CUBLAS_STATUS_SUCCESS) {
		rv_seterr("cuda: cannot set up the library handles");
		goto fail;
	}
	layout_params(c);
	if ((c->stage = (float *)malloc(c->dev_np * sizeof(float))) == NULL) {
		rv_seterr("cuda: out of memory");
		goto fail;
	}
	if (create_descs(c) < 0 || alloc_all(c) < 0)
		goto fail;
	for (i = 0; i < net->nlayers; i++)
		if (c->l[i].y == NULL)
			c->l[i].y = lin(c, i);
	input_lut(net->in.c, cfg->mean, cfg->std, lut);
	if (cudaMemcpyAsync(c->lut, lut, sizeof(lut), cudaMemcpyHostToDevice,
	    c->cs) != cudaSuccess || cudaStreamSynchronize(c->cs) !=
	    cudaSuccess) {
		rv_seterr("cuda: upload: %s",
		    cudaGetErrorString(cudaGetLastError()));
		goto fail;
	}
	if (plan_convs(c) < 0)
		goto fail;
	{
		/* Initial state: as the CPU backend's, made on the host. */
		size_t np = net->nparams, nb = net->nbufs;
		float *p = (float *)calloc(2 * np + nb + 1, sizeof(float));
		int rc;

		if (p == NULL) {
			rv_seterr("cuda: out of memory");
			goto fail;
		}
		rv_net_init(net, cfg->seed, p, p + 2 * np);
		rc = cudaMemsetAsync(c->grads, 0, c->dev_np * 4, c->cs) !=
		    cudaSuccess ? rv_seterr("cuda: memset: %s",
		    cudaGetErrorString(cudaGetLastError())) :
		    cu_set_state(c, p, p + np, p + 2 * np);
		free(p);
		if (rc < 0)
			goto fail;
	}
	return c;
fail:
	cu_destroy(c);
	return NULL;
}

static void
release_device(struct cu *c)
{
	int i;

	if (c->cs != NULL)
		cudaStreamSynchronize(c->cs);
	if (c->ts != NULL)
		cudaStreamSynchronize(c->ts);
	if (c->l != NULL)
		for (i = 0; i < c->net.nlayers; i++) {
			struct cu_layer *cl = &c->l[i];

			if (cl->yd != NULL)
				cudnnDestroyTensorDescriptor(cl->yd);
			if (cl->bnd != NULL)
				cudnnDestroyTensorDescriptor(cl->bnd);
			if (cl->cv.wd != NULL)
				cudnnDestroyFilterDescriptor(cl->cv.wd);
			if (cl->cv.cf != NULL)
				cudnnDestroyConvolutionDescriptor(cl->cv.cf);
			if (cl->cv.cb != NULL)
				cudnnDestroyConvolutionDescriptor(cl->cv.cb);
			if (cl->cv.cw != NULL)
				cudnnDestroyConvolutionDescriptor(cl->cv.cw);
			if (!cl->inplace &&
			    c->net.layers[i].kind != RV_LAYER_RES)
				cudaFree(cl->y);
			cudaFree(cl->save_mean);
			cudaFree(cl->save_invstd);
			cudaFree(cl->mask);
			cudaFree(cl->argmax);
			cudaFree(cl->sc_x);
			cudaFree(cl->dsc);
			cudaFree(cl->xt);
		}
	if (c->xd != NULL)
		cudnnDestroyTensorDescriptor(c->xd);
	cudaFree(c->params);
	cudaFree(c->grads);
	cudaFree(c->mom);
	cudaFree(c->bufs);
	cudaFree(c->wh);
	cudaFree(c->gwh);
	cudaFree(c->lut);
	cudaFree(c->x);
	cudaFree(c->g[0]);
	cudaFree(c->g[1]);
	cudaFree(c->lin_dx);
	cudaFree(c->bn_part);
	cudaFree(c->pq);
	cudaFree(c->d_loss);
	cudaFree(c->d_gn);
	cudaFree(c->d_pred);
	cudaFree(c->ws);
	for (i = 0; i < NSLOT; i++) {
		cudaFree(c->d_in_base[i]);
		if (c->h_in[i] != NULL)
			cudaFreeHost(c->h_in[i]);
		if (c->h_out[i] != NULL)
			cudaFreeHost(c->h_out[i]);
		if (c->ev_up[i] != NULL)
			cudaEventDestroy(c->ev_up[i]);
		if (c->ev_done[i] != NULL)
			cudaEventDestroy(c->ev_done[i]);
	}
	if (c->blas != NULL)
		cublasDestroy(c->blas);
	if (c->dnn != NULL)
		cudnnDestroy(c->dnn);
	if (c->cs != NULL)
		cudaStreamDestroy(c->cs);
	if (c->ts != NULL)
		cudaStreamDestroy(c->ts);
	(void)cudaGetLastError();
}

static void
cu_destroy(void *be)
{
	struct cu *c = (struct cu *)be;

	if (c == NULL)
		return;
	if (c->dev_ready)
		release_device(c);
	free(c->stage);
	free(c->net.layers);
	free(c->l);
	free(c);
}

/* ---- Forward and backward -------------------------------------------- */

enum fwd_mode { FWD_TRAIN, FWD_EVAL };

/* bf16 copies of every conv and linear weight (KRSC for convs). */
static int
cast_weights(struct cu *c)
{
	const struct rv_net *net = &c->net;

	for (int i = 0; i < net->nlayers; i++) {
		const struct rv_layer *ly = &net->layers[i];
		uint64_t len;
		int ci, rs;

		if (ly->kind == RV_LAYER_CONV) {
			len = rv_layer_wlen(ly);
			ci = ly->in.c;
			rs = ly->k * ly->k;
		} else if (ly->kind == RV_LAYER_LINEAR) {
			len = rv_layer_wlen(ly);
			ci = 1;
			rs = 1;
		} else if (ly->kind == RV_LAYER_ADD && ly->proj) {
			ci = net->layers[ly->res].in.c;
			len = (uint64_t)ly->outs.c * ci;
			rs = 1;
		} else
			continue;
		k_cast_w<<<blocks(len), TPB, 0, c->cs>>>(len, ci, rs,
		    ly->kind != RV_LAYER_LINEAR, c->params + c->l[i].off,
		    c->wh + c->l[i].off);
		LAUNCHED();
	}
	return 0;
}

static int
conv_fwd(struct cu *c, struct conv *cv, cudnnTensorDescriptor_t xd,
    const void *x, const void *w, cudnnTensorDescriptor_t yd, void *y)
{
	DK(cudnnConvolutionForward(c->dnn, &one, xd, x, cv->wd, w, cv->cf,
	    cv->cur.fwd, c->ws, c->ws_size, &zero, yd, y));
	return 0;
}

/* dw (fp32, canonical order) always; dx when not NULL. */
static int
conv_bwd(struct cu *c, struct conv *cv, cudnnTensorDescriptor_t xd,
    const void *x, const void *w, cudnnTensorDescriptor_t yd, const void *dy,
    void *dx, float *dw)
{
	void *dwt = c->prec == RV_PREC_BF16 ? (void *)c->gwh : (void *)dw;

	DK(cudnnConvolutionBackwardFilter(c->dnn, &one, xd, x, yd, dy,
	    cv->cw, cv->cur.wgt, c->ws, c->ws_size, &zero, cv->wd, dwt));
	if (c->prec == RV_PREC_BF16) {
		uint64_t len = (uint64_t)cv->co * cv->ci * cv->k * cv->k;

		k_uncast_w<<<blocks(len), TPB, 0, c->cs>>>(len, cv->ci,
		    cv->k * cv->k, 1, c->gwh, dw);
		LAUNCHED();
	}
	if (dx != NULL)
		DK(cudnnConvolutionBackwardData(c->dnn, &one, cv->wd, w, yd,
		    dy, cv->cb, cv->cur.bwd, c->ws, c->ws_size, &zero, xd,
		    dx));
	return 0;
}

/* Batch norm of NHWC bf16 tensors: nn_cuda_kern.cuh's kernels. */
static int
bn_fwd_nhwc(struct cu *c, enum fwd_mode mode, uint64_t m, int C,
    const bf16 *x, const float *p, float *run, bf16 *y, float *sm,
    float *si)
{
	int chunks = bn_chunks(m);
	dim3 pb(BN_TC, BN_TR), pg((C + BN_TC - 1) / BN_TC, chunks);
	unsigned cb = (C + 127) / 128;

	if (mode == FWD_EVAL) {
		k_bn_apply<bf16><<<blocks(m * C), TPB, 0, c->cs>>>(C, m * C, 1,
		    x, run, run + C, p, p + C, y);
		LAUNCHED();
		return 0;
	}
	k_bn_part<bf16><<<pg, pb, 0, c->cs>>>(BN_SUM_X, C, m, chunks, x, NULL,
	    NULL, NULL, c->bn_part);
	LAUNCHED();
	k_bn_stats<<<cb, 128, 0, c->cs>>>(C, m, chunks, c->bn_part, 0, sm, si,
	    NULL, NULL, 0.0f);
	LAUNCHED();
	k_bn_part<bf16><<<pg, pb, 0, c->cs>>>(BN_SUM_DEV2, C, m, chunks, x,
	    NULL, sm, NULL, c->bn_part);
	LAUNCHED();
	k_bn_stats<<<cb, 128, 0, c->cs>>>(C, m, chunks, c->bn_part, 1, sm, si,
	    run, run + C, (float)RV_BN_MOMENTUM);
	LAUNCHED();
	k_bn_apply<bf16><<<blocks(m * C), TPB, 0, c->cs>>>(C, m * C, 0, x, sm,
	    si, p, p + C, y);
	LAUNCHED();
	return 0;
}

static int
bn_bwd_nhwc(struct cu *c, uint64_t m, int C, const bf16 *x, const bf16 *dy,
    const float *p, float *gp, bf16 *dx, const float *sm, const float *si)
{
	int chunks = bn_chunks(m);
	dim3 pb(BN_TC, BN_TR), pg((C + BN_TC - 1) / BN_TC, chunks);

	k_bn_part<bf16><<<pg, pb, 0, c->cs>>>(BN_SUM_DY, C, m, chunks, x, dy,
	    sm, si, c->bn_part);
	LAUNCHED();
	k_bn_gsum<<<(C + 127) / 128, 128, 0, c->cs>>>(C, chunks, c->bn_part,
	    gp, gp + C);
	LAUNCHED();
	k_bn_dx<bf16><<<blocks(m * C), TPB, 0, c->cs>>>(C, m * C, (double)m, x,
	    dy, sm, si, p, gp, gp + C, dx);
	LAUNCHED();
	return 0;
}

/* Batch norm over n samples of hw values a channel: cuDNN in fp32 and
 * tf32, our kernels in bf16. */
static int
bn_fwd(struct cu *c, enum fwd_mode mode, int n, uint64_t hw,
    cudnnTensorDescriptor_t d, cudnnTensorDescriptor_t bnd, const void *x,
    const float *p, float *run, int ch, void *y, float *sm, float *si)
{
	if (c->nhwc)
		return bn_fwd_nhwc(c, mode, (uint64_t)n * hw, ch,
		    (const bf16 *)x, p, run, (bf16 *)y, sm, si);
	if (mode == FWD_EVAL)
		DK(cudnnBatchNormalizationForwardInference(c->dnn,
		    CUDNN_BATCHNORM_SPATIAL, &one, &zero, d, x, d, y, bnd, p,
		    p + ch, run, run + ch, RV_BN_EPS));
	else
		DK(cudnnBatchNormalizationForwardTraining(c->dnn,
		    CUDNN_BATCHNORM_SPATIAL, &one, &zero, d, x, d, y, bnd, p,
		    p + ch, RV_BN_MOMENTUM, run, run + ch, RV_BN_EPS, sm, si));
	return 0;
}

static int
bn_bwd(struct cu *c, int n, uint64_t hw, cudnnTensorDescriptor_t d,
    cudnnTensorDescriptor_t bnd, const void *x, const void *dy,
    const float *p, float *gp, int ch, void *dx, const float *sm,
    const float *si)
{
	if (c->nhwc)
		return bn_bwd_nhwc(c, (uint64_t)n * hw, ch, (const bf16 *)x,
		    (const bf16 *)dy, p, gp, (bf16 *)dx, sm, si);
	DK(cudnnBatchNormalizationBackward(c->dnn, CUDNN_BATCHNORM_SPATIAL,
	    &one, &zero, &one, &zero, d, x, d, dy, d, dx, bnd, p, gp, gp + ch,
	    RV_BN_EPS, sm, si));
	return 0;
}

/* cuBLAS types for the activations and the GEMMs' arithmetic. */
static cudaDataType_t
blas_t(const struct cu *c)
{
	return c->nhwc ? CUDA_R_16BF : CUDA_R_32F;
}

static cublasComputeType_t
blas_compute(const struct cu *c)
{
	return c->prec == RV_PREC_TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 :
	    c->prec == RV_PREC_FP32 ? CUBLAS_COMPUTE_32F_PEDANTIC :
	    CUBLAS_COMPUTE_32F;
}

/*
 * The three GEMMs of a linear layer with f inputs, `out` outputs and n
 * samples, in cuBLAS's column-major terms (C = op(A) op(B), C m x n'):
 *   Y  y[n][out] = x[n][f] W^T: y^T (out x n) = W^T . x^T, where W
 *      [out][f] row-major is f x out column-major and x^T is f x n;
 *   DW dW[out][f] = dy^T x: dW^T (f x out) = x^T (f x n) . dy (n x out);
 *   DX dx[n][f] = dy W: dx^T (f x n) = W (f x out) . dy^T (out x n).
 * The host tests run these shapes through a reference GEMM.
 */
struct gemm {
	cublasOperation_t ta, tb;
	int m, n, k, lda, ldb, ldc;
};

enum gemm_which { GEMM_Y, GEMM_DW, GEMM_DX };

static struct gemm
linear_gemm(enum gemm_which which, int f, int out, int n)
{
	struct gemm y = { CUBLAS_OP_T, CUBLAS_OP_N, out, n, f, f, f, out };
	struct gemm dw = { CUBLAS_OP_N, CUBLAS_OP_T, f, out, n, f, out, f };
	struct gemm dx = { CUBLAS_OP_N, CUBLAS_OP_N, f, n, out, f, out, f };

	return which == GEMM_Y ? y : which == GEMM_DW ? dw : dx;
}

static int
gemm_run(struct cu *c, struct gemm g, const void *a, cudaDataType_t at,
    const void *b, cudaDataType_t bt, void *cc, cudaDataType_t ct)
{
	BK(cublasGemmEx(c->blas, g.ta, g.tb, g.m, g.n, g.k, &one, a, at,
	    g.lda, b, bt, g.ldb, &zero, cc, ct, g.ldc, blas_compute(c),
	    CUBLAS_GEMM_DEFAULT));
	return 0;
}

/* y[n][out] = x[n][f] W^T + b (x in (c, h, w) order: NHWC permuted). */
template <typename T>
static int
linear_fwd(struct cu *c, int i, int n)
{
	const struct rv_layer *ly = &c->net.layers[i];
	struct cu_layer *cl = &c->l[i];
	int f = (int)rv_shape_len(ly->in), hw = (int)rv_shape_hw(ly->in);
	const void *x = lin(c, i);

	if (cl->xt != NULL) {
		k_permute<T><<<blocks((uint64_t)n * f), TPB, 0, c->cs>>>(n,
		    ly->in.c, hw, 1, (const T *)x, (T *)cl->xt);
		LAUNCHED();
		x = cl->xt;
	}
	if (gemm_run(c, linear_gemm(GEMM_Y, f, ly->out, n), wptr(c, cl->off),
	    blas_t(c), x, blas_t(c), cl->y, blas_t(c)) < 0)
		return -1;
	if (ly->bias) {
		k_bias_add<T><<<blocks((uint64_t)n * ly->out), TPB, 0,
		    c->cs>>>(n, ly->out, 1, 0,
		    c->params + cl->off + rv_layer_wlen(ly), (T *)cl->y);
		LAUNCHED();
	}
	return 0;
}

/* dW, db and, dx not NULL, dx (NHWC permuted back). */
template <typename T>
static int
linear_bwd(struct cu *c, int i, int n, const void *dy, void *dx)
{
	const struct rv_layer *ly = &c->net.layers[i];
	struct cu_layer *cl = &c->l[i];
	int f = (int)rv_shape_len(ly->in), hw = (int)rv_shape_hw(ly->in);
	const void *x = cl->xt != NULL ? cl->xt : lin(c, i);
	float *gw = c->grads + cl->off;

	if (gemm_run(c, linear_gemm(GEMM_DW, f, ly->out, n), x, blas_t(c), dy,
	    blas_t(c), gw, CUDA_R_32F) < 0)
		return -1;
	if (ly->bias) {
		k_chan_sum<T><<<ly->out, TPB, 0, c->cs>>>(n, ly->out, 1, 0,
		    (const T *)dy, gw + rv_layer_wlen(ly));
		LAUNCHED();
	}
	if (dx == NULL)
		return 0;
	if (gemm_run(c, linear_gemm(GEMM_DX, f, ly->out, n), wptr(c, cl->off),
	    blas_t(c), dy, blas_t(c), cl->xt != NULL ? c->lin_dx : dx,
	    blas_t(c)) < 0)
		return -1;
	if (cl->xt != NULL) {
		k_permute<T><<<blocks((uint64_t)n * f), TPB, 0, c->cs>>>(n,
		    ly->in.c, hw, 0, (const T *)c->lin_dx, (T *)dx);
		LAUNCHED();
	}
	return 0;
}

template <typename T>
static int
forward(struct cu *c, int n, int slot, uint64_t step, enum fwd_mode mode)
{
	const struct rv_net *net = &c->net;
	const struct dev_in *in = &c->d_in[slot];

	k_input<T><<<blocks(rv_shape_len(net->in) * n), TPB, 0, c->cs>>>(n,
	    net->in.h, net->in.w, net->in.c, c->nhwc, in->px, c->lut,
	    (T *)c->x);
	LAUNCHED();
	if (c->prec == RV_PREC_BF16 && cast_weights(c) < 0)
		return -1;
	for (int i = 0; i < net->nlayers; i++) {
		const struct rv_layer *ly = &net->layers[i];
		struct cu_layer *cl = &c->l[i];
		void *x = lin(c, i);
		cudnnTensorDescriptor_t xd = lind(c, i);
		float *p = c->params + cl->off;
		uint64_t olen = rv_shape_len(ly->outs) * n;
		int hw = (int)rv_shape_hw(ly->in);
		struct rv_rng r;

		switch (ly->kind) {
		case RV_LAYER_CONV:
			if (conv_fwd(c, &cl->cv, xd, x, wptr(c, cl->off),
			    cl->yd, cl->y) < 0)
				return -1;
			if (ly->bias) {
				k_bias_add<T><<<blocks(olen), TPB, 0,
				    c->cs>>>(n, ly->out,
				    (int)rv_shape_hw(ly->outs), c->nhwc,
				    p + rv_layer_wlen(ly), (T *)cl->y);
				LAUNCHED();
			}
			break;
		case RV_LAYER_BN:
			if (bn_fwd(c, mode, n, hw, xd, cl->bnd, x, p,
			    c->bufs + ly->buf_off, ly->in.c, cl->y,
			    cl->save_mean, cl->save_invstd) < 0)
				return -1;
			break;
		case RV_LAYER_RELU:
			k_relu_fwd<T><<<blocks(olen), TPB, 0, c->cs>>>(olen,
			    (const T *)x, (T *)cl->y);
			LAUNCHED();
			break;
		case RV_LAYER_MAXPOOL:
		case RV_LAYER_AVGPOOL:
		case RV_LAYER_GAP: {
			struct pool_g g = pool_geom(c, ly, n);

			k_pool_fwd<T><<<blocks(olen), TPB, 0, c->cs>>>(g,
			    (const T *)x, (T *)cl->y, cl->argmax);
			LAUNCHED();
			break;
		}
		case RV_LAYER_LINEAR:
			if (linear_fwd<T>(c, i, n) < 0)
				return -1;
			break;
		case RV_LAYER_DROPOUT:
			if (mode == FWD_EVAL) {
				CK(cudaMemcpyAsync(cl->y, x, olen * c->tsz,
				    cudaMemcpyDeviceToDevice, c->cs));
				break;
			}
			rv_rng_init(&r, c->seed, RV_STAGE_TRAIN, (uint32_t)i, 0,
			    0);
			k_dropout_fwd<T><<<blocks(olen), TPB, 0, c->cs>>>(n,
			    ly->in.c, hw, c->nhwc, ly->p, ly->p < 1.0f ?
			    1.0f / (1.0f - ly->p) : 0.0f, r.key[0], r.key[1],
			    (uint32_t)step, in->ids, (const T *)x, (T *)cl->y,
			    cl->mask);
			LAUNCHED();
			break;
		case RV_LAYER_RES:
			break;
		case RV_LAYER_ADD: {
			const void *s = c->l[ly->res].y;

			if (ly->proj) {
				size_t wl = (size_t)ly->outs.c *
				    net->layers[ly->res].in.c;

				if (conv_fwd(c, &cl->cv, proj_xd(c, i), s,
				    wptr(c, cl->off), cl->yd,
				    cl->sc_x) < 0 ||
				    bn_fwd(c, mode, n, rv_shape_hw(ly->outs),
				    cl->yd, cl->bnd, cl->sc_x, p + wl,
				    c->bufs + ly->buf_off, ly->outs.c, c->g[0],
				    cl->save_mean, cl->save_invstd) < 0)
					return -1;
				s = c->g[0];
			}
			k_add<T><<<blocks(olen), TPB, 0, c->cs>>>(olen,
			    (const T *)x, (const T *)s, (T *)cl->y);
			LAUNCHED();
			break;
		}
		}
	}
	return 0;
}

template <typename T>
static int
backward(struct cu *c, int n)
{
	const struct rv_net *net = &c->net;
	void *gy = c->g[0], *gx = c->g[1], *t;

	for (int i = net->nlayers - 1; i >= 0 && c->l[i].needg; i--) {
		const struct rv_layer *ly = &net->layers[i];
		struct cu_layer *cl = &c->l[i];
		void *x = lin(c, i);
		cudnnTensorDescriptor_t xd = lind(c, i);
		float *p = c->params + cl->off;
		float *gp = c->grads + cl->off;
		int din = i > 0 && c->l[i - 1].needg;
		void *dx = din ? gx : NULL;
		uint64_t olen = rv_shape_len(ly->outs) * n;
		int hw = (int)rv_shape_hw(ly->in);

		switch (ly->kind) {
		case RV_LAYER_CONV:
			if (ly->bias) {
				k_chan_sum<T><<<ly->out, TPB, 0, c->cs>>>(n,
				    ly->out, (int)rv_shape_hw(ly->outs),
				    c->nhwc, (const T *)gy,
				    gp + rv_layer_wlen(ly));
				LAUNCHED();
			}
			if (conv_bwd(c, &cl->cv, xd, x, wptr(c, cl->off),
			    cl->yd, gy, dx, gp) < 0)
				return -1;
			break;
		case RV_LAYER_BN:
			/* batch norm always needs dx computed; fine. */
			if (bn_bwd(c, n, hw, xd, cl->bnd, x, gy, p, gp,
			    ly->in.c, gx, cl->save_mean, cl->save_invstd) < 0)
				return -1;
			break;
		case RV_LAYER_RELU:
			k_relu_bwd<T><<<blocks(olen), TPB, 0, c->cs>>>(olen,
			    (const T *)cl->y, (const T *)gy, (T *)gy);
			LAUNCHED();
			din = 0;
			break;
		case RV_LAYER_MAXPOOL:
		case RV_LAYER_AVGPOOL:
		case RV_LAYER_GAP: {
			struct pool_g g = pool_geom(c, ly, n);
			uint64_t ilen = rv_shape_len(ly->in) * n;

			k_pool_bwd<T><<<blocks(ilen), TPB, 0, c->cs>>>(g,
			    (const T *)gy, cl->argmax, (T *)gx);
			LAUNCHED();
			break;
		}
		case RV_LAYER_LINEAR:
			if (linear_bwd<T>(c, i, n, gy, dx) < 0)
				return -1;
			break;
		case RV_LAYER_DROPOUT:
			k_scale<T><<<blocks(olen), TPB, 0, c->cs>>>(olen,
			    cl->mask, (const T *)gy, (T *)gx);
			LAUNCHED();
			break;
		case RV_LAYER_RES:
			if (din) {
				k_add<T><<<blocks(olen), TPB, 0, c->cs>>>(olen,
				    (const T *)gy, (const T *)cl->dsc,
				    (T *)gy);
				LAUNCHED();
			}
			din = 0;
			break;
		case RV_LAYER_ADD: {
			int r = ly->res;
			void *dsc = r > 0 && c->l[r - 1].needg ? c->l[r].dsc :
			    NULL;

			if (ly->proj) {
				int ci = net->layers[r].in.c;
				size_t wl = (size_t)ly->outs.c * ci;

				if (bn_bwd(c, n, rv_shape_hw(ly->outs), cl->yd,
				    cl->bnd, cl->sc_x, gy, p + wl, gp + wl,
				    ly->outs.c, gx, cl->save_mean,
				    cl->save_invstd) < 0 ||
				    conv_bwd(c, &cl->cv, proj_xd(c, i),
				    c->l[r].y, wptr(c, cl->off), cl->yd,
				    gx, dsc, gp) < 0)
					return -1;
			} else if (dsc != NULL)
				CK(cudaMemcpyAsync(dsc, gy, olen * c->tsz,
				    cudaMemcpyDeviceToDevice, c->cs));
			din = 0;
			break;
		}
		}
		if (din) {
			t = gy;
			gy = gx;
			gx = t;
		}
	}
	return 0;
}

/* ---- Steps ------------------------------------------------------------ */

static int
check_batch(const struct cu *c, const struct rv_nn_batch *b, int train)
{
	return rv_nn_check_batch(&c->net, c->batch_max, b, train, "cuda");
}

/* Part k (OUT_LOSS, OUT_GN, OUT_PRED) of output slot s. */
enum { OUT_LOSS, OUT_GN, OUT_PRED };

static char *
out_part(struct cu *c, int s, int k)
{
	return c->h_out[s] + (size_t)k * c->batch_max * 4;
}

/* Collect the oldest step in flight: its results into its out arrays. */
static int
collect(struct cu *c)
{
	int s = (c->slot + NSLOT - c->inflight) % NSLOT;
	const struct rv_nn_out *o = &c->pend_out[s];
	size_t n = (size_t)c->pend_n[s];
	cudaError_t e;

	e = cudaEventSynchronize(c->ev_done[s]);
	c->inflight--;
	if (e != cudaSuccess)
		return rv_seterr("cuda: step failed: %s",
		    cudaGetErrorString(e));
	if (o->loss != NULL)
		memcpy(o->loss, out_part(c, s, OUT_LOSS), n * 4);
	if (o->gradnorm != NULL)
		memcpy(o->gradnorm, out_part(c, s, OUT_GN), n * 4);
	if (o->pred != NULL)
		memcpy(o->pred, out_part(c, s, OUT_PRED), n * 4);
	return 0;
}

static int
cu_wait(void *be, int keep)
{
	struct cu *c = (struct cu *)be;
	int rc = 0;

	if (keep < 0)
		keep = 0;
	while (c->inflight > keep)
		if (collect(c) < 0)
			rc = -1;
	return rc;
}

/*
 * Into slot s: copy the batch into pinned memory (once the upload that
 * last used it is done), then upload it on the transfer stream once the
 * step that last read the slot's device buffer is done with it.
 */
static int
upload(struct cu *c, const struct rv_nn_batch *b, int s)
{
	size_t n = (size_t)b->n, px = rv_shape_len(c->net.in) * n;
	size_t pxa = c->px_pad, bm = (size_t)c->batch_max;
	uint8_t *h = c->h_in[s];

	CK(cudaEventSynchronize(c->ev_up[s]));
	memcpy(h, b->pixels, px);
	if (b->ids != NULL)
		memcpy(h + pxa, b->ids, n * 8);
	else
		memset(h + pxa, 0, n * 8);
	memcpy(h + pxa + bm * 8, b->labels, n * 4);
	if (b->weights != NULL)
		memcpy(h + pxa + bm * 12, b->weights, n * 4);
	CK(cudaStreamWaitEvent(c->ts, c->ev_done[s], 0));
	CK(cudaMemcpyAsync(c->d_in[s].px, h, px, cudaMemcpyHostToDevice,
	    c->ts));
	CK(cudaMemcpyAsync(c->d_in[s].ids, h + pxa, bm * 16,
	    cudaMemcpyHostToDevice, c->ts));
	CK(cudaEventRecord(c->ev_up[s], c->ts));
	CK(cudaStreamWaitEvent(c->cs, c->ev_up[s], 0));
	return 0;
}

/* After the forward pass: the loss kernel and, training, gradnorms. */
template <typename T>
static int
loss_and_results(struct cu *c, const struct rv_nn_batch *b, int s, float ls,
    int train)
{
	const struct rv_net *net = &c->net;
	int last = net->nlayers - 1, n = b->n;
	const struct rv_layer *ll = &net->layers[last];

	k_softmax_ce<T><<<(n + 127) / 128, 128, 0, c->cs>>>(net->classes, n,
	    (const T *)c->l[last].y, c->d_in[s].labels,
	    b->weights != NULL ? c->d_in[s].weights : NULL, ls, c->d_loss,
	    train ? (T *)c->g[0] : NULL, c->pq, c->d_pred);
	LAUNCHED();
	if (train) {
		/* ||h||^2 is the same in any order: the raw input will do. */
		k_gradnorm<T><<<n, TPB, 0, c->cs>>>(n, rv_shape_len(ll->in),
		    (const T *)lin(c, last), ll->bias, c->pq, c->d_gn);
		LAUNCHED();
		CK(cudaMemcpyAsync(out_part(c, s, OUT_GN), c->d_gn,
		    (size_t)n * 4, cudaMemcpyDeviceToHost, c->cs));
	}
	CK(cudaMemcpyAsync(out_part(c, s, OUT_LOSS), c->d_loss, (size_t)n * 4,
	    cudaMemcpyDeviceToHost, c->cs));
	CK(cudaMemcpyAsync(out_part(c, s, OUT_PRED), c->d_pred, (size_t)n * 4,
	    cudaMemcpyDeviceToHost, c->cs));
	return 0;
}

template <typename T>
static int
train_step(struct cu *c, const struct rv_nn_batch *b,
    const struct rv_nn_hyper *hy, int s)
{
	uint64_t np = c->dev_np;

	if (forward<T>(c, b->n, s, b->step, FWD_TRAIN) < 0 ||
	    loss_and_results<T>(c, b, s, hy->label_smoothing, 1) < 0 ||
	    backward<T>(c, b->n) < 0)
		return -1;
	k_sgd<<<blocks(np), TPB, 0, c->cs>>>(np, c->params, c->grads, c->mom,
	    hy->lr, hy->momentum, hy->weight_decay, hy->nesterov);
	LAUNCHED();
	return 0;
}

template <typename T>
static int
eval_step(struct cu *c, const struct rv_nn_batch *b, int s)
{
	if (forward<T>(c, b->n, s, 0, FWD_EVAL) < 0)
		return -1;
	return loss_and_results<T>(c, b, s, c->ls, 0);
}

/* Queue a step into the next slot; out filled when it is collected. */
static int
submit(struct cu *c, const struct rv_nn_batch *b,
    const struct rv_nn_hyper *hy, struct rv_nn_out *out)
{
	int s = c->slot, rc;

	/* The slot's previous step must be collected before its pinned
	 * results are overwritten. */
	if (c->inflight == NSLOT && collect(c) < 0)
		return -1;
	if (set_batch(c, b->n) < 0 || upload(c, b, s) < 0)
		return -1;
	if (hy != NULL)
		rc = c->nhwc ? train_step<bf16>(c, b, hy, s) :
		    train_step<float>(c, b, hy, s);
	else
		rc = c->nhwc ? eval_step<bf16>(c, b, s) :
		    eval_step<float>(c, b, s);
	if (rc < 0) {
		/* Let what was queued drain before anything else runs. */
		cudaStreamSynchronize(c->cs);
		(void)cudaGetLastError();
		return -1;
	}
	CK(cudaEventRecord(c->ev_done[s], c->cs));
	memset(&c->pend_out[s], 0, sizeof(c->pend_out[s]));
	if (out != NULL)
		c->pend_out[s] = *out;
	if (hy == NULL)
		c->pend_out[s].gradnorm = NULL;
	c->pend_n[s] = b->n;
	c->inflight++;
	c->slot = (s + 1) % NSLOT;
	return 0;
}

static int
cu_train(void *be, const struct rv_nn_batch *b, const struct rv_nn_hyper *h,
    struct rv_nn_out *out)
{
	struct cu *c = (struct cu *)be;

	if (check_batch(c, b, 1) < 0)
		return -1;
	if (!(h->label_smoothing >= 0 && h->label_smoothing < 1))
		return rv_seterr("cuda: label smoothing %g: not in [0, 1)",
		    h->label_smoothing);
	if (submit(c, b, h, out) < 0)
		return -1;
	return c->async ? 0 : cu_wait(c, 0);
}

static int
cu_eval(void *be, const struct rv_nn_batch *b, struct rv_nn_out *out)
{
	struct cu *c = (struct cu *)be;

	if (cu_wait(c, 0) < 0 || check_batch(c, b, 0) < 0 ||
	    submit(c, b, NULL, out) < 0)
		return -1;
	return cu_wait(c, 0);
}

static int
cu_get_state(void *be, float *params, float *momentum, float *bufs)
{
	struct cu *c = (struct cu *)be;

	if (cu_wait(c, 0) < 0)
		return -1;
	CK(cudaStreamSynchronize(c->cs));
	if (params != NULL) {
		CK(cudaMemcpy(c->stage, c->params, c->dev_np * 4,
		    cudaMemcpyDeviceToHost));
		unpack(c, params);
	}
	if (momentum != NULL) {
		CK(cudaMemcpy(c->stage, c->mom, c->dev_np * 4,
		    cudaMemcpyDeviceToHost));
		unpack(c, momentum);
	}
	if (bufs != NULL)
		CK(cudaMemcpy(bufs, c->bufs, c->net.nbufs * 4,
		    cudaMemcpyDeviceToHost));
	return 0;
}

/*
 * Copies on the compute stream, waited for: the non-blocking streams do
 * not wait for the legacy default stream, and a copy from pageable memory
 * may return before it lands.
 */
static int
cu_set_state(void *be, const float *params, const float *momentum,
    const float *bufs)
{
	struct cu *c = (struct cu *)be;

	if (cu_wait(c, 0) < 0)
		return -1;
	CK(cudaStreamSynchronize(c->cs));
	if (params != NULL) {
		pack(c, params);
		CK(cudaMemcpyAsync(c->params, c->stage, c->dev_np * 4,
		    cudaMemcpyHostToDevice, c->cs));
		CK(cudaStreamSynchronize(c->cs));
	}
	if (momentum != NULL) {
		pack(c, momentum);
		CK(cudaMemcpyAsync(c->mom, c->stage, c->dev_np * 4,
		    cudaMemcpyHostToDevice, c->cs));
		CK(cudaStreamSynchronize(c->cs));
	}
	if (bufs != NULL) {
		CK(cudaMemcpyAsync(c->bufs, bufs, c->net.nbufs * 4,
		    cudaMemcpyHostToDevice, c->cs));
		CK(cudaStreamSynchronize(c->cs));
	}
	return 0;
}

static const char *
cu_describe(void *be)
{
	return ((struct cu *)be)->desc;
}

static const struct rv_nn_ops cuda_ops = {
	"cuda", cu_create, cu_destroy, cu_train, cu_eval, cu_get_state,
	cu_set_state, cu_wait, cu_describe,
};

extern "C" const struct rv_nn_ops *
rv_cuda_plugin_ops(int abi)
{
	return abi == RV_CUDA_PLUGIN_ABI ? &cuda_ops : NULL;
}

extern "C" int
rv_cuda_plugin_devices(void)
{
	int n = 0;

	if (cudaGetDeviceCount(&n) != cudaSuccess) {
		(void)cudaGetLastError();
		return 0;
	}
	return n;
}

/* ---- Host entry points for the tests (nn_cuda_host.h) ---------------- */

extern "C" void
rv_cuda_host_dropout(int c, int n, int hw, int nhwc, float p, uint64_t seed,
    uint32_t op, uint64_t step, const uint64_t *ids, float *mask)
{
	struct rv_rng r;
	uint64_t len = (uint64_t)n * c * hw;
	float scale = p < 1.0f ? 1.0f / (1.0f - p) : 0.0f;

	rv_rng_init(&r, seed, RV_STAGE_TRAIN, op, 0, 0);
	for (uint64_t idx = 0; idx < len; idx++) {
		int i, ch, j;

		unindex(idx, c, hw, nhwc, &i, &ch, &j);
		mask[idx] = drop_scale(r.key[0], r.key[1], (uint32_t)step,
		    ids[i], (uint64_t)ch * hw + j, p, scale);
	}
}

template <typename T>
static double
host_softmax(int k, int n, const float *z, const int32_t *label,
    const float *wt, float ls, float *loss, float *dz, float *pq,
    int32_t *pred)
{
	T *zt = new T[(size_t)k * n], *dzt = new T[(size_t)k * n];
	double obj = 0.0;

	for (size_t j = 0; j < (size_t)k * n; j++)
		zt[j] = from_f<T>(z[j]);
	for (int i = 0; i < n; i++) {
		double w = wt != NULL ? wt[i] : 1.0;
		double l = softmax_ce1<T>(k, n, zt + (size_t)i * k, 1,
		    label[i], w, ls, dzt + (size_t)i * k, &pq[i], &pred[i]);

		if (loss != NULL)
			loss[i] = (float)l;
		obj += w * l;
	}
	if (dz != NULL)
		for (size_t j = 0; j < (size_t)k * n; j++)
			dz[j] = to_f(dzt[j]);
	delete[] zt;
	delete[] dzt;
	return n > 0 ? obj / n : 0.0;
}

extern "C" double
rv_cuda_host_softmax_ce(int k, int n, const float *z, const int32_t *label,
    const float *wt, float ls, float *loss, float *dz, float *pq,
    int32_t *pred)
{
	return host_softmax<float>(k, n, z, label, wt, ls, loss, dz, pq, pred);
}

extern "C" double
rv_cuda_host_softmax_ce_bf16(int k, int n, const float *z,
    const int32_t *label, const float *wt, float ls, float *loss, float *dz,
    float *pq, int32_t *pred)
{
	return host_softmax<bf16>(k, n, z, label, wt, ls, loss, dz, pq, pred);
}

extern "C" void
rv_cuda_host_sgd(size_t len, float *p, const float *grad, float *v, float lr,
    float mom, float wd, int nesterov)
{
	for (size_t j = 0; j < len; j++)
		sgd1(&p[j], grad[j], &v[j], lr, mom, wd, nesterov);
}

extern "C" void
rv_cuda_host_krsc(int k, int c, int rs, const float *kcrs, float *krsc)
{
	uint64_t len = (uint64_t)k * c * rs;

	for (uint64_t j = 0; j < len; j++)
		krsc[krsc_index(j, c, rs)] = kcrs[j];
}

/* The NHWC batch norm's kernels, emulated in their order of summation. */
static void
host_bn_part(enum bn_sum what, int C, uint64_t m, int chunks, const float *x,
    const float *dy, const float *mean, const float *invstd, double *part)
{
	for (int k = 0; k < chunks; k++)
		for (int ch = 0; ch < C; ch++) {
			uint64_t lo, hi;
			double a = 0.0, b = 0.0, ta, tb;

			bn_chunk(m, chunks, k, &lo, &hi);
			for (int t = 0; t < BN_TR; t++) {
				bn_acc<float>(what, C, ch, lo, hi, t, x, dy,
				    mean != NULL ? mean[ch] : 0.0f,
				    invstd != NULL ? invstd[ch] : 0.0f, &ta,
				    &tb);
				if (t == 0) {
					a = ta;
					b = tb;
				} else {
					a += ta;
					b += tb;
				}
			}
			part[(uint64_t)k * 2 * C + ch] = a;
			part[((uint64_t)k * 2 + 1) * C + ch] = b;
		}
}

extern "C" void
rv_cuda_host_bn_train(int C, uint64_t m, const float *x, const float *gamma,
    const float *beta, float *y, float *mean, float *invstd, float *rmean,
    float *rvar, float mom)
{
	int chunks = bn_chunks(m), ch;
	double *part = new double[(size_t)chunks * 2 * C];

	host_bn_part(BN_SUM_X, C, m, chunks, x, NULL, NULL, NULL, part);
	for (ch = 0; ch < C; ch++)
		bn_stats1(ch, C, m, chunks, part, 0, mean, invstd, NULL, NULL,
		    0.0f);
	host_bn_part(BN_SUM_DEV2, C, m, chunks, x, NULL, mean, NULL, part);
	for (ch = 0; ch < C; ch++)
		bn_stats1(ch, C, m, chunks, part, 1, mean, invstd, rmean, rvar,
		    mom);
	for (uint64_t idx = 0; idx < m * C; idx++) {
		ch = (int)(idx % (uint64_t)C);
		y[idx] = bn_y(x[idx], mean[ch], invstd[ch], gamma[ch],
		    beta[ch]);
	}
	delete[] part;
}

extern "C" void
rv_cuda_host_bn_eval(int C, uint64_t m, const float *x, const float *gamma,
    const float *beta, const float *rmean, const float *rvar, float *y)
{
	for (uint64_t idx = 0; idx < m * C; idx++) {
		int ch = (int)(idx % (uint64_t)C);

		y[idx] = bn_eval(x[idx], rmean[ch], rvar[ch], gamma[ch],
		    beta[ch]);
	}
}

extern "C" void
rv_cuda_host_bn_bwd(int C, uint64_t m, const float *x, const float *dy,
    const float *gamma, const float *mean, const float *invstd, float *dx,
    float *dgamma, float *dbeta)
{
	int chunks = bn_chunks(m), ch;
	double *part = new double[(size_t)chunks * 2 * C];

	host_bn_part(BN_SUM_DY, C, m, chunks, x, dy, mean, invstd, part);
	for (ch = 0; ch < C; ch++)
		bn_gsum1(ch, C, chunks, part, dgamma, dbeta);
	for (uint64_t idx = 0; idx < m * C; idx++) {
		ch = (int)(idx % (uint64_t)C);
		dx[idx] = bn_dx(x[idx], dy[idx], mean[ch], invstd[ch],
		    gamma[ch], dgamma[ch], dbeta[ch], (double)m);
	}
	delete[] part;
}

extern "C" void
rv_cuda_host_pool(int max, int n, int c, int h, int w, int kh, int kw,
    int stride, int pad, int nhwc, const float *x, float *y,
    int32_t *argmax, const float *dy, float *dx)
{
	struct pool_g g;
	uint64_t j, len;

	g.n = n;
	g.c = c;
	g.h = h;
	g.w = w;
	g.kh = kh;
	g.kw = kw;
	g.stride = stride;
	g.pad = pad;
	g.oh = (h + 2 * pad - kh) / stride + 1;
	g.ow = (w + 2 * pad - kw) / stride + 1;
	g.nhwc = nhwc;
	g.max = max;
	len = (uint64_t)n * c * g.oh * g.ow;
	for (j = 0; j < len; j++)
		y[j] = pool_fwd1<float>(&g, x, j, &argmax[j]);
	if (dy == NULL)
		return;
	len = (uint64_t)n * c * h * w;
	for (j = 0; j < len; j++)
		dx[j] = pool_bwd1<float>(&g, dy, argmax, j);
}

extern "C" void
rv_cuda_host_input(int n, int h, int w, int c, int nhwc, const uint8_t *px,
    const float *mean, const float *std, float *x)
{
	float lut[4 * 256];
	uint64_t len = (uint64_t)n * c * h * w;

	input_lut(c, mean, std, lut);
	for (uint64_t idx = 0; idx < len; idx++) {
		int ch;
		uint64_t at = input_src(idx, c, h * w, nhwc, &ch);

		x[idx] = lut[ch * 256 + px[at]];
	}
}

extern "C" void
rv_cuda_host_permute(int n, int c, int hw, int to_nchw, const float *src,
    float *dst)
{
	uint64_t len = (uint64_t)n * c * hw;

	for (uint64_t idx = 0; idx < len; idx++)
		dst[idx] = src[permute_src(idx, c, hw, to_nchw)];
}

/* cuBLAS's column-major GEMM (alpha 1, beta 0), for the host tests. */
static void
gemm_ref(struct gemm g, const float *a, const float *b, float *c)
{
	for (int j = 0; j < g.n; j++)
		for (int i = 0; i < g.m; i++) {
			double s = 0.0;

			for (int l = 0; l < g.k; l++)
				s += (double)(g.ta == CUBLAS_OP_N ?
				    a[i + (size_t)l * g.lda] :
				    a[l + (size_t)i * g.lda]) *
				    (g.tb == CUBLAS_OP_N ?
				    b[l + (size_t)j * g.ldb] :
				    b[j + (size_t)l * g.ldb]);
			c[i + (size_t)j * g.ldc] = (float)s;
		}
}

extern "C" void
rv_cuda_host_linear(int f, int out, int n, const float *x, const float *w,
    const float *b, const float *dy, float *y, float *dx, float *dw,
    float *db)
{
	gemm_ref(linear_gemm(GEMM_Y, f, out, n), w, x, y);
	for (int i = 0; i < n; i++)
		for (int o = 0; o < out; o++)
			y[(size_t)i * out + o] += b[o];
	gemm_ref(linear_gemm(GEMM_DW, f, out, n), x, dy, dw);
	gemm_ref(linear_gemm(GEMM_DX, f, out, n), w, dy, dx);
	for (int o = 0; o < out; o++) {
		float s = 0.0f;

		for (int i = 0; i < n; i++)
			s += dy[(size_t)i * out + o];
		db[o] = s;
	}
}
