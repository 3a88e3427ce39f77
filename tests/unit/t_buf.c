/*
 * The growable byte buffer (lib/base/buf.c).
 */
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/err.h"
#include "unit.h"

/* The byte buffer: doubling growth, and sizes that would wrap refused
 * (out of memory, exit 1) instead of silently not growing. */
static void
t_buf(void)
{
	struct rv_buf b = { 0 };
	size_t extra[] = { SIZE_MAX, SIZE_MAX - 3, SIZE_MAX / 2 };
	size_t k;

	rv_buf_append(&b, "abc", 3);
	EXPECT_EQ(b.len, 3);
	EXPECT_EQ(b.cap, 4096);
	rv_buf_reserve(&b, 5000);
	EXPECT_EQ(b.cap, 8192);
	rv_buf_append(&b, NULL, 0);
	EXPECT(b.len == 3 && memcmp(b.data, "abc", 3) == 0);
	for (k = 0; k < sizeof(extra) / sizeof(extra[0]); k++) {
		int st, p[2];
		pid_t pid;
		char msg[64] = "";
		EXPECT(pipe(p) == 0);
		fflush(stdout);
		pid = fork();
		if (pid == 0) {
			dup2(p[1], 2);
			rv_buf_reserve(&b, extra[k]);
			_exit(0);
		}
		close(p[1]);
		EXPECT(read(p[0], msg, sizeof(msg) - 1) > 0);
		close(p[0]);
		EXPECT(waitpid(pid, &st, 0) == pid);
		EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 1);
		EXPECT_STR(msg, "t_buf: out of memory\n");
	}
	rv_buf_release(&b);
	EXPECT(b.data == NULL && b.len == 0 && b.cap == 0);
}

int
main(void)
{
	rv_setprogname("t_buf");
	RUN(t_buf);
	return UNIT_DONE();
}
