#include "ctl/ctlcoupon.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <mysqld_error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "store/couponsync.h"
#include "ctl/ctlactivity.h"
#include "store/db.h"
#include "common/parse.h"
#include "common/timeparse.h"
#include "common/usercoupon.h"

/* DECIMAL(15,2) holds at most 13 digits of yuan. */
#define CTLCOUPON_MAX_CENTS 999999999999999LL
/* INT UNSIGNED columns. */
#define CTLCOUPON_MAX_COUNT 4294967295LL
/* DECIMAL(5,4): the rate is kept in ten-thousandths. */
#define CTLCOUPON_RATE_ONE 10000

static int ctlcoupon_money(struct ctl *ctl, const char *what, const char *s, int64_t *cents)
{
    if (parse_cents(s, cents) != 0 || *cents > CTLCOUPON_MAX_CENTS)
        return ctl_usage_error(ctl,
                               "%s '%s': not an amount in yuan (non-negative, at most 2 decimals, "
                               "like 10.00)",
                               what, s);
    return CTL_OK;
}

/* "0.85" -> 8500: a share of the price paid, in (0, 1], at most 4 decimals. */
static int ctlcoupon_rate(struct ctl *ctl, const char *s, int64_t *out)
{
    const char *p = s;
    int64_t v = 0;
    int whole_digits = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (++whole_digits > 1)
            goto bad;
        v = *p - '0';
    }
    if (whole_digits == 0)
        goto bad;
    v *= CTLCOUPON_RATE_ONE;
    if (*p == '.') {
        p++;
        int64_t scale = CTLCOUPON_RATE_ONE / 10;
        int decimals = 0;
        for (; *p >= '0' && *p <= '9'; p++) {
            if (++decimals > 4)
                goto bad;
            v += (*p - '0') * scale;
            scale /= 10;
        }
        if (decimals == 0)
            goto bad;
    }
    if (*p != '\0' || v <= 0 || v > CTLCOUPON_RATE_ONE)
        goto bad;
    *out = v;
    return CTL_OK;
bad:
    return ctl_usage_error(ctl,
                           "--rate '%s': must be a share of the price paid in (0, 1] with at "
                           "most 4 decimals, like 0.85",
                           s);
}

