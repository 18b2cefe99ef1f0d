#ifndef SK_CTLCONFIG_H
#define SK_CTLCONFIG_H

#include "ctl/ctlrun.h"

/* seckillctl config get KEY: one key's value as the loader sees it (the defaults for the
 * scripts and tests come from here, not from copies of config.c). */
int ctlconfig_get(struct ctlrun *ctl, int argc, char **argv);
/* seckillctl config check: the configuration loads and the Lua scripts are readable. */
int ctlconfig_check(struct ctlrun *ctl, int argc, char **argv);

#endif
