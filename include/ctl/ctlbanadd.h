#ifndef SK_CTLBANADD_H
#define SK_CTLBANADD_H

#include "ctl/ctlrun.h"

/* seckillctl ban add (--user UID | --ip ADDR[/PREFIX]) [--activity ID]
 * (--for DURATION | --until TIME) [--reason TEXT]: records a ban in MySQL with who set it,
 * then hands it to the gateways through Redis (ctlban.h); prints its id. Everything is
 * checked before anything is written. */
int ctlbanadd_run(struct ctlrun *ctl, int argc, char **argv);

#endif