int ctlcoupon_create(struct ctl *ctl, int argc, char **argv)
{
    enum { NAME, TYPE, AMOUNT, RATE, MIN_ORDER, MAX_DISCOUNT, TOTAL, START, END, NOPTS };
    struct ctl_opt opts[NOPTS] = {
        [NAME] = { "--name", true, NULL },
        [TYPE] = { "--type", true, NULL },
        [AMOUNT] = { "--amount", false, NULL },
        [RATE] = { "--rate", false, NULL },
        [MIN_ORDER] = { "--min-order", false, NULL },
        [MAX_DISCOUNT] = { "--max-discount", false, NULL },
        [TOTAL] = { "--total", true, NULL },
        [START] = { "--start", true, NULL },
        [END] = { "--end", true, NULL },
    };
    int rc = ctl_parse_opts(ctl, argc, argv, opts, NOPTS, NULL, 0, 0, NULL);
    if (rc != CTL_OK)
        return rc;

    if ((rc = ctl_parse_name(ctl, "--name", opts[NAME].value)) != CTL_OK)
        return rc;

    static const char *const types[] = { "CASH", "DISCOUNT", "GIFT" };
    const char *type = NULL;
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
        if (strcasecmp(opts[TYPE].value, types[i]) == 0)
            type = types[i];
    if (!type)
        return ctl_usage_error(ctl, "--type '%s': must be CASH, DISCOUNT or GIFT",
                               opts[TYPE].value);

    int64_t amount = 0, rate = CTLCOUPON_RATE_ONE, min_order = 0, max_discount = 0;
    if (opts[AMOUNT].value && (rc = ctlcoupon_money(ctl, "--amount", opts[AMOUNT].value, &amount)) != CTL_OK)
        return rc;
    if (opts[MIN_ORDER].value &&
        (rc = ctlcoupon_money(ctl, "--min-order", opts[MIN_ORDER].value, &min_order)) != CTL_OK)
        return rc;
    if (opts[MAX_DISCOUNT].value &&
        (rc = ctlcoupon_money(ctl, "--max-discount", opts[MAX_DISCOUNT].value, &max_discount)) != CTL_OK)
        return rc;
    if (opts[RATE].value && (rc = ctlcoupon_rate(ctl, opts[RATE].value, &rate)) != CTL_OK)
        return rc;

    /* Options that mean nothing for a type are refused rather than stored and ignored:
     * they are most likely a mistake about the type. */
    if (strcmp(type, "CASH") == 0) {
        if (!opts[AMOUNT].value || amount <= 0)
            return ctl_usage_error(ctl, "a CASH coupon needs --amount greater than 0");
        if (opts[RATE].value)
            return ctl_usage_error(ctl, "--rate applies only to DISCOUNT coupons");
        if (opts[MAX_DISCOUNT].value)
            return ctl_usage_error(ctl, "--max-discount applies only to DISCOUNT coupons");
    } else if (strcmp(type, "DISCOUNT") == 0) {
        if (!opts[RATE].value)
            return ctl_usage_error(ctl, "a DISCOUNT coupon needs --rate (share paid, like 0.85)");
        if (opts[AMOUNT].value)
            return ctl_usage_error(ctl, "--amount applies only to CASH coupons");
    } else {
        if (opts[AMOUNT].value || opts[RATE].value || opts[MAX_DISCOUNT].value)
            return ctl_usage_error(ctl, "a GIFT coupon takes no --amount, --rate or --max-discount");
    }

    int64_t total;
    if ((rc = ctl_parse_count(ctl, "--total", opts[TOTAL].value, 1, CTLCOUPON_MAX_COUNT, &total)) != CTL_OK)
        return rc;
    int64_t now = ctl_now_ms(), start_ms, end_ms;
    if ((rc = ctl_parse_time(ctl, "--start", opts[START].value, now, &start_ms)) != CTL_OK ||
        (rc = ctl_parse_time(ctl, "--end", opts[END].value, now, &end_ms)) != CTL_OK)
        return rc;
    if (end_ms <= start_ms)
        return ctl_usage_error(ctl, "--end must be after --start");
    if (end_ms <= now)
        return ctl_usage_error(ctl, "--end '%s' is in the past: the coupon would be expired at once",
                               opts[END].value);

    char s_amount[32], s_min[32], s_max[32], s_rate[48], s_start[32], s_end[32];
    ctl_format_cents(amount, s_amount, sizeof(s_amount));
    ctl_format_cents(min_order, s_min, sizeof(s_min));
    ctl_format_cents(max_discount, s_max, sizeof(s_max));
    snprintf(s_rate, sizeof(s_rate), "%" PRId64 ".%04" PRId64, rate / CTLCOUPON_RATE_ONE,
             rate % CTLCOUPON_RATE_ONE);
    timeparse_format_sql(start_ms, s_start, sizeof(s_start));
    timeparse_format_sql(end_ms, s_end, sizeof(s_end));

    char *name = ctl_db_quote(ctl, opts[NAME].value);
    if (!name)
        return CTL_FAIL;
    size_t sqllen = strlen(name) + 512;
    char *sql = malloc(sqllen);
    if (!sql) {
        free(name);
        return ctl_fail(ctl, "out of memory");
    }
    snprintf(sql, sqllen,
             "INSERT INTO coupon (name, type, amount, rate, min_order, max_discount, total_count, "
             "start_time, end_time, status) VALUES (%s, '%s', %s, %s, %s, %s, %" PRId64
             ", '%s', '%s', 'ACTIVE')",
             name, type, s_amount, s_rate, s_min, s_max, total, s_start, s_end);
    free(name);
    rc = ctl_db_exec(ctl, sql);
    free(sql);
    if (rc != CTL_OK)
        return rc;
    int64_t id = (int64_t)mysql_insert_id(ctl->db);

    if (ctl->json) {
        char iso_start[40], iso_end[40];
        timeparse_format(start_ms, iso_start, sizeof(iso_start));
        timeparse_format(end_ms, iso_end, sizeof(iso_end));
        cJSON *obj = cJSON_CreateObject();
        cJSON_AddNumberToObject(obj, "id", (double)id);
        cJSON_AddStringToObject(obj, "name", opts[NAME].value);
        cJSON_AddStringToObject(obj, "type", type);
        cJSON_AddStringToObject(obj, "amount", s_amount);
        cJSON_AddStringToObject(obj, "rate", s_rate);
        cJSON_AddStringToObject(obj, "minOrder", s_min);
        cJSON_AddStringToObject(obj, "maxDiscount", s_max);
        cJSON_AddNumberToObject(obj, "total", (double)total);
        cJSON_AddStringToObject(obj, "start", iso_start);
        cJSON_AddStringToObject(obj, "end", iso_end);
        cJSON_AddStringToObject(obj, "status", "ACTIVE");
        return ctl_print_json(ctl, obj);
    }
    printf("%" PRId64 "\n", id);
    return CTL_OK;
}

