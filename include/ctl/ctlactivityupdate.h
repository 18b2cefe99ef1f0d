#ifndef SK_CTLACTIVITYUPDATE_H
#define SK_CTLACTIVITYUPDATE_H

#include "ctl/ctlrun.h"

/* seckillctl activity update ID [--name N] [--start T] [--end T] [--stock +N|-N|N]
 * [--per-user N]: edits a sale that is not over, keeping its id, its links and its
 * buyers. The start moves only before the sale starts, never into the past; the end
 * moves while it runs, never into the past; stock is added (within what the coupon has
 * left) or taken back (only units unsold and unreserved); the per-user limit is raised
 * any time, lowered only while the sale has no order. One MySQL transaction holds the
 * activity row, and commits only after Redis applied the edit (update.lua, atomic,
 * guarded by Redis's clock); every value is sent as a target, so running the same
 * command again finishes an interrupted edit. */
int ctlactivityupdate_run(struct ctlrun *ctl, int argc, char **argv);

#endif
