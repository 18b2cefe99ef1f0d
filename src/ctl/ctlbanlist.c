#include "ctl/ctlbanlist.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctlactivity.h"
#include "ctl/ctlargs.h"
#include "ctl/ctlban.h"
#include "ctl/ctldb.h"
#include "ctl/ctlout.h"
#include "ctl/ctlredis.h"
#include "ctl/ctltable.h"
#include "ctl/ctlutf8.h"
#include "common/clock.h"
#include "common/keys.h"
#include "common/timeparse.h"

/* The newest this many are listed (--all grows with every ban ever set); more: a note, and
 * "truncated" in --json. */
#define CTLBANLIST_MAX 1000
/* Reasons are cut in the table so that one long one does not push every row wide. */
#define CTLBANLIST_REASON_CHARS 40

/* Which of the rows in force Redis holds: enforced[i]. A Redis that cannot be read leaves
 * them all false, with a note. */
static void ctlbanlist_enforced(struct ctlrun *ctl, const struct ctlban_row *rows, size_t n, int64_t now,
                                bool *enforced)
{
    if (!ctlredis_conn(ctl)) {
        ctlout_note(ctl, "Redis could not be reached: which bans the gateways enforce is unknown");
        return;
    }
    (void)ctlban_prune(ctl, now);
    const char **argv = calloc(n + 2, sizeof(*argv));
    char (*ids)[24] = calloc(n + 1, sizeof(*ids));
    size_t *at = calloc(n + 1, sizeof(*at));
    size_t k = 2;
    if (!argv || !ids || !at)
        goto out;
    argv[0] = "HMGET";
    argv[1] = KEYS_BANS;
    for (size_t i = 0; i < n; i++) {
        if (rows[i].removed || now >= rows[i].rec.end_ms)
            continue;
        snprintf(ids[i], sizeof(ids[i]), "%" PRId64, rows[i].id);
        at[k - 2] = i;
        argv[k++] = ids[i];
    }
    if (k > 2) {
        redisReply *r = ctlredis_argv(ctl, (int)k, argv);
        for (size_t j = 0; r && r->type == REDIS_REPLY_ARRAY && j < r->elements && j < k - 2; j++)
            enforced[at[j]] = r->element[j]->type == REDIS_REPLY_STRING;
        if (r)
            freeReplyObject(r);
    }
out:
    free(argv);
    free(ids);
    free(at);
}

static int ctlbanlist_table(struct ctlrun *ctl, const struct ctlban_row *rows, size_t n, const bool *enforced,
                            bool all, int64_t now)
{
    static const char *const heads[] = { "ban", "subject", "sale", "until", "state", "set by", "set at",
                                         "removed by", "removed at", "reason" };
    /* Without --all nothing listed is removed: those two columns go. */
    static const char *const heads_in_force[] = { "ban", "subject", "sale", "until", "state", "set by",
                                                  "set at", "reason" };
    struct ctltable t;
    ctltable_init(&t, all ? 10 : 8, all ? heads : heads_in_force, all ? "rlllllllll" : "rlllllll");
    int rc = CTLRUN_OK;
    for (size_t i = 0; i < n && rc == CTLRUN_OK; i++) {
        const struct ctlban_row *b = &rows[i];
        char id[24], subject[96], sale[24], until[40], state[48], at[40], removed_at[40],
            reason[CTLBAN_TEXT_BYTES];
        snprintf(id, sizeof(id), "%" PRId64, b->id);
        ctlban_subject(b, subject, sizeof(subject));
        if (b->rec.activity_id > 0)
            snprintf(sale, sizeof(sale), "%" PRId64, b->rec.activity_id);
        else
            snprintf(sale, sizeof(sale), "all");
        timeparse_format(b->rec.end_ms, until, sizeof(until));
        const char *st = ctlban_state(b, now);
        snprintf(state, sizeof(state), "%s%s", st,
                 strcmp(st, "active") == 0 && !enforced[i] ? " (not in Redis)" : "");
        timeparse_format(b->created_ms, at, sizeof(at));
        timeparse_format(b->removed_ms, removed_at, sizeof(removed_at));
        snprintf(reason, sizeof(reason), "%s", b->reason);
        ctlutf8_truncate(reason, CTLBANLIST_REASON_CHARS);
        const char *reason_cell = reason[0] ? reason : NULL;
        const char *cells[] = { id, subject, sale, until, state, b->created_by, at,
                                b->removed ? b->removed_by : NULL, b->removed ? removed_at : NULL,
                                reason_cell };
        const char *cells_in_force[] = { id, subject, sale, until, state, b->created_by, at, reason_cell };
        rc = ctltable_row(ctl, &t, all ? cells : cells_in_force);
    }
    if (rc == CTLRUN_OK)
        ctltable_print(&t, stdout);
    ctltable_free(&t);
    return rc;
}

