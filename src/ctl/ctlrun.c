#include "ctl/ctlrun.h"

#include <stdlib.h>

void ctlrun_close(struct ctlrun *ctl)
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
    config_free(&ctl->cfg);
}
