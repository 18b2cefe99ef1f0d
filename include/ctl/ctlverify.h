#ifndef SK_CTLVERIFY_H
#define SK_CTLVERIFY_H

#include "ctl/ctlrun.h"

/* seckillctl verify ACTIVITY_ID: checks the invariants I1-I5 of docs/design.md across Redis
 * and MySQL, one line per check; exit status 0 only when all hold. Redis is read first,
 * in one MULTI, then MySQL: since SUCCESS is set only after the row commits (I6), every
 * SUCCESS seen in Redis must then be found in MySQL even during a sale; the reverse
 * direction (row committed, SUCCESS not yet published) is exact only at quiescence. */
int ctlverify_run(struct ctlrun *ctl, int argc, char **argv);

#endif
