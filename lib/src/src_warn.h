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

#endif
