#ifndef SK_CTLACTIVITYCREATE_H
#define SK_CTLACTIVITYCREATE_H

#include "ctl/ctlrun.h"

/* seckillctl activity create --coupon ID --stock N --start T --end T [--name N]
 * [--buckets B] [--per-user N]: inserts a sale of a coupon, within what the coupon has
 * left (ctlallotment, under its row locks), of which a user may hold up to --per-user
 * orders (1 unless given), warms it into Redis and prints its id. */
int ctlactivitycreate_run(struct ctlrun *ctl, int argc, char **argv);

#endif
