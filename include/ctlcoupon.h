#ifndef SK_CTLCOUPON_H
#define SK_CTLCOUPON_H

#include "ctl.h"

/* seckillctl coupon ...: coupon templates. */

/* coupon create: validates everything before touching MySQL, inserts one coupon row and
 * prints its id. */
int ctlcoupon_create(struct ctl *ctl, int argc, char **argv);

#endif
