/*
 * rv-score's options (score_opt.h): one parser for rv-score's command
 * line and rv-refurbish --score's text.
 */
#include "shrink/score_opt.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "base/opt.h"
#include "base/xmem.h"
#include "shrink/score_io.h"

void
rv_score_opts_init(struct rv_score_opts *o)
{
	memset(o, 0, sizeof(*o));
	rv_shrink_conf_init(&o->conf);
}

void
rv_score_opts_release(struct rv_score_opts *o)
{
	size_t i;

	if (o->argv == NULL)
		return;
	for (i = 0; o->argv[i] != NULL; i++)
		free(o->argv[i]);
	free(o->argv);
	o->argv = NULL;
	o->feedback = NULL;
}

/* A value in (0, max]. */
static double
positive(const char *name, const char *arg, double max, const char *usage)
{
	double v = rv_opt_f64(name, arg, 0, max, usage);

	if (v <= 0)
		rv_usage_die(usage, "%s: '%s': out of range (0, %g]", name,
		    arg, max);
	return v;
}

int
rv_score_opt(struct rv_score_opts *o, int ch, const char *arg,
    const char *usage)
{
	struct rv_shrink_conf *cf = &o->conf;

	switch (ch) {
	case RV_SCORE_OPT_ASSISTANT:
		if (strcmp(arg, "rv") == 0)
			o->aa = 0;
		else if (strcmp(arg, "autoassist") == 0)
			o->aa = 1;
		else
			rv_usage_die(usage, "--assistant: '%s': want rv or "
			    "autoassist", arg);
		o->assistant_set = 1;
		return 1;
	case RV_SCORE_OPT_BETA:
		cf->beta = rv_opt_f64("--beta", arg, 1e-6, 1e6, usage);
		return 1;
	case RV_SCORE_OPT_BUDGET:
		cf->budget = positive("--budget", arg, 1, usage);
		return 1;
	case RV_SCORE_OPT_FEATURES:
		if (strcmp(arg, "image,history") == 0)
			cf->hist_feat = 1;
		else if (strcmp(arg, "image") == 0)
			cf->hist_feat = 0;
		else
			rv_usage_die(usage, "--features: '%s': want "
			    "image,history or image", arg);
		o->features_set = 1;
		return 1;
	case RV_SCORE_OPT_FEEDBACK:
		o->feedback = arg;
		return 1;
	case RV_SCORE_OPT_FLOOR:
		cf->floor = rv_opt_f64("--floor", arg, 0, 1, usage);
		return 1;
	case RV_SCORE_OPT_KEEP:
		cf->keep = positive("--keep", arg, 1, usage);
		o->keep_set = 1;
		return 1;
	case RV_SCORE_OPT_L2:
		cf->assist.l2 = rv_opt_f64("--l2", arg, 0, 1, usage);
		o->l2_set = 1;
		return 1;
	case RV_SCORE_OPT_LR:
		cf->assist.lr = positive("--lr", arg, 100, usage);
		o->lr_set = 1;
		return 1;
	case RV_SCORE_OPT_MAX_IDS:
		cf->max_ids = (size_t)rv_opt_u64("--max-ids", arg, 1, 1 << 30,
		    usage);
		return 1;
	case RV_SCORE_OPT_MAX_INFLIGHT:
		cf->max_inflight = (size_t)rv_opt_u64("--max-inflight", arg,
		    1, 1 << 30, usage);
		return 1;
	case RV_SCORE_OPT_MIN_FEEDBACK:
		cf->min_feedback = rv_opt_u64("--min-feedback", arg, 0,
		    UINT64_MAX, usage);
		o->min_feedback_set = 1;
		return 1;
	case RV_SCORE_OPT_NOISE_CUT:
		if (strcmp(arg, "auto") == 0)
			cf->noise_cut = -1;
		else if (strcmp(arg, "off") == 0)
			cf->noise_cut = 0;
		else
			cf->noise_cut = positive("--noise-cut", arg, 1e6,
			    usage);
		return 1;
	case RV_SCORE_OPT_NOISE_KEEP:
		cf->noise_keep = rv_opt_f64("--noise-keep", arg, 0, 1, usage);
		o->noise_keep_set = 1;
		return 1;
	case RV_SCORE_OPT_NOISE_STREAK:
		cf->noise_streak = (unsigned)rv_opt_u64("--noise-streak", arg,
		    1, 255, usage);
		o->noise_streak_set = 1;
		return 1;
	case RV_SCORE_OPT_POLICY:
		if (rv_score_policy(arg, &cf->policy) < 0)
			rv_usage_die(usage, "--policy: '%s': want assistant, "
			    "history, uniform or rs2", arg);
		return 1;
	case RV_SCORE_OPT_REWEIGHT:
		cf->reweight = 1;
		return 1;
	case RV_SCORE_OPT_STRICT:
		o->strict = 1;
		return 1;
	case RV_SCORE_OPT_TARGET:
		if (rv_score_target(arg, &cf->assist.target) < 0)
			rv_usage_die(usage, "--target: '%s': want gradnorm or "
			    "loss", arg);
		o->target_set = 1;
		return 1;
	case RV_SCORE_OPT_WINDOW:
		cf->window = (uint32_t)rv_opt_u64("--window", arg, 1,
		    RV_SHRINK_MAX_WINDOW, usage);
		o->window_set = 1;
		return 1;
	default:
		return 0;
	}
}

