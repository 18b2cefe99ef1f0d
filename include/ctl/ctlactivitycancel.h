#ifndef SK_CTLACTIVITYCANCEL_H
#define SK_CTLACTIVITYCANCEL_H

#include "ctl/ctlrun.h"

/* seckillctl activity cancel ID: stops a sale in Redis (cancel.lua), then marks it
 * CANCELLED in MySQL; its unsold stock goes back to the coupon. Running it again finishes
 * an interrupted cancel and reports what was returned. */
int ctlactivitycancel_run(struct ctlrun *ctl, int argc, char **argv);

#endif
