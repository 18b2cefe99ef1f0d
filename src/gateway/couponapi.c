#include "gateway/couponapi.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/keys.h"
#include "gateway/auth.h"
#include "gateway/apijson.h"
#include "gateway/delivery.h"
#include "gateway/httpparams.h"
#include "common/json.h"
#include "common/log.h"
#include "gateway/metrics.h"
#include "gateway/pending.h"
#include "common/parse.h"
#include "gateway/reply.h"
#include "common/usercoupon.h"
#include "common/redeemevent.h"

/* The largest amount user_coupon's DECIMAL(15,2) columns hold, in cents. The discount
 * and the payable part of a redemption are each at most the order amount, and the event
 * carries integers up to 2^53 - 1, so this bound is the one that binds: a larger amount
 * would be used in Redis and then refused by MySQL, leaving the two in disagreement. */
#define COUPONAPI_MAX_CENTS 999999999999999LL

/* One redemption or refund from request to its last callback. Ownership moves like an order's:
 * the HMGET callback, then the use.lua callback, then the delivery (delivery.h); the
 * last one frees it. `d.http` is NULL once the reply is sent.
 *
 * A failed delivery undoes the redemption in Redis, so the coupon can be used again; that
 * is right only while nobody has been told "redeemed". Hence a redemption is answered 200
 * only once Kafka holds its coupon.used event, whatever seckill.order.reply-after-ack says
 * (that flag is for the flash-sale's hot path, which a checkout is not), and a repeat of
 * the same orderRef while that event is unacknowledged (use.lua's :pending mark) is told
 * to retry instead of getting the 200 the first one may never earn. A refund travels the
 * same way with its coupon.refunded event, and a failed delivery undoes it (unrefund.lua)
 * with what refund.lua replaced, kept here; but a refund produced again, whose first
 * produce may have reached Kafka, is left standing (the next repeat produces it again). */
struct redeem {
    struct delivery d;  /* first: the delivery's callbacks hand it back */
    struct gateway *gw;
    char key[64];
    char id_text[24];
    struct redeemevent ev;
    int64_t order_amount;
    char undo_used[USERCOUPON_REF_LEN + 80];      /* refunds: the :used value removed */
    char undo_refunded[USERCOUPON_REF_LEN + 48];  /* and the :refunded value replaced */
    bool resend;   /* a refund produced again (refund.lua's RESEND): never undone */
    struct pending p;  /* shutdown answers it; its own timeouts bound it otherwise */
};

/* One listing; freed by its callback. `http` is NULL once pending.h answered it. */
struct listing {
    struct evhttp_request *http;
    int64_t user_id;
    struct pending p;
};

static void unavailable(struct evhttp_request *req)
{
    reply_error(req, REPLY_UNAVAILABLE, "coupon service unavailable, please retry", 1, NULL, NULL);
}

static cJSON *coupon_json(const struct usercoupon *uc, int64_t now_ms)
{
    cJSON *j = cJSON_CreateObject();
    json_add_int(j, "userCouponId", (int64_t)uc->id);
    json_add_int(j, "couponId", (int64_t)uc->coupon_id);
    cJSON_AddStringToObject(j, "status", usercoupon_state_at(uc, now_ms));
    apijson_terms(j, uc);
    if (strcmp(uc->status, "USED") == 0) {
        cJSON_AddStringToObject(j, "orderRef", uc->order_ref);
        apijson_money(j, "discount", uc->discount);
        apijson_money(j, "payable", uc->payable);
        apijson_time(j, "usedAt", uc->used_ms);
    }
    return j;
}

static int by_id(const void *a, const void *b)
{
    const struct usercoupon *x = a, *y = b;
    return (x->id > y->id) - (x->id < y->id);
}

