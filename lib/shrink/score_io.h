/*
 * rv-score's reporting: the names of its choices, its metadata keys
 * (score.*, rv-score(1)) and its per-epoch and final lines.  Kept out of
 * cmd/rv-score.c so that the wiring stays short; no state, no printing.
 */
#ifndef RV_SCORE_IO_H
#define RV_SCORE_IO_H

#include <stddef.h>
#include <stdint.h>

#include "shrink/shrink.h"
#include "stream/meta.h"

/* "assistant", "history", "uniform": 0, or -1 for another name. */
int rv_score_policy(const char *name, enum rv_policy *p);
const char *rv_score_policy_name(enum rv_policy p);
/* "gradnorm", "loss": 0, or -1 for another name. */
int rv_score_target(const char *name, enum rv_assist_target *t);

/* *classes from m's "classes" key when present; -1 with rv_errmsg() for
 * a value that is not a count. */
int rv_score_classes(const struct rv_meta *m, uint32_t *classes);

/* The stream's mean and std keys when present (*nmean, *nstd: their
 * counts, 0 when absent); -1 with rv_errmsg() for a bad value. */
int rv_score_norm(const struct rv_meta *m, float mean[4], int *nmean,
    float std[4], int *nstd);
/*
 * The autoassist assistant's normalisation for `channels` channels into
 * ac->mean and ac->std: the stream's, when it gave both (one value for
 * every channel, or one per channel), else the published constants
 * (rv_aa_norm_default).  -1 with rv_errmsg() for counts that do not fit,
 * only one of the two, or no constants for the channels.
 */
int rv_score_aa_norm(const float *mean, int nmean, const float *std,
    int nstd, uint32_t channels, struct rv_assist_conf *ac);

/* Set the score.* keys that describe the configuration c. */
int rv_score_meta_conf(struct rv_meta *m, const struct rv_shrink_conf *c);

/*
 * Rewrite the kept-first and kept keys of m, a metadata record rv-score
 * passes on, for what configuration c keeps of the epochs it says
 * (rv_meta_epoch_counts): under a budget, rv_shrink_budget_count of each,
 * the first epoch whole when the record is the head (no sample seen
 * yet) and the assistant has a warm-up; unknown without a budget.
 */
int rv_score_meta_kept(struct rv_meta *m, const struct rv_shrink_conf *c,
    int head);

/* s's statistics; all zero (NaN for the assistant's) when s is NULL, an
 * rv-score that has seen no sample yet. */
void rv_score_stats(const struct rv_shrink *s, struct rv_shrink_stats *st);

/* Set the epoch report keys (score.epoch, score.seen, ...); NaN values
 * are left out. */
int rv_score_meta_epoch(struct rv_meta *m, uint32_t epoch,
    const struct rv_shrink_stats *st);

/* The -v lines, without the program name, into buf of len bytes (always
 * terminated).  The assistant's part only under that policy. */
void rv_score_epoch_line(char *buf, size_t len, uint32_t epoch,
    const struct rv_shrink_stats *st, enum rv_policy p);
/* The warning a run owes its user when its policy learns from feedback,
 * none came, and it dropped samples all the same: 1 with the text in buf
 * (without the program name), else 0. */
int rv_score_feedback_warning(char *buf, size_t len,
    const struct rv_shrink_stats *st);
void rv_score_summary_line(char *buf, size_t len, uint64_t epochs,
    const struct rv_shrink_stats *st);

#endif
