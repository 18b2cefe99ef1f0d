#include "ctl/ctlrun.h"

#include <stdlib.h>

void ctlrun_close(struct ctlrun *ctl)
{
    ctlrun_disconnect(ctl);
    config_free(&ctl->cfg);
}

void ctlrun_disconnect(struct ctlrun *ctl)
{
    redisroute_free(ctl->redis);
    if (ctl->db)
        mysql_close(ctl->db);
    if (ctl->scripts) {
        luascript_free_all(ctl->scripts);
        free(ctl->scripts);
    }
    ctl->redis = NULL;
    ctl->db = NULL;
    ctl->scripts = NULL;
}
