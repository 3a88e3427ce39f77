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
 *
 * A second kind, RV_ASSIST_AUTOASSIST, is the authors' image-classification
 * assistant as published (autoassist-exp, image_classification/
 * assistant.py and train_autoassist.py): features the whole image, each
 * value (v / 255 - mean_c) / std_c, no bias feature; weights drawn from
 * N(0, 0.001^2); label 1[loss > running mean], the mean the ratio of two
 * exponential moving averages (alpha 0.75) of each batch's loss sum and
 * size, updated with the batch before it is labelled; one mini-batch SGD
 * step per trainer batch, lr 0.01 / B on the summed logistic gradient
 * plus 1e-3 w, and per sample on its class's u.  A "batch" is the run of
 * consecutive feedback lines of one trainer step.
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

enum rv_assist_kind {
	RV_ASSIST_RV = 0,	/* pooled features, one SGD step a line */
	RV_ASSIST_AUTOASSIST,	/* the authors' assistant, as published */
};

/* The published assistant's constants. */
#define RV_AA_LR		0.01	/* divided by the batch's size */
#define RV_AA_L2		1e-3
#define RV_AA_ALPHA		0.75	/* the running mean's decay */
#define RV_AA_INIT_SD		0.001	/* w, u ~ N(0, sd^2) */
#define RV_AA_BATCH_MAX		1024	/* longer runs learn in parts */

/*
 * The normalisation the authors' code applies to 1 and 3 channels: MNIST's
 * mean 0.1307 and std 0.3081, CIFAR-10's (0.4914, 0.4822, 0.4465) and
 * (0.2023, 0.1994, 0.2010).  0, or -1 with rv_errmsg() for 2 or 4
 * channels, which it has none for.
 */
int rv_aa_norm_default(uint32_t channels, float mean[4], float std[4]);

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
	/* RV_ASSIST_AUTOASSIST only (rv ignores them): */
	enum rv_assist_kind kind;
	uint32_t channels;	/* 1..4; nfeat must be h w channels */
	float mean[4], std[4];	/* per channel, on v / 255; std > 0 */
	uint64_t seed;		/* of the initial weights */
};

/* lr 0.05, l2 1e-4, mean_decay 0.99, target gradnorm, kind rv; nfeat,
 * classes, channels and seed 0; mean 0, std 1. */
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

/* NULL with rv_errmsg() for a bad configuration.  Under autoassist the
 * weights w (nfeat) and then u (classes) are drawn from N(0, 0.001^2) by
 * Box-Muller over rv_rng(seed, RV_STAGE_SCORE, op 2, epoch 0, id 0). */
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
/*
 * Autoassist: p for the u8 image px (nfeat values, HWC, normalised here),
 * from the weights of the last batch learned.
 */
double rv_assist_predict_px(const struct rv_assist *a, const uint8_t *px,
    int32_t label);
/*
 * Autoassist: one feedback line of trainer step `step`, its image px
 * (copied) and loss.  The pending batch is learned first when step is
 * not its step, or when it holds RV_AA_BATCH_MAX lines; a non-finite loss
 * is ignored.  rv_assist_flush() learns the pending batch now (nothing
 * when empty): the EMA mean takes the batch, then each line is labelled
 * loss > mean and, with its p from the weights before the batch, counted
 * in the window; then u_y -= (lr / B)(g + l2 u_y) line by line, and
 * w -= (lr / B)(sum g x + l2 w), g = p - label.
 */
void rv_assist_add_px(struct rv_assist *a, const uint8_t *px, int32_t label,
    double loss, uint64_t step);
void rv_assist_flush(struct rv_assist *a);
/* Lines waiting in the pending batch. */
size_t rv_assist_pending(const struct rv_assist *a);
/* The weights, nfeat of w and classes of u: for tests, read only. */
const double *rv_assist_w(const struct rv_assist *a);
const double *rv_assist_u(const struct rv_assist *a);
/* The running mean of the target value, NaN before the first. */
double rv_assist_mean(const struct rv_assist *a);
/* Sorts in a scratch buffer of a's: not concurrently on one assistant. */
void rv_assist_stats(const struct rv_assist *a, struct rv_assist_stats *s);

#endif