/* ---- counts ---------------------------------------------------------------------------- */

static int ctlcoupon_load(struct ctl *ctl, int64_t id, bool for_update, struct ctlcoupon_row *row)
{
    char sql[512];
    snprintf(sql, sizeof(sql),
             "SELECT name, type, status, total_count, issued_count, used_count, "
             CTL_SQL_MS("start_time") ", " CTL_SQL_MS("end_time") " FROM coupon WHERE id = %" PRId64
             "%s", id, for_update ? " FOR UPDATE" : "");
    MYSQL_RES *res = ctl_db_query(ctl, sql);
    if (!res)
        return CTL_FAIL;
    MYSQL_ROW r = mysql_fetch_row(res);
    if (!r) {
        mysql_free_result(res);
        return ctl_fail(ctl, "coupon %" PRId64 " does not exist", id);
    }
    memset(row, 0, sizeof(*row));
    row->id = id;
    snprintf(row->name, sizeof(row->name), "%s", r[0] ? r[0] : "");
    snprintf(row->type, sizeof(row->type), "%s", r[1] ? r[1] : "");
    snprintf(row->status, sizeof(row->status), "%s", r[2] ? r[2] : "");
    row->total = ctl_db_int(r[3]);
    row->issued = ctl_db_int(r[4]);
    row->used = ctl_db_int(r[5]);
    row->start_ms = ctl_db_int(r[6]);
    row->end_ms = ctl_db_int(r[7]);
    mysql_free_result(res);
    return CTL_OK;
}

int ctlcoupon_grantable(struct ctl *ctl, int64_t coupon_id, int64_t now_ms, bool lock,
                        struct ctlcoupon_row *row, int64_t *allotted, int64_t *remaining)
{
    /* Activities first, then the coupon: the consumer's order (sold_count, then
     * issued_count), so a grant and a batch commit never wait on each other in a cycle. */
    if (ctlactivity_allotted(ctl, coupon_id, now_ms, lock, allotted) != CTL_OK ||
        ctlcoupon_load(ctl, coupon_id, lock, row) != CTL_OK)
        return CTL_FAIL;
    int64_t left = row->total - row->issued - *allotted;
    *remaining = left > 0 ? left : 0;
    return CTL_OK;
}

/* ---- user coupons into Redis ---------------------------------------------------------- */

/* What one pass of user coupon rows did. */
struct ctlcoupon_published {
    int64_t rows;            /* user coupons published */
    int64_t missing;         /* of them, records Redis lacked (some field newly written) */
    int64_t used;            /* USED rows */
    int64_t payable_unknown; /* of the missing, USED ones whose payable MySQL does not keep */
};

/* The :used value of a USED row. user_coupon keeps order_ref, discount and used_at but
 * (schema/mysql.sql as of now) no payable amount; when a `payable` column exists it is
 * used, else 0 is written: the record must say USED (use.lua then refuses any other
 * orderRef), and only the repeat of the same orderRef reads the payable back. */
static void ctlcoupon_used_fields(MYSQL_ROW r, bool has_payable, struct usercoupon *uc,
                                  struct ctlcoupon_published *out, bool *payable_unknown)
{
    strcpy(uc->status, "USED");
    out->used++;
    if (r[3] && usercoupon_valid_ref(r[3]))
        snprintf(uc->order_ref, sizeof(uc->order_ref), "%s", r[3]);
    else
        strcpy(uc->order_ref, "unknown");   /* still USED: never usable again */
    if (parse_cents(r[4], &uc->discount) != 0)
        uc->discount = 0;
    uc->used_ms = ctl_db_int(r[5]);
    if (!has_payable || parse_cents(r[6], &uc->payable) != 0) {
        uc->payable = 0;
        *payable_unknown = true;
    }
}

/* Publishes the user coupons of one coupon (template: its terms, couponsync_load) that
 * match where ("id = 7", "coupon_id = 3"). Streams the rows: a coupon may have millions. */