static void on_listed(redisReply *reply, void *privdata)
{
    struct listing *l = privdata;
    if (!l->http || !reply || reply->type != REDIS_REPLY_ARRAY) {
        unavailable(l->http);
        pending_end(&l->p);
        free(l);
        return;
    }
    size_t n = 0;
    struct usercoupon *items = calloc(reply->elements / 2 + 1, sizeof(*items));
    for (size_t i = 0; items && i + 1 < reply->elements; i += 2) {
        const redisReply *field = reply->element[i], *value = reply->element[i + 1];
        if (field->type != REDIS_REPLY_STRING || value->type != REDIS_REPLY_STRING || strchr(field->str, ':'))
            continue;
        if (usercoupon_decode(value->str, value->len, &items[n]) != 0) {
            LOG_WARN("user %" PRId64 ": malformed coupon record %s", l->user_id, field->str);
            continue;
        }
        n++;
    }
    /* Second pass: the :used and :revoked fields of the records found. */
    for (size_t i = 0; items && i + 1 < reply->elements; i += 2) {
        const redisReply *field = reply->element[i], *value = reply->element[i + 1];
        const char *colon = field->type == REDIS_REPLY_STRING ? strchr(field->str, ':') : NULL;
        bool used = colon && strcmp(colon, ":used") == 0, revoked = colon && strcmp(colon, ":revoked") == 0;
        if ((!used && !revoked) || value->type != REDIS_REPLY_STRING)
            continue;
        int64_t id = strtoll(field->str, NULL, 10);
        for (size_t k = 0; k < n; k++)
            if (items[k].id == id && used)
                usercoupon_decode_used(value->str, &items[k]);
            else if (items[k].id == id)
                strcpy(items[k].status, "REVOKED");
    }
    if (!items) {
        unavailable(l->http);
        free(l);
        return;
    }
    qsort(items, n, sizeof(*items), by_id);
    int64_t now = clock_wall_ms();
    cJSON *json = cJSON_CreateObject();
    cJSON_AddBoolToObject(json, "success", 1);
    json_add_int(json, "userId", (int64_t)l->user_id);
    cJSON *list = cJSON_AddArrayToObject(json, "coupons");
    for (size_t k = 0; k < n; k++)
        cJSON_AddItemToArray(list, coupon_json(&items[k], now));
    reply_json(l->http, 200, json);
    free(items);
    pending_end(&l->p);
    free(l);
}

void couponapi_list(struct gateway *gw, struct evhttp_request *req)
{
    struct httpparams params;
    char err[160];
    int64_t user_id;
    enum reply_status status = REPLY_INVALID;
    int bad = httpparams_parse(req, &params, err, sizeof(err)) != 0 ||
              auth_user(gw->cfg, req, &params, &user_id, &status, err, sizeof(err)) != 0;
    httpparams_free(&params);
    if (bad) {
        reply_error(req, status, err, 0, NULL, NULL);
        return;
    }
    struct listing *l = malloc(sizeof(*l));
    if (!l) {
        unavailable(req);
        return;
    }
    l->http = req;
    l->user_id = user_id;
    pending_start(gw->pending, &l->p, &l->http, NULL);
    char key[64];
    usercoupon_key(key, sizeof(key), user_id);
    const char *argv[] = { "HGETALL", key };
    if (redisconn_command_argv(gw->redis, 2, argv, NULL, on_listed, l) != 0) {
        unavailable(l->http);
        pending_end(&l->p);
        free(l);
    }
}

static void redeem_keep_waiting(struct pending *p)
{
    (void)p;
}

static void answer_refunded(struct redeem *r)
{
    cJSON *json = cJSON_CreateObject();
    cJSON_AddBoolToObject(json, "success", 1);
    json_add_int(json, "userCouponId", (int64_t)r->ev.user_coupon_id);
    cJSON_AddStringToObject(json, "orderRef", r->ev.order_ref);
    apijson_time(json, "refundedAt", r->ev.used_ms);
    reply_json(r->d.http, 200, json);
    r->d.http = NULL;
}

static void answer_redeemed(struct redeem *r)
{
    cJSON *json = cJSON_CreateObject();
    cJSON_AddBoolToObject(json, "success", 1);
    json_add_int(json, "userCouponId", (int64_t)r->ev.user_coupon_id);
    cJSON_AddStringToObject(json, "orderRef", r->ev.order_ref);
    apijson_money(json, "orderAmount", r->ev.discount + r->ev.payable);
    apijson_money(json, "discount", r->ev.discount);
    apijson_money(json, "payable", r->ev.payable);
    reply_json(r->d.http, 200, json);
    r->d.http = NULL;
}

static void redeem_fail(struct redeem *r, enum reply_status status, const char *message)
{
    if (r->d.http)
        reply_error(r->d.http, status, message, status == REPLY_UNAVAILABLE ? 1 : 0, NULL, NULL);
    r->d.http = NULL;
}

