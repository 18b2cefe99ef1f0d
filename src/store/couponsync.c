#include "store/couponsync.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/parse.h"
#include "store/sqltime.h"

/* A DECIMAL(5,4) rate as MySQL prints it ("0.8500", "1.0000") into basis points, exactly:
 * 0.1 + 0.2 in a double is how a 0.3 coupon would come out one basis point short. */
static int couponsync_rate(const char *s, int64_t *out)
{
    if (!s || *s < '0' || *s > '9')
        return -1;
    int64_t v = 0;
    const char *p = s;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (v > 1)              /* a share of the price paid: never above 1 */
            return -1;
        v = v * 10 + (*p - '0');
    }
    v *= COUPON_RATE_ONE;
    if (*p == '.') {
        p++;
        int64_t scale = COUPON_RATE_ONE / 10;
        int digits = 0;
        for (; *p >= '0' && *p <= '9'; p++) {
            if (++digits > 4)
                return -1;
            v += (*p - '0') * scale;
            scale /= 10;
        }
    }
    if (*p != '\0' || v > COUPON_RATE_ONE)
        return -1;
    *out = v;
    return 0;
}

static int couponsync_ms(const char *s, int64_t *out)
{
    if (!s)
        return -1;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end != '\0')
        return -1;
    *out = (int64_t)v;
    return 0;
}

int couponsync_load(MYSQL *db, int64_t coupon_id, struct usercoupon *template_out, char *err,
                     size_t errlen)
{
    char sql[512];
    snprintf(sql, sizeof(sql),
             "SELECT type, amount, rate, min_order, max_discount, " SQLTIME_MS("start_time")
             ", " SQLTIME_MS("end_time") ", name FROM coupon WHERE id = %" PRId64,
             coupon_id);
    if (mysql_query(db, sql) != 0) {
        snprintf(err, errlen, "select coupon %" PRId64 ": %s", coupon_id, mysql_error(db));
        return -1;
    }
    MYSQL_RES *res = mysql_store_result(db);
    if (!res) {
        snprintf(err, errlen, "select coupon %" PRId64 ": %s", coupon_id,
                 mysql_errno(db) ? mysql_error(db) : "no result");
        return -1;
    }
    MYSQL_ROW r = mysql_fetch_row(res);
    if (!r) {
        mysql_free_result(res);
        snprintf(err, errlen, "coupon %" PRId64 " does not exist", coupon_id);
        return COUPONSYNC_NOT_FOUND;
    }
    struct usercoupon uc;
    memset(&uc, 0, sizeof(uc));
    uc.coupon_id = coupon_id;
    strcpy(uc.status, "UNUSED");
    /* The first column that does not parse, for the message. */
    static const char *const names[] = { "type", "amount", "rate", "min_order", "max_discount",
                                         "start_time", "end_time", "name" };
    int bad = -1;
    if (!r[0] || couponterms_type_parse(r[0], &uc.terms.type) != 0)
        bad = 0;
    else if (parse_cents(r[1], &uc.terms.amount) != 0)
        bad = 1;
    else if (couponsync_rate(r[2], &uc.terms.rate) != 0)
        bad = 2;
    else if (parse_cents(r[3], &uc.terms.min_order) != 0)
        bad = 3;
    else if (parse_cents(r[4], &uc.terms.max_discount) != 0)
        bad = 4;
    else if (couponsync_ms(r[5], &uc.start_ms) != 0)
        bad = 5;
    else if (couponsync_ms(r[6], &uc.end_ms) != 0)
        bad = 6;
    else if (!r[7] || strlen(r[7]) >= sizeof(uc.name))
        bad = 7;
    else
        strcpy(uc.name, r[7]);
    if (bad >= 0)
        snprintf(err, errlen, "coupon %" PRId64 ": %s '%s' is not a valid term", coupon_id,
                 names[bad], r[bad] ? r[bad] : "NULL");
    mysql_free_result(res);
    if (bad >= 0)
        return -1;
    *template_out = uc;
    return 0;
}

