#include "ctl/ctlbanremove.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctlargs.h"
#include "ctl/ctlban.h"
#include "ctl/ctldb.h"
#include "ctl/ctlout.h"
#include "ctl/ctlredis.h"
#include "common/clock.h"
#include "common/timeparse.h"

/* Records the removal; *raced when another remove recorded one first (b is then reread). */
static int ctlbanremove_record(struct ctlrun *ctl, struct ctlban_row *b, int64_t now, bool *raced)
{
    char by[CTLBAN_TEXT_BYTES], at[32];
    ctlrun_actor(ctl, by, sizeof(by));
    timeparse_format_sql(now, at, sizeof(at));
    char *qby = ctldb_quote(ctl, by);
    if (!qby)
        return CTLRUN_FAIL;
    size_t len = strlen(qby) + 256;
    char *sql = malloc(len);
    if (!sql) {
        free(qby);
        return ctlout_fail(ctl, "out of memory");
    }
    snprintf(sql, len,
             "UPDATE seckill_ban SET removed_at = '%s', removed_by = %s WHERE id = %" PRId64
             " AND removed_at IS NULL", at, qby, b->id);
    free(qby);
    int rc = ctldb_exec(ctl, sql);
    free(sql);
    if (rc != CTLRUN_OK)
        return rc;
    *raced = mysql_affected_rows(ctl->db) == 0;
    if (*raced)
        return ctlban_load(ctl, b->id, b);
    b->removed = true;
    b->removed_ms = now;
    snprintf(b->removed_by, sizeof(b->removed_by), "%s", by);
    return CTLRUN_OK;
}

int ctlbanremove_run(struct ctlrun *ctl, int argc, char **argv)
{
    int64_t id;
    int rc = ctlargs_single_id(ctl, argc, argv, "ban", &id);
    if (rc != CTLRUN_OK)
        return rc;
    if (!ctlredis_conn(ctl) || !ctldb_conn(ctl))
        return CTLRUN_FAIL;
    struct ctlban_row b;
    if ((rc = ctlban_load(ctl, id, &b)) != CTLRUN_OK)
        return rc;
    int64_t now = clock_wall_ms();
    bool already = b.removed, ended = !b.removed && now >= b.rec.end_ms;
    if (!already && !ended && (rc = ctlbanremove_record(ctl, &b, now, &already)) != CTLRUN_OK)
        return rc;

    /* Committed: the gateways let go at their next refresh. Repeated on a removed ban, it
     * clears a field an earlier remove could not. */
    int prc = ctlban_publish(ctl, NULL, 0, &id, 1, false);
    if (prc != CTLRUN_OK)
        ctlout_note(ctl, "ban %" PRId64 " is removed in MySQL but the gateways may still enforce it: run "
                    "'seckillctl ban sync'", id);
    else
        (void)ctlban_prune(ctl, now);

    if (ctl->json) {
        cJSON *obj = ctlban_json(&b, now);
        if (obj) {
            cJSON_AddBoolToObject(obj, "alreadyRemoved", already);
            cJSON_AddBoolToObject(obj, "alreadyEnded", ended);
        }
        int jrc = ctlout_json(ctl, obj);
        return prc != CTLRUN_OK ? prc : jrc;
    }
    char subject[96], when[40];
    ctlban_subject(&b, subject, sizeof(subject));
    if (already) {
        timeparse_format(b.removed_ms, when, sizeof(when));
        printf("ban %" PRId64 " (%s) was removed already, at %s by %s\n", id, subject, when, b.removed_by);
    } else if (ended) {
        timeparse_format(b.rec.end_ms, when, sizeof(when));
        printf("ban %" PRId64 " (%s) ended by itself at %s\n", id, subject, when);
    } else {
        printf("ban %" PRId64 " (%s) removed\n", id, subject);
    }
    return prc;
}
