/*
 * rv-score's reporting: policy names, the score.* metadata keys and the
 * verbose lines, formatted here so that the program and its tests agree
 * on one spelling.
 */
#include "shrink/score_io.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "base/opt.h"

static const char *const policy_name[] = {
	[RV_POLICY_ASSISTANT] = "assistant",
	[RV_POLICY_HISTORY] = "history",
	[RV_POLICY_UNIFORM] = "uniform",
	[RV_POLICY_RS2] = "rs2",
};

int
rv_score_policy(const char *name, enum rv_policy *p)
{
	size_t i;

	for (i = 0; i < sizeof(policy_name) / sizeof(policy_name[0]); i++)
		if (strcmp(name, policy_name[i]) == 0) {
			*p = (enum rv_policy)i;
			return 0;
		}
	return -1;
}

const char *
rv_score_policy_name(enum rv_policy p)
{
	if ((size_t)p >= sizeof(policy_name) / sizeof(policy_name[0]))
		return "?";
	return policy_name[p];
}

int
rv_score_target(const char *name, enum rv_assist_target *t)
{
	if (strcmp(name, "gradnorm") == 0)
		*t = RV_TARGET_GRADNORM;
	else if (strcmp(name, "loss") == 0)
		*t = RV_TARGET_LOSS;
	else
		return -1;
	return 0;
}

int
rv_score_classes(const struct rv_meta *m, uint32_t *classes)
{
	uint64_t n;
	int r = rv_meta_u64(m, "classes", 0, 1 << 20, &n);

	if (r <= 0)
		return r;
	*classes = (uint32_t)n;
	return 0;
}

int
rv_score_norm(const struct rv_meta *m, float mean[4], int *nmean,
    float std[4], int *nstd)
{
	*nmean = *nstd = 0;
	if (rv_meta_stats(m, "mean", mean, nmean) < 0 ||
	    rv_meta_stats(m, "std", std, nstd) < 0)
		return -1;
	return 0;
}

int
rv_score_aa_norm(const float *mean, int nmean, const float *std, int nstd,
    uint32_t channels, struct rv_assist_conf *ac)
{
	uint32_t i;

	if (nmean == 0 && nstd == 0)
		return rv_aa_norm_default(channels, ac->mean, ac->std);
	if (nmean == 0 || nstd == 0)
		return rv_seterr("autoassist: the stream's metadata has %s "
		    "but no %s", nmean ? "a mean" : "a std",
		    nmean ? "std" : "mean");
	if ((nmean > 1 && (uint32_t)nmean != channels) ||
	    (nstd > 1 && (uint32_t)nstd != channels))
		return rv_seterr("autoassist: the stream's metadata has %d "
		    "means and %d stds for %u channels: give one value, or "
		    "one per channel", nmean, nstd, channels);
	for (i = 0; i < channels; i++) {
		ac->mean[i] = mean[nmean > 1 ? i : 0];
		ac->std[i] = std[nstd > 1 ? i : 0];
	}
	return 0;
}

static int
set_f64(struct rv_meta *m, const char *key, double v)
{
	char s[32];

	if (isnan(v))
		return 0;
	snprintf(s, sizeof(s), "%.6g", v);
	return rv_meta_set(m, key, s);
}

int
rv_score_meta_conf(struct rv_meta *m, const struct rv_shrink_conf *c)
{
	int rc;

	rc = rv_meta_set(m, "score.policy", rv_score_policy_name(c->policy));
	rc |= set_f64(m, "score.floor", c->floor);
	if (c->policy == RV_POLICY_HISTORY)
		rc |= set_f64(m, "score.beta", c->beta);
	/* under a budget, the uniform policy's p is any constant */
	if ((c->policy == RV_POLICY_UNIFORM && !(c->budget > 0)) ||
	    c->policy == RV_POLICY_RS2)
		rc |= set_f64(m, "score.keep", c->keep);
	if (c->budget > 0) {
		rc |= set_f64(m, "score.budget", c->budget);
		rc |= rv_meta_set_u64(m, "score.window", c->window);
		/* what a window of W keeps: rv-batch -b a multiple of it
		 * keeps its batches even (rv-score(1), strata) */
		rc |= rv_meta_set_u64(m, "score.window_keep",
		    rv_shrink_budget_k(c->budget, c->window));
	}
	if (c->noise_cut < 0)
		rc |= rv_meta_set(m, "score.noise_cut", "auto");
	else if (c->noise_cut > 0)
		rc |= set_f64(m, "score.noise_cut", c->noise_cut);
	if (c->noise_cut != 0) {
		rc |= set_f64(m, "score.noise_keep", c->noise_keep);
		rc |= rv_meta_set_u64(m, "score.noise_streak", c->noise_streak);
	}
	rc |= rv_meta_set_u64(m, "score.reweight", (uint64_t)c->reweight);
	rc |= rv_meta_set_u64(m, "score.seed", c->seed);
	if (c->policy == RV_POLICY_ASSISTANT) {
		int aa = c->assist.kind == RV_ASSIST_AUTOASSIST;

		rc |= rv_meta_set(m, "score.assistant", aa ? "autoassist" :
		    "rv");
		rc |= rv_meta_set(m, "score.target",
		    c->assist.target == RV_TARGET_LOSS ? "loss" : "gradnorm");
		if (!aa)
			rc |= rv_meta_set(m, "score.features",
			    c->hist_feat ? "image,history" : "image");
		rc |= set_f64(m, "score.lr", c->assist.lr);
		rc |= set_f64(m, "score.l2", c->assist.l2);
		rc |= rv_meta_set_u64(m, "score.min_feedback", c->min_feedback);
	}
	return rc < 0 ? -1 : 0;
}

