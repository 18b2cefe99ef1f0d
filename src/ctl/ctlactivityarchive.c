#include "ctl/ctlactivityarchive.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>

#include "ctl/ctlargs.h"
#include "ctl/ctldb.h"
#include "ctl/ctlout.h"
#include "ctl/ctlredis.h"
#include "common/clock.h"
#include "common/timeparse.h"
#include "store/archive.h"

static int ctlactivityarchive_print(struct ctlrun *ctl, int64_t id, const struct archive_result *res)
{
    char at[40];
    timeparse_format(res->archived_ms, at, sizeof(at));
    if (ctl->json) {
        cJSON *obj = cJSON_CreateObject();
        cJSON_AddNumberToObject(obj, "id", (double)id);
        cJSON_AddBoolToObject(obj, "archived", true);
        cJSON_AddStringToObject(obj, "archivedAt", at);
        cJSON_AddNumberToObject(obj, "archivedAtMs", (double)res->archived_ms);
        cJSON_AddBoolToObject(obj, "alreadyArchived", res->already);
        cJSON_AddNumberToObject(obj, "buckets", res->nbuckets);
        cJSON_AddNumberToObject(obj, "keysRemoved", (double)res->keys_removed);
        if (!res->already) {
            cJSON_AddNumberToObject(obj, "orders", (double)res->orders);
            cJSON_AddNumberToObject(obj, "failed", (double)res->failed);
        }
        return ctlout_json(ctl, obj);
    }
    if (res->already)
        printf("activity %" PRId64 " was archived at %s (%" PRId64 " key(s) removed now)\n", id, at,
               res->keys_removed);
    else
        printf("activity %" PRId64 " archived at %s: %" PRId64 " SUCCESS order(s) in MySQL, %" PRId64
               " FAILED, %" PRId64 " Redis key(s) removed; the activity hash stays\n",
               id, at, res->orders, res->failed, res->keys_removed);
    return CTLRUN_OK;
}

int ctlactivityarchive_run(struct ctlrun *ctl, int argc, char **argv)
{
    int64_t id;
    int rc = ctlargs_single_id(ctl, argc, argv, "activity id", &id);
    if (rc != CTLRUN_OK)
        return rc;
    MYSQL *db = ctldb_conn(ctl);
    if (!db)
        return CTLRUN_FAIL;
    struct redisroute *rr = ctlredis_conn(ctl);
    const struct luascript_set *scripts = rr ? ctlredis_scripts(ctl) : NULL;
    if (!scripts)
        return CTLRUN_FAIL;
    struct archive_result res;
    char err[512];
    switch (archive_activity(db, rr, scripts, &ctl->cfg, id, clock_wall_ms(), &res, err, sizeof(err))) {
    case ARCHIVE_DONE:
        return ctlactivityarchive_print(ctl, id, &res);
    case ARCHIVE_MISSING:
        return ctlout_missing(ctl, "%s", err);
    case ARCHIVE_REFUSED:
        return ctlout_fail(ctl, "%s; nothing was changed", err);
    default:
        return ctlout_unavailable(ctl, "%s", err);
    }
}