static void on_unused(redisReply *reply, void *privdata)
{
    char *what = privdata;
    if (!reply || reply->type != REDIS_REPLY_INTEGER)
        LOG_ERROR("%s: could not undo it in Redis; the coupon stays as it made it", what);
    free(what);
}

/* Undoes what use.lua or refund.lua did for this request. */
static void undo(struct redeem *r)
{
    bool refund = r->ev.kind == REDEEMEVENT_REFUNDED;
    const char *argv[] = { r->key, r->id_text, r->ev.order_ref, r->undo_used, r->undo_refunded };
    char *what = malloc(160);
    if (what)
        snprintf(what, 160, "user coupon %s order %s%s", r->id_text, r->ev.order_ref,
                 refund ? " (refund)" : "");
    if (!what || redisconn_eval(r->gw->redis, refund ? LUASCRIPT_UNREFUND : LUASCRIPT_UNUSE, 1,
                                refund ? 4 : 2, argv, NULL, on_unused, what) != 0) {
        LOG_ERROR("user coupon %s order %s: could not undo the %s in Redis", r->id_text,
                  r->ev.order_ref, refund ? "refund" : "redemption");
        free(what);
    }
}

/* The pending mark's deadline: a delivery report comes within the message timeout, which
 * the configuration keeps inside http.request-timeout-ms. Past it, a mark left behind by a
 * gateway that died before the ack no longer holds the coupon's repeats back. */
static int64_t pending_until(const struct redeem *r, int64_t now_ms)
{
    return now_ms + r->gw->cfg->http_request_timeout_ms;
}

static void on_settled(redisReply *reply, void *privdata)
{
    (void)privdata;
    if (!reply || reply->type == REDIS_REPLY_ERROR)
        LOG_WARN("a redemption's or refund's pending mark stays until its deadline: Redis did not clear it");
}

static void clear_pending(struct redeem *r)
{
    char field[32];
    snprintf(field, sizeof(field), "%s:pending", r->id_text);
    const char *argv[] = { "HDEL", r->key, field };
    if (redisconn_command_argv(r->gw->redis, 3, argv, NULL, on_settled, NULL) != 0)
        LOG_WARN("user coupon %s order %s: the pending mark stays until its deadline (Redis unreachable)",
                 r->id_text, r->ev.order_ref);
}

static void finish(struct redeem *r)
{
    pending_end(&r->p);
    r->gw->in_flight--;
    free(r);
}

/* delivery_ops.accepted */
static void on_accepted(struct delivery *d)
{
    struct redeem *r = (struct redeem *)d;
    if (r->ev.kind == REDEEMEVENT_REFUNDED)
        answer_refunded(r);
    else
        answer_redeemed(r);
}

/* delivery_ops.acked: the redemption (or refund) stands for good; repeats may be answered. */
static void on_acked(struct delivery *d)
{
    struct redeem *r = (struct redeem *)d;
    clear_pending(r);
    if (r->ev.kind == REDEEMEVENT_USED)
        metrics_inc(METRIC_COUPONS_REDEEMED);
}

/* delivery_ops.failed: without its event in Kafka the redemption (or refund) must not
 * stand. No 200 went out for it (see struct redeem), so undoing it takes nothing back. */
static void on_not_delivered(struct delivery *d, rd_kafka_resp_err_t err, bool at_produce)
{
    struct redeem *r = (struct redeem *)d;
    if (at_produce)
        LOG_WARN("user coupon %s: kafka produce refused: %s", r->id_text, rd_kafka_err2str(err));
    else
        LOG_WARN("user coupon %s order %s: kafka delivery failed: %s", r->id_text, r->ev.order_ref,
                 rd_kafka_err2str(err));
    if (!r->resend)
        undo(r);
    redeem_fail(r, REPLY_UNAVAILABLE, r->ev.kind == REDEEMEVENT_REFUNDED
                                          ? "refund could not be recorded, please retry"
                                          : "redemption could not be recorded, please retry");
    finish(r);
}

static void on_finished(struct delivery *d)
{
    finish((struct redeem *)d);
}

static const struct delivery_ops redeem_delivery = {
    .accepted = on_accepted,
    .acked = on_acked,
    .failed = on_not_delivered,
    .finish = on_finished,
};