static int ctlcoupon_publish_rows(struct ctl *ctl, const struct usercoupon *tmpl, const char *where,
                                  struct ctlcoupon_published *out)
{
    memset(out, 0, sizeof(*out));
    MYSQL *db = ctl_db(ctl);
    redisContext *redis = ctl_redis(ctl);
    if (!db || !redis)
        return CTL_FAIL;
    char sql[512];
    bool has_payable = true;
    for (;;) {
        snprintf(sql, sizeof(sql),
                 "SELECT id, user_id, status, order_ref, discount, " CTL_SQL_MS("used_at") "%s "
                 "FROM user_coupon WHERE coupon_id = %" PRId64 " AND %s ORDER BY id",
                 has_payable ? ", payable" : "", tmpl->coupon_id, where);
        if (mysql_query(db, sql) == 0)
            break;
        if (!has_payable || mysql_errno(db) != ER_BAD_FIELD_ERROR)
            return ctl_fail(ctl, "mysql: %s", mysql_error(db));
        has_payable = false;
    }
    MYSQL_RES *res = mysql_use_result(db);
    if (!res)
        return ctl_fail(ctl, "mysql: %s", mysql_errno(db) ? mysql_error(db) : "no result");
    int rc = CTL_OK;
    MYSQL_ROW r;
    while ((r = mysql_fetch_row(res))) {
        struct usercoupon uc = *tmpl;
        uc.id = ctl_db_int(r[0]);
        uc.user_id = ctl_db_int(r[1]);
        bool payable_unknown = false;
        if (r[2] && strcmp(r[2], "USED") == 0)
            ctlcoupon_used_fields(r, has_payable, &uc, out, &payable_unknown);
        char err[256];
        int written = couponsync_publish(redis, &uc, err, sizeof(err));
        if (written < 0) {
            rc = ctl_fail(ctl, "user coupon %" PRId64 ": %s", uc.id, err);
            break;
        }
        out->rows++;
        if (written > 0)
            out->missing++;
        if (written > 0 && payable_unknown)
            out->payable_unknown++;
    }
    /* A stream must be read to its end before the connection can be used again. */
    while (rc != CTL_OK && mysql_fetch_row(res))
        ;
    if (rc == CTL_OK && mysql_errno(db))
        rc = ctl_fail(ctl, "mysql: %s", mysql_error(db));
    mysql_free_result(res);
    return rc;
}

static void ctlcoupon_note_payable(struct ctl *ctl, const struct ctlcoupon_published *p)
{
    if (p->payable_unknown > 0)
        ctl_note(ctl, "%" PRId64 " used coupon(s) republished with payable 0.00: user_coupon keeps "
                 "no payable amount (a repeat of their orderRef answers 0.00)", p->payable_unknown);
}

/* ---- grant ----------------------------------------------------------------------------- */

/* source_ref is VARCHAR(64): "grant:" and at most 58 characters of reference. */
#define CTLCOUPON_GRANT_PREFIX "grant:"
#define CTLCOUPON_REF_MAX (64 - (int)(sizeof(CTLCOUPON_GRANT_PREFIX) - 1))
/* Attempts with a fresh default reference should one ever collide. */
#define CTLCOUPON_GRANT_ATTEMPTS 3

enum { CTLCOUPON_RETRY = 3 };

/* A reference no other grant has used: the time, the process and a counter (two grants
 * in one millisecond from one process differ in the counter, from two processes in the
 * pid, from two hosts most likely in the nanoseconds; a collision is retried anyway). */
static void ctlcoupon_default_ref(char *buf, size_t len)
{
    static unsigned counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(buf, len, "%" PRId64 "-%ld-%09ld-%u", ctl_now_ms(), (long)getpid(), (long)ts.tv_nsec,
             counter++);
}

struct ctlcoupon_grant {
    int64_t coupon_id, user_id;
    char source_ref[80];
    bool explicit_ref;
    int64_t id;             /* the user coupon */
    bool issued;            /* false: an earlier grant with this --ref */
};

static const char *ctlcoupon_ref(const struct ctlcoupon_grant *g)
{
    return g->source_ref + sizeof(CTLCOUPON_GRANT_PREFIX) - 1;
}

/* An earlier grant with this explicit reference: CTL_OK with g->id set when it is this
 * very grant (same user and coupon), CTL_FAIL when the reference belongs to another. */
static int ctlcoupon_grant_repeat(struct ctl *ctl, const char *qref, struct ctlcoupon_grant *g,
                                  bool *found)
{
    char sql[256];
    snprintf(sql, sizeof(sql),
             "SELECT id, user_id, coupon_id FROM user_coupon WHERE source_ref = %s FOR UPDATE", qref);
    MYSQL_RES *res = ctl_db_query(ctl, sql);
    if (!res)
        return CTL_FAIL;
    MYSQL_ROW r = mysql_fetch_row(res);
    *found = r != NULL;
    int rc = CTL_OK;
    if (r) {
        int64_t id = ctl_db_int(r[0]), user = ctl_db_int(r[1]), coupon = ctl_db_int(r[2]);
        if (user == g->user_id && coupon == g->coupon_id)
            g->id = id;
        else
            rc = ctl_fail(ctl, "--ref '%s' was used by another grant: user coupon %" PRId64
                          " of coupon %" PRId64 " to user %" PRId64, ctlcoupon_ref(g), id, coupon, user);
    }
    mysql_free_result(res);
    return rc;
}

