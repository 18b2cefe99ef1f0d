#include "ctl/ctlbanadd.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctlactivity.h"
#include "ctl/ctlargs.h"
#include "ctl/ctlban.h"
#include "ctl/ctldb.h"
#include "ctl/ctlout.h"
#include "ctl/ctlredis.h"
#include "common/clock.h"
#include "common/timeparse.h"

/* The longest ban: ten years is for ever in a shop's life, and keeps every end a DATETIME. */
#define CTLBANADD_MAX_MS (3650LL * 86400 * 1000)

/* --for N{s,m,h,d} (a leading + allowed): the end, counted from now_ms. */
static int ctlbanadd_for(struct ctlrun *ctl, const char *s, int64_t now_ms, int64_t *end_ms)
{
    const char *d = s[0] == '+' ? s + 1 : s;
    char rel[48];
    int64_t end = 0;
    if (d[0] == '-')
        return ctlout_usage_error(ctl, "--for '%s': must be longer than zero", s);
    bool digits = d[0] >= '0' && d[0] <= '9' && strlen(d) + 2 <= sizeof(rel);
    if (digits)
        snprintf(rel, sizeof(rel), "+%s", d);
    if (!digits || timeparse_parse(rel, now_ms, &end) != 0)
        return ctlout_usage_error(ctl, "--for '%s': not a duration (a number and s, m, h or d: 30m, 2h, 7d)",
                                  s);
    if (end <= now_ms)
        return ctlout_usage_error(ctl, "--for '%s': must be longer than zero", s);
    if (end - now_ms > CTLBANADD_MAX_MS)
        return ctlout_usage_error(ctl, "--for '%s': at most 3650d (ten years)", s);
    *end_ms = end;
    return CTLRUN_OK;
}

static int ctlbanadd_until(struct ctlrun *ctl, const char *s, int64_t now_ms, int64_t *end_ms)
{
    int rc = ctlargs_time(ctl, "--until", s, now_ms, end_ms);
    if (rc != CTLRUN_OK)
        return rc;
    char when[40];
    timeparse_format(*end_ms, when, sizeof(when));
    if (*end_ms <= now_ms)
        return ctlout_usage_error(ctl, "--until '%s': %s is not in the future", s, when);
    if (*end_ms - now_ms > CTLBANADD_MAX_MS)
        return ctlout_usage_error(ctl, "--until '%s': at most ten years from now", s);
    return CTLRUN_OK;
}

/* The INSERT of b; sets b->id. */
static int ctlbanadd_insert(struct ctlrun *ctl, struct ctlban_row *b)
{
    char *qreason = ctldb_quote(ctl, b->reason);
    char *qby = qreason ? ctldb_quote(ctl, b->created_by) : NULL;
    char net[BANRECORD_CIDR_LEN], subject[96], activity[24], start[32], end[32];
    int rc = CTLRUN_FAIL;
    if (!qreason || !qby)
        goto out;
    if (b->rec.kind == BANRECORD_USER) {
        snprintf(subject, sizeof(subject), "'USER', %" PRId64 ", NULL", b->rec.user_id);
    } else {
        banrecord_cidr_format(&b->rec.cidr, net, sizeof(net));
        snprintf(subject, sizeof(subject), "'IP', NULL, '%s'", net);  /* inet_ntop's text: no quote in it */
    }
    if (b->rec.activity_id > 0)
        snprintf(activity, sizeof(activity), "%" PRId64, b->rec.activity_id);
    else
        snprintf(activity, sizeof(activity), "NULL");
    timeparse_format_sql(b->rec.start_ms, start, sizeof(start));
    timeparse_format_sql(b->rec.end_ms, end, sizeof(end));
    size_t len = strlen(qreason) + strlen(qby) + 512;
    char *sql = malloc(len);
    if (!sql) {
        rc = ctlout_fail(ctl, "out of memory");
        goto out;
    }
    snprintf(sql, len,
             "INSERT INTO seckill_ban (kind, user_id, cidr, activity_id, starts_at, ends_at, reason, "
             "created_by, created_at) VALUES (%s, %s, '%s', '%s', %s, %s, '%s')",
             subject, activity, start, end, qreason, qby, start);
    rc = ctldb_exec(ctl, sql);
    free(sql);
    if (rc == CTLRUN_OK)
        b->id = (int64_t)mysql_insert_id(ctl->db);
out:
    free(qreason);
    free(qby);
    return rc;
}

