#ifndef SK_CTLCOUPONGRANT_H
#define SK_CTLCOUPONGRANT_H

#include "ctl/ctlrun.h"

/* seckillctl coupon grant --coupon ID --user UID [--ref REF]: issues one user coupon
 * outside a sale, in one MySQL transaction that ctlallotment keeps within the coupon's
 * total, then publishes it to Redis. With --ref a repeat issues nothing and prints the
 * same id. */
int ctlcoupongrant_run(struct ctlrun *ctl, int argc, char **argv);

#endif
