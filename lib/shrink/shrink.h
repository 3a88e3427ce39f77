/*
 * Instance shrinking for rv-score: decide, sample by sample, whether a
 * sample goes on to the trainer, from one of three policies, and learn
 * from the trainer's feedback lines as they come.
 *
 *   assistant  keep with probability b + (1 - b) p, p from the AutoAssist
 *              assistant (assist.h) on the sample's features
 *   history    keep with probability max(b, q^beta), q the percentile of
 *              the sample's last known gradient norm among recent ones
 *              (Selective-Backprop, Jiang et al. 2019); unknown ids keep
 *   uniform    keep with probability `keep` (the control)
 *   rs2        repeated sampling of random subsets (Okanovic et al., ICLR
 *              2024): each epoch keeps a fresh random share `keep` of the
 *              samples, without replacement across epochs, so that every
 *              sample is kept once before any is kept twice: the cycles
 *              (passes over the data) laid end to end, each id has a
 *              place in each cycle (rv_rng(seed, RV_STAGE_SCORE, op 3,
 *              cycle, id), drawn so that an epoch that straddles two
 *              cycles holds no id twice), and epoch e keeps the ids whose
 *              turn falls in [e keep, (e + 1) keep).  Stateless: the same
 *              on every rank and after a resume, its share of an epoch
 *              `keep` up to the binomial spread.  No warm-up, no
 *              feedback, p_keep 1.
 *
 * The noise cut (noise_cut > 0, assistant and history): a loss reported
 * for a sample is suspect when it exceeds both noise_cut and
 * RV_NOISE_RATIO times the median of the last 4096 losses reported before
 * it (ranked again every 256), each weighted by 1/p, p the probability
 * its sample was kept with (rv_shrink_weighted_median: the median of the
 * samples seen, not of the kept, whose losses a policy that keeps
 * high-loss samples raises toward the mislabelled ones'); a sample whose
 * last noise_streak losses were all suspect is suspected of a wrong
 * label, and kept with probability noise_keep instead of its policy's,
 * with weight 1 (its loss is not one to estimate).  Under label noise a
 * policy that prefers high-loss samples otherwise prefers the mislabelled
 * ones, which a model that has learnt the true classes gets confidently
 * wrong again and again; a hard sample of the right label, confidently
 * wrong once, is mostly learnt after being trained on, so the streak (2
 * by default) spares it.  A sample whose streak has begun and is not
 * yet long enough is on probation: kept, so that its next loss comes soon
 * to confirm or clear it, where the policy would often drop it and leave
 * it unjudged.  The median is the clean majority's, which the
 * mislabelled do not pull up as they would a mean; the ratio keeps the
 * cut from flagging the first steps' losses, all near log(classes).  It
 * needs the ids' history (max_ids); a suspect is looked at again when
 * kept by its noise_keep draw, and cleared by a loss that is not suspect.
 *
 * Everything is kept during the first epoch seen (warm-up) and, for the
 * assistant, until it has learned from `min_feedback` lines; the published
 * AutoAssist assistant (assist.kind RV_ASSIST_AUTOASSIST) has no
 * first-epoch warm-up, only min_feedback's.  A kept
 * sample's weight becomes 1/P(keep) with `reweight` (so the trainer's
 * (1/n) sum w loss stays an unbiased estimate of the full data's).  The
 * keep draw is rv_rng(seed, RV_STAGE_SCORE, op 0, epoch, id): the same
 * state and the same sample give the same decision.
 *
 * Per-id state is bounded: at most `max_inflight` samples that were kept
 * and whose feedback has not come, when each was decided and, for the
 * assistant, its features (the oldest are forgotten first: their
 * feedback, when it comes, is counted unmatched and has no lag),
 * and for the history policy the last gradient norm of at most `max_ids`
 * ids (the least recently updated forgotten first).  Memory: about
 * max_inflight * (4 * rv_feat_len + 44) + max_ids * 32 bytes, touched
 * only as ids arrive.  A floor of 0 can give p_keep 0: such a sample is
 * never kept (its weight would be 1/p_keep, capped at FLT_MAX).
 *
 * Budget mode (budget F > 0, rv-score --budget) replaces the independent
 * draws, whose kept count varies, by an exact count: samples are offered
 * to a window of at most `window` (W) samples of one epoch, and each
 * window of w samples keeps exactly k = rv_shrink_budget_k(F, w) of them,
 * sample i with probability pi_i proportional to its p_keep (capped at 1;
 * rv_shrink_budget_pi), chosen by one systematic draw
 * (rv_shrink_budget_draw) with u from rv_rng(seed, RV_STAGE_SCORE, op 1,
 * epoch, the id of the window's first sample).  Warm-up goes by epoch
 * only: the first epoch seen keeps all (under autoassist: k of each
 * window too), later ones keep k of each window, uniformly while the
 * assistant has learned fewer than min_feedback lines.  So the count kept
 * of an epoch depends only on its length, F and W, never on feedback or
 * timing.  The window adds about W * (4 * nfeat + 55) bytes (autoassist:
 * W * (h w c + 55)).
 *
 * Strata: every sample is offered in stratum 0 or 1 (rv-score: 1 for a
 * partial served from rv-refurbish's cache, RV_F_CACHED, 0 otherwise),
 * and each stratum keeps its proportional share of k
 * (rv_shrink_budget_strata), chosen as above inside the stratum with a
 * draw of its own (stratum 0 takes the generator's first u, stratum 1
 * its second).  So windows that hold the same share of cache hits keep
 * the same number of them, +-1: shrinking keeps rv-refurbish's even
 * misses per batch.  A window of stratum 0 alone decides as without
 * strata.
 */
