#include "ctl/ctlconfig.h"

#include <cjson/cJSON.h>
#include <stdio.h>

#include "ctl/ctlargs.h"
#include "ctl/ctlout.h"
#include "common/luascript.h"

int ctlconfig_get(struct ctlrun *ctl, int argc, char **argv)
{
    const char *pos[1];
    int rc = ctlargs_parse(ctl, argc, argv, NULL, 0, pos, 1, 1, NULL);
    if (rc != CTLRUN_OK)
        return rc;
    char value[4096];
    if (config_format(&ctl->cfg, pos[0], value, sizeof(value)) != 0)
        return ctlout_usage_error(ctl, "%s: unknown configuration key", pos[0]);
    if (ctl->json) {
        cJSON *obj = cJSON_CreateObject();
        cJSON_AddStringToObject(obj, "key", pos[0]);
        cJSON_AddStringToObject(obj, "value", value);
        return ctlout_json(ctl, obj);
    }
    puts(value);
    return CTLRUN_OK;
}

int ctlconfig_check(struct ctlrun *ctl, int argc, char **argv)
{
    int rc = ctlargs_parse(ctl, argc, argv, NULL, 0, NULL, 0, 0, NULL);
    if (rc != CTLRUN_OK)
        return rc;
    /* config_from_args has validated the values; the Lua scripts are the one setting
     * whose mistake would otherwise only show when the gateway starts. */
    struct luascript_set scripts;
    char err[512];
    if (luascript_load_all(&scripts, ctl->cfg.lua_dir, err, sizeof(err)) != 0)
        return ctlout_fail(ctl, "%s", err);
    luascript_free_all(&scripts);
    if (ctl->json) {
        cJSON *obj = cJSON_CreateObject();
        cJSON_AddBoolToObject(obj, "ok", 1);
        return ctlout_json(ctl, obj);
    }
    puts("ok");
    return CTLRUN_OK;
}
