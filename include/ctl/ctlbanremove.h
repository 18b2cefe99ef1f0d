#ifndef SK_CTLBANREMOVE_H
#define SK_CTLBANREMOVE_H

#include "ctl/ctlrun.h"

/* seckillctl ban remove ID: lifts a ban before its end. MySQL keeps the row with who
 * removed it and when; the gateways drop it at their next refresh. Again on a removed (or
 * ended) ban: nothing more is recorded, and Redis is cleared of it once more. */
int ctlbanremove_run(struct ctlrun *ctl, int argc, char **argv);

#endif