/* Everything between START TRANSACTION and COMMIT; the caller rolls back on failure. */
static int ctlcoupon_grant_tx(struct ctl *ctl, struct ctlcoupon_grant *g, int64_t now)
{
    struct ctlcoupon_row cp;
    int64_t allotted, remaining;
    int rc = ctlcoupon_grantable(ctl, g->coupon_id, now, true, &cp, &allotted, &remaining);
    if (rc != CTL_OK)
        return rc;
    char *qref = ctl_db_quote(ctl, g->source_ref);
    if (!qref)
        return CTL_FAIL;
    /* Checked under the coupon lock, before anything is refused: repeating a grant that
     * went through must answer the same even once the coupon is used up or expired. */
    bool found = false;
    if (g->explicit_ref && (rc = ctlcoupon_grant_repeat(ctl, qref, g, &found)) != CTL_OK)
        goto out;
    if (found) {
        g->issued = false;
        rc = ctl_db_exec(ctl, "COMMIT");
        goto out;
    }

    char when[40];
    if (strcmp(cp.status, "ACTIVE") != 0) {
        rc = ctl_fail(ctl, "coupon %" PRId64 " is %s, not ACTIVE: nothing can be granted", g->coupon_id,
                      cp.status);
        goto out;
    }
    if (now >= cp.end_ms) {
        timeparse_format(cp.end_ms, when, sizeof(when));
        rc = ctl_fail(ctl, "coupon %" PRId64 " expired at %s", g->coupon_id, when);
        goto out;
    }
    if (now < cp.start_ms) {
        timeparse_format(cp.start_ms, when, sizeof(when));
        rc = ctl_fail(ctl, "coupon %" PRId64 " is not valid before %s", g->coupon_id, when);
        goto out;
    }
    if (remaining < 1) {
        rc = ctl_fail(ctl, "coupon %" PRId64 " has nothing left to grant (total %" PRId64 ", issued %"
                      PRId64 ", %" PRId64 " held by its sales)", g->coupon_id, cp.total, cp.issued,
                      allotted);
        goto out;
    }

    char sql[512];
    snprintf(sql, sizeof(sql),
             "INSERT INTO user_coupon (user_id, coupon_id, source_ref, status) "
             "VALUES (%" PRId64 ", %" PRId64 ", %s, 'UNUSED')", g->user_id, g->coupon_id, qref);
    if (mysql_query(ctl->db, sql) != 0) {
        if (mysql_errno(ctl->db) == ER_DUP_ENTRY && !g->explicit_ref)
            rc = CTLCOUPON_RETRY;
        else if (mysql_errno(ctl->db) == ER_DUP_ENTRY)
            rc = ctl_fail(ctl, "--ref '%s' was just used by another grant", ctlcoupon_ref(g));
        else
            rc = ctl_fail(ctl, "mysql: %s", mysql_error(ctl->db));
        goto out;
    }
    g->id = (int64_t)mysql_insert_id(ctl->db);
    g->issued = true;
    /* remaining >= 1 under the lock: issued_count stays within total_count, the CHECK
     * constraint never fires. */
    snprintf(sql, sizeof(sql), "UPDATE coupon SET issued_count = issued_count + 1 WHERE id = %" PRId64,
             g->coupon_id);
    if ((rc = ctl_db_exec(ctl, sql)) == CTL_OK)
        rc = ctl_db_exec(ctl, "COMMIT");
out:
    free(qref);
    return rc;
}

/* coupon grant --coupon ID --user UID [--ref REF]: one user coupon outside a sale, in one
 * MySQL transaction, then published to Redis. With --ref a repeat issues nothing and
 * prints the same id. */