static void produce_event(struct redeem *r)
{
    char payload[384];
    int len = redeemevent_encode(&r->ev, payload, sizeof(payload));
    char key[24];
    snprintf(key, sizeof(key), "%" PRId64, r->ev.user_id);
    delivery_send(&r->d, r->gw->kafka, true, key, payload, len);
}

static void answer_pending(struct redeem *r)
{
    reply_error(r->d.http, REPLY_UNAVAILABLE, "this coupon's last redemption or refund is still being "
                "recorded, please retry", 1, NULL, NULL);
    r->d.http = NULL;
}

static void answer_used(struct redeem *r, const char *used, const redisReply *pending)
{
    struct usercoupon uc;
    memset(&uc, 0, sizeof(uc));
    bool same = used && usercoupon_decode_used(used, &uc) == 0 && strcmp(uc.order_ref, r->ev.order_ref) == 0;
    if (same && pending->type == REDIS_REPLY_STRING && strtoll(pending->str, NULL, 10) > clock_wall_ms()) {
        answer_pending(r);
    } else if (same) {
        /* The same checkout asking again gets the answer it already got. */
        r->ev.discount = uc.discount;
        r->ev.payable = uc.payable;
        answer_redeemed(r);
    } else {
        reply_error(r->d.http, REPLY_USED, "coupon already used by another order", 0, "usedBy",
                    used ? uc.order_ref : NULL);
        r->d.http = NULL;
    }
}

/* The verdict of use.lua or refund.lua (NULL: no answer), or of a script that changed
 * something but reached fewer replicas than redis.wait-replicas, in which case it is
 * undone and answered 503: that change may not outlive a failover (a used mark lost would
 * let another checkout redeem the coupon; a refund lost would take back what a 200 gave). */
static const char *script_verdict(struct redeem *r, const redisReply *reply, long long replicas)
{
    if (!reply || reply->type != REDIS_REPLY_ARRAY || reply->elements < 1 ||
        reply->element[0]->type != REDIS_REPLY_STRING) {
        redeem_fail(r, REPLY_UNAVAILABLE, "coupon service unavailable, please retry");
        finish(r);
        return NULL;
    }
    const char *verdict = reply->element[0]->str;
    if (strcmp(verdict, "OK") == 0 && replicas < r->gw->cfg->redis_wait_replicas) {
        metrics_inc(METRIC_REDIS_WAIT_SHORT);
        LOG_WARN("user coupon %s order %s: %lld replica(s) acknowledged the change; undone", r->id_text,
                 r->ev.order_ref, replicas);
        undo(r);
        redeem_fail(r, REPLY_UNAVAILABLE, "coupon service not replicated in time, please retry");
        finish(r);
        return NULL;
    }
    return verdict;
}

static bool reply_text(const redisReply *reply, size_t i, char *out, size_t len)
{
    const redisReply *e = reply->elements > i ? reply->element[i] : NULL;
    if (!e || e->type != REDIS_REPLY_STRING || e->len >= len)
        return false;
    memcpy(out, e->str, e->len + 1);
    return true;
}

static void on_use(redisReply *reply, long long replicas, void *privdata)
{
    struct redeem *r = privdata;
    const char *verdict = script_verdict(r, reply, replicas);
    if (!verdict)
        return;
    if (strcmp(verdict, "OK") == 0) {
        r->ev.seq = reply->elements > 1 && reply->element[1]->type == REDIS_REPLY_STRING
                        ? strtoll(reply->element[1]->str, NULL, 10) : 0;
        produce_event(r);
        return;
    }
    if (strcmp(verdict, "REPEAT") == 0 && reply->elements == 3) {
        r->ev.discount = strtoll(reply->element[1]->str, NULL, 10);
        r->ev.payable = strtoll(reply->element[2]->str, NULL, 10);
        answer_redeemed(r);
    } else if (strcmp(verdict, "PENDING") == 0) {
        answer_pending(r);
    } else if (strcmp(verdict, "USED") == 0) {
        reply_error(r->d.http, REPLY_USED, "coupon already used by another order", 0, NULL, NULL);
        r->d.http = NULL;
    } else if (strcmp(verdict, "REVOKED") == 0) {
        reply_error(r->d.http, REPLY_REVOKED, "coupon revoked by the shop", 0, NULL, NULL);
        r->d.http = NULL;
    } else {
        reply_error(r->d.http, REPLY_NOT_FOUND, "no such coupon for this user", 0, NULL, NULL);
        r->d.http = NULL;
    }
    finish(r);
}

