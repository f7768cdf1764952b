/* Linux namespaces: which ones a tier asks for, and finding out exactly which
 * one this machine refuses and why. */
#ifndef AJ_NS_H
#define AJ_NS_H

#include "../core/internal.h"

const char *ns_name(unsigned long clone_flag);

/* Tries each namespace in `flags` in turn (a user namespace first) in a
 * throw-away child. 0 when all can be made; else -errno with err naming the
 * first refused: "network namespace: unshare: EPERM". */
int ns_probe(unsigned long flags, struct aj_error *err);

#endif