int
rv_score_meta_kept(struct rv_meta *m, const struct rv_shrink_conf *c,
    int head)
{
	uint64_t first, rest;

	if (!(c->budget > 0))
		return rv_meta_set_kept(m, RV_META_UNKNOWN, RV_META_UNKNOWN);
	rv_meta_epoch_counts(m, &first, &rest);
	rest = rv_shrink_budget_count(c->budget, c->window, rest);
	if (!head || !rv_shrink_conf_warms(c))
		first = rv_shrink_budget_count(c->budget, c->window, first);
	return rv_meta_set_kept(m, first, rest);
}

void
rv_score_stats(const struct rv_shrink *s, struct rv_shrink_stats *st)
{
	if (s != NULL) {
		rv_shrink_stats(s, st);
		return;
	}
	memset(st, 0, sizeof(*st));
	st->lag_mean = st->total_lag_mean = NAN;
	st->assist.mean = st->assist.acc = st->assist.auc =
	    st->assist.pos_rate = NAN;
}

int
rv_score_meta_epoch(struct rv_meta *m, uint32_t epoch,
    const struct rv_shrink_stats *st)
{
	int rc;

	rc = rv_meta_set_u64(m, "score.epoch", epoch);
	rc |= rv_meta_set_u64(m, "score.seen", st->seen);
	rc |= rv_meta_set_u64(m, "score.kept", st->kept);
	rc |= rv_meta_set_u64(m, "score.dropped", st->dropped);
	if (st->learns)
		rc |= rv_meta_set_u64(m, "score.uninformed", st->blind);
	rc |= rv_meta_set_u64(m, "score.feedback", st->feedback);
	rc |= rv_meta_set_u64(m, "score.unmatched", st->unmatched);
	if (st->lag_n > 0) {
		rc |= set_f64(m, "score.lag_mean", st->lag_mean);
		rc |= rv_meta_set_u64(m, "score.lag_max", st->lag_max);
	}
	rc |= rv_meta_set_u64(m, "score.assist.seen", st->assist.seen);
	rc |= set_f64(m, "score.assist.acc", st->assist.acc);
	rc |= set_f64(m, "score.assist.auc", st->assist.auc);
	rc |= set_f64(m, "score.assist.pos_rate", st->assist.pos_rate);
	rc |= rv_meta_set_u64(m, "score.warm", (uint64_t)(st->warm != 0));
	if (st->noise_cut > 0)
		rc |= rv_meta_set_u64(m, "score.suspects", st->suspects);
	return rc < 0 ? -1 : 0;
}

/* " (U uninformed)" / " (all uninformed)" for U of D drops, "" for none. */
static const char *
uninformed(uint64_t u, uint64_t d, char *buf, size_t len)
{
	if (u == 0)
		return "";
	if (u == d)
		snprintf(buf, len, " (all uninformed)");
	else
		snprintf(buf, len, " (%llu uninformed)", (unsigned long long)u);
	return buf;
}

static double
percent(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0;
}

void
rv_score_epoch_line(char *buf, size_t len, uint32_t epoch,
    const struct rv_shrink_stats *st, enum rv_policy p)
{
	char un[64];
	int n;

	n = snprintf(buf, len, "epoch %lu: %llu seen, %llu kept (%.1f%%), "
	    "%llu dropped%s; feedback %llu lines (%llu unmatched)",
	    (unsigned long)epoch, (unsigned long long)st->seen,
	    (unsigned long long)st->kept, percent(st->kept, st->seen),
	    (unsigned long long)st->dropped,
	    uninformed(st->blind, st->dropped, un, sizeof(un)),
	    (unsigned long long)st->feedback,
	    (unsigned long long)st->unmatched);
	if (st->lag_n > 0 && n > 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, ", lag %.0f samples "
		    "mean, %llu max", st->lag_mean,
		    (unsigned long long)st->lag_max);
	if (st->noise_cut > 0 && n > 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, "; %llu suspected",
		    (unsigned long long)st->suspects);
	if (p == RV_POLICY_ASSISTANT && n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, "; assistant acc %.3f "
		    "auc %.3f pos %.3f", st->assist.acc, st->assist.auc,
		    st->assist.pos_rate);
}

int
rv_score_feedback_warning(char *buf, size_t len,
    const struct rv_shrink_stats *st)
{
	uint64_t d = st->total_seen - st->total_kept;

	if (!st->learns || st->feedback > 0 || d == 0)
		return 0;
	snprintf(buf, len, "no feedback arrived: the %llu samples dropped "
	    "were dropped by chance and the floor, not chosen by what the "
	    "trainer said (is it writing its feedback where --feedback "
	    "reads?)", (unsigned long long)d);
	return 1;
}

void
rv_score_summary_line(char *buf, size_t len, uint64_t epochs,
    const struct rv_shrink_stats *st)
{
	char un[64];
	int n;

	n = snprintf(buf, len, "%llu seen, %llu kept (%.1f%%), %llu dropped%s "
	    "in %llu epoch%s; feedback %llu lines (%llu unmatched)",
	    (unsigned long long)st->total_seen,
	    (unsigned long long)st->total_kept,
	    percent(st->total_kept, st->total_seen),
	    (unsigned long long)(st->total_seen - st->total_kept),
	    uninformed(st->total_blind, st->total_seen - st->total_kept, un,
	    sizeof(un)),
	    (unsigned long long)epochs, epochs == 1 ? "" : "s",
	    (unsigned long long)st->feedback,
	    (unsigned long long)st->unmatched);
	if (isfinite(st->total_lag_mean) && n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, ", lag %.0f samples mean, "
		    "%llu max", st->total_lag_mean,
		    (unsigned long long)st->total_lag_max);
}
