#ifndef SK_CTLACTIVITYSHOW_H
#define SK_CTLACTIVITYSHOW_H

#include "ctl/ctlrun.h"

/* seckillctl activity show ID: the row, its coupon, and its Redis side as of one instant
 * (stock left, reservations, queue marks, order statuses), and what it holds back. */
int ctlactivityshow_run(struct ctlrun *ctl, int argc, char **argv);

#endif
