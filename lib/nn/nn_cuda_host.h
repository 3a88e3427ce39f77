/*
 * Host entry points to the CUDA backend's per-element arithmetic
 * (nn_cuda_kern.cuh), compiled into nn_cuda.cu: the very functions its
 * kernels run, called in loops on the CPU, so that tests/unit/t_nn_cuda.c
 * can check them against the CPU backend's kernels without a GPU.  Only
 * in a build with the CUDA backend (RV_HAVE_CUDA).
 */
#ifndef RV_NN_CUDA_HOST_H
#define RV_NN_CUDA_HOST_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Dropout scales of an [n][c][hw] tensor, NCHW (nhwc 0) or NHWC order,
 * as the forward kernel draws them. */
void rv_cuda_host_dropout(int c, int n, int hw, int nhwc, float p,
    uint64_t seed, uint32_t op, uint64_t step, const uint64_t *ids,
    float *mask);
/* Softmax cross-entropy over logits z[n][k] (the device's layout), as the
 * loss kernel; dz[n][k] may be NULL, wt NULL for weights 1.  Returns the
 * objective (1/n) sum w_i loss_i. */
double rv_cuda_host_softmax_ce(int k, int n, const float *z,
    const int32_t *label, const float *wt, float ls, float *loss,
    float *dz, float *pq, int32_t *pred);
/* The same with bf16 logits and gradients (z rounded to bf16 first, dz
 * rounded to bf16 and widened back). */
double rv_cuda_host_softmax_ce_bf16(int k, int n, const float *z,
    const int32_t *label, const float *wt, float ls, float *loss,
    float *dz, float *pq, int32_t *pred);
/* The SGD kernel's update. */
void rv_cuda_host_sgd(size_t len, float *p, const float *grad, float *v,
    float lr, float mom, float wd, int nesterov);
/* A KCRS weight [k][c][rs] in KRSC order, as the bf16 weight cast lays it
 * out for NHWC convolutions. */
void rv_cuda_host_krsc(int k, int c, int rs, const float *kcrs,
    float *krsc);
/*
 * The bf16 path's batch norm (NHWC: x, y, dy, dx are [m][C]), emulated on
 * the host in the kernels' order of summation, in fp32 storage: training
 * forward (batch statistics, save mean and 1/std, running statistics
 * moved by mom), evaluation, and backward (dx, dgamma, dbeta).
 */
void rv_cuda_host_bn_train(int C, uint64_t m, const float *x,
    const float *gamma, const float *beta, float *y, float *mean,
    float *invstd, float *rmean, float *rvar, float mom);
void rv_cuda_host_bn_eval(int C, uint64_t m, const float *x,
    const float *gamma, const float *beta, const float *rmean,
    const float *rvar, float *y);
void rv_cuda_host_bn_bwd(int C, uint64_t m, const float *x, const float *dy,
    const float *gamma, const float *mean, const float *invstd, float *dx,
    float *dgamma, float *dbeta);
/*
 * A max (max 1) or average pool over [n][c][h][w] (NCHW, or NHWC when
 * nhwc), kh x kw windows: y and argmax (each output's winner as a plane
 * offset, max only) forward; when dy is not NULL, dx backward.  A global
 * average pool is kh = h, kw = w, stride 1, pad 0.
 */
void rv_cuda_host_pool(int max, int n, int c, int h, int w, int kh, int kw,
    int stride, int pad, int nhwc, const float *x, float *y,
    int32_t *argmax, const float *dy, float *dx);
/* The input kernel: u8 [n][h][w][c] samples to float NCHW (NHWC when
 * nhwc), (v / 255 - mean) / std per channel. */
void rv_cuda_host_input(int n, int h, int w, int c, int nhwc,
    const uint8_t *px, const float *mean, const float *std, float *x);
/* The layout change before an NHWC linear layer (to_nchw 1) and back. */
void rv_cuda_host_permute(int n, int c, int hw, int to_nchw,
    const float *src, float *dst);
/* A linear layer's three GEMMs as the backend shapes them for cuBLAS,
 * run through a reference column-major GEMM: y[n][out] = x[n][f] W^T + b
 * (W [out][f]), then from dy[n][out]: dx[n][f], dw[out][f], db[out]. */
void rv_cuda_host_linear(int f, int out, int n, const float *x,
    const float *w, const float *b, const float *dy, float *y, float *dx,
    float *dw, float *db);

#ifdef __cplusplus
}
#endif

#endif
