#include "ctl/ctlcoupongrant.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <mysqld_error.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl/ctlallotment.h"
#include "ctl/ctlargs.h"
#include "ctl/ctlcouponwarmup.h"
#include "ctl/ctldb.h"
#include "ctl/ctlout.h"
#include "ctl/ctlredis.h"
#include "store/couponsync.h"
#include "store/db.h"
#include "common/clock.h"
#include "common/json.h"
#include "common/timeparse.h"
#include "common/usercoupon.h"

/* source_ref is VARCHAR(64): "grant:" and at most 58 characters of reference. */
#define CTLCOUPONGRANT_PREFIX "grant:"
#define CTLCOUPONGRANT_REF_MAX (64 - (int)(sizeof(CTLCOUPONGRANT_PREFIX) - 1))
/* Attempts with a fresh default reference should one ever collide. */
#define CTLCOUPONGRANT_ATTEMPTS 3

enum { CTLCOUPONGRANT_RETRY = 3 };

/* A reference no other grant has used: the time, the process and a counter (two grants
 * in one millisecond from one process differ in the counter, from two processes in the
 * pid, from two hosts most likely in the monotonic microseconds, time since each host's
 * boot; a collision is retried anyway). Atomic: seckill-admin's workers grant at once. */
static void ctlcoupongrant_default_ref(char *buf, size_t len)
{
    static atomic_uint counter;
    snprintf(buf, len, "%" PRId64 "-%ld-%" PRId64 "-%u", clock_wall_ms(), (long)getpid(),
             clock_mono_us(), atomic_fetch_add(&counter, 1));
}

struct ctlcoupongrant {
    int64_t coupon_id, user_id;
    char source_ref[80];
    bool explicit_ref;
    int64_t id;             /* the user coupon */
    bool issued;            /* false: an earlier grant with this --ref */
    bool archived;          /* the coupon's user coupons are in MySQL only (couponarchive.h) */
};

static const char *ctlcoupongrant_ref(const struct ctlcoupongrant *g)
{
    return g->source_ref + sizeof(CTLCOUPONGRANT_PREFIX) - 1;
}

/* An earlier grant with this explicit reference: CTLRUN_OK with g->id set when it is this
 * very grant (same user and coupon), CTLRUN_FAIL when the reference belongs to another. */
static int ctlcoupongrant_repeat(struct ctlrun *ctl, const char *qref, struct ctlcoupongrant *g,
                                 bool *found)
{
    char sql[256];
    snprintf(sql, sizeof(sql),
             "SELECT id, user_id, coupon_id FROM user_coupon WHERE source_ref = %s FOR UPDATE", qref);
    MYSQL_RES *res = ctldb_query(ctl, sql);
    if (!res)
        return CTLRUN_FAIL;
    MYSQL_ROW r = mysql_fetch_row(res);
    *found = r != NULL;
    int rc = CTLRUN_OK;
    if (r) {
        int64_t id = ctldb_int(r[0]), user = ctldb_int(r[1]), coupon = ctldb_int(r[2]);
        if (user == g->user_id && coupon == g->coupon_id)
            g->id = id;
        else
            rc = ctlout_fail(ctl, "--ref '%s' was used by another grant: user coupon %" PRId64
                             " of coupon %" PRId64 " to user %" PRId64,
                             ctlcoupongrant_ref(g), id, coupon, user);
    }
    mysql_free_result(res);
    return rc;
}

