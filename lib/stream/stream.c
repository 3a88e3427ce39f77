/*
 * The stream's settings that every reader and writer shares: the
 * compression level a writer uses (-L, RV_LEVEL, pipe or file) and the
 * size limits a reader enforces (RV_MAX_RECORD, RV_MAX_SAMPLE).  The
 * framing itself: stream_read.c, stream_enc.c, stream_write.c.
 */
#include "stream/stream.h"

#include <stdlib.h>
#include <sys/stat.h>

#include "base/opt.h"
#include "stream/stream_impl.h"

int
rv_stream_level(int opt)
{
	const char *s;
	long long v;

	if (opt >= -7 && opt <= 19)
		return opt;
	s = getenv("RV_LEVEL");
	if (s && *s && rv_parse_i64(s, -7, 19, &v) == 0)
		return (int)v;
	return RV_LEVEL_AUTO;
}

int
rv_stream_level_fd(int level, int fd)
{
	struct stat st;

	if (level != RV_LEVEL_AUTO)
		return level;
	if (fstat(fd, &st) == 0 && !S_ISREG(st.st_mode))
		return RV_LEVEL_PIPE;
	return RV_LEVEL_FILE;
}

/* A size limit from the environment variable name (bytes, K/M/G/T), at
 * most MAX_PAYLOAD_CAP; dflt when unset, empty, invalid or 0. */
static uint64_t
env_limit(const char *name, uint64_t dflt)
{
	const char *s = getenv(name);
	uint64_t v;

	if (s && *s && rv_parse_size(s, &v) == 0 && v > 0)
		return v < MAX_PAYLOAD_CAP ? v : MAX_PAYLOAD_CAP;
	return dflt;
}

uint64_t
rv_stream_max_payload(void)
{
	return env_limit("RV_MAX_RECORD", RV_MAX_PAYLOAD);
}

uint64_t
rv_stream_max_sample(void)
{
	return env_limit("RV_MAX_SAMPLE", RV_MAX_SAMPLE);
}
