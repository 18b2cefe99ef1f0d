#ifndef SK_CTLBANLIST_H
#define SK_CTLBANLIST_H

#include "ctl/ctlrun.h"

/* seckillctl ban list [--activity ID] [--all]: the bans in force (with --activity, those
 * that keep users out of that sale: its own and those of every sale; with --all, the
 * ended and removed ones too), newest first, with who set them and when, from MySQL; each
 * one in force that Redis does not hold (so no gateway enforces it) is named in a note. */
int ctlbanlist_run(struct ctlrun *ctl, int argc, char **argv);

#endif
