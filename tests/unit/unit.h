/*
 * A tiny unit-test harness: each test file defines test functions and a
 * main() that RUNs them; every RUN prints one TAP line ("ok N - name" or
 * "not ok N - name") and failures print the file, line and expression.
 * The exit status is 1 if anything failed.
 */
#ifndef RV_UNIT_H
#define RV_UNIT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct unit_state {
	int n, failed, cur_failed;
};

static struct unit_state unit_st;

#define EXPECT(c) do { \
	if (!(c)) { \
		printf("# %s:%d: expected %s\n", __FILE__, __LINE__, #c); \
		unit_st.cur_failed = 1; \
	} \
} while (0)

/* Compare integers and show both values on failure. */
#define EXPECT_EQ(a, b) do { \
	long long a_ = (long long)(a), b_ = (long long)(b); \
	if (a_ != b_) { \
		printf("# %s:%d: %s == %s: %lld != %lld\n", __FILE__, \
		    __LINE__, #a, #b, a_, b_); \
		unit_st.cur_failed = 1; \
	} \
} while (0)

#define EXPECT_STR(a, b) do { \
	const char *a_ = (a), *b_ = (b); \
	if (strcmp(a_, b_) != 0) { \
		printf("# %s:%d: %s == %s: '%s' != '%s'\n", __FILE__, \
		    __LINE__, #a, #b, a_, b_); \
		unit_st.cur_failed = 1; \
	} \
} while (0)

#define RUN(fn) do { \
	unit_st.cur_failed = 0; \
	fn(); \
	unit_st.n++; \
	if (unit_st.cur_failed) \
		unit_st.failed++; \
	printf("%sok %d - %s\n", unit_st.cur_failed ? "not " : "", \
	    unit_st.n, #fn); \
	fflush(stdout); \
} while (0)

#define UNIT_DONE() (printf("1..%d\n", unit_st.n), unit_st.failed ? 1 : 0)

#endif