/* --all is a flag, which ctlargs does not parse: rest gets the other arguments (argv is the
 * caller's, seckill-admin's to free, and stays as it is). The admin API hands the flag over
 * as --all=true (or false), as it does every field. */
static int ctlbanlist_flag(struct ctlrun *ctl, int argc, char **argv, char **rest, int *nrest, bool *all)
{
    int out = 0;
    bool seen = false;
    *all = false;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            while (i < argc)
                rest[out++] = argv[i++];
            break;
        }
        if (strcmp(argv[i], "--all") != 0 && strncmp(argv[i], "--all=", 6) != 0) {
            rest[out++] = argv[i];
            continue;
        }
        if (seen)
            return ctlout_usage_error(ctl, "--all given twice");
        seen = true;
        const char *v = argv[i][5] == '=' ? argv[i] + 6 : "true";
        if (strcmp(v, "true") != 0 && strcmp(v, "false") != 0)
            return ctlout_usage_error(ctl, "--all '%s': true or false (or no value: true)", v);
        *all = strcmp(v, "true") == 0;
    }
    *nrest = out;
    return CTLRUN_OK;
}

int ctlbanlist_run(struct ctlrun *ctl, int argc, char **argv)
{
    bool all;
    char **rest = calloc((size_t)argc + 1, sizeof(*rest));
    int nrest = 0;
    if (!rest)
        return ctlout_fail(ctl, "out of memory");
    int rc = ctlbanlist_flag(ctl, argc, argv, rest, &nrest, &all);
    enum { ACTIVITY, NOPTS };
    struct ctlargs_opt opts[NOPTS] = { [ACTIVITY] = { "--activity", false, NULL } };
    if (rc == CTLRUN_OK)
        rc = ctlargs_parse(ctl, nrest, rest, opts, NOPTS, NULL, 0, 0, NULL);
    free(rest);  /* the values point into argv */
    if (rc != CTLRUN_OK)
        return rc;
    int64_t activity = 0;
    if (opts[ACTIVITY].value &&
        (rc = ctlargs_id(ctl, "--activity", opts[ACTIVITY].value, &activity)) != CTLRUN_OK)
        return rc;
    if (!ctldb_conn(ctl))
        return CTLRUN_FAIL;
    struct ctlactivity_row arow;
    if (activity > 0 && (rc = ctlactivity_load(ctl, activity, &arow)) != CTLRUN_OK)
        return rc;

    int64_t now = clock_wall_ms();
    char tail[512], in_force[128] = "", of_sale[128] = "", sqlnow[32];
    timeparse_format_sql(now, sqlnow, sizeof(sqlnow));
    if (!all)
        snprintf(in_force, sizeof(in_force), "removed_at IS NULL AND ends_at > '%s'", sqlnow);
    if (activity > 0)
        snprintf(of_sale, sizeof(of_sale), "(activity_id = %" PRId64 " OR activity_id IS NULL)", activity);
    snprintf(tail, sizeof(tail), "%s%s%s%s ORDER BY id DESC LIMIT %d",
             in_force[0] || of_sale[0] ? "WHERE " : "", in_force, in_force[0] && of_sale[0] ? " AND " : "",
             of_sale, CTLBANLIST_MAX + 1);
    struct ctlban_row *rows;
    size_t n;
    if ((rc = ctlban_select(ctl, tail, &rows, &n)) != CTLRUN_OK)
        return rc;
    bool truncated = n > CTLBANLIST_MAX;
    if (truncated)
        n = CTLBANLIST_MAX;
    bool *enforced = calloc(n + 1, sizeof(*enforced));
    if (!enforced) {
        free(rows);
        return ctlout_fail(ctl, "out of memory");
    }
    ctlbanlist_enforced(ctl, rows, n, now, enforced);
    size_t missing = 0;
    for (size_t i = 0; i < n; i++)
        missing += strcmp(ctlban_state(&rows[i], now), "active") == 0 && !enforced[i];
    if (missing)
        ctlout_note(ctl, "%zu ban(s) in force are not in Redis, so no gateway enforces them: run "
                    "'seckillctl ban sync'", missing);
    if (truncated)
        ctlout_note(ctl, "only the newest %d bans are listed", CTLBANLIST_MAX);

    if (ctl->json) {
        cJSON *obj = cJSON_CreateObject();
        cJSON *arr = obj ? cJSON_AddArrayToObject(obj, "bans") : NULL;
        for (size_t i = 0; arr && i < n; i++) {
            cJSON *b = ctlban_json(&rows[i], now);
            if (b)
                cJSON_AddBoolToObject(b, "enforced", enforced[i]);
            cJSON_AddItemToArray(arr, b);
        }
        if (obj)
            cJSON_AddBoolToObject(obj, "truncated", truncated);
        if (!arr) {
            cJSON_Delete(obj);
            obj = NULL;
        }
        rc = ctlout_json(ctl, obj);
    } else {
        rc = ctlbanlist_table(ctl, rows, n, enforced, all, now);
    }
    free(rows);
    free(enforced);
    return rc;
}
