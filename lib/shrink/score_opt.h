/*
 * rv-score's options, in one place for the two programs that take them:
 * rv-score, on its command line, and rv-refurbish --score 'OPTIONS', which
 * scores inside the refurbishing loop (rv-refurbish(1)).  The parsing,
 * the defaults, the conflicts and the messages are the same in both.
 */
#ifndef RV_SCORE_OPT_H
#define RV_SCORE_OPT_H

#include <getopt.h>

#include "shrink/shrink.h"

/* Long-option codes, above every program's own (base/opt.h). */
enum {
	RV_SCORE_OPT_ASSISTANT = 0x1200,
	RV_SCORE_OPT_BETA,
	RV_SCORE_OPT_BUDGET,
	RV_SCORE_OPT_FEATURES,
	RV_SCORE_OPT_FEEDBACK,
	RV_SCORE_OPT_FLOOR,
	RV_SCORE_OPT_KEEP,
	RV_SCORE_OPT_L2,
	RV_SCORE_OPT_LR,
	RV_SCORE_OPT_MAX_IDS,
	RV_SCORE_OPT_MAX_INFLIGHT,
	RV_SCORE_OPT_MIN_FEEDBACK,
	RV_SCORE_OPT_NOISE_CUT,
	RV_SCORE_OPT_NOISE_KEEP,
	RV_SCORE_OPT_NOISE_STREAK,
	RV_SCORE_OPT_POLICY,
	RV_SCORE_OPT_REWEIGHT,
	RV_SCORE_OPT_STRICT,
	RV_SCORE_OPT_TARGET,
	RV_SCORE_OPT_WINDOW,
};

#define RV_SCORE_LONGOPTS \
	{ "assistant", required_argument, NULL, RV_SCORE_OPT_ASSISTANT }, \
	{ "beta", required_argument, NULL, RV_SCORE_OPT_BETA }, \
	{ "budget", required_argument, NULL, RV_SCORE_OPT_BUDGET }, \
	{ "features", required_argument, NULL, RV_SCORE_OPT_FEATURES }, \
	{ "feedback", required_argument, NULL, RV_SCORE_OPT_FEEDBACK }, \
	{ "floor", required_argument, NULL, RV_SCORE_OPT_FLOOR }, \
	{ "keep", required_argument, NULL, RV_SCORE_OPT_KEEP }, \
	{ "l2", required_argument, NULL, RV_SCORE_OPT_L2 }, \
	{ "lr", required_argument, NULL, RV_SCORE_OPT_LR }, \
	{ "max-ids", required_argument, NULL, RV_SCORE_OPT_MAX_IDS }, \
	{ "max-inflight", required_argument, NULL, \
	    RV_SCORE_OPT_MAX_INFLIGHT }, \
	{ "min-feedback", required_argument, NULL, \
	    RV_SCORE_OPT_MIN_FEEDBACK }, \
	{ "noise-cut", required_argument, NULL, RV_SCORE_OPT_NOISE_CUT }, \
	{ "noise-keep", required_argument, NULL, \
	    RV_SCORE_OPT_NOISE_KEEP }, \
	{ "noise-streak", required_argument, NULL, \
	    RV_SCORE_OPT_NOISE_STREAK }, \
	{ "policy", required_argument, NULL, RV_SCORE_OPT_POLICY }, \
	{ "reweight", no_argument, NULL, RV_SCORE_OPT_REWEIGHT }, \
	{ "strict", no_argument, NULL, RV_SCORE_OPT_STRICT }, \
	{ "target", required_argument, NULL, RV_SCORE_OPT_TARGET }, \
	{ "window", required_argument, NULL, RV_SCORE_OPT_WINDOW }

struct rv_score_opts {
	struct rv_shrink_conf conf;
	const char *feedback;	/* --feedback PATH, or NULL */
	int strict;		/* --strict */
	int window_set;		/* --window given */
	/* what was given, for the conflicts */
	int keep_set, aa, assistant_set, features_set, target_set;
	int lr_set, l2_set, min_feedback_set, noise_keep_set;
	int noise_streak_set;
	char **argv;		/* rv_score_opts_text's words, owned */
};

/* rv-score's defaults (rv_shrink_conf_init). */
void rv_score_opts_init(struct rv_score_opts *o);
/* Free what rv_score_opts_text kept; o->feedback is then gone too. */
void rv_score_opts_release(struct rv_score_opts *o);
/*
 * Apply one getopt_long result: 1 if ch is one of RV_SCORE_LONGOPTS, 0 if
 * not.  A bad value prints "prog: --budget: '2': out of range (0, 1]"
 * and usage, and exits 2.
 */
int rv_score_opt(struct rv_score_opts *o, int ch, const char *arg,
    const char *usage);
/*
 * After the last option: refuse the conflicts (--window without --budget,
 * --keep with it, --assistant without the assistant policy), apply
 * --assistant autoassist's settings, and set the keep draws' seed.
 * Exits 2 with usage for a conflict.
 */
void rv_score_opts_finish(struct rv_score_opts *o, uint64_t seed,
    const char *usage);
/*
 * Parse text, rv-score's options separated by blanks ("--budget 0.5
 * --feedback fb.fifo", or --name=value), then finish as above.  Used by
 * rv-refurbish --score: anything else (an operand, -o, -j, --seed) is a
 * usage error naming opt ("--score: '-o': not an rv-score option that
 * can go here").  Runs getopt_long: call it after the caller's own
 * getopt_long loop is done.
 */
void rv_score_opts_text(struct rv_score_opts *o, const char *opt,
    const char *text, uint64_t seed, const char *usage);

#endif
