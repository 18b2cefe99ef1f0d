#ifndef SK_CTLORDER_H
#define SK_CTLORDER_H

#include "ctl/ctlrun.h"

/* seckillctl order show ORDER_NO: one order's history, from MySQL (its row or its FAILED
 * record, the user coupon it issued and that coupon's redemption) and Redis (the status
 * there now), in time order. Exit 1 when neither knows the number. */
int ctlorder_show_run(struct ctlrun *ctl, int argc, char **argv);
/* seckillctl order find --activity A --user U: the same report of the order the user
 * holds in the sale (its SUCCESS row in MySQL). Exit 1 when the user holds none. */
int ctlorder_find_run(struct ctlrun *ctl, int argc, char **argv);

#endif