int ctlcoupon_grant(struct ctl *ctl, int argc, char **argv)
{
    enum { COUPON, USER, REF, NOPTS };
    struct ctl_opt opts[NOPTS] = {
        [COUPON] = { "--coupon", true, NULL },
        [USER] = { "--user", true, NULL },
        [REF] = { "--ref", false, NULL },
    };
    int rc = ctl_parse_opts(ctl, argc, argv, opts, NOPTS, NULL, 0, 0, NULL);
    if (rc != CTL_OK)
        return rc;
    struct ctlcoupon_grant g;
    memset(&g, 0, sizeof(g));
    if ((rc = ctl_parse_id(ctl, "--coupon", opts[COUPON].value, &g.coupon_id)) != CTL_OK ||
        (rc = ctl_parse_id(ctl, "--user", opts[USER].value, &g.user_id)) != CTL_OK)
        return rc;
    /* Refs share the order-reference alphabet: they travel into Redis and JSON unescaped. */
    if (opts[REF].value && (!usercoupon_valid_ref(opts[REF].value) ||
                            strlen(opts[REF].value) > (size_t)CTLCOUPON_REF_MAX))
        return ctl_usage_error(ctl, "--ref '%s': 1 to %d characters of A-Z a-z 0-9 _ . : -",
                               opts[REF].value, CTLCOUPON_REF_MAX);
    g.explicit_ref = opts[REF].value != NULL;

    /* Redis is needed for the allotment and the record: better refused before MySQL. */
    if (!ctl_redis(ctl) || !ctl_db(ctl))
        return CTL_FAIL;
    struct usercoupon tmpl;
    char err[512];
    int lrc = couponsync_load(ctl->db, g.coupon_id, &tmpl, err, sizeof(err));
    if (lrc != 0)
        return ctl_fail(ctl, "%s", err);

    rc = CTLCOUPON_RETRY;
    for (int attempt = 0; attempt < CTLCOUPON_GRANT_ATTEMPTS && rc == CTLCOUPON_RETRY; attempt++) {
        char ref[64];
        if (g.explicit_ref)
            snprintf(ref, sizeof(ref), "%s", opts[REF].value);
        else
            ctlcoupon_default_ref(ref, sizeof(ref));
        snprintf(g.source_ref, sizeof(g.source_ref), CTLCOUPON_GRANT_PREFIX "%s", ref);
        if ((rc = ctl_db_exec(ctl, "START TRANSACTION")) != CTL_OK)
            return rc;
        rc = ctlcoupon_grant_tx(ctl, &g, ctl_now_ms());
        if (rc != CTL_OK)
            db_exec(ctl->db, "ROLLBACK", err, sizeof(err));
    }
    if (rc == CTLCOUPON_RETRY)
        return ctl_fail(ctl, "could not find an unused grant reference; try again with --ref");
    if (rc != CTL_OK)
        return rc;

    /* Committed: the record follows. Read back from MySQL so that a repeat of a grant
     * whose coupon was used meanwhile publishes it as used. */
    char where[48];
    snprintf(where, sizeof(where), "id = %" PRId64, g.id);
    struct ctlcoupon_published pub;
    int prc = ctlcoupon_publish_rows(ctl, &tmpl, where, &pub);
    if (prc != CTL_OK)
        ctl_note(ctl, "user coupon %" PRId64 " is in MySQL but not in Redis: run 'seckillctl coupon "
                 "warmup %" PRId64 "'", g.id, g.coupon_id);
    else
        ctlcoupon_note_payable(ctl, &pub);
    if (!g.issued && !ctl->json)
        ctl_note(ctl, "grant '%s' was done before: user coupon %" PRId64 ", nothing issued",
                 ctlcoupon_ref(&g), g.id);

    if (ctl->json) {
        cJSON *obj = cJSON_CreateObject();
        cJSON_AddNumberToObject(obj, "id", (double)g.id);
        cJSON_AddNumberToObject(obj, "couponId", (double)g.coupon_id);
        cJSON_AddNumberToObject(obj, "userId", (double)g.user_id);
        cJSON_AddStringToObject(obj, "sourceRef", g.source_ref);
        cJSON_AddBoolToObject(obj, "issued", g.issued);
        cJSON_AddBoolToObject(obj, "published", prc == CTL_OK);
        int jrc = ctl_print_json(ctl, obj);
        return prc != CTL_OK ? prc : jrc;
    }
    printf("%" PRId64 "\n", g.id);
    return prc;
}

/* ---- warmup ---------------------------------------------------------------------------- */

/* After Redis lost user coupon records: every user coupon of the coupon is written again
 * from MySQL. HSETNX, so a record still there (perhaps used a moment ago through use.lua,
 * before the consumer recorded it in MySQL) is never overwritten. */
