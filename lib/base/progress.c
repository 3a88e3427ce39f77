/*
 * Progress lines on standard error (progress.h).
 */
#include "base/progress.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "base/opt.h"

/* Redraws a second on a terminal, at most. */
#define TTY_HZ	4.0

double
rv_progress_every(void)
{
	const char *s = getenv(RV_PROGRESS_ENV);
	char *end;
	double v;

	if (s == NULL || *s == '\0')
		return RV_PROGRESS_EVERY;
	v = strtod(s, &end);
	if (*end != '\0' || !isfinite(v) || v < 0 || v > 1e9) {
		rv_warn("%s=%s: not a number of seconds, 0 or more: "
		    "progress lines every %.0f s", RV_PROGRESS_ENV, s,
		    RV_PROGRESS_EVERY);
		return RV_PROGRESS_EVERY;
	}
	return v;
}

void
rv_progress_dur(char *buf, size_t len, double s)
{
	unsigned long t = s > 0 && s < 1e9 ? (unsigned long)s : 0;

	if (t < 60)
		snprintf(buf, len, "%lu s", t);
	else if (t < 3600)
		snprintf(buf, len, "%lu:%02lu", t / 60, t % 60);
	else
		snprintf(buf, len, "%lu:%02lu:%02lu", t / 3600, t / 60 % 60,
		    t % 60);
}

void
rv_progress_init(struct rv_progress *p, int quiet, const char *unit)
{
	memset(p, 0, sizeof(*p));
	p->tty = !quiet && isatty(STDERR_FILENO);
	p->every = quiet || p->tty ? 0 : rv_progress_every();
	p->t0 = p->last = rv_now();
	p->unit = unit;
}

void
rv_progress_total(struct rv_progress *p, uint64_t total)
{
	p->total = total;
}

void
rv_progress_from(struct rv_progress *p, uint64_t n)
{
	p->from = n;
}

void
rv_progress_restart(struct rv_progress *p)
{
	p->t0 = p->last = rv_now();
}

void
rv_progress_no_lines(struct rv_progress *p)
{
	p->every = 0;
}

/* This run's rate at n done, at time t. */
static double
rate_at(const struct rv_progress *p, uint64_t n, double t)
{
	double dt = t - p->t0;

	return dt > 0 && n >= p->from ? (double)(n - p->from) / dt : 0;
}

double
rv_progress_left(const struct rv_progress *p, uint64_t n)
{
	double rate = rate_at(p, n, rv_now());

	return p->total > 0 && n <= p->total && rate > 0 ?
	    (double)(p->total - n) / rate : -1;
}

/* The line, without its end. */
static void
line(const struct rv_progress *p, uint64_t n, double t, char *buf,
    size_t len)
{
	double dt = t - p->t0, rate = rate_at(p, n, t), left;
	char el[32], eta[32];
	int k;

	rv_progress_dur(el, sizeof(el), dt);
	if (p->total > 0 && n <= p->total) {
		k = snprintf(buf, len, "%s: %llu/%llu %s (%.1f%%), %.0f/s, "
		    "elapsed %s",
		    rv_progname(), (unsigned long long)n,
		    (unsigned long long)p->total, p->unit,
		    100.0 * (double)n / (double)p->total, rate, el);
		left = rate > 0 ? (double)(p->total - n) / rate : -1;
		if (left >= 0 && k > 0 && (size_t)k < len) {
			rv_progress_dur(eta, sizeof(eta), left);
			snprintf(buf + k, len - (size_t)k, ", ETA %s", eta);
		}
		return;
	}
	snprintf(buf, len, "%s: %llu %s, %.0f/s, elapsed %s", rv_progname(),
	    (unsigned long long)n, p->unit, rate, el);
}

void
rv_progress_tick(struct rv_progress *p, uint64_t n)
{
	char buf[256];
	double t;

	if (!p->tty && p->every <= 0)
		return;
	t = rv_now();
	if (t - p->last < (p->tty ? 1 / TTY_HZ : p->every))
		return;
	p->last = t;
	line(p, n, t, buf, sizeof(buf));
	if (p->tty) {
		fprintf(stderr, "\r%s\033[K", buf);
		p->drawn = 1;
	} else {
		fprintf(stderr, "%s\n", buf);
	}
}

void
rv_progress_done(struct rv_progress *p)
{
	if (p->drawn)
		fputs("\r\033[K", stderr);
	p->drawn = 0;
}
