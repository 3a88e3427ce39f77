/*
 * Progress lines (lib/base/progress.c): quiet says nothing; in a log (a
 * file) a plain line with done/total, percent, rate, elapsed and ETA at
 * most every RV_PROGRESS seconds, count and rate alone without a total,
 * the rate from where a resumed run started; RV_PROGRESS's forms, a bad
 * one said once; durations for people.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/err.h"
#include "base/opt.h"
#include "base/progress.h"
#include "unit.h"

static void
nap(long us)
{
	struct timespec ts = { 0, us * 1000 };

	nanosleep(&ts, NULL);
}

/* What fn writes to standard error, into buf. */
static void
capture(void (*fn)(void), char *buf, size_t len)
{
	char path[] = "/tmp/t_progress.XXXXXX";
	int fd = mkstemp(path), saved = dup(STDERR_FILENO);
	ssize_t k;

	EXPECT(fd >= 0 && saved >= 0);
	unlink(path);
	fflush(stderr);
	dup2(fd, STDERR_FILENO);
	fn();
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	k = pread(fd, buf, len - 1, 0);
	buf[k > 0 ? k : 0] = '\0';
	close(fd);
}

static void
quiet(void)
{
	struct rv_progress p;

	setenv(RV_PROGRESS_ENV, "0.000001", 1);
	rv_progress_init(&p, 1, "samples");
	rv_progress_total(&p, 100);
	nap(2000);
	rv_progress_tick(&p, 10);
	rv_progress_done(&p);
}

static void
lines(void)
{
	struct rv_progress p;

	setenv(RV_PROGRESS_ENV, "0.001", 1);
	rv_progress_init(&p, 0, "samples");
	rv_progress_tick(&p, 1);	/* too soon: nothing */
	rv_progress_total(&p, 1000);
	nap(20000);
	rv_progress_tick(&p, 250);
	rv_progress_total(&p, 0);
	nap(20000);
	rv_progress_tick(&p, 300);
	rv_progress_done(&p);
}

static void
every(void)
{
	struct rv_progress p;
	int i;

	setenv(RV_PROGRESS_ENV, "30", 1);
	rv_progress_init(&p, 0, "steps");
	for (i = 0; i < 50; i++) {
		nap(1000);
		rv_progress_tick(&p, (uint64_t)i);
	}
}

static void
resumed(void)
{
	struct rv_progress p;

	setenv(RV_PROGRESS_ENV, "0.001", 1);
	rv_progress_init(&p, 0, "steps");
	rv_progress_total(&p, 2000);
	rv_progress_from(&p, 1000);
	nap(20000);
	rv_progress_tick(&p, 1000);	/* none done here yet: no ETA */
}

static void
bad(void)
{
	setenv(RV_PROGRESS_ENV, "soon", 1);
	EXPECT(rv_progress_every() == RV_PROGRESS_EVERY);
	setenv(RV_PROGRESS_ENV, "-1", 1);
	EXPECT(rv_progress_every() == RV_PROGRESS_EVERY);
}

static void
t_lines(void)
{
	char buf[1024], *nl;
	unsigned long a, b, pct, pct10;

	capture(quiet, buf, sizeof(buf));
	EXPECT_STR(buf, "");
	capture(lines, buf, sizeof(buf));
	EXPECT(sscanf(buf, "t_progress: 250/1000 samples (%lu.%lu%%), %lu/s, "
	    "elapsed 0 s, ETA %lu s\n", &pct, &pct10, &a, &b) == 4);
	EXPECT_EQ(pct, 25);
	EXPECT(a > 0);
	nl = strchr(buf, '\n');
	EXPECT(nl != NULL);
	if (nl) {
		EXPECT(sscanf(nl + 1, "t_progress: 300 samples, %lu/s, "
		    "elapsed 0 s\n", &a) == 1);
		EXPECT(strchr(nl + 1, '\n') != NULL &&
		    strchr(nl + 1, '\n')[1] == '\0');
	}
	/* an interval of 30 s: nothing in 50 ms */
	capture(every, buf, sizeof(buf));
	EXPECT_STR(buf, "");
	capture(resumed, buf, sizeof(buf));
	EXPECT_STR(buf, "t_progress: 1000/2000 steps (50.0%), 0/s, "
	    "elapsed 0 s\n");
	capture(bad, buf, sizeof(buf));
	EXPECT_STR(buf, "t_progress: RV_PROGRESS=soon: not a number of "
	    "seconds, 0 or more: progress lines every 30 s\n"
	    "t_progress: RV_PROGRESS=-1: not a number of seconds, 0 or more: "
	    "progress lines every 30 s\n");
	setenv(RV_PROGRESS_ENV, "0", 1);
	EXPECT(rv_progress_every() == 0);
	setenv(RV_PROGRESS_ENV, "", 1);
	EXPECT(rv_progress_every() == RV_PROGRESS_EVERY);
	unsetenv(RV_PROGRESS_ENV);
}

static void
t_dur(void)
{
	char b[32];

	rv_progress_dur(b, sizeof(b), 0.9);
	EXPECT_STR(b, "0 s");
	rv_progress_dur(b, sizeof(b), 59.99);
	EXPECT_STR(b, "59 s");
	rv_progress_dur(b, sizeof(b), 187);
	EXPECT_STR(b, "3:07");
	rv_progress_dur(b, sizeof(b), 3723);
	EXPECT_STR(b, "1:02:03");
	rv_progress_dur(b, sizeof(b), -5);
	EXPECT_STR(b, "0 s");
}

int
main(void)
{
	rv_setprogname("t_progress");
	RUN(t_lines);
	RUN(t_dur);
	return UNIT_DONE();
}
