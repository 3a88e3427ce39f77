/*
 * Private interface between the dataset (src.c) and its readers
 * (src_idx.c, src_cifar.c, src_dir.c, src_archive.c): each reader is one
 * const struct src_reader (probe, open), src.c asks them in the order of
 * its READERS list, and one struct src per operand is filled by its
 * reader's open and read through its ops.  What they share is in
 * src_common.c.  Not for programs: they use src.h and src_warn.h.
 */
#ifndef RV_SRC_IMPL_H
#define RV_SRC_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
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
	uint64_t mem;		/* of them, image bytes counted in the
				 * dataset's held (src_ctx) */
	uint64_t fds;		/* descriptors it holds open, counted in
				 * the dataset's fds (src_ctx) */
	int counted;		/* read once: its warnings said, its
				 * members counted */
	/* How to open it again (rv_dataset_load): */
	const struct src_reader *reader;
	int recsize;		/* CIFAR */
	char *path[2];		/* owned: the file (IDX: images, labels) */
	/* When it yields no sample: what it held ("5 members, none an
	 * image (.mp 5)"), for messages; owned, NULL when unknown. */
	char *held;
	/* From an index (src_index.c): the file as it was indexed, checked
	 * before it is read. */
	int indexed;
	uint64_t fsize, check;
	int64_t mtime_ns;
};

/* Messages an open collects for the caller, at most 1000 (the last then
 * says how many more there were). */
struct src_msgs {
	char **v;
	size_t n, cap;
	uint64_t dropped;	/* past the limit */
};
void src_msgs_add(struct src_msgs *m, const char *msg);
/* Past the limit, make the last message "N more WHAT". */
void src_msgs_close(struct src_msgs *m, const char *what);
/* Forget the messages after the first n (unless some were dropped). */
void src_msgs_drop(struct src_msgs *m, size_t n);
void src_msgs_free(struct src_msgs *m);
/* src_msgs_free() and empty again. */
void src_msgs_clear(struct src_msgs *m);

/*
 * A dataset's spill file (rv_src_opts.cache_dir): the images an archive
 * would hold in memory, written there as they are listed and read back
 * by offset.  The file is unlinked as soon as it is made, so nothing is
 * left behind however the program ends.
 */
struct src_spill {
	int fd;
	uint64_t end;		/* bytes written */
	char *dir;		/* sanitized, for messages; owned; NULL: no
				 * spill file (zeroed) */
};
/* Make the spill file in dir: 0, or -1 with errmsg naming dir. */
int src_spill_open(struct src_spill *sp, const char *dir);
/* Append n bytes of p, their offset in *off: 0, or -1 with errmsg naming
 * the directory (a full disk, an I/O error). */
int src_spill_put(struct src_spill *sp, const void *p, size_t n,
    uint64_t *off);
void src_spill_close(struct src_spill *sp);

/* Open-time context: options, warnings and the counts of members that
 * became no sample (see struct rv_src_counts). */
