/* The gVisor platform a tier runs on: KVM where a probe run finishes and
 * succeeds, else ptrace (which works on any host). */
#ifndef AJ_GVISOR_PLATFORM_H
#define AJ_GVISOR_PLATFORM_H

#include "../gvisor/sandbox.h"

/* Sets st->platform and st->why; the verdict is cached per runsc version
 * and boot. */
void gvisor_choose_platform(struct gvisor_host *st, const struct aj_config *cfg);

#endif
