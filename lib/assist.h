/*
 * The AutoAssist assistant (Zhang et al., NeurIPS 2019) of rv-score: a
 * logistic regression p = sigmoid(w . phi(x) + u_y) that predicts whether
 * a sample is informative, trained online by SGD with L2 from the
 * trainer's feedback lines (rv-feedback(5)) on the label
 * 1[value > running mean of value], value being the sample's gradient
 * norm (or its loss, for the loss variant).
 *
 * Features phi are cheap on purpose (the assistant must cost far less
 * than the trainer): the image area-averaged to a RV_FEAT_GRID x
 * RV_FEAT_GRID grid per channel, each cell scaled to [-1, 1], plus one
 * constant 1 (the bias).  An 8x8 grid keeps the coarse shape that tells
 * classes and their hard cases apart (a shirt from a T-shirt) while a
 * forward pass stays under 200 multiply-adds for grey images.
 */
#ifndef RV_ASSIST_H
#define RV_ASSIST_H

#include <stddef.h>
#include <stdint.h>

#define RV_FEAT_GRID	8
#define RV_ASSIST_AUC_WINDOW	4096	/* predictions kept for the AUC */

/* Features of one image: c * GRID * GRID + 1 floats. */
size_t rv_feat_len(uint32_t channels);
/*
 * Area-average a u8 HWC image (h, w >= 1, c 1..4) into phi (rv_feat_len
 * floats): cell (ch, i, j) averages rows [i h / G, (i + 1) h / G) (at
 * least one row) and likewise columns, then maps 0..255 to -1..1; the
 * last element is 1.  Deterministic, no allocation.
 */
void rv_feat(const uint8_t *px, uint32_t h, uint32_t w, uint32_t c,
    float *phi);

enum rv_assist_target {
	RV_TARGET_GRADNORM = 0,	/* label: gradnorm > its running mean */
	RV_TARGET_LOSS,		/* label: loss > its running mean */
};

struct rv_assist_conf {
	uint32_t nfeat;		/* rv_feat_len(channels) */
	uint32_t classes;	/* u_y per class; labels outside get none */
	double lr;		/* SGD step (default 0.05) */
	double l2;		/* L2 on w and u (default 1e-4) */
	double mean_decay;	/* running mean: m += (1 - d)(v - m)
				 * after the first value (default 0.99) */
	enum rv_assist_target target;
};

/* lr 0.05, l2 1e-4, mean_decay 0.99, target gradnorm; nfeat, classes 0. */
void rv_assist_conf_init(struct rv_assist_conf *c);

struct rv_assist_stats {
	uint64_t seen;		/* feedback examples learned from */
	double mean;		/* the running mean of the target value */
	double acc;		/* accuracy (p > 0.5 against the label) of the
				 * predictions made before learning each of
				 * the last RV_ASSIST_AUC_WINDOW examples */
	double auc;		/* their ROC AUC; NaN while one class is
				 * missing from the window (acc, auc and
				 * pos_rate are NaN while it is empty, mean
				 * until the first value) */
	double pos_rate;	/* share of positive labels in the window */
};

struct rv_assist;

/* NULL with rv_errmsg() for a bad configuration. */
struct rv_assist *rv_assist_new(const struct rv_assist_conf *c);
void rv_assist_free(struct rv_assist *a);
/* p for features phi of a sample of this label (any label: outside
 * [0, classes) the class term is 0). */
double rv_assist_predict(const struct rv_assist *a, const float *phi,
    int32_t label);
/*
 * Learn from one feedback example: predict first (for the statistics),
 * update the running mean with value, label = value > mean (the mean
 * before this update; the first example only seeds the mean and is not
 * learned from), then one SGD step on the logistic loss + L2.
 */
void rv_assist_learn(struct rv_assist *a, const float *phi, int32_t label,
    double value);
/* The running mean of the target value, NaN before the first. */
double rv_assist_mean(const struct rv_assist *a);
/* Sorts in a scratch buffer of a's: not concurrently on one assistant. */
void rv_assist_stats(const struct rv_assist *a, struct rv_assist_stats *s);

#endif
