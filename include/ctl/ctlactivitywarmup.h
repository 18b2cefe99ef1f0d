#ifndef SK_CTLACTIVITYWARMUP_H
#define SK_CTLACTIVITYWARMUP_H

#include <stddef.h>

#include "ctl/ctlrun.h"
#include "ctl/ctlactivity.h"

/* seckillctl activity warmup ID: writes an activity into Redis. When its stock key exists
 * the sale may be live: only the activity hash is refreshed. When it is missing, the
 * Redis side is rebuilt from MySQL (stock left, users, orders), under a WATCH that a
 * concurrent warmup or cancel aborts. A cancelled activity stays cancelled. */

/* The warmup of one activity (activity create runs it too). On CTLRUN_OK, report holds one
 * line saying what happened to the stock key. */
int ctlactivitywarmup_warm(struct ctlrun *ctl, const struct ctlactivity_row *row, char *report,
                           size_t reportlen);

int ctlactivitywarmup_run(struct ctlrun *ctl, int argc, char **argv);

#endif
