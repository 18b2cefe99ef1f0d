#ifndef SK_CTLORDER_H
#define SK_CTLORDER_H

#include "ctl/ctlrun.h"

/* seckillctl order show ORDER_NO: one order's history, from MySQL (its row or its FAILED
 * record, the user coupon it issued and that coupon's redemption) and Redis (the status
 * there now), in time order. Exit 1 when neither knows the number. */
int ctlorder_show_run(struct ctlrun *ctl, int argc, char **argv);

#endif
