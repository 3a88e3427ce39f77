/*
 * lib/base/io.c's output files: commit renames the temp file into place, abort
 * removes it, and a SIGINT, SIGTERM or SIGHUP removes the temp files still
 * open and kills the process with that signal.  The signal cases run in a
 * forked child; the parent checks how it died and what it left.
 */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/err.h"
#include "base/io.h"
#include "unit.h"

static char dir[64];

/* Entries of dir, "." and ".." aside; names[0] gets the first one. */
static int
dir_count(char *first, size_t cap)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	if (first && cap)
		first[0] = '\0';
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (n++ == 0 && first)
			snprintf(first, cap, "%s", e->d_name);
	}
	closedir(d);
	return n;
}

static void
dir_clear(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char p[512];

	if (!d)
		return;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		unlink(p);
	}
	closedir(d);
}

static char *
in_dir(const char *name)
{
	static char p[4][256];
	static int k;

	k = (k + 1) % 4;
	snprintf(p[k], sizeof(p[k]), "%s/%s", dir, name);
	return p[k];
}

/* Fork; the child runs fn and _exits with its return value. */
static int
in_child(int (*fn)(void))
{
	pid_t pid;
	int st;

	fflush(stdout);
	if ((pid = fork()) < 0)
		return -1;
	if (pid == 0) {
		int rc = fn();
		fflush(stdout);
		_exit(rc);
	}
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return st;
}

/*
 * Every case runs in a child of its own: the handlers are installed once
 * per process, at its first temp file, so the parent opens none.
 */
static int
child_commit_abort(void)
{
	struct rv_out o;
	char name[256];

	EXPECT_EQ(rv_out_open(&o, in_dir("a.rvs"), 1), 0);
	EXPECT(o.tmp != NULL);
	EXPECT_EQ(rv_write_full(o.fd, "abc", 3), 0);
	EXPECT_EQ(dir_count(name, sizeof(name)), 1);
	EXPECT(strncmp(name, ".a.rvs.tmp.", 11) == 0);
	EXPECT_EQ(rv_out_commit(&o), 0);
	EXPECT_EQ(dir_count(name, sizeof(name)), 1);
	EXPECT_STR(name, "a.rvs");

	EXPECT_EQ(unlink(in_dir("a.rvs")), 0);
	EXPECT_EQ(rv_out_open(&o, in_dir("b.rvs"), 1), 0);
	rv_out_abort(&o);
	EXPECT_EQ(dir_count(NULL, 0), 0);
	return unit_st.cur_failed;
}

static void
t_commit_abort(void)
{
	int st;

	dir_clear();
	st = in_child(child_commit_abort);
	EXPECT_EQ(WIFEXITED(st) ? WEXITSTATUS(st) : -1, 0);
}

static int
child_sigint(void)
{
	struct rv_out o;

	signal(SIGINT, SIG_DFL);
	if (rv_out_open(&o, in_dir("int.rvs"), 1) < 0)
		return 3;
	(void)rv_write_full(o.fd, "partial", 7);
	raise(SIGINT);
	return 4;	/* not reached */
}

static void
t_sigint_removes_temp(void)
{
	int st;

	dir_clear();
	st = in_child(child_sigint);
	EXPECT(WIFSIGNALED(st));
	EXPECT_EQ(WIFSIGNALED(st) ? WTERMSIG(st) : -1, SIGINT);
	EXPECT_EQ(dir_count(NULL, 0), 0);
}

/* Two outputs committed, two open: SIGTERM takes only the open ones. */
static int
child_sigterm_some(void)
{
	struct rv_out o[4];
	static const char *names[] = { "0.rvs", "1.rvs", "2.rvs", "3.rvs" };
	int i;

	signal(SIGTERM, SIG_DFL);
	for (i = 0; i < 4; i++)
		if (rv_out_open(&o[i], in_dir(names[i]), 1) < 0)
			return 3;
	if (rv_out_commit(&o[1]) < 0 || rv_out_commit(&o[3]) < 0)
		return 5;
	raise(SIGTERM);
	return 4;
}