static void on_coupon_status(redisReply *reply, void *privdata)
{
    struct redeem *r = privdata;
    if (!r->d.http) {  /* answered at shutdown: use nothing */
        finish(r);
        return;
    }
    if (!reply || (reply->type != REDIS_REPLY_STRING && reply->type != REDIS_REPLY_NIL)) {
        redeem_fail(r, REPLY_UNAVAILABLE, "coupon service unavailable, please retry");
        finish(r);
        return;
    }
    if (reply->type == REDIS_REPLY_STRING && strcmp(reply->str, "INACTIVE") == 0) {
        reply_error(r->d.http, REPLY_INACTIVE, "coupon is deactivated", 0, NULL, NULL);
        r->d.http = NULL;
        finish(r);
        return;
    }
    int64_t now = r->ev.used_ms;
    char discount[24], payable[24], used_at[24], until[24];
    snprintf(discount, sizeof(discount), "%" PRId64, r->ev.discount);
    snprintf(payable, sizeof(payable), "%" PRId64, r->ev.payable);
    snprintf(used_at, sizeof(used_at), "%" PRId64, now);
    snprintf(until, sizeof(until), "%" PRId64, pending_until(r, now));
    const char *argv[] = { r->key, r->id_text, r->ev.order_ref, discount, payable, used_at, until };
    if (redisconn_eval_replicated(r->gw->redis, LUASCRIPT_USE, 1, 6, argv, NULL, on_use, r) == 0)
        return;
    redeem_fail(r, REPLY_UNAVAILABLE, "coupon service unavailable, please retry");
    finish(r);
}

static void on_record(redisReply *reply, void *privdata)
{
    struct redeem *r = privdata;
    if (!r->d.http) {  /* answered at shutdown: use nothing */
        finish(r);
        return;
    }
    if (!reply || reply->type != REDIS_REPLY_ARRAY || reply->elements != 4) {
        redeem_fail(r, REPLY_UNAVAILABLE, "coupon service unavailable, please retry");
        finish(r);
        return;
    }
    const redisReply *terms = reply->element[0], *used = reply->element[1], *pending = reply->element[2];
    const redisReply *revoked = reply->element[3];
    struct usercoupon uc;
    if (terms->type != REDIS_REPLY_STRING || usercoupon_decode(terms->str, terms->len, &uc) != 0 ||
        uc.user_id != r->ev.user_id) {
        reply_error(r->d.http, REPLY_NOT_FOUND, "no such coupon for this user", 0, NULL, NULL);
        r->d.http = NULL;
        finish(r);
        return;
    }
    if (used->type == REDIS_REPLY_STRING) {
        answer_used(r, used->str, pending);
        finish(r);
        return;
    }
    if (revoked->type == REDIS_REPLY_STRING) {
        reply_error(r->d.http, REPLY_REVOKED, "coupon revoked by the shop", 0, NULL, NULL);
        r->d.http = NULL;
        finish(r);
        return;
    }
    int64_t now = clock_wall_ms();
    enum coupon_verdict verdict = couponterms_apply(&uc.terms, r->order_amount, &r->ev.discount,
                                                    &r->ev.payable);
    if (now < uc.start_ms) {
        reply_error(r->d.http, REPLY_NOT_STARTED, "coupon not valid yet", 0, NULL, NULL);
    } else if (now >= uc.end_ms) {
        reply_error(r->d.http, REPLY_EXPIRED, "coupon expired", 0, NULL, NULL);
    } else if (verdict == COUPON_BELOW_MIN_ORDER) {
        char min[32];
        couponterms_format_cents(uc.terms.min_order, min, sizeof(min));
        reply_error(r->d.http, REPLY_BELOW_MIN_ORDER, "order amount below the coupon's minimum", 0,
                    "minOrder", min);
    } else if (verdict != COUPON_APPLIED) {
        reply_error(r->d.http, REPLY_UNAVAILABLE, "coupon record is inconsistent", 0, NULL, NULL);
    } else {
        /* The coupon's own status lives in another slot than the user's coupons, so it is
         * asked first: a coupon deactivated before this point is refused; a redemption
         * already past it when the deactivation lands completes. */
        char key[KEYS_LEN];
        r->ev.used_ms = now;   /* the time the validity was checked at */
        keys_coupon(key, sizeof(key), uc.coupon_id);
        const char *argv[] = { "HGET", key, "status" };
        if (redisconn_command_argv(r->gw->redis, 3, argv, NULL, on_coupon_status, r) == 0)
            return;
        redeem_fail(r, REPLY_UNAVAILABLE, "coupon service unavailable, please retry");
    }
    r->d.http = NULL;
    finish(r);
}

