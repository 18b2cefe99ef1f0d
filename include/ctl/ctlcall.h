#ifndef SK_CTLCALL_H
#define SK_CTLCALL_H

#include <stdbool.h>

#include "ctl/ctlrun.h"

struct cJSON;

/* One seckillctl command run for a caller other than the CLI (the admin API,
 * src/admin): the same handler, with --json on, its JSON collected instead of printed and
 * its errors kept with what kind of failure they are (ctlout.h marks them). */

/* What a call came to. */
enum ctlcall_outcome {
    CTLCALL_DONE,           /* exit 0: result holds the command's JSON */
    CTLCALL_FAILED,         /* exit 1 with a result (verify: a check failed; a sale created
                             * but not warmed): result and error both say what happened */
    CTLCALL_INVALID,        /* exit 2: bad arguments, nothing was written */
    CTLCALL_NOT_FOUND,      /* a coupon or activity named does not exist */
    CTLCALL_UNAVAILABLE,    /* MySQL or Redis could not be reached or dropped the connection */
    CTLCALL_REFUSED,        /* any other failure (the coupon has too little left, ...) */
};

/* Filled by ctlout while a call runs; the caller's, released with ctlcall_free. */
struct ctlcall {
    struct cJSON *result;   /* the command's JSON (ctlout_json), or NULL */
    struct cJSON *notes;    /* its notes for the operator (ctlout_note): strings, or NULL */
    char error[1024];       /* its first error message, "" when none */
    bool missing;           /* ctlout_missing was called */
    bool unavailable;       /* ctlout_unavailable was called */
};

/* Runs handler (`command` names it in messages) on argv with ctl->json set, into call
 * (zeroed here). Like one seckillctl run, the call opens the connections it needs and
 * closes them at its end (ctlrun_disconnect), so a backend restarted between calls is
 * never met through a dead connection. */
enum ctlcall_outcome ctlcall_run(struct ctlrun *ctl, const char *command, ctlrun_handler handler, int argc,
                                 char **argv, struct ctlcall *call);
void ctlcall_free(struct ctlcall *call);

#endif