#ifndef RV_SHRINK_H
#define RV_SHRINK_H

/*
 * The assistant's features may end with RV_HIST_FEAT of the sample's own
 * history: log(its last value / the running mean), clamped to [-4, 4],
 * and an indicator that it has one (both 0 for an id never heard of).
 * The ids remembered are bounded by max_ids, as for the history policy.
 */
#define RV_HIST_FEAT	2

#define RV_NOISE_RATIO	2	/* the noise cut: times the median loss */

#define RV_SHRINK_WINDOW	256	/* budget mode: default window */
#define RV_SHRINK_MAX_WINDOW	65536	/* and the largest allowed */
#define RV_SHRINK_STRATA	2	/* budget mode: strata of a window */

#include <stddef.h>
#include <stdint.h>

#include "shrink/assist.h"
#include "stream/feedback.h"

enum rv_policy {
	RV_POLICY_ASSISTANT = 0,
	RV_POLICY_HISTORY,
	RV_POLICY_UNIFORM,
	RV_POLICY_RS2,
};

struct rv_shrink_conf {
	enum rv_policy policy;
	double floor;		/* b, 0..1 (default 0.3) */
	double beta;		/* history exponent (default 1) */
	double keep;		/* uniform, rs2: the fraction kept (default
				 * 0.5) */
	int reweight;		/* weight kept samples by 1/P(keep) */
	uint64_t seed;
	uint64_t min_feedback;	/* assistant warm-up lines (default 1000) */
	size_t max_inflight;	/* default 1 << 16 */
	size_t max_ids;		/* default 1 << 20 */
	int hist_feat;		/* assistant: add the id's history features
				 * (default 1; see RV_HIST_FEAT) */
	struct rv_assist_conf assist;	/* lr, l2, mean_decay, target,
					 * kind and, under autoassist,
					 * mean and std */
	uint32_t height, width;	/* autoassist: every image's shape */
	double budget;		/* F, the share of each window kept, in
				 * (0, 1]; 0: off, a draw per sample
				 * (default) */
	uint32_t window;	/* W, samples of a budget window, 1 to
				 * RV_SHRINK_MAX_WINDOW (default 256) */
	double noise_cut;	/* the loss above which (and above
				 * RV_NOISE_RATIO times the median) a
				 * sample is suspect; 0: off (default) */
	unsigned noise_streak;	/* suspect losses in a row that make a
				 * suspect, 1 to 255 (default 2) */
	double noise_keep;	/* a suspect's keep probability, [0, 1]
				 * (default 0.05) */
};

