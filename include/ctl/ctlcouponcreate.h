#ifndef SK_CTLCOUPONCREATE_H
#define SK_CTLCOUPONCREATE_H

#include "ctl/ctlrun.h"

/* seckillctl coupon create --name N --type CASH|DISCOUNT|GIFT [terms] --total N --start T
 * --end T: validates everything before touching MySQL, inserts one coupon row and prints
 * its id. */
int ctlcouponcreate_run(struct ctlrun *ctl, int argc, char **argv);

#endif
