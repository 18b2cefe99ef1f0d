#ifndef SK_CTLCOUPONSHOW_H
#define SK_CTLCOUPONSHOW_H

#include "ctl/ctlrun.h"

/* seckillctl coupon show ID: terms, counts, what is left to grant, its activities and
 * what each holds back. */
int ctlcouponshow_run(struct ctlrun *ctl, int argc, char **argv);

#endif
