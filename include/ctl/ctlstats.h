#ifndef SK_CTLSTATS_H
#define SK_CTLSTATS_H

#include "ctl/ctlrun.h"

/* seckillctl stats: one table of coupons (total, issued, used, remaining to grant) and
 * one of activities (status, stock, sold in MySQL, stock left and live reservations in
 * Redis). A snapshot for an operator, not a consistent one: each coupon and each
 * activity is read on its own, without locks. */
int ctlstats_run(struct ctlrun *ctl, int argc, char **argv);

#endif
