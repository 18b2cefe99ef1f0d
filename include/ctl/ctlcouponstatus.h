#ifndef SK_CTLCOUPONSTATUS_H
#define SK_CTLCOUPONSTATUS_H

#include "ctl/ctlrun.h"

/* seckillctl coupon deactivate|activate ID. An INACTIVE coupon cannot be granted, sold or
 * redeemed: its running and coming sales are paused on every gateway at once (execute.lua
 * refuses a paused activity) and keep their unsold stock until the coupon is activated
 * again or their window ends; redeeming its user coupons is refused. MySQL is written
 * first, then Redis: an interrupted command leaves MySQL ahead, and running it again
 * finishes it. An EXPIRED coupon (past its validity) can be neither. */
int ctlcouponstatus_deactivate(struct ctlrun *ctl, int argc, char **argv);
int ctlcouponstatus_activate(struct ctlrun *ctl, int argc, char **argv);

#endif