int couponsync_publish(redisContext *redis, const struct usercoupon *uc, char *err, size_t errlen)
{
    bool revoked = strcmp(uc->status, "REVOKED") == 0;
    bool used = revoked || strcmp(uc->status, "USED") == 0;   /* a second field to write */
    if (uc->id <= 0 || uc->user_id <= 0 || uc->coupon_id <= 0) {
        snprintf(err, errlen, "user coupon %" PRId64 ": missing id, user or coupon", uc->id);
        return -1;
    }
    /* '|' in a reference would shift the fields use.lua splits the value into. */
    if (used && !revoked && !usercoupon_valid_ref(uc->order_ref)) {
        snprintf(err, errlen, "user coupon %" PRId64 ": order reference '%s' is malformed", uc->id,
                 uc->order_ref);
        return -1;
    }
    char key[64], field[32], used_field[40], used_value[USERCOUPON_REF_LEN + 80];
    usercoupon_key(key, sizeof(key), uc->user_id);
    snprintf(field, sizeof(field), "%" PRId64, uc->id);
    snprintf(used_field, sizeof(used_field), "%" PRId64 "%s", uc->id, revoked ? ":revoked" : ":used");
    if (revoked)   /* revoke.lua's mark: the time it was revoked at */
        snprintf(used_value, sizeof(used_value), "%" PRId64, uc->used_ms);
    else
        snprintf(used_value, sizeof(used_value), "%s|%" PRId64 "|%" PRId64 "|%" PRId64, uc->order_ref,
                 uc->discount, uc->payable, uc->used_ms);
    char *terms = usercoupon_encode(uc);
    if (!terms) {
        snprintf(err, errlen, "user coupon %" PRId64 ": out of memory encoding", uc->id);
        return -1;
    }

    /* One MULTI/EXEC: the terms and the :used (or :revoked) mark appear together or not
     * at all, so no reader sees a used or revoked coupon as unused for a moment. */
    const char *multi[] = { "MULTI" }, *exec[] = { "EXEC" };
    const char *set_terms[] = { "HSETNX", key, field, terms };
    const char *set_used[] = { "HSETNX", key, used_field, used_value };
    size_t n = used ? 2 : 1;
    int ok = redisAppendCommandArgv(redis, 1, multi, NULL) == REDIS_OK &&
             redisAppendCommandArgv(redis, 4, set_terms, NULL) == REDIS_OK &&
             (!used || redisAppendCommandArgv(redis, 4, set_used, NULL) == REDIS_OK) &&
             redisAppendCommandArgv(redis, 1, exec, NULL) == REDIS_OK;
    free(terms);
    if (!ok) {
        snprintf(err, errlen, "redis: %s", redis->errstr[0] ? redis->errstr : "out of memory");
        return -1;
    }
    /* Every reply is read, even after an error, so the connection stays in step. */
    int written = -1;
    char problem[160] = "";
    for (size_t i = 0; i < n + 2; i++) {
        void *v = NULL;
        if (redisGetReply(redis, &v) != REDIS_OK) {
            snprintf(err, errlen, "redis: %s", redis->errstr[0] ? redis->errstr : "no reply");
            return -1;
        }
        redisReply *r = v;
        if (r->type == REDIS_REPLY_ERROR && !problem[0])
            snprintf(problem, sizeof(problem), "%s", r->str);
        if (i == n + 1 && r->type == REDIS_REPLY_ARRAY && r->elements == n) {
            written = 0;
            for (size_t k = 0; k < n; k++) {
                const redisReply *e = r->element[k];
                if (e->type != REDIS_REPLY_INTEGER) {
                    if (!problem[0])
                        snprintf(problem, sizeof(problem), "%s",
                                 e->type == REDIS_REPLY_ERROR ? e->str : "unexpected reply");
                    written = -1;
                    break;
                }
                written += (int)e->integer;
            }
        }
        freeReplyObject(r);
    }
    if (written < 0)
        snprintf(err, errlen, "redis HSETNX %s: %s", key, problem[0] ? problem : "transaction failed");
    return written;
}

/* The fields of one record as couponsync_publish writes them; terms is malloc'ed. */
struct couponsync_fields {
    char key[64];
    char field[32];
    char used_field[40];
    char used_value[USERCOUPON_REF_LEN + 80];
    char *terms;
    bool used;
};