/* The defaults above; policy assistant, seed 0, reweight off, budget
 * off. */
void rv_shrink_conf_init(struct rv_shrink_conf *c);
/*
 * The published AutoAssist assistant's settings (assist.h): kind
 * autoassist, lr RV_AA_LR, l2 RV_AA_L2, target loss, no history features
 * and no warm-up (min_feedback 0: it decides from the first sample, in the
 * first epoch too, budget windows included).  Its features are the whole
 * image: the caller sets height and width, the shape every sample must
 * have, and assist.mean and std (rv_aa_norm_default() or the stream's).
 * Its in-flight state is the image's h w c bytes a sample.
 */
void rv_shrink_conf_autoassist(struct rv_shrink_conf *c);

struct rv_shrink_stats {
	uint64_t seen, kept, dropped;	/* this epoch */
	uint64_t total_seen, total_kept;
	/* of the drops, the uninformed ones (this epoch's, the run's):
	 * decided, by a policy that learns from feedback (learns:
	 * assistant, history), before it had any to choose by (the
	 * assistant: fewer than its min_feedback lines, while it ranks
	 * nothing; history: none), so chance and the floor chose them */
	uint64_t blind, total_blind;
	int learns;
	uint64_t feedback;		/* lines used: matched ones for the
					 * assistant, every line otherwise */
	uint64_t unmatched;		/* lines whose id was not in flight */
	uint64_t suspects;		/* this epoch's samples decided as
					 * suspects of the noise cut */
	double noise_cut;		/* the cut in force (auto resolved),
					 * 0: off */
	int warm;			/* 0 while everything passes */
	/* the feedback lag: samples decided (kept or dropped) between a
	 * kept sample's decision and its feedback line, over the lines
	 * matched this epoch (lag_n of them; mean NaN and max 0 while
	 * none) and over the run */
	uint64_t lag_n, lag_max, total_lag_max;
	double lag_mean, total_lag_mean;
	struct rv_assist_stats assist;
};

struct rv_shrink;

/* For samples of `channels` channels and `classes` classes (0: no class
 * term).  NULL with rv_errmsg() for a bad configuration. */
struct rv_shrink *rv_shrink_new(const struct rv_shrink_conf *c,
    uint32_t channels, uint32_t classes);
void rv_shrink_free(struct rv_shrink *s);

/* The decision for one sample (u8 HWC pixels of the channels given). */
struct rv_keep {
	int keep;		/* 1: pass it on */
	double p_keep;		/* the probability it was kept with */
	float weight;		/* its weight if kept (1, or 1/p_keep) */
	float score;		/* assistant p, or NaN when not computed */
};
/* Returns 0, or -1 with rv_errmsg() (a shape the features don't fit;
 * checked, and px read, only under the assistant policy).  Not for budget
 * mode, whose samples go through rv_shrink_offer(). */
int rv_shrink_decide(struct rv_shrink *s, uint64_t id, uint32_t epoch,
    int32_t label, const uint8_t *px, uint32_t h, uint32_t w, uint32_t c,
    struct rv_keep *out);

/* rs2's rule: 1 if sample id is in epoch's subset, of share k in (0, 1],
 * under seed; stateless (see rs2 above). */
int rv_shrink_rs2_member(uint64_t seed, double k, uint64_t id,
    uint32_t epoch);

/*
 * Budget mode.  rv_shrink_offer() adds a sample to the window, with its
 * p_keep computed now, from what has been learned so far; px is read
 * during the call only.  The caller decides the window with
 * rv_shrink_decide_window() when it holds `window` samples, before a
 * sample of another epoch, and at the epoch's end; offering to a full
 * window, or a sample of another epoch, is an error.  Returns 0, or -1
 * with rv_errmsg() (those, a stratum not below RV_SHRINK_STRATA, budget
 * mode off, or a bad shape as above).
 */
int rv_shrink_offer(struct rv_shrink *s, uint64_t id, uint32_t epoch,
    int32_t label, unsigned stratum, const uint8_t *px, uint32_t h,
    uint32_t w, uint32_t c);