/* A remove that committed while this ban was being published must win: its HDEL may have
 * come before this HSET. Read after the HSET, the row tells; the remove's own HDEL follows
 * its commit, so one of the two always clears the field. Best effort: the ban itself is
 * published either way. */
static void ctlbanadd_recheck(struct ctlrun *ctl, const struct ctlban_row *b)
{
    struct ctlban_row now;
    if (ctlban_load(ctl, b->id, &now) == CTLRUN_OK && now.removed)
        (void)ctlban_publish(ctl, NULL, 0, &b->id, 1, false);
}

int ctlbanadd_run(struct ctlrun *ctl, int argc, char **argv)
{
    enum { USER, IP, ACTIVITY, FOR, UNTIL, REASON, NOPTS };
    struct ctlargs_opt opts[NOPTS] = {
        [USER] = { "--user", false, NULL },   [IP] = { "--ip", false, NULL },
        [ACTIVITY] = { "--activity", false, NULL }, [FOR] = { "--for", false, NULL },
        [UNTIL] = { "--until", false, NULL }, [REASON] = { "--reason", false, NULL },
    };
    int rc = ctlargs_parse(ctl, argc, argv, opts, NOPTS, NULL, 0, 0, NULL);
    if (rc != CTLRUN_OK)
        return rc;
    if (!opts[USER].value == !opts[IP].value)
        return ctlout_usage_error(ctl, "give one of --user UID or --ip ADDR[/PREFIX]");
    if (!opts[FOR].value == !opts[UNTIL].value)
        return ctlout_usage_error(ctl, "give one of --for DURATION or --until TIME");
    struct ctlban_row b;
    memset(&b, 0, sizeof(b));
    char err[200];
    if (opts[USER].value) {
        b.rec.kind = BANRECORD_USER;
        if ((rc = ctlargs_id(ctl, "--user", opts[USER].value, &b.rec.user_id)) != CTLRUN_OK)
            return rc;
    } else {
        b.rec.kind = BANRECORD_ADDRESS;
        if (banrecord_cidr_parse(opts[IP].value, &b.rec.cidr, err, sizeof(err)) != 0)
            return ctlout_usage_error(ctl, "--ip '%s': %s", opts[IP].value, err);
    }
    if (opts[ACTIVITY].value &&
        (rc = ctlargs_id(ctl, "--activity", opts[ACTIVITY].value, &b.rec.activity_id)) != CTLRUN_OK)
        return rc;
    int64_t now = clock_wall_ms();
    rc = opts[FOR].value ? ctlbanadd_for(ctl, opts[FOR].value, now, &b.rec.end_ms)
                         : ctlbanadd_until(ctl, opts[UNTIL].value, now, &b.rec.end_ms);
    if (rc != CTLRUN_OK)
        return rc;
    if (opts[REASON].value && (rc = ctlargs_name(ctl, "--reason", opts[REASON].value)) != CTLRUN_OK)
        return rc;
    snprintf(b.reason, sizeof(b.reason), "%s", opts[REASON].value ? opts[REASON].value : "");
    b.rec.start_ms = b.created_ms = now;
    ctlrun_actor(ctl, b.created_by, sizeof(b.created_by));

    /* Redis is where the ban takes effect: better refused before MySQL records it. */
    if (!ctlredis_conn(ctl) || !ctldb_conn(ctl))
        return CTLRUN_FAIL;
    struct ctlactivity_row activity;
    if (b.rec.activity_id > 0 && (rc = ctlactivity_load(ctl, b.rec.activity_id, &activity)) != CTLRUN_OK)
        return rc;
    if ((rc = ctlbanadd_insert(ctl, &b)) != CTLRUN_OK)
        return rc;

    int prc = ctlban_publish(ctl, &b, 1, NULL, 0, false);
    if (prc == CTLRUN_OK)
        ctlbanadd_recheck(ctl, &b);
    if (prc != CTLRUN_OK)
        ctlout_note(ctl, "ban %" PRId64 " is recorded in MySQL but no gateway enforces it yet: run "
                    "'seckillctl ban sync'", b.id);
    else
        (void)ctlban_prune(ctl, now);

    if (ctl->json) {
        cJSON *obj = ctlban_json(&b, now);
        if (obj)
            cJSON_AddBoolToObject(obj, "enforced", prc == CTLRUN_OK);
        int jrc = ctlout_json(ctl, obj);
        return prc != CTLRUN_OK ? prc : jrc;
    }
    printf("%" PRId64 "\n", b.id);
    return prc;
}