static int couponsync_fields_make(const struct usercoupon *uc, struct couponsync_fields *f,
                                   char *err, size_t errlen)
{
    f->terms = NULL;
    f->used = strcmp(uc->status, "USED") == 0;
    if (uc->id <= 0 || uc->user_id <= 0 || uc->coupon_id <= 0) {
        snprintf(err, errlen, "user coupon %" PRId64 ": missing id, user or coupon", uc->id);
        return -1;
    }
    if (f->used && !usercoupon_valid_ref(uc->order_ref)) {
        snprintf(err, errlen, "user coupon %" PRId64 ": order reference '%s' is malformed", uc->id,
                 uc->order_ref);
        return -1;
    }
    usercoupon_key(f->key, sizeof(f->key), uc->user_id);
    snprintf(f->field, sizeof(f->field), "%" PRId64, uc->id);
    snprintf(f->used_field, sizeof(f->used_field), "%" PRId64 ":used", uc->id);
    snprintf(f->used_value, sizeof(f->used_value), "%s|%" PRId64 "|%" PRId64 "|%" PRId64,
             uc->order_ref, uc->discount, uc->payable, uc->used_ms);
    f->terms = usercoupon_encode(uc);
    if (!f->terms) {
        snprintf(err, errlen, "user coupon %" PRId64 ": out of memory encoding", uc->id);
        return -1;
    }
    return 0;
}

/* Sums an HSETNX reply (or an EXEC array of them) into *written; notes the first problem. */
static void couponsync_count(const redisReply *r, int *written, char *problem, size_t len)
{
    if (r->type == REDIS_REPLY_INTEGER) {
        *written += (int)r->integer;
        return;
    }
    if (r->type == REDIS_REPLY_ARRAY) {
        for (size_t k = 0; k < r->elements; k++)
            couponsync_count(r->element[k], written, problem, len);
        return;
    }
    if (!problem[0])
        snprintf(problem, len, "%s", r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
}

int couponsync_publish_many(redisContext *redis, const struct usercoupon *ucs, size_t n, char *err,
                             size_t errlen)
{
    int written = 0;
    char problem[200] = "";
    for (size_t start = 0; start < n;) {
        /* Append a slice: a record is 1 command, or 4 (MULTI, 2 x HSETNX, EXEC) when USED. */
        size_t replies = 0, commands = 0, i = start;
        int appended = 1;
        for (; i < n && commands < COUPONSYNC_PIPELINE; i++) {
            struct couponsync_fields f;
            char why[160];
            if (couponsync_fields_make(&ucs[i], &f, why, sizeof(why)) != 0) {
                if (!problem[0])
                    snprintf(problem, sizeof(problem), "%s", why);
                continue;
            }
            const char *multi[] = { "MULTI" }, *exec[] = { "EXEC" };
            const char *set_terms[] = { "HSETNX", f.key, f.field, f.terms };
            const char *set_used[] = { "HSETNX", f.key, f.used_field, f.used_value };
            if (f.used)
                appended = redisAppendCommandArgv(redis, 1, multi, NULL) == REDIS_OK &&
                           redisAppendCommandArgv(redis, 4, set_terms, NULL) == REDIS_OK &&
                           redisAppendCommandArgv(redis, 4, set_used, NULL) == REDIS_OK &&
                           redisAppendCommandArgv(redis, 1, exec, NULL) == REDIS_OK;
            else
                appended = redisAppendCommandArgv(redis, 4, set_terms, NULL) == REDIS_OK;
            free(f.terms);
            if (!appended) {
                /* hiredis has set redis->err: the caller must drop the connection, since
                 * part of this slice may sit unsent in its buffer. */
                snprintf(err, errlen, "redis: %s", redis->errstr[0] ? redis->errstr : "out of memory");
                return -1;
            }
            replies += f.used ? 4 : 1;
            commands += f.used ? 4 : 1;
        }
        /* Every reply is read, even after an error, so the connection stays in step; of a
         * MULTI block only the EXEC array counts (MULTI and QUEUED say nothing). */
        for (size_t k = 0; k < replies; k++) {
            void *v = NULL;
            if (redisGetReply(redis, &v) != REDIS_OK) {
                snprintf(err, errlen, "redis: %s", redis->errstr[0] ? redis->errstr : "no reply");
                return -1;
            }
            redisReply *r = v;
            if (r->type == REDIS_REPLY_STATUS) {
                /* +OK of MULTI, +QUEUED of a queued HSETNX */
            } else if (r->type == REDIS_REPLY_NIL) {
                if (!problem[0])
                    snprintf(problem, sizeof(problem), "transaction failed");
            } else {
                couponsync_count(r, &written, problem, sizeof(problem));
            }
            freeReplyObject(r);
        }
        start = i;
    }
    if (problem[0]) {
        snprintf(err, errlen, "redis HSETNX: %s", problem);
        return -1;
    }
    return written;
}
