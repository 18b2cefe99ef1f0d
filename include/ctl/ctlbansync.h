#ifndef SK_CTLBANSYNC_H
#define SK_CTLBANSYNC_H

#include "ctl/ctlrun.h"

/* seckillctl ban sync: rebuilds the Redis hash the gateways enforce from MySQL's bans in
 * force, as warmup rebuilds a sale: after Redis lost it (a restart without persistence, a
 * failover that lost the last write) or after a ban command could not reach Redis. */
int ctlbansync_run(struct ctlrun *ctl, int argc, char **argv);

#endif
