/*
 * CPU kernels for the layers of nn.h, forward and backward, used by the
 * CPU backend (nn_cpu.c).  Pure functions over caller-owned memory: no
 * allocation, no global state, no printing.
 *
 * Layout: activations are CNHW, x[c][n][h][w], channel-major with the
 * batch inside.  Then a convolution over the whole batch is one GEMM
 * W[co][ci*k*k] x col[ci*k*k][n*oh*ow] whose result is already CNHW, batch
 * norm reduces over one contiguous row per channel, and a tensor with
 * h = w = 1 is simply [c][n].  Parameters keep nn.h's canonical (PyTorch)
 * layouts.
 *
 * Every kernel overwrites its outputs (dx, dw, db, ...); callers sum where
 * a tensor has two consumers.  Threads: kernels parallelise with OpenMP
 * over channels or samples and GEMMs run on OpenBLAS; every reduction is
 * done in an order fixed by the shapes alone, so results are identical
 * run to run for a given thread count.
 */
#ifndef RV_NN_KERN_H
#define RV_NN_KERN_H

#include <stddef.h>
#include <stdint.h>

/* Input: u8 HWC samples [n][h][w][c] -> float CNHW, (p/255 - mean)/std. */
void rv_k_input(int n, int h, int w, int c, const uint8_t *px,
    const float *mean, const float *std, float *x);

struct rv_conv_geom {
	int n, ci, h, w;	/* input [ci][n][h][w] */
	int co, k, stride, pad;
	int oh, ow;		/* output [co][n][oh][ow] */
};

/* Floats of workspace rv_k_conv_* need (the im2col matrix). */
size_t rv_k_conv_ws(const struct rv_conv_geom *g);
/* y = conv(x, w) + b; b may be NULL. */
void rv_k_conv_fwd(const struct rv_conv_geom *g, const float *x,
    const float *w, const float *b, float *y, float *ws);
/* From dy: dw always, db and dx when not NULL. */
void rv_k_conv_bwd(const struct rv_conv_geom *g, const float *x,
    const float *w, const float *dy, float *dx, float *dw, float *db,
    float *ws);

/*
 * Batch norm over c channels of m = n*h*w values each (x[c][m]), eps 1e-5.
 * Training normalises with the biased batch variance, keeps mean and
 * 1/sqrt(var + eps) for backward, and moves the running statistics by
 * `momentum` (0.1 as torch) toward the batch mean and the unbiased
 * variance.  Evaluation uses the running statistics.
 */
void rv_k_bn_fwd_train(int c, size_t m, const float *x, const float *gamma,
    const float *beta, float *y, float *save_mean, float *save_invstd,
    float *run_mean, float *run_var, float momentum);
void rv_k_bn_fwd_eval(int c, size_t m, const float *x, const float *gamma,
    const float *beta, const float *run_mean, const float *run_var,
    float *y);
void rv_k_bn_bwd(int c, size_t m, const float *x, const float *dy,
    const float *gamma, const float *save_mean, const float *save_invstd,
    float *dx, float *dgamma, float *dbeta);

/* y = max(x, 0), in place allowed; dx = dy where y > 0, in place allowed. */
void rv_k_relu_fwd(size_t len, const float *x, float *y);
void rv_k_relu_bwd(size_t len, const float *y, const float *dy, float *dx);

/* Pools over planes [c][n][h][w] -> [c][n][oh][ow]. */
struct rv_pool_geom {
	int c, n, h, w;
	int k, stride, pad;
	int oh, ow;
};
/* Max: argmax[] gets the plane offset (ih*w + iw) of each output's max. */
void rv_k_maxpool_fwd(const struct rv_pool_geom *g, const float *x,
    float *y, int32_t *argmax);
void rv_k_maxpool_bwd(const struct rv_pool_geom *g, const float *dy,
    const int32_t *argmax, float *dx);
/* Average, dividing by k*k (padding counts, torch's default). */
void rv_k_avgpool_fwd(const struct rv_pool_geom *g, const float *x,
    float *y);
void rv_k_avgpool_bwd(const struct rv_pool_geom *g, const float *dy,
    float *dx);
/* Global average: [c][n][hw] -> [c][n]. */
void rv_k_gap_fwd(int c, int n, int hw, const float *x, float *y);
void rv_k_gap_bwd(int c, int n, int hw, const float *dy, float *dx);

/*
 * Linear over x CNHW [ci][n][hw] with F = ci*hw features a sample:
 * y[out][n] = W[out][F] . xt[F][n] + b, where xt is x flattened per sample
 * in (c, h, w) order and transposed: xt[f][n].  ws holds xt (F*n floats):
 * forward fills it and backward reads it back.
 */
size_t rv_k_linear_ws(int ci, int n, int hw);
void rv_k_linear_fwd(int ci, int n, int hw, int out, const float *x,
    const float *w, const float *b, float *y, float *ws);
/* dw always; db, dx when not NULL; ws as forward left it. */
void rv_k_linear_bwd(int ci, int n, int hw, int out, const float *w,
    const float *dy, float *dx, float *dw, float *db, const float *ws);

/*
 * Dropout on x CNHW [c][n][hw]: element (ch, i, j) of sample i is zeroed
 * with probability p, else scaled by 1/(1-p).  Sample i's mask comes from
 * rv_rng_init(seed, RV_STAGE_TRAIN, op, (uint32_t)step, ids[i]), drawing
 * rv_rng_uniform() for ch = 0.., j = 0.. in that order; so the mask of a
 * sample depends on what it is, never on its place in the batch or the
 * thread count.  mask[c][n][hw] keeps the scale (0 or 1/(1-p)).
 */
void rv_k_dropout_fwd(int c, int n, int hw, float p, uint64_t seed,
    uint32_t op, uint64_t step, const uint64_t *ids, const float *x,
    float *y, float *mask);
void rv_k_dropout_bwd(size_t len, const float *mask, const float *dy,
    float *dx);

/*
 * Softmax cross-entropy on logits z[k][n] (k classes, [c][n] layout).
 * Target q = (1 - ls) onehot(label) + ls / k.  loss[i] = -sum_j q_j log p_j
 * (unweighted).  dz[k][n] = (p - q) * wt[i] / n, the gradient of
 * (1/n) sum_i wt_i loss_i.  pq[i] = ||p - q||, the first factor of the
 * last-layer gradient norm.  pred[i] = argmax_j z (first on ties).  Any of
 * loss, dz, pq, pred may be NULL (eval passes dz = NULL).  wt may be NULL
 * for weights 1.  Returns the objective (1/n) sum_i wt_i loss_i.
 */
double rv_k_softmax_ce(int k, int n, const float *z, const int32_t *label,
    const float *wt, float ls, float *loss, float *dz, float *pq,
    int32_t *pred);

/*
 * SGD as torch.optim.SGD, dampening 0: g = grad + wd p; v = mom v + g;
 * p -= lr (nesterov ? g + mom v : v).  v starts at zero, which equals
 * torch's first-step v = g.
 */
void rv_k_sgd(size_t len, float *p, const float *grad, float *v, float lr,
    float mom, float wd, int nesterov);

/* Set OpenMP and OpenBLAS threads for the kernels (call once). */
void rv_k_threads(int n);

#endif