/* Samples offered and not yet decided. */
size_t rv_shrink_pending(const struct rv_shrink *s);
/*
 * Decide the pending samples, in the order offered, into out[0..n) (room
 * for the window), p_keep being pi_i, and empty the window.  Returns n,
 * 0 when nothing was pending.  Exactly rv_shrink_budget_k(F, n) are kept
 * after the first epoch, all of them during it.
 */
size_t rv_shrink_decide_window(struct rv_shrink *s, struct rv_keep *out);
/*
 * The same with the count each stratum keeps given: ks[t] of stratum t
 * (at most its size), chosen as above; warm-up still keeps all.  For a
 * caller that sizes its windows itself (rv-refurbish --score: each window
 * keeps one trained batch, its misses dealt evenly over the epoch).
 */
size_t rv_shrink_decide_window_ks(struct rv_shrink *s, const size_t *ks,
    struct rv_keep *out);
/* 1 if a window of epoch keeps every sample (the first epoch seen, not
 * under autoassist); asked before its first sample is offered. */
int rv_shrink_keeps_all(const struct rv_shrink *s, uint32_t epoch);
/* 1 if configuration c's first epoch seen passes whole under a budget
 * (a warm-up: every policy but the autoassist assistant), the rule
 * rv_shrink_keeps_all applies, for a caller that counts ahead. */
int rv_shrink_conf_warms(const struct rv_shrink_conf *c);

/*
 * The budget arithmetic, without state; none of it allocates.
 *
 * rv_shrink_budget_k: f w rounded half up, and at least 1 (at most w):
 * the count a window of w samples keeps; 0 for w 0.
 *
 * rv_shrink_budget_pi: inclusion probabilities pi[0..w) from the keep
 * probabilities p (or any sizes; one that is not a positive finite
 * number counts as 0): pi_i = min(1, c p_i) with c such that sum pi = k
 * (0 <= k <= w), by the usual iterative capping.  The share that c p_i
 * cannot place, when fewer than k have p_i > 0, is spread evenly over
 * those with p_i 0: so all-zero p gives pi = k/w.
 *
 * rv_shrink_budget_draw: systematic sampling with probability
 * proportional to size: keep[i] = 1 for every pi_i >= 1, then for the
 * remaining r = k - (their number) the items whose cumulative pi, in
 * order, crosses u, u + 1, ..., u + r - 1 (u in [0, 1)).  Returns the
 * number kept, exactly k for pi from rv_shrink_budget_pi, each item kept
 * with probability pi_i over u.
 */
size_t rv_shrink_budget_k(double f, size_t w);
/* The samples a budget f keeps of an epoch of n, in windows of w (the
 * last one shorter): floor(n / w) k(w) + k(n mod w).  RV_META_UNKNOWN
 * (UINT64_MAX) for n unknown. */
uint64_t rv_shrink_budget_count(double f, size_t w, uint64_t n);

void rv_shrink_budget_pi(const double *p, size_t w, size_t k, double *pi);
size_t rv_shrink_budget_draw(const double *pi, size_t w, size_t k, double u,
    unsigned char *keep);
/*
 * The shares of k (at most n_0 + n_1; more counts as that) that strata
 * of n[0] and n[1] samples keep: ks[0] = k n_0 / (n_0 + n_1) rounded half
 * up, ks[1] = k - ks[0]; each at most its n.  All 0 for empty strata.
 */
void rv_shrink_budget_strata(const size_t *n, size_t k, size_t *ks);

/*
 * The noise cut's median: of the n values v, each of weight w[i] (NULL:
 * all 1), the smallest at which the weights of the values up to it pass
 * half the total; with equal weights the upper median, the sorted
 * v[n / 2].  0 for n 0.
 */
double rv_shrink_weighted_median(const float *v, const float *w, size_t n);
/* One feedback line from the trainer. */
void rv_shrink_feedback(struct rv_shrink *s, const struct rv_fb_line *l);
/* An epoch ended: the per-epoch counters start again after this call. */
void rv_shrink_epoch_end(struct rv_shrink *s);
void rv_shrink_stats(const struct rv_shrink *s, struct rv_shrink_stats *st);

#endif
