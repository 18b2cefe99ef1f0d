#include "ctl/ctlbansync.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "ctl/ctlargs.h"
#include "ctl/ctlban.h"
#include "ctl/ctldb.h"
#include "ctl/ctlout.h"
#include "ctl/ctlredis.h"
#include "common/clock.h"
#include "common/timeparse.h"

static int ctlbansync_in_force(struct ctlrun *ctl, int64_t now, struct ctlban_row **rows, size_t *n)
{
    char sqlnow[32], tail[128];
    timeparse_format_sql(now, sqlnow, sizeof(sqlnow));
    snprintf(tail, sizeof(tail), "WHERE removed_at IS NULL AND ends_at > '%s' ORDER BY id", sqlnow);
    return ctlban_select(ctl, tail, rows, n);
}

int ctlbansync_run(struct ctlrun *ctl, int argc, char **argv)
{
    int rc = ctlargs_parse(ctl, argc, argv, NULL, 0, NULL, 0, 0, NULL);
    if (rc != CTLRUN_OK)
        return rc;
    if (!ctlredis_conn(ctl) || !ctldb_conn(ctl))
        return CTLRUN_FAIL;
    int64_t now = clock_wall_ms();
    struct ctlban_row *rows = NULL, *after = NULL, *added = NULL;
    size_t n = 0, nafter = 0, nlifted = 0, nadded = 0;
    int64_t *lifted = NULL;
    if ((rc = ctlbansync_in_force(ctl, now, &rows, &n)) != CTLRUN_OK ||
        (rc = ctlban_publish(ctl, rows, n, NULL, 0, true)) != CTLRUN_OK)
        goto out;
    /* A remove that committed meanwhile may have sent its HDEL before this rewrite, and an
     * add its HSET: read again, what left goes, what came is written. A command committing
     * after this read writes Redis after this rewrite itself. */
    if ((rc = ctlbansync_in_force(ctl, clock_wall_ms(), &after, &nafter)) != CTLRUN_OK)
        goto out;
    if (!(lifted = calloc(n + 1, sizeof(*lifted))) || !(added = calloc(nafter + 1, sizeof(*added)))) {
        rc = ctlout_fail(ctl, "out of memory");
        goto out;
    }
    /* Both lists are by id: one walk finds what is in one only. */
    for (size_t i = 0, j = 0; i < n || j < nafter;) {
        if (j == nafter || (i < n && rows[i].id < after[j].id))
            lifted[nlifted++] = rows[i++].id;
        else if (i == n || after[j].id < rows[i].id)
            added[nadded++] = after[j++];
        else {
            i++;
            j++;
        }
    }
    if ((nlifted || nadded) && (rc = ctlban_publish(ctl, added, nadded, lifted, nlifted, false)) != CTLRUN_OK)
        goto out;
    if (ctl->json) {
        cJSON *obj = cJSON_CreateObject();
        if (obj) {
            cJSON_AddNumberToObject(obj, "bans", (double)nafter);
            cJSON_AddNumberToObject(obj, "liftedMeanwhile", (double)nlifted);
        }
        rc = ctlout_json(ctl, obj);
    } else {
        printf("%zu ban(s) in force written to Redis\n", nafter);
    }
out:
    free(rows);
    free(after);
    free(lifted);
    free(added);
    return rc;
}