int ctlcoupon_warmup(struct ctl *ctl, int argc, char **argv)
{
    int64_t id;
    int rc = ctl_parse_single_id(ctl, argc, argv, "coupon id", &id);
    if (rc != CTL_OK)
        return rc;
    if (!ctl_db(ctl) || !ctl_redis(ctl))
        return CTL_FAIL;
    struct usercoupon tmpl;
    char err[512];
    if (couponsync_load(ctl->db, id, &tmpl, err, sizeof(err)) != 0)
        return ctl_fail(ctl, "%s", err);
    struct ctlcoupon_published pub;
    rc = ctlcoupon_publish_rows(ctl, &tmpl, "1 = 1", &pub);
    if (rc != CTL_OK) {
        ctl_note(ctl, "%" PRId64 " user coupon(s) were published before the error; warmup can be "
                 "run again", pub.rows);
        return rc;
    }
    ctlcoupon_note_payable(ctl, &pub);
    if (ctl->json) {
        cJSON *obj = cJSON_CreateObject();
        cJSON_AddNumberToObject(obj, "couponId", (double)id);
        cJSON_AddNumberToObject(obj, "published", (double)pub.rows);
        cJSON_AddNumberToObject(obj, "missing", (double)pub.missing);
        cJSON_AddNumberToObject(obj, "used", (double)pub.used);
        return ctl_print_json(ctl, obj);
    }
    printf("coupon %" PRId64 ": %" PRId64 " user coupons published to Redis (%" PRId64
           " were missing, %" PRId64 " used)\n", id, pub.rows, pub.missing, pub.used);
    return CTL_OK;
}

/* ---- show ------------------------------------------------------------------------------ */

static void ctlcoupon_rate_text(int64_t rate, char *buf, size_t len)
{
    snprintf(buf, len, "%" PRId64 ".%04" PRId64, rate / CTLCOUPON_RATE_ONE, rate % CTLCOUPON_RATE_ONE);
}

/* The terms in words, as an operator reads them: "10.00 off orders from 100.00". */
static void ctlcoupon_terms_text(const struct coupon_terms *t, char *buf, size_t len)
{
    char amount[32], min[32], cap[32], rate[48];
    couponterms_format_cents(t->amount, amount, sizeof(amount));
    couponterms_format_cents(t->min_order, min, sizeof(min));
    couponterms_format_cents(t->max_discount, cap, sizeof(cap));
    ctlcoupon_rate_text(t->rate, rate, sizeof(rate));
    char from[48] = "";
    if (t->min_order > 0)
        snprintf(from, sizeof(from), " from %s", min);
    switch (t->type) {
    case COUPON_CASH:
        snprintf(buf, len, "%s off orders%s", amount, from);
        break;
    case COUPON_DISCOUNT:
        snprintf(buf, len, "pay %s of orders%s, at most %s off", rate, from,
                 t->max_discount > 0 ? cap : "unlimited");
        break;
    default:
        snprintf(buf, len, "a gift, nothing off%s%s", t->min_order > 0 ? ", orders" : "", from);
        break;
    }
}

