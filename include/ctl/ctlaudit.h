#ifndef SK_CTLAUDIT_H
#define SK_CTLAUDIT_H

#include <stdbool.h>

#include "ctl/ctlrun.h"

/* The record of administrative writes (table admin_audit): every command that may change
 * something, run by seckillctl or by the admin API, with its arguments, who ran it from
 * where, and its exit status, refused and failed runs included. */

/* Whether a command may write: all but the reads (show, list, find, verify, stats, config). */
bool ctlaudit_writes(const char *command);
/* Records one run of a writing command (a read is skipped). A failure to record is said on
 * stderr (the CLI) or in the call's notes (the admin API) and does not change the
 * command's outcome: the write it describes is done or refused already. */
void ctlaudit_record(struct ctlrun *ctl, const char *command, int argc, char **argv, int exit_status);

#endif
