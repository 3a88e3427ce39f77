/*
 * Progress on standard error, for a person following a run (rv(7),
 * "Progress").  On a terminal: one line, redrawn at most 4 times a second
 * and erased at the end.  Otherwise (a batch job's log, a file): a plain
 * line at most every RV_PROGRESS seconds (default 30; 0: none), never
 * redrawn.  Quiet: neither.  Never on standard output.
 *
 *   rv-batch: 12800/60000 samples (21.3%), 4321/s, elapsed 3 s, ETA 11 s
 *   rv-batch: 12800 samples, 4321/s, elapsed 3 s     (no total known)
 *
 * The total is the program's own (its options) or its input's: the
 * stream's "total" metadata key, which a stage that knows it writes for
 * the stages after it (rv-stream(5)).
 */
#ifndef RV_PROGRESS_H
#define RV_PROGRESS_H

#include <stddef.h>
#include <stdint.h>

/* The environment variable: seconds between plain lines. */
#define RV_PROGRESS_ENV		"RV_PROGRESS"
#define RV_PROGRESS_EVERY	30.0

struct rv_progress {
	int tty;		/* a line redrawn on a terminal */
	double every;		/* else: seconds between lines; 0: none */
	double t0, last;
	const char *unit;
	uint64_t total;		/* 0: not known */
	uint64_t from;		/* the count at the start (a resumed run) */
	int drawn;		/* a terminal line is showing */
};

/* quiet: no progress at all.  unit: "samples", "steps", ... */
void rv_progress_init(struct rv_progress *p, int quiet, const char *unit);
/* The total the count goes to, once known (0: not known). */
void rv_progress_total(struct rv_progress *p, uint64_t total);
/* The count this run starts from (a resumed run's): the rate and the
 * time left are this run's own. */
void rv_progress_from(struct rv_progress *p, uint64_t n);
/* Time from now on (after a phase of other work). */
void rv_progress_restart(struct rv_progress *p);
/* n done so far (called often: it draws when it is time). */
void rv_progress_tick(struct rv_progress *p, uint64_t n);
/* Seconds left to the total at n done, at this run's rate so far; -1
 * when not known (no total, nothing done yet, or past the total). */
double rv_progress_left(const struct rv_progress *p, uint64_t n);
/* Erase the terminal line, if any. */
void rv_progress_done(struct rv_progress *p);
/* No plain lines (a program that writes lines of its own instead). */
void rv_progress_no_lines(struct rv_progress *p);

/* The seconds between plain lines RV_PROGRESS asks for (default
 * RV_PROGRESS_EVERY; 0 turns them off); a bad value is said once on
 * standard error and the default taken. */
double rv_progress_every(void);
/* A duration for people: "42 s", "3:07", "1:02:03" (rounded down). */
void rv_progress_dur(char *buf, size_t len, double seconds);

#endif