int ctlcoupon_show(struct ctl *ctl, int argc, char **argv)
{
    int64_t id;
    int rc = ctl_parse_single_id(ctl, argc, argv, "coupon id", &id);
    if (rc != CTL_OK)
        return rc;
    if (!ctl_db(ctl))
        return CTL_FAIL;
    struct usercoupon tmpl;
    char err[512];
    if (couponsync_load(ctl->db, id, &tmpl, err, sizeof(err)) != 0)
        return ctl_fail(ctl, "%s", err);
    int64_t now = ctl_now_ms(), allotted, remaining;
    struct ctlcoupon_row cp;
    if ((rc = ctlcoupon_grantable(ctl, id, now, false, &cp, &allotted, &remaining)) != CTL_OK)
        return rc;
    struct ctlactivity_row *acts;
    size_t nacts;
    if ((rc = ctlactivity_list(ctl, id, false, &acts, &nacts)) != CTL_OK)
        return rc;
    int64_t *holds = calloc(nacts + 1, sizeof(*holds));
    if (!holds) {
        free(acts);
        return ctl_fail(ctl, "out of memory");
    }
    for (size_t i = 0; i < nacts && rc == CTL_OK; i++) {
        struct ctlactivity_redis rd;
        rc = ctlactivity_read_redis(ctl, acts[i].id, &rd);
        if (rc == CTL_OK)
            holds[i] = ctlactivity_holds(&acts[i], now, &rd);
    }
    if (rc != CTL_OK) {
        free(holds);
        free(acts);
        return rc;
    }

    char amount[32], min[32], cap[32], rate[48], start[40], end[40], terms[160];
    couponterms_format_cents(tmpl.terms.amount, amount, sizeof(amount));
    couponterms_format_cents(tmpl.terms.min_order, min, sizeof(min));
    couponterms_format_cents(tmpl.terms.max_discount, cap, sizeof(cap));
    ctlcoupon_rate_text(tmpl.terms.rate, rate, sizeof(rate));
    timeparse_format(cp.start_ms, start, sizeof(start));
    timeparse_format(cp.end_ms, end, sizeof(end));
    ctlcoupon_terms_text(&tmpl.terms, terms, sizeof(terms));
    const char *validity = now < cp.start_ms ? "not yet valid" : now >= cp.end_ms ? "expired" : "valid";

    if (ctl->json) {
        cJSON *obj = cJSON_CreateObject();
        cJSON_AddNumberToObject(obj, "id", (double)id);
        cJSON_AddStringToObject(obj, "name", cp.name);
        cJSON_AddStringToObject(obj, "type", cp.type);
        cJSON_AddStringToObject(obj, "amount", amount);
        cJSON_AddStringToObject(obj, "rate", rate);
        cJSON_AddStringToObject(obj, "minOrder", min);
        cJSON_AddStringToObject(obj, "maxDiscount", cap);
        cJSON_AddStringToObject(obj, "start", start);
        cJSON_AddStringToObject(obj, "end", end);
        cJSON_AddStringToObject(obj, "status", cp.status);
        cJSON_AddStringToObject(obj, "validity", validity);
        cJSON_AddNumberToObject(obj, "total", (double)cp.total);
        cJSON_AddNumberToObject(obj, "issued", (double)cp.issued);
        cJSON_AddNumberToObject(obj, "used", (double)cp.used);
        cJSON_AddNumberToObject(obj, "heldBySales", (double)allotted);
        cJSON_AddNumberToObject(obj, "remaining", (double)remaining);
        cJSON *arr = cJSON_AddArrayToObject(obj, "activities");
        for (size_t i = 0; i < nacts; i++) {
            cJSON *a = cJSON_CreateObject();
            cJSON_AddNumberToObject(a, "id", (double)acts[i].id);
            cJSON_AddStringToObject(a, "name", acts[i].name);
            cJSON_AddStringToObject(a, "status", ctlactivity_status_at(&acts[i], now));
            cJSON_AddNumberToObject(a, "stock", (double)acts[i].stock);
            cJSON_AddNumberToObject(a, "sold", (double)acts[i].sold_count);
            cJSON_AddNumberToObject(a, "holds", (double)holds[i]);
            cJSON_AddItemToArray(arr, a);
        }
        free(holds);
        free(acts);
        return ctl_print_json(ctl, obj);
    }

    printf("coupon     %" PRId64 " \"%s\"\n", id, cp.name);
    printf("type       %s: %s\n", cp.type, terms);
    printf("validity   %s .. %s (%s)\n", start, end, validity);
    printf("status     %s\n", cp.status);
    printf("counts     total %" PRId64 ", issued %" PRId64 ", used %" PRId64 "\n", cp.total, cp.issued,
           cp.used);
    printf("remaining  %" PRId64 " (total - issued - %" PRId64 " held by its sales)\n", remaining,
           allotted);
    if (nacts == 0) {
        printf("activities none\n");
    } else {
        static const char *const heads[] = { "activity", "name", "status", "stock", "sold", "holds" };
        struct ctl_table t;
        ctl_table_init(&t, 6, heads, "rllrrr");
        for (size_t i = 0; i < nacts && rc == CTL_OK; i++) {
            char s_id[24], s_stock[24], s_sold[24], s_holds[24];
            snprintf(s_id, sizeof(s_id), "%" PRId64, acts[i].id);
            snprintf(s_stock, sizeof(s_stock), "%" PRId64, acts[i].stock);
            snprintf(s_sold, sizeof(s_sold), "%" PRId64, acts[i].sold_count);
            snprintf(s_holds, sizeof(s_holds), "%" PRId64, holds[i]);
            const char *cells[] = { s_id, acts[i].name, ctlactivity_status_at(&acts[i], now), s_stock,
                                    s_sold, s_holds };
            rc = ctl_table_row(ctl, &t, cells);
        }
        printf("activities\n");
        ctl_table_print(&t, stdout);
        ctl_table_free(&t);
    }
    free(holds);
    free(acts);
    return rc;
}