/*
 * --assistant autoassist: the published settings, except for --lr, --l2
 * and --min-feedback given; what it has no place for is refused.
 */
static void
autoassist_conf(struct rv_score_opts *o, const char *usage)
{
	struct rv_shrink_conf *cf = &o->conf;
	struct rv_shrink_conf given = *cf;

	if (o->features_set)
		rv_usage_die(usage, "--features: not with --assistant "
		    "autoassist, whose features are the whole image");
	if (o->target_set && cf->assist.target != RV_TARGET_LOSS)
		rv_usage_die(usage, "--target gradnorm: not with --assistant "
		    "autoassist, which learns the loss");
	rv_shrink_conf_autoassist(cf);
	if (o->lr_set)
		cf->assist.lr = given.assist.lr;
	if (o->l2_set)
		cf->assist.l2 = given.assist.l2;
	if (o->min_feedback_set)
		cf->min_feedback = given.min_feedback;
}

void
rv_score_opts_finish(struct rv_score_opts *o, uint64_t seed,
    const char *usage)
{
	struct rv_shrink_conf *cf = &o->conf;

	/* a budget that silently does not apply would hang a DDP job */
	if (o->window_set && cf->budget == 0)
		rv_usage_die(usage, "--window: only with --budget");
	if (o->keep_set && cf->budget > 0)
		rv_usage_die(usage, "--keep: not with --budget, which sets the "
		    "fraction kept");
	if (cf->policy == RV_POLICY_RS2 && cf->budget > 0)
		rv_usage_die(usage, "--policy rs2: not with --budget: rs2 "
		    "keeps its --keep share of each epoch itself");
	if (cf->policy == RV_POLICY_RS2 && cf->reweight)
		rv_usage_die(usage, "--reweight: not with --policy rs2, whose "
		    "kept samples all had the same chance (weight 1)");
	if (o->assistant_set && cf->policy != RV_POLICY_ASSISTANT)
		rv_usage_die(usage, "--assistant: only with --policy "
		    "assistant");
	if (cf->noise_cut != 0 && cf->policy != RV_POLICY_ASSISTANT &&
	    cf->policy != RV_POLICY_HISTORY)
		rv_usage_die(usage, "--noise-cut: only with --policy "
		    "assistant or history");
	if (o->noise_keep_set && cf->noise_cut == 0)
		rv_usage_die(usage, "--noise-keep: only with --noise-cut");
	if (o->noise_streak_set && cf->noise_cut == 0)
		rv_usage_die(usage, "--noise-streak: only with --noise-cut");
	if (o->aa)
		autoassist_conf(o, usage);
	cf->seed = seed;
}

/* text's blank-separated words, after a first "rv-score", NULL-ended. */
static char **
split_words(const char *text, int *argc)
{
	static const char blanks[] = " \t\n";
	size_t n = 1, len;
	char **v = xreallocarray(NULL, strlen(text) / 2 + 3, sizeof(*v));

	v[0] = xstrdup("rv-score");
	for (;;) {
		text += strspn(text, blanks);
		if (*text == '\0')
			break;
		len = strcspn(text, blanks);
		v[n++] = xstrndup(text, len);
		text += len;
	}
	v[n] = NULL;
	*argc = (int)n;
	return v;
}

void
rv_score_opts_text(struct rv_score_opts *o, const char *opt,
    const char *text, uint64_t seed, const char *usage)
{
	static const struct option longopts[] = {
		RV_SCORE_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	int argc, ch;

	rv_score_opts_release(o);
	o->argv = split_words(text, &argc);
	opterr = 0;
	optind = 0;	/* glibc: start afresh, after the caller's loop */
	while ((ch = getopt_long(argc, o->argv, "+", longopts, NULL)) != -1) {
		if (ch == '?' || ch == ':') {
			int i = optind > 1 && optind <= argc ? optind - 1 : 1;

			rv_usage_die(usage, "%s: '%s': not an rv-score option "
			    "that can go here, or its value is missing", opt,
			    i < argc ? o->argv[i] : "");
		}
		rv_score_opt(o, ch, optarg, usage);
	}
	if (optind < argc)
		rv_usage_die(usage, "%s: '%s': not an rv-score option", opt,
		    o->argv[optind]);
	rv_score_opts_finish(o, seed, usage);
}
