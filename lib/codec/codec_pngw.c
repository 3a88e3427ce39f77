/*
 * PNG writing through libpng: 8-bit grey, grey+alpha, RGB or RGBA from
 * interleaved u8 pixels, into memory or into a file that appears only when
 * complete (temp file in the same directory + rename), so a crash or a
 * full disk never leaves a half image under the final name.  Devices and
 * FIFOs (/dev/stdout) are written in place.
 */
#include "codec/codec.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <png.h>

#include "base/err.h"
#include "base/xmem.h"

/* Where the encoder's bytes go, and libpng's error text on the way out. */
struct sink {
	struct rv_buf *buf;	/* memory, or */
	FILE *fp;		/* a file */
	int io_errno;		/* errno of a failed file write */
	char msg[200];
};

static void
on_error(png_structp png, png_const_charp msg)
{
	struct sink *s = png_get_error_ptr(png);

	snprintf(s->msg, sizeof(s->msg), "png: %s", msg);
	png_longjmp(png, 1);
}

static void
on_warning(png_structp png, png_const_charp msg)
{
	(void)png;
	(void)msg;
}

static void
on_write(png_structp png, png_bytep data, size_t n)
{
	struct sink *s = png_get_io_ptr(png);

	if (s->buf) {
		rv_buf_append(s->buf, data, n);
		return;
	}
	if (fwrite(data, 1, n, s->fp) != n) {
		s->io_errno = errno ? errno : EIO;
		png_error(png, "write failed");
	}
}

static void
on_flush(png_structp png)
{
	(void)png;
}

static int
color_type(uint32_t c)
{
	switch (c) {
	case 1: return PNG_COLOR_TYPE_GRAY;
	case 2: return PNG_COLOR_TYPE_GRAY_ALPHA;
	case 3: return PNG_COLOR_TYPE_RGB;
	default: return PNG_COLOR_TYPE_RGB_ALPHA;
	}
}

/*
 * Encode into the sink.  Returns 0, or -1 with s->msg set.  Nothing that
 * lives across setjmp is modified after it, so no volatile is needed.
 */
static int
encode(const unsigned char *px, uint32_t h, uint32_t w, uint32_t c,
    struct sink *s)
{
	png_structp png;
	png_infop info = NULL;
	size_t stride = (size_t)w * c;
	uint32_t y;

	png = png_create_write_struct(PNG_LIBPNG_VER_STRING, s, on_error,
	    on_warning);
	if (!png) {
		snprintf(s->msg, sizeof(s->msg), "png: cannot create a "
		    "writer");
		return -1;
	}
	info = png_create_info_struct(png);
	if (!info) {
		png_destroy_write_struct(&png, NULL);
		snprintf(s->msg, sizeof(s->msg), "png: cannot create a "
		    "writer");
		return -1;
	}
	if (setjmp(png_jmpbuf(png))) {
		png_destroy_write_struct(&png, &info);
		return -1;
	}
	png_set_write_fn(png, s, on_write, on_flush);
	png_set_IHDR(png, info, w, h, 8, color_type(c), PNG_INTERLACE_NONE,
	    PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
	png_write_info(png, info);
	for (y = 0; y < h; y++)
		png_write_row(png, px + (size_t)y * stride);
	png_write_end(png, info);
	png_destroy_write_struct(&png, &info);
	return 0;
}

/*
 * libpng's writer keeps its default side limit (RV_PNG_MAX_SIDE), which
 * the reader shares; said here in our words rather than as libpng's
 * "Invalid IHDR data".
 */
static int
check_args(uint32_t h, uint32_t w, uint32_t c)
{
	if (c < 1 || c > 4)
		return rv_seterr("png: %u channels (1 to 4 allowed)", c);
	if (h == 0 || w == 0)
		return rv_seterr("png: empty image %ux%u", w, h);
	if (h > RV_PNG_MAX_SIDE || w > RV_PNG_MAX_SIDE)
		return rv_seterr("png: image is %ux%u, over the PNG side limit "
		    "of %u pixels", w, h, RV_PNG_MAX_SIDE);
	return 0;
}

int
rv_png_encode(const unsigned char *px, uint32_t h, uint32_t w, uint32_t c,
    struct rv_buf *out)
{
	struct sink s;
	size_t had = out->len;

	if (check_args(h, w, c) < 0)
		return -1;
	memset(&s, 0, sizeof(s));
	s.buf = out;
	if (encode(px, h, w, c, &s) < 0) {
		out->len = had;
		return rv_seterr("%s", s.msg);
	}
	return 0;
}

/* A device, FIFO or /dev/stdout is written in place: renaming a temp
 * file over it would replace the device node itself. */
static int
write_in_place(const char *path, const unsigned char *px, uint32_t h,
    uint32_t w, uint32_t c)
{
	struct sink s;
	int rc = 0;

	memset(&s, 0, sizeof(s));
	if (!(s.fp = fopen(path, "wbe")))
		return rv_seterr("'%s':", path);
	if (encode(px, h, w, c, &s) < 0) {
		errno = s.io_errno;
		rc = s.io_errno ? rv_seterr("'%s': write:", path) :
		    rv_seterr("'%s': %s", path, s.msg);
	} else if (fflush(s.fp) != 0 || ferror(s.fp)) {
		rc = rv_seterr("'%s': write:", path);
	}
	if (fclose(s.fp) != 0 && rc == 0)
		rc = rv_seterr("'%s': close:", path);
	return rc;
}

int
rv_png_write(const char *path, const unsigned char *px, uint32_t h,
    uint32_t w, uint32_t c)
{
	const char *slash = strrchr(path, '/');
	int dirlen = slash ? (int)(slash - path + 1) : 0;
	struct sink s;
	struct stat st;
	char *tmp;
	mode_t mask;
	int fd;

	if (check_args(h, w, c) < 0)
		return rv_preferr("'%s'", path);
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode) &&
	    !S_ISDIR(st.st_mode))
		return write_in_place(path, px, h, w, c);
	tmp = xasprintf("%.*s.%s.tmp.XXXXXX", dirlen, path, path + dirlen);
	fd = mkstemp(tmp);
	if (fd >= 0)
		(void)fcntl(fd, F_SETFD, FD_CLOEXEC);
	if (fd < 0) {
		rv_seterr("'%s':", path);
		free(tmp);
		return -1;
	}
	mask = umask(0);
	umask(mask);
	(void)fchmod(fd, 0666 & ~mask);
	memset(&s, 0, sizeof(s));
	s.fp = fdopen(fd, "wb");
	if (!s.fp) {
		rv_seterr("'%s':", path);
		close(fd);
		goto fail;
	}
	if (encode(px, h, w, c, &s) < 0) {
		if (s.io_errno) {
			errno = s.io_errno;
			rv_seterr("'%s': write:", path);
		} else {
			rv_seterr("'%s': %s", path, s.msg);
		}
		fclose(s.fp);
		goto fail;
	}
	if (fflush(s.fp) != 0 || ferror(s.fp)) {
		rv_seterr("'%s': write:", path);
		fclose(s.fp);
		goto fail;
	}
	if (fclose(s.fp) != 0) {
		rv_seterr("'%s': close:", path);
		goto fail;
	}
	if (rename(tmp, path) != 0) {
		rv_seterr("'%s': rename:", path);
		goto fail;
	}
	free(tmp);
	return 0;
fail:
	unlink(tmp);
	free(tmp);
	return -1;
}