static void on_refund(redisReply *reply, long long replicas, void *privdata)
{
    struct redeem *r = privdata;
    /* What an undo needs, before script_verdict may undo a refund too few replicas hold. */
    bool undoable = reply && reply->type == REDIS_REPLY_ARRAY && reply->elements == 4 &&
                    reply_text(reply, 2, r->undo_used, sizeof(r->undo_used)) &&
                    reply_text(reply, 3, r->undo_refunded, sizeof(r->undo_refunded));
    const char *verdict = script_verdict(r, reply, replicas);
    if (!verdict)
        return;
    char seq[24], at[24], other[USERCOUPON_REF_LEN];
    if (strcmp(verdict, "RESEND") == 0 && reply_text(reply, 1, at, sizeof(at)) &&
        reply_text(reply, 2, seq, sizeof(seq))) {
        LOG_WARN("user coupon %s order %s: a refund whose gateway never heard from Kafka; produced again",
                 r->id_text, r->ev.order_ref);
        r->resend = true;
        r->ev.used_ms = strtoll(at, NULL, 10);
        r->ev.seq = strtoll(seq, NULL, 10);
        produce_event(r);
        return;
    }
    if (strcmp(verdict, "OK") == 0 && undoable && reply_text(reply, 1, seq, sizeof(seq))) {
        r->ev.seq = strtoll(seq, NULL, 10);
        produce_event(r);
        return;
    }
    if (strcmp(verdict, "OK") == 0) {
        /* Nothing to undo it with: it stays refunded in Redis, yet unrecorded. */
        LOG_ERROR("user coupon %s order %s: refund.lua answered malformed values", r->id_text,
                  r->ev.order_ref);
        redeem_fail(r, REPLY_UNAVAILABLE, "coupon service unavailable, please retry");
    } else if (strcmp(verdict, "REPEAT") == 0 && reply_text(reply, 1, at, sizeof(at))) {
        r->ev.used_ms = strtoll(at, NULL, 10);   /* the first refund's time: the same answer */
        answer_refunded(r);
    } else if (strcmp(verdict, "PENDING") == 0) {
        answer_pending(r);
    } else if (strcmp(verdict, "OTHER") == 0) {
        reply_error(r->d.http, REPLY_USED, "coupon is used by another order", 0, "usedBy",
                    reply_text(reply, 1, other, sizeof(other)) ? other : NULL);
    } else if (strcmp(verdict, "NOT_USED") == 0) {
        reply_error(r->d.http, REPLY_NOT_USED, "coupon is not used by any order", 0, NULL, NULL);
    } else {
        reply_error(r->d.http, REPLY_NOT_FOUND, "no such coupon for this user", 0, NULL, NULL);
    }
    r->d.http = NULL;
    finish(r);
}

/* A refund needs neither the terms nor the coupon's status: refund.lua decides alone. */
static void refund_start(struct redeem *r)
{
    int64_t now = clock_wall_ms();
    char now_text[24], until[24];
    r->ev.used_ms = now;
    snprintf(now_text, sizeof(now_text), "%" PRId64, now);
    snprintf(until, sizeof(until), "%" PRId64, pending_until(r, now));
    const char *argv[] = { r->key, r->id_text, r->ev.order_ref, now_text, until };
    if (redisconn_eval_replicated(r->gw->redis, LUASCRIPT_REFUND, 1, 4, argv, NULL, on_refund, r) == 0)
        return;
    redeem_fail(r, REPLY_UNAVAILABLE, "coupon service unavailable, please retry");
    finish(r);
}

/* The redemption's record, its used and pending marks and its revoked mark; on_record
 * goes on. */