struct src_ctx {
	const struct rv_src_opts *o;
	int list;		/* count and name the samples only: image
				 * bytes are neither read nor kept (archives
				 * skip over them) */
	struct src_msgs *warn;	/* src_skip, src_bad, src_note */
	struct src_msgs *note;	/* src_ignore */
	uint64_t skipped;
	uint64_t sidecars;
	uint64_t ignored;
	uint64_t *held;		/* the dataset's image bytes held (its
				 * struct rv_dataset's): NULL, unbounded */
	uint64_t *fds;		/* the dataset's descriptors held open
				 * (src_fd_budget): NULL, none may be */
	struct src_spill *spill;	/* the dataset's, or NULL: archives
					 * hold their images */
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
 * What an input held, tallied as its reader goes, for the line that says
 * it yields no sample: its entries that are no directory, how many were
 * named as images, and the commonest extensions of the others (the
 * SRC_TALLY_EXTS first seen; the rest are counted as other).
 */
#define SRC_TALLY_EXTS	8
struct src_tally {
	uint64_t files, images, other;
	struct {
		char ext[16];
		uint64_t n;
	} ext[SRC_TALLY_EXTS];
	size_t next;
};
/* An entry of name (a path or a base name), named as an image or not. */
void src_tally(struct src_tally *t, const char *name, int image);
/* "5 members, none an image (.mp 5)", "3 files, 3 of them images, all
 * skipped", "no members": a fresh string; what names an entry
 * ("member"). */
char *src_tally_held(const struct src_tally *t, const char *what);

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
/* 1 if ext (no dot) names a format the codec reads, in any case (the
 * extensions of codec.c's format list: jpg, jpeg, png, webp, ...). */
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
/* The files a dataset may hold open for reading by offset, all sources
 * together: half the process's limit on descriptors (RLIMIT_NOFILE),
 * the rest left to the program; past it a source opens its file a
 * fetch. */
uint64_t src_fd_budget(void);

/* ---- readers ---- */

/* What probing an operand learnt, for its reader's open and for pairing
 * IDX operands. */
struct src_probe {
	const struct src_reader *reader;	/* the reader that took it */
	int ndims;		/* IDX: dimensions */
	uint32_t n0;		/* IDX: first dimension */
	int recsize;		/* CIFAR: 3073 or 3074 */
};

/*
 * One kind of operand.  probe: path as given, qname its sanitized name
 * for messages, st its stat() (NULL for "-", stdin); 1 when the operand
 * is this reader's (with what it learnt in pr), 0 when not, -1 with
 * errmsg set when the operand is refused outright.  A probe must not
 * consume the operand (a pipe or a device is only ever read once) and
 * reads at most a header.  open: fill s (n, priv, ops, names, desc) from
 * s->path[0] (IDX: and the labels in s->path[1]) and s->recsize; 0, or
 * -1 with errmsg set.  A reader without open only refuses: a check in
 * the order.
 */
struct src_reader {
	const char *name;
	int (*probe)(const char *path, const char *qname,
	    const struct stat *st, struct src_probe *pr);
	int (*open)(struct src_ctx *c, struct src *s);
};

/* The readers, in src.c's order: folders, CIFAR batches (by name and
 * size), IDX files (by header), CIFAR batches cut short (refused), and
 * archives, which take everything else. */
extern const struct src_reader src_reader_dir, src_reader_cifar,
    src_reader_idx, src_reader_cifar_cut, src_reader_archive;

/* The dataset (src.h): the sources laid end to end. */
struct rv_dataset {
	struct src *src;
	size_t nsrc;
	uint64_t n;
	struct rv_meta meta;
	struct src_msgs warn, note;
	struct src_msgs empty;	/* the inputs that yield no sample */
	struct rv_src_counts counts;
	uint64_t held;		/* image bytes the sources hold (max_held) */
	uint64_t fds;		/* descriptors they hold (src_fd_budget) */
	struct src_spill spill;	/* with opts.cache_dir */
	struct rv_src_opts opts;	/* as given: loads use it */
	struct rv_src_opts list_opts;	/* the listing's: never strict */
	char *index;		/* the index it was made from (sanitized),
				 * or NULL */
	char **classes;		/* the class names, raw (src_merge_classes) */
	size_t nclasses;
};

/* src.c for src_index.c: the dataset's class names into its metadata
 * (checking that the sources agree); a source's memory. */
int src_merge_classes(struct rv_dataset *d);
int src_cmp_str(const void *a, const void *b);	/* char * by strcmp */
void src_free(struct src *s);
/* src_index.c for src.c: is indexed source s the file it was when
 * indexed (its size, and its time or the checksum of its ends)?  Its
 * reader, and what its probe learns, into pr, reading nothing of it.  -1
 * with errmsg naming the file and what to do. */
int src_index_verify(const struct rv_dataset *d, const struct src *s,
    struct src_probe *pr);

#endif
