#ifndef SK_CTLACTIVITYARCHIVE_H
#define SK_CTLACTIVITYARCHIVE_H

#include "ctl/ctlrun.h"

/* seckillctl activity archive ID: the end of a sale's life in Redis (store/archive.h). Once
 * it ended, every order final and MySQL holding every SUCCESS one (checked), its keys go
 * but the activity hash, which says 'archived'. Refused, changing nothing, when a check
 * fails (exit 1); running it again finishes an archive cut short, and says so of one
 * already done. */
int ctlactivityarchive_run(struct ctlrun *ctl, int argc, char **argv);

#endif
