/*
 * Private interface between the dataset (src.c) and its readers
 * (src_idx.c, src_cifar.c, src_dir.c, src_archive.c): one struct src per
 * operand, filled by a reader's open function and read through its ops.
 * Not for programs: they use src.h and src_warn.h.
 */
#ifndef RV_SRC_IMPL_H
#define RV_SRC_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "src/src.h"

/* No member or file larger than this is read (a hostile header guard). */
#define SRC_MAX_MEMBER	((size_t)1 << 30)

struct src;

struct src_ops {
	/* Fill it for local sample i < s->n (src.c has set id and cleared
	 * the rest).  Thread-safe; scratch is the caller's. */
	int (*fetch)(const struct src *s, uint64_t i, struct rv_buf *scratch,
	    struct rv_item *it);
	/* Free priv (and nothing else). */
	void (*free)(struct src *s);
};

/*
 * How a source names its classes.  FIXED: label i means names[i] by the
 * format (Fashion-MNIST, CIFAR meta files); operands with fixed names
 * must agree.  DERIVED: names come from directory names and index i is a
 * position in this operand's sorted names only; src.c maps those to the
 * dataset's merged list through map[].
 */
enum src_names {
	SRC_NAMES_NONE,
	SRC_NAMES_FIXED,
	SRC_NAMES_DERIVED,
};

struct src {
	const struct src_ops *ops;
	void *priv;		/* the reader's, freed by ops->free */
	char *name;		/* operand for messages (sanitized), owned */
	char *desc;		/* "kind:path" for the source= key, owned */
	uint64_t n;		/* samples */
	uint64_t base;		/* global id of sample 0 */
	char **names;		/* class names, owned */
	size_t nnames;
	int names_kind;		/* enum src_names */
	int32_t *map;		/* DERIVED: local index -> dataset index */
	uint32_t nlabels;	/* labels not DERIVED are below this, by the
				 * format or the highest seen + 1; 0: none */
	uint64_t have;		/* samples readable: n, or fewer when the
				 * data read has fewer than the listing */
	int loaded;		/* ops and priv hold the data */
	int counted;		/* read once: its warnings said, its
				 * members counted */
	/* How to open it again (rv_dataset_load): */
	int kind;		/* src.c's enum kind */
	int recsize;		/* CIFAR */
	char *path[2];		/* owned: the file (IDX: images, labels) */
};

/* Open-time context: options, warnings and the counts of members that
 * became no sample (see struct rv_src_counts). */
struct src_ctx {
	const struct rv_src_opts *o;
	int list;		/* count and name the samples only: image
				 * bytes are neither read nor kept (archives
				 * skip over them) */
	struct rv_dataset *d;
	uint64_t skipped;
	uint64_t sidecars;
	uint64_t ignored;
};

/*
 * Warnings.  src_skip: a sample is lost; counted, and under --strict the
 * open fails with the message (returns -1, errmsg set); otherwise the
 * warning kept ends in " (skipped)".  src_bad: as src_skip but not
 * counted (the caller counts the sample it drops).
 * src_note: informational, never counted, never fatal.  Each returns 0
 * when the open may go on.  Names in the arguments must be sanitized.
 */
int src_skip(struct src_ctx *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int src_bad(struct src_ctx *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void src_note(struct src_ctx *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Count a sample dropped after src_bad(). */
void src_count(struct src_ctx *c);
/* A file or member that is no sample and belongs to none (a text file,
 * a hidden file, a link that is not followed): counted as ignored, and
 * the message kept as a note, which rv-decode prints under -v.  Never
 * fatal. */
void src_ignore(struct src_ctx *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/*
 * Copy n bytes of s into dst (size len, always terminated), escaping
 * control bytes and invalid UTF-8 as \n, \t, \xHH; never splits an escape
 * or a UTF-8 sequence when it truncates.
 */
void src_sanitize(char *dst, size_t len, const char *s, size_t n);
/* A fresh sanitized copy of s. */
char *src_sanitized(const char *s);
/* a equals b ignoring ASCII case in a (b is lower case). */
int src_lower_eq(const char *a, const char *b);
/* it->name = "operand: member" (member sanitized here), truncated. */
void src_item_name(struct rv_item *it, const struct src *s,
    const char *member);
/* RV_DT_JPEG/PNG from the bytes; RV_DT_NONE for the bytes of another
 * format the codec reads; else (bytes no codec reads) from the file
 * name's extension, so that the decoder says what is wrong. */
int src_encoded_dtype(const unsigned char *p, size_t n, const char *path);
/* 1 if ext (no dot) names a format the codec reads, in any case: jpg,
 * jpeg, jpe, jfif, png, webp, gif, bmp, tif, tiff. */
int src_image_ext(const char *ext);
/* 1 if ext names an image format rv does not read (heic, avif, ppm, ...):
 * such a file is a sample lost, not a file that is no image. */
int src_unsupported_ext(const char *ext);
/* The dataset label for a local one: DERIVED labels go through map. */
int32_t src_label(const struct src *s, int32_t local);
/* Read a short text file of class names, one per line (blank lines and
 * trailing white space dropped).  Returns the count (0 if the file is
 * absent), or -1 with errmsg set if it is unreadable or too big. */
int src_read_names(const char *path, char ***names, size_t *n);
void src_free_names(char **names, size_t n);

/* ---- readers: open fills s (n, priv, ops, names); -1 with errmsg ---- */

/*
 * 1 if path is an IDX file (raw or gzip), with its dimension count and
 * first dimension; 0 if not; -1 with errmsg set if unreadable.
 */
int src_idx_probe(const char *path, int *ndims, uint32_t *n0);
/* Images (3 or 4 dims) with an optional labels file (1 dim). */
int src_idx_open(struct src_ctx *c, struct src *s, const char *images,
    const char *labels);

/* The CIFAR record size (3073 or 3074) a file of this name and size has,
 * or 0 if it is not a CIFAR batch. */
int src_cifar_recsize(const char *path, off_t size);
int src_cifar_open(struct src_ctx *c, struct src *s, const char *path,
    int recsize);
/* 1 with errmsg set ("'qname': CIFAR-10 batch cut short ...") if path is
 * named as a CIFAR batch and starts like one but its size is not a whole
 * number of records; else 0. */
int src_cifar_cut(const char *path, const char *qname, off_t size);

int src_dir_open(struct src_ctx *c, struct src *s, const char *path);

/* path "-" is stdin. */
int src_archive_open(struct src_ctx *c, struct src *s, const char *path);

#endif