static void
t_sigterm_keeps_committed(void)
{
	char name[256];
	int st;

	dir_clear();
	st = in_child(child_sigterm_some);
	EXPECT_EQ(WIFSIGNALED(st) ? WTERMSIG(st) : -1, SIGTERM);
	EXPECT_EQ(dir_count(name, sizeof(name)), 2);
	EXPECT(access(in_dir("1.rvs"), F_OK) == 0);
	EXPECT(access(in_dir("3.rvs"), F_OK) == 0);
}

/* More outputs than slots, one after another: commit and abort free
 * their slots, so the last one is still covered. */
static int
child_reuse_slots(void)
{
	struct rv_out o;
	char name[32];
	int i;

	signal(SIGHUP, SIG_DFL);
	for (i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "%02d.rvs", i);
		if (rv_out_open(&o, in_dir(name), 1) < 0)
			return 3;
		if (i % 2)
			rv_out_abort(&o);
		else if (rv_out_commit(&o) < 0)
			return 5;
	}
	if (rv_out_open(&o, in_dir("last.rvs"), 1) < 0)
		return 3;
	raise(SIGHUP);
	return 4;
}

static void
t_slots_reused(void)
{
	int st;

	dir_clear();
	st = in_child(child_reuse_slots);
	EXPECT_EQ(WIFSIGNALED(st) ? WTERMSIG(st) : -1, SIGHUP);
	EXPECT_EQ(dir_count(NULL, 0), 20);
	EXPECT(access(in_dir("last.rvs"), F_OK) != 0);
}

/* An ignored SIGHUP (nohup) stays ignored: the run goes on. */
static int
child_ignored(void)
{
	struct rv_out o;

	signal(SIGHUP, SIG_IGN);
	if (rv_out_open(&o, in_dir("nohup.rvs"), 1) < 0)
		return 3;
	raise(SIGHUP);
	return rv_out_commit(&o) < 0 ? 5 : 0;
}

static void
t_ignored_stays_ignored(void)
{
	char name[256];
	int st;

	dir_clear();
	st = in_child(child_ignored);
	EXPECT(WIFEXITED(st));
	EXPECT_EQ(WIFEXITED(st) ? WEXITSTATUS(st) : -1, 0);
	EXPECT_EQ(dir_count(name, sizeof(name)), 1);
	EXPECT_STR(name, "nohup.rvs");
}

/* A program's own handler is left in place. */
static volatile sig_atomic_t own_seen;

static void
own_handler(int sig)
{
	own_seen = sig;
}

static int
child_own_handler(void)
{
	struct rv_out o;

	signal(SIGTERM, own_handler);
	if (rv_out_open(&o, in_dir("own.rvs"), 1) < 0)
		return 3;
	raise(SIGTERM);
	if (own_seen != SIGTERM)
		return 6;
	rv_out_abort(&o);
	return 0;
}

static void
t_own_handler_kept(void)
{
	int st;

	dir_clear();
	st = in_child(child_own_handler);
	EXPECT_EQ(WIFEXITED(st) ? WEXITSTATUS(st) : -1, 0);
	EXPECT_EQ(dir_count(NULL, 0), 0);
}

int
main(void)
{
	const char *t = getenv("TMPDIR");
	int rc;

	rv_setprogname("t_io");
	snprintf(dir, sizeof(dir), "%s/t_io.XXXXXX", t && *t &&
	    strlen(t) < 40 ? t : "/tmp");
	if (!mkdtemp(dir)) {
		perror("t_io: mkdtemp");
		return 1;
	}
	RUN(t_commit_abort);
	RUN(t_sigint_removes_temp);
	RUN(t_sigterm_keeps_committed);
	RUN(t_slots_reused);
	RUN(t_ignored_stays_ignored);
	RUN(t_own_handler_kept);
	rc = UNIT_DONE();
	dir_clear();
	rmdir(dir);
	return rc;
}
