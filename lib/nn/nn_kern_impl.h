/*
 * Private helpers shared by the CPU kernels (nn_kern*.c): reductions in
 * double over one contiguous row, in an order fixed by the row's length
 * alone (eight interleaved partial sums, combined pairwise), so a sum is
 * the same whichever thread computes it and eight chains keep the FPU busy.
 */
#ifndef RV_NN_KERN_IMPL_H
#define RV_NN_KERN_IMPL_H

#include <stddef.h>

#define RV_K_LANES	8
/* Below this many elements a parallel region costs more than it saves. */
#define RV_K_PAR_MIN	32768

/*
 * The lanes live in locals, not an array, so they stay in registers; the
 * tail of fewer than eight goes to lanes 0.. in order.
 */
static inline double
rv_k_fold(double a0, double a1, double a2, double a3, double a4, double a5,
    double a6, double a7, const double *t, int nt)
{
	double a[RV_K_LANES] = { a0, a1, a2, a3, a4, a5, a6, a7 };
	int l;

	for (l = 0; l < nt; l++)
		a[l] += t[l];
	return ((a[0] + a[1]) + (a[2] + a[3])) +
	    ((a[4] + a[5]) + (a[6] + a[7]));
}

/* sum_j x[j] */
static inline double
rv_k_sum(const float *restrict x, size_t m)
{
	double a0 = 0, a1 = 0, a2 = 0, a3 = 0, a4 = 0, a5 = 0, a6 = 0, a7 = 0;
	double t[RV_K_LANES];
	size_t j;
	int l;

	for (j = 0; j + RV_K_LANES <= m; j += RV_K_LANES) {
		a0 += x[j];
		a1 += x[j + 1];
		a2 += x[j + 2];
		a3 += x[j + 3];
		a4 += x[j + 4];
		a5 += x[j + 5];
		a6 += x[j + 6];
		a7 += x[j + 7];
	}
	for (l = 0; j < m; j++, l++)
		t[l] = x[j];
	return rv_k_fold(a0, a1, a2, a3, a4, a5, a6, a7, t, l);
}

static inline double
rv_k_sq(double d)
{
	return d * d;
}

/* sum_j (x[j] - c)^2 */
static inline double
rv_k_sumsq_dev(const float *restrict x, size_t m, double c)
{
	double a0 = 0, a1 = 0, a2 = 0, a3 = 0, a4 = 0, a5 = 0, a6 = 0, a7 = 0;
	double t[RV_K_LANES];
	size_t j;
	int l;

	for (j = 0; j + RV_K_LANES <= m; j += RV_K_LANES) {
		a0 += rv_k_sq(x[j] - c);
		a1 += rv_k_sq(x[j + 1] - c);
		a2 += rv_k_sq(x[j + 2] - c);
		a3 += rv_k_sq(x[j + 3] - c);
		a4 += rv_k_sq(x[j + 4] - c);
		a5 += rv_k_sq(x[j + 5] - c);
		a6 += rv_k_sq(x[j + 6] - c);
		a7 += rv_k_sq(x[j + 7] - c);
	}
	for (l = 0; j < m; j++, l++)
		t[l] = rv_k_sq(x[j] - c);
	return rv_k_fold(a0, a1, a2, a3, a4, a5, a6, a7, t, l);
}

/* *s = sum_j y[j], *sd = sum_j y[j] (x[j] - c) */
static inline void
rv_k_sum_dot_dev(const float *restrict y, const float *restrict x,
    size_t m, double c, double *s, double *sd)
{
	double a0 = 0, a1 = 0, a2 = 0, a3 = 0, a4 = 0, a5 = 0, a6 = 0, a7 = 0;
	double b0 = 0, b1 = 0, b2 = 0, b3 = 0, b4 = 0, b5 = 0, b6 = 0, b7 = 0;
	double t[RV_K_LANES], u[RV_K_LANES];
	size_t j;
	int l;

	for (j = 0; j + RV_K_LANES <= m; j += RV_K_LANES) {
		a0 += y[j];
		a1 += y[j + 1];
		a2 += y[j + 2];
		a3 += y[j + 3];
		a4 += y[j + 4];
		a5 += y[j + 5];
		a6 += y[j + 6];
		a7 += y[j + 7];
		b0 += y[j] * (x[j] - c);
		b1 += y[j + 1] * (x[j + 1] - c);
		b2 += y[j + 2] * (x[j + 2] - c);
		b3 += y[j + 3] * (x[j + 3] - c);
		b4 += y[j + 4] * (x[j + 4] - c);
		b5 += y[j + 5] * (x[j + 5] - c);
		b6 += y[j + 6] * (x[j + 6] - c);
		b7 += y[j + 7] * (x[j + 7] - c);
	}
	for (l = 0; j < m; j++, l++) {
		t[l] = y[j];
		u[l] = y[j] * (x[j] - c);
	}
	*s = rv_k_fold(a0, a1, a2, a3, a4, a5, a6, a7, t, l);
	*sd = rv_k_fold(b0, b1, b2, b3, b4, b5, b6, b7, u, l);
}

/* db[c] = sum_j dy[c][j] (c rows of m), one row a thread, in double:
 * the bias gradient of convolutions and linear layers (nn_kern.c), shared
 * by the oneDNN convolution (nn_conv.c) so both sum alike. */
void rv_k_sum_rows(int c, size_t m, const float *dy, float *db);

#endif