/* Everything between START TRANSACTION and COMMIT; the caller rolls back on failure. */
static int ctlcoupongrant_tx(struct ctlrun *ctl, struct ctlcoupongrant *g, int64_t now)
{
    struct ctlallotment al;
    int rc = ctlallotment_read(ctl, g->coupon_id, now, true, &al);
    if (rc != CTLRUN_OK)
        return rc;
    const struct ctlcoupon_row *cp = &al.coupon;
    g->archived = cp->archived_ms > 0;
    char *qref = ctldb_quote(ctl, g->source_ref);
    if (!qref)
        return CTLRUN_FAIL;
    /* Checked under the coupon lock, before anything is refused: repeating a grant that
     * went through must answer the same even once the coupon is used up or expired. */
    bool found = false;
    if (g->explicit_ref && (rc = ctlcoupongrant_repeat(ctl, qref, g, &found)) != CTLRUN_OK)
        goto out;
    if (found) {
        g->issued = false;
        rc = ctldb_exec(ctl, "COMMIT");
        goto out;
    }

    char when[40];
    if (strcmp(cp->status, "ACTIVE") != 0) {
        rc = ctlout_fail(ctl, "coupon %" PRId64 " is %s, not ACTIVE: nothing can be granted", g->coupon_id,
                         cp->status);
        goto out;
    }
    if (now >= cp->end_ms) {
        timeparse_format(cp->end_ms, when, sizeof(when));
        rc = ctlout_fail(ctl, "coupon %" PRId64 " expired at %s", g->coupon_id, when);
        goto out;
    }
    if (now < cp->start_ms) {
        timeparse_format(cp->start_ms, when, sizeof(when));
        rc = ctlout_fail(ctl, "coupon %" PRId64 " is not valid before %s", g->coupon_id, when);
        goto out;
    }
    if (!ctlallotment_fits(&al.count, 1)) {
        rc = ctlout_fail(ctl, "coupon %" PRId64 " has nothing left to grant (total %" PRId64 ", issued %"
                         PRId64 ", %" PRId64 " held by its sales)", g->coupon_id, al.count.total,
                         al.count.issued, al.count.held);
        goto out;
    }

    char sql[512];
    snprintf(sql, sizeof(sql),
             "INSERT INTO user_coupon (user_id, coupon_id, source_ref, status) "
             "VALUES (%" PRId64 ", %" PRId64 ", %s, 'UNUSED')", g->user_id, g->coupon_id, qref);
    if (mysql_query(ctl->db, sql) != 0) {
        if (mysql_errno(ctl->db) == ER_DUP_ENTRY && !g->explicit_ref)
            rc = CTLCOUPONGRANT_RETRY;
        else if (mysql_errno(ctl->db) == ER_DUP_ENTRY)
            rc = ctlout_fail(ctl, "--ref '%s' was just used by another grant", ctlcoupongrant_ref(g));
        else
            rc = ctlout_fail(ctl, "mysql: %s", mysql_error(ctl->db));
        goto out;
    }
    g->id = (int64_t)mysql_insert_id(ctl->db);
    g->issued = true;
    /* It fits under the lock: issued_count stays within total_count, the CHECK
     * constraint never fires. */
    snprintf(sql, sizeof(sql), "UPDATE coupon SET issued_count = issued_count + 1 WHERE id = %" PRId64,
             g->coupon_id);
    if ((rc = ctldb_exec(ctl, sql)) == CTLRUN_OK)
        rc = ctldb_exec(ctl, "COMMIT");
out:
    free(qref);
    return rc;
}

/* coupon grant --coupon ID --user UID [--ref REF]: one user coupon outside a sale, in one
 * MySQL transaction, then published to Redis. With --ref a repeat issues nothing and
 * prints the same id. */
