/*
 * Warnings gathered while a dataset was opened: skipped members, files
 * of class names that were ignored; and notes on the members ignored.  The library never prints, so
 * rv-decode prints these after rv_dataset_open() (with its -q rule).
 * Each reads "'operand': 'member': reason", names sanitized.
 */
#ifndef RV_SRC_WARN_H
#define RV_SRC_WARN_H

#include <stddef.h>

struct rv_dataset;

size_t rv_dataset_nwarnings(const struct rv_dataset *d);
/* Warning i < rv_dataset_nwarnings(d), borrowed from d. */
const char *rv_dataset_warning(const struct rv_dataset *d, size_t i);

/* Notes: one per file or member ignored ("'operand': 'member': reason
 * (ignored)"), for rv-decode -v; kept apart from the warnings, which are
 * always printed. */
size_t rv_dataset_nnotes(const struct rv_dataset *d);
const char *rv_dataset_note(const struct rv_dataset *d, size_t i);

/*
 * The inputs that yield no sample, a line each saying what the input held
 * ("'a.tar': no samples: 5 members, none an image (.mp 5)"), for rv-decode
 * to print unless -q.  Kept from the open or the listing (its other
 * messages are not), never cleared.  rv_dataset_held: what source k held
 * when it has no samples ("empty", "no members", ...), else NULL.
 */
size_t rv_dataset_nempty(const struct rv_dataset *d);
const char *rv_dataset_empty(const struct rv_dataset *d, size_t i);
const char *rv_dataset_held(const struct rv_dataset *d, size_t k);
/* Source k's name for messages (sanitized; "<stdin>" for standard input). */
const char *rv_dataset_source_name(const struct rv_dataset *d, size_t k);

#endif
