/*
 * The evaluation set of rv-train-gpu --eval: a sample (or batch) stream
 * read whole into memory once, then run through the backend's eval() in
 * batches at every evaluation: mean loss and top-1 accuracy.
 */
#ifndef RV_TRAIN_EVAL_H
#define RV_TRAIN_EVAL_H

#include <stddef.h>
#include <stdint.h>

#include "nn/nn.h"

struct rv_eval_set {
	size_t n;		/* samples */
	uint32_t h, w, c;
	uint8_t *pixels;	/* n x h x w x c */
	int32_t *labels;
	uint64_t *ids;
	float *weights;		/* all 1 */
	size_t cap;
};

/* Read path (u8 samples or batches, every one labelled).  0 or -1. */
int rv_eval_load(struct rv_eval_set *e, const char *path, uint32_t batch);
/*
 * Evaluate in batches of at most batch_max, using loss[] and pred[]
 * (batch_max each) as scratch: *loss the mean loss, *acc top-1 accuracy.
 * Labels must lie in [0, classes) of the model.  0 or -1.
 */
int rv_eval_run(const struct rv_eval_set *e, const struct rv_nn_ops *ops,
    void *be, int batch_max, float *loss, int32_t *pred, double *mean_loss,
    double *acc);
void rv_eval_release(struct rv_eval_set *e);

#endif
