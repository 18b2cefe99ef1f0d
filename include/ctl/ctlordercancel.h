#ifndef SK_CTLORDERCANCEL_H
#define SK_CTLORDERCANCEL_H

#include "ctl/ctlrun.h"

/* seckillctl order cancel ORDER_NO [--reason TEXT]: the shop cancels a SUCCESS order. Its
 * user coupon is revoked (refused when it is used: refund it first), the order is
 * CANCELLED, and its unit goes back to the sale's stock while the sale runs, to the
 * coupon once it has ended (docs/administration.md). Redis first (revoke.lua, then
 * ordercancel.lua), then MySQL in one transaction, each step idempotent: a run cut short
 * is finished by running it again; cancelling again answers the same. */
int ctlordercancel_run(struct ctlrun *ctl, int argc, char **argv);

#endif
