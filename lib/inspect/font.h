/*
 * A tiny embedded 5x7 bitmap font (printable ASCII) for labels drawn into
 * images, such as rv-inspect's contact sheet: no font files, no FreeType,
 * the same pixels on every machine.  Read-only data: thread-safe.
 */
#ifndef RV_FONT_H
#define RV_FONT_H

#include <stddef.h>
#include <stdint.h>

#define RV_GLYPH_W	5	/* glyph width in pixels */
#define RV_GLYPH_H	7	/* glyph height in pixels */
#define RV_GLYPH_ADV	6	/* advance: glyph and 1 px of space */

/* Width in pixels of s drawn at scale 1 (no trailing space). */
uint32_t rv_font_width(const char *s);

/*
 * Draw s into an RGB image (w x h, 3 bytes per pixel, rows of w * 3 bytes)
 * with its top-left corner at (x, y) in colour rgb; pixels outside the
 * image are clipped.  Characters outside printable ASCII draw as '?'.
 */
void rv_font_draw(unsigned char *img, uint32_t w, uint32_t h, long x, long y,
    const char *s, const unsigned char rgb[3]);

#endif