static void use_start(struct redeem *r)
{
    char used_field[32], pending_field[32], revoked_field[32];
    snprintf(used_field, sizeof(used_field), "%s:used", r->id_text);
    snprintf(pending_field, sizeof(pending_field), "%s:pending", r->id_text);
    snprintf(revoked_field, sizeof(revoked_field), "%s:revoked", r->id_text);
    const char *argv[] = { "HMGET", r->key, r->id_text, used_field, pending_field, revoked_field };
    if (redisconn_command_argv(r->gw->redis, 6, argv, NULL, on_record, r) != 0) {
        unavailable(r->d.http);
        r->d.http = NULL;
        finish(r);
    }
}

/* Reads "{id}/use" or "{id}/refund" into *id and *kind; answers and returns -1 otherwise. */
static int parse_path(struct evhttp_request *req, const char *rest, int64_t *id, enum redeemevent_kind *kind)
{
    char id_text[24];
    const char *slash = strchr(rest, '/');
    bool use = slash && strcmp(slash, "/use") == 0, refund = slash && strcmp(slash, "/refund") == 0;
    if ((!use && !refund) || (size_t)(slash - rest) >= sizeof(id_text)) {
        reply_error(req, REPLY_NOT_FOUND, "no such endpoint", 0, NULL, NULL);
        return -1;
    }
    memcpy(id_text, rest, (size_t)(slash - rest));
    id_text[slash - rest] = '\0';
    if (parse_json_id(id_text, id) != 0) {
        reply_error(req, REPLY_INVALID, "userCouponId must be a positive integer below 2^53", 0, NULL, NULL);
        return -1;
    }
    *kind = refund ? REDEEMEVENT_REFUNDED : REDEEMEVENT_USED;
    return 0;
}

void couponapi_post(struct gateway *gw, struct evhttp_request *req, const char *rest)
{
    int64_t id;
    enum redeemevent_kind kind;
    if (parse_path(req, rest, &id, &kind) != 0)
        return;
    bool use = kind == REDEEMEVENT_USED;
    struct httpparams params;
    char err[160], amount[HTTPPARAMS_VALUE_LEN] = "", ref[HTTPPARAMS_VALUE_LEN];
    int64_t user_id = 0, cents = 0;
    enum reply_status status = REPLY_INVALID;
    int bad = httpparams_parse(req, &params, err, sizeof(err)) != 0 ||
              auth_user(gw->cfg, req, &params, &user_id, &status, err, sizeof(err)) != 0;
    if (!bad) {
        status = REPLY_INVALID;
        bad = (use && httpparams_get_required(&params, "orderAmount", amount, sizeof(amount), err,
                                              sizeof(err)) != 0) ||
              httpparams_get_required(&params, "orderRef", ref, sizeof(ref), err, sizeof(err)) != 0;
    }
    httpparams_free(&params);
    if (!bad && use && parse_cents(amount, &cents) != 0) {
        snprintf(err, sizeof(err), "orderAmount must be yuan with at most two decimals, like 100.00");
        bad = 1;
    }
    if (!bad && cents > COUPONAPI_MAX_CENTS) {
        snprintf(err, sizeof(err), "orderAmount must be at most 9999999999999.99");
        bad = 1;
    }
    if (!bad && !usercoupon_valid_ref(ref)) {
        snprintf(err, sizeof(err), "orderRef must be 1-64 characters of A-Z a-z 0-9 _ . : -");
        bad = 1;
    }
    if (bad) {
        reply_error(req, status, err, 0, NULL, NULL);
        return;
    }
    if (gw->draining) {
        reply_error(req, REPLY_UNAVAILABLE, "shutting down", 1, NULL, NULL);
        return;
    }
    struct redeem *r = calloc(1, sizeof(*r));
    if (!r) {
        unavailable(req);
        return;
    }
    delivery_init(&r->d, &redeem_delivery, req);
    /* Not cut at the request timeout: a 503 while the coupon may still change would lie. */
    pending_start(gw->pending, &r->p, &r->d.http, redeem_keep_waiting);
    r->gw = gw;
    r->order_amount = cents;
    r->ev.kind = kind;
    r->ev.user_coupon_id = id;
    r->ev.user_id = user_id;
    memcpy(r->ev.order_ref, ref, strlen(ref) + 1);  /* usercoupon_valid_ref bounded its length */
    snprintf(r->id_text, sizeof(r->id_text), "%" PRId64, id);
    usercoupon_key(r->key, sizeof(r->key), user_id);
    gw->in_flight++;
    if (use)
        use_start(r);
    else
        refund_start(r);
}
