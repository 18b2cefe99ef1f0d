#include "ctl/ctlcall.h"

#include <cjson/cJSON.h>
#include <string.h>

enum ctlcall_outcome ctlcall_run(struct ctlrun *ctl, const char *command, ctlrun_handler handler, int argc,
                                 char **argv, struct ctlcall *call)
{
    memset(call, 0, sizeof(*call));
    ctl->json = true;
    ctl->command = command;
    ctl->usage = "";
    ctl->call = call;
    int rc = handler(ctl, argc, argv);
    ctl->call = NULL;
    ctl->command = NULL;
    /* Each call opens its own connections, as one seckillctl run does: between calls
     * MySQL may close an idle one (wait_timeout), Redis restart or fail over, and a call
     * must not be the one that finds out. Admin calls are few; a connect is milliseconds. */
    ctlrun_disconnect(ctl);
    if (rc == CTLRUN_OK)
        return CTLCALL_DONE;
    if (rc == CTLRUN_USAGE)
        return CTLCALL_INVALID;
    if (call->missing)
        return CTLCALL_NOT_FOUND;
    if (call->unavailable)
        return CTLCALL_UNAVAILABLE;
    return call->result ? CTLCALL_FAILED : CTLCALL_REFUSED;
}

void ctlcall_free(struct ctlcall *call)
{
    cJSON_Delete(call->result);
    cJSON_Delete(call->notes);
    call->result = call->notes = NULL;
}
