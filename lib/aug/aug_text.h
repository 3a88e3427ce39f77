/*
 * The registry as text, for `--list-ops` of rv-augment (and rv-refurbish):
 * every op with its family and help, then one line per argument with its
 * type, default (or "required") and range, the generic p= last.  Private
 * to the augmentation modules and the programs that list them.
 */
#ifndef RV_AUG_TEXT_H
#define RV_AUG_TEXT_H

#include "base/buf.h"

/* Append the listing of every op of rv_ops() to out. */
void rv_ops_describe(struct rv_buf *out);

#endif