int ctlcoupongrant_run(struct ctlrun *ctl, int argc, char **argv)
{
    enum { COUPON, USER, REF, NOPTS };
    struct ctlargs_opt opts[NOPTS] = {
        [COUPON] = { "--coupon", true, NULL },
        [USER] = { "--user", true, NULL },
        [REF] = { "--ref", false, NULL },
    };
    int rc = ctlargs_parse(ctl, argc, argv, opts, NOPTS, NULL, 0, 0, NULL);
    if (rc != CTLRUN_OK)
        return rc;
    struct ctlcoupongrant g;
    memset(&g, 0, sizeof(g));
    if ((rc = ctlargs_id(ctl, "--coupon", opts[COUPON].value, &g.coupon_id)) != CTLRUN_OK ||
        (rc = ctlargs_id(ctl, "--user", opts[USER].value, &g.user_id)) != CTLRUN_OK)
        return rc;
    /* Refs share the order-reference alphabet: they travel into Redis and JSON unescaped. */
    if (opts[REF].value && (!usercoupon_valid_ref(opts[REF].value) ||
                            strlen(opts[REF].value) > (size_t)CTLCOUPONGRANT_REF_MAX))
        return ctlout_usage_error(ctl, "--ref '%s': 1 to %d characters of A-Z a-z 0-9 _ . : -",
                                  opts[REF].value, CTLCOUPONGRANT_REF_MAX);
    g.explicit_ref = opts[REF].value != NULL;

    /* Redis is needed for the allotment and the record: better refused before MySQL. */
    if (!ctlredis_conn(ctl) || !ctldb_conn(ctl))
        return CTLRUN_FAIL;
    struct usercoupon tmpl;
    char err[512];
    if (ctlcoupon_terms(ctl, g.coupon_id, &tmpl) != CTLRUN_OK)
        return CTLRUN_FAIL;

    rc = CTLCOUPONGRANT_RETRY;
    for (int attempt = 0; attempt < CTLCOUPONGRANT_ATTEMPTS && rc == CTLCOUPONGRANT_RETRY; attempt++) {
        char ref[64];
        if (g.explicit_ref)
            snprintf(ref, sizeof(ref), "%s", opts[REF].value);
        else
            ctlcoupongrant_default_ref(ref, sizeof(ref));
        snprintf(g.source_ref, sizeof(g.source_ref), CTLCOUPONGRANT_PREFIX "%s", ref);
        if ((rc = ctldb_exec(ctl, "START TRANSACTION")) != CTLRUN_OK)
            return rc;
        rc = ctlcoupongrant_tx(ctl, &g, clock_wall_ms());
        if (rc != CTLRUN_OK)
            db_exec(ctl->db, "ROLLBACK", err, sizeof(err));
    }
    if (rc == CTLCOUPONGRANT_RETRY)
        return ctlout_fail(ctl, "could not find an unused grant reference; try again with --ref");
    if (rc != CTLRUN_OK)
        return rc;

    /* Committed: the record follows. Read back from MySQL so that a repeat of a grant
     * whose coupon was used meanwhile publishes it as used. */
    char where[48];
    snprintf(where, sizeof(where), "id = %" PRId64, g.id);
    struct ctlcouponwarmup_published pub;
    int prc = g.archived ? CTLRUN_OK : ctlcouponwarmup_publish(ctl, &tmpl, where, &pub);
    if (g.archived)
        ctlout_note(ctl, "coupon %" PRId64 " is archived: user coupon %" PRId64 " is in MySQL only",
                    g.coupon_id, g.id);
    else if (prc != CTLRUN_OK)
        ctlout_note(ctl, "user coupon %" PRId64 " is in MySQL but not in Redis: run 'seckillctl coupon "
                    "warmup %" PRId64 "'", g.id, g.coupon_id);
    else
        ctlcouponwarmup_note_payable(ctl, &pub);
    if (!g.issued && !ctl->json)
        ctlout_note(ctl, "grant '%s' was done before: user coupon %" PRId64 ", nothing issued",
                    ctlcoupongrant_ref(&g), g.id);

    if (ctl->json) {
        cJSON *obj = cJSON_CreateObject();
        cJSON_AddNumberToObject(obj, "id", (double)g.id);
        cJSON_AddNumberToObject(obj, "couponId", (double)g.coupon_id);
        json_add_int(obj, "userId", g.user_id);
        cJSON_AddStringToObject(obj, "sourceRef", g.source_ref);
        cJSON_AddBoolToObject(obj, "issued", g.issued);
        cJSON_AddBoolToObject(obj, "published", prc == CTLRUN_OK && !g.archived);
        int jrc = ctlout_json(ctl, obj);
        return prc != CTLRUN_OK ? prc : jrc;
    }
    printf("%" PRId64 "\n", g.id);
    return prc;
}
