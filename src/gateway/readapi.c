#include "gateway/readapi.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "gateway/activitylist.h"
#include "gateway/adminfwd.h"
#include "gateway/archive.h"
#include "gateway/auth.h"
#include "gateway/httpparams.h"
#include "gateway/longpoll.h"
#include "gateway/metrics.h"
#include "gateway/pending.h"
#include "common/json.h"
#include "common/keys.h"
#include "common/log.h"
#include "common/parse.h"
#include "gateway/reply.h"

enum query_kind { QUERY_STOCK, QUERY_RESULT, QUERY_ORDER, QUERY_OWN_ORDER, QUERY_ACTIVITY };

/* One read request waiting on Redis, then for an archived sale maybe on seckill-admin;
 * one of them at a time. Freed by the last callback, which sends the reply unless
 * pending.h answered it first (deadline, shutdown) and cleared `http`. */
struct query {
    struct gateway *gw;
    struct evhttp_request *http;
    struct pending p;
    enum query_kind kind;
    int64_t activity_id;
    const struct keys_set *keys;  /* the cached activity's, or `scratch` */
    struct keys_set scratch;
    int64_t user_id;
    int bucket;                   /* QUERY_ORDER of a bucketed sale: the bucket asked */
    int wait_s;                   /* wait=N: held until final (longpoll.h) */
    char order_no[ORDERNO_LEN];
};

/* http.stock-answers = spring: GET /seckill/stock answers as the Spring service did, whose
 * clients read a sale they do not know yet as sold out and a failure as its controller's
 * catch answered it. */
static bool spring_stock(const struct gateway *gw, enum query_kind kind)
{
    return kind == QUERY_STOCK && strcmp(gw->cfg->http_stock_answers, "spring") == 0;
}

/* That service's failure: 500, "获取库存失败: " (http.language) + the reason. */
static void stock_failed(const struct gateway *gw, struct evhttp_request *req, const char *reason)
{
    if (!req)
        return;
    char message[256];
    snprintf(message, sizeof(message), "%s%s",
             reply_phrase(REPLY_PHRASE_STOCK_FAILED, reply_language_named(gw->cfg->http_language)), reason);
    cJSON *json = cJSON_CreateObject();
    cJSON_AddBoolToObject(json, "success", 0);
    cJSON_AddStringToObject(json, "status", reply_status_name(REPLY_UNAVAILABLE));
    cJSON_AddStringToObject(json, "message", message);
    char *text = cJSON_PrintUnformatted(json);
    cJSON_Delete(json);
    if (!text) {
        reply_error(req, REPLY_UNAVAILABLE, "out of memory", 1, NULL, NULL);
        return;
    }
    reply_send_as(req, 500, REPLY_UNAVAILABLE, text, strlen(text));
    cJSON_free(text);
}

static void unavailable(const struct gateway *gw, enum query_kind kind, struct evhttp_request *req)
{
    static const char reason[] = "stock service unavailable, please retry";
    if (spring_stock(gw, kind))
        stock_failed(gw, req, reason);
    else
        reply_error(req, REPLY_UNAVAILABLE, reason, 1, NULL, NULL);
}

static void query_free(struct query *q);
static bool check_archive(struct query *q);

static void reply_stock(struct evhttp_request *req, int64_t activity_id, int64_t stock)
{
    cJSON *json = cJSON_CreateObject();
    cJSON_AddBoolToObject(json, "success", 1);
    json_add_int(json, "activityId", activity_id);
    json_add_int(json, "stock", stock);
    reply_json(req, 200, json);
}

/* What a read that found nothing answers, archived sale or not. */
static void not_found(struct query *q)
{
    switch (q->kind) {
    case QUERY_STOCK:
        if (spring_stock(q->gw, q->kind)) {
            reply_stock(q->http, q->activity_id, 0);
            break;
        }
        /* fall through */
    case QUERY_ACTIVITY: reply_error(q->http, REPLY_NOT_FOUND, "no such activity", 0, NULL, NULL); break;
    case QUERY_RESULT: reply_error(q->http, REPLY_NOT_FOUND, "no order for this user and activity", 0, NULL,
                                   NULL); break;
    case QUERY_ORDER:
    case QUERY_OWN_ORDER: reply_error(q->http, REPLY_NOT_FOUND, "no such order", 0, NULL, NULL); break;
    }
}

static bool answer_stock(struct query *q, const redisReply *reply)
{
    if (reply->type == REDIS_REPLY_NIL)
        return check_archive(q);
    reply_stock(q->http, q->activity_id, reply->type == REDIS_REPLY_STRING ? strtoll(reply->str, NULL, 10)
                : 0);
    return false;
}

/* result.lua's {orderNo, status} of the order the user holds, or {orderNo, FAILED, reason}
 * of the last one that failed and freed them; for a sale of perUser > 1, {orderNo, status,
 * reason} of the newest and the same three for each of the user's orders. */
static bool result_of(const redisReply *reply)
{
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements < 2 ||
        (reply->elements > 3 && reply->elements % 3 != 0))
        return false;
    for (size_t i = 0; i < reply->elements; i++)
        if (reply->element[i]->type != REDIS_REPLY_STRING)
            return false;
    return true;
}

/* The user's orders of a result.lua list answer (result_of), from element 3 on. */
static cJSON *result_orders(const redisReply *reply)
{
    cJSON *orders = cJSON_CreateArray();
    for (size_t i = 3; orders && i + 2 < reply->elements; i += 3) {
        cJSON *order = cJSON_CreateObject();
        if (!order)
            break;
        cJSON_AddStringToObject(order, "orderNo", reply->element[i]->str);
        cJSON_AddStringToObject(order, "status", reply->element[i + 1]->str);
        if (reply->element[i + 2]->len > 0)
            cJSON_AddStringToObject(order, "reason", reply->element[i + 2]->str);
        cJSON_AddItemToArray(orders, order);
    }
    return orders;
}

static bool answer_result(struct query *q, const redisReply *reply)
{
    if (!result_of(reply))
        return check_archive(q);
    cJSON *orders = reply->elements > 3 ? result_orders(reply) : NULL;
    const char *reason = reply->elements >= 3 && reply->element[2]->len > 0 ? reply->element[2]->str : NULL;
    struct longpoll_order o = { LONGPOLL_RESULT, q->user_id, q->activity_id, reply->element[0]->str,
                                reply->element[1]->str, q->keys->name[KEYS_ORDERS], q->keys->tag,
                                reason, orders };
    longpoll_hold(q->gw->longpoll, q->http, &o, q->wait_s);
    cJSON_Delete(orders);
    q->http = NULL;
    return false;
}

static bool answer_order(struct query *q, const redisReply *reply)
{
    if (reply->type != REDIS_REPLY_STRING)
        return check_archive(q);
    struct longpoll_order o = { LONGPOLL_ORDER, 0, q->activity_id, q->order_no, reply->str,
                                q->keys->name[KEYS_ORDERS], q->keys->tag, NULL, NULL };
    longpoll_hold(q->gw->longpoll, q->http, &o, q->wait_s);
    q->http = NULL;
    return false;
}

/* result.lua's {orderNo, status} of the asking user: the order is theirs when it is the
 * one they hold in its activity (one of those they hold, where perUser > 1). Anyone else
 * is told what a missing order gets. */
static bool answer_own_order(struct query *q, const redisReply *reply)
{
    if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 0)
        return check_archive(q);  /* the user holds nothing in Redis: maybe in MySQL */
    const redisReply *status = NULL;
    bool answered = result_of(reply);
    if (answered && reply->elements <= 3 && strcmp(reply->element[0]->str, q->order_no) == 0)
        status = reply->element[1];
    for (size_t i = 3; answered && i + 2 < reply->elements; i += 3)
        if (strcmp(reply->element[i]->str, q->order_no) == 0)
            status = reply->element[i + 1];
    if (!status) {
        not_found(q);
        return false;
    }
    return answer_order(q, status);
}

static bool answer_activity(struct query *q, const redisReply *reply)
{
    struct activity a;
    memset(&a, 0, sizeof(a));
    if (activity_from_reply(&a, reply) != 0) {
        not_found(q);
        return false;
    }
    const struct activity *cached = activity_cache_find(q->gw->activities, q->activity_id);
    if (cached && cached->loaded && cached->nbuckets > 1)
        a.stock_left = cached->stock_left;  /* the sum of the buckets (bucketed, below) */
    cJSON *json = cJSON_CreateObject();
    cJSON_AddBoolToObject(json, "success", 1);
    activitylist_sale(json, q->activity_id, &a, a.stock_left, clock_wall_ms());
    reply_json(q->http, 200, json);
    return false;
}

/* A bucketed sale's stock is the sum of its buckets': the cache's, as of the last refresh
 * or rebalance view (the buckets live on several masters: no one read sees them all). */
static const struct activity *bucketed(struct gateway *gw, int64_t activity_id)
{
    const struct activity *a = activity_cache_find(gw->activities, activity_id);
    return a && a->loaded && a->nbuckets > 1 ? a : NULL;
}

static void send_order_lookup(struct query *q);

static void query_free(struct query *q)
{
    pending_end(&q->p);
    free(q);
}

/* ---- archived sales (archive.h): the hash, and seckill-admin for per-order data ---- */

static void admin_unavailable(struct query *q, const char *why)
{
    metrics_inc(METRIC_ARCHIVE_FORWARD_FAILURES);
    if (q->http)
        LOG_DEBUG("activity %" PRId64 ": archived-sale read answered 503: %s", q->activity_id, why);
    reply_error(q->http, REPLY_UNAVAILABLE, "order history unavailable, please retry", 1, NULL, NULL);
}

static const char *str_field(const cJSON *body, const char *name)
{
    const cJSON *v = body ? cJSON_GetObjectItemCaseSensitive(body, name) : NULL;
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The admin's report of the order (seckillctl order show/find --json) answered as the
 * live sale would answer its final order: the same body, at once whatever wait says. */
static void on_admin(void *arg, int code, const cJSON *body)
{
    struct query *q = arg;
    if (code == 0 || (q->http && code != 200 && code != 404)) {
        /* Counted even when the deadline answered the client first: a slow admin. */
        admin_unavailable(q, code ? "seckill-admin refused the read" : "no answer from seckill-admin");
    } else if (!q->http) {
        /* answered already */
    } else if (code == 404) {
        not_found(q);
    } else {
        const char *no = str_field(body, "orderNo"), *status = str_field(body, "status");
        const cJSON *user = body ? cJSON_GetObjectItemCaseSensitive(body, "userId") : NULL;
        bool theirs = q->kind != QUERY_OWN_ORDER ||
                      (cJSON_IsNumber(user) && (int64_t)user->valuedouble == q->user_id && status &&
                       (strcmp(status, "SUCCESS") == 0 || strcmp(status, "CANCELLED") == 0));
        if (!no || !status || !longpoll_is_final(status) || !theirs) {
            /* No outcome in MySQL, or not the asking user's held order: what Redis
             * answered for it before the archive. */
            not_found(q);
        } else {
            metrics_inc(METRIC_ARCHIVED_READS);
            /* A result's FAILED order is the user's last attempt, with its reason, as
             * result.lua answers it while the sale is live. */
            struct longpoll_order o = { q->kind == QUERY_RESULT ? LONGPOLL_RESULT : LONGPOLL_ORDER,
                                        q->user_id, q->activity_id, no, status, NULL, NULL,
                                        q->kind == QUERY_RESULT ? str_field(body, "reason") : NULL, NULL };
            longpoll_answer(q->http, &o, status);
            q->http = NULL;
        }
    }
    query_free(q);
}

/* Answers q, a read of archived sale `sale`: the stock from the hash, an order through
 * seckill-admin. Returns true when q waits for the admin (its callback frees q). */
static bool answer_archived(struct query *q, const struct archive_sale *sale)
{
    if (q->kind == QUERY_ACTIVITY) {
        not_found(q);  /* activity.lua answers from the hash, which archiving keeps */
        return false;
    }
    if (q->kind == QUERY_STOCK) {
        metrics_inc(METRIC_ARCHIVED_READS);
        reply_stock(q->http, q->activity_id, sale->stock_left);
        q->http = NULL;
        return false;
    }
    char target[160];
    if (q->kind == QUERY_RESULT)
        snprintf(target, sizeof(target), "/admin/activities/%" PRId64 "/orders?userId=%" PRId64,
                 q->activity_id, q->user_id);
    else
        /* digits-digits: nothing to escape */
        snprintf(target, sizeof(target), "/admin/orders/%s", q->order_no);
    if (!adminfwd_enabled(q->gw->admin)) {
        static bool told;
        if (!told)
            LOG_WARN("a read of archived activity %" PRId64 " needs seckill-admin, and admin.port is off: "
                     "such reads answer 503", q->activity_id);
        told = true;
        admin_unavailable(q, "admin.port is off");
        return false;
    }
    if (adminfwd_get(q->gw->admin, target, on_admin, q) != 0) {
        admin_unavailable(q, "too many reads of archived sales at once");
        return false;
    }
    return true;
}

static void on_archive(void *arg, const struct archive_sale *sale, bool ok)
{
    struct query *q = arg;
    bool waits = false;
    if (!q->http) {
        /* answered already */
    } else if (!ok) {
        unavailable(q->gw, q->kind, q->http);
    } else if (!sale) {
        not_found(q);  /* never archived: the miss stands (archive.h) */
    } else {
        waits = answer_archived(q, sale);
    }
    if (!waits)
        query_free(q);
}

/* The read found nothing in Redis: is the sale archived? Returns true when q waits for
 * the answer (its callback frees q); else q was answered. */
static bool check_archive(struct query *q)
{
    if (archive_lookup(q->gw->archive, q->activity_id, on_archive, q) == 0)
        return true;
    unavailable(q->gw, q->kind, q->http);
    return false;
}

/* A read of a sale known archived goes to its answer without asking Redis. Returns true
 * when it did (q answered, or waiting on the admin); false: read Redis as usual. */
static bool archived_at_once(struct query *q)
{
    const struct archive_sale *sale = archive_find(q->gw->archive, q->activity_id);
    if (!sale)
        return false;
    if (!answer_archived(q, sale))
        query_free(q);
    return true;
}

static void on_query(redisReply *reply, void *privdata)
{
    struct query *q = privdata;
    if (!q->http) {
        /* answered already */
    } else if (q->kind == QUERY_ORDER && reply && reply->type == REDIS_REPLY_NIL &&
               bucketed(q->gw, q->activity_id) &&
               q->bucket + 1 < bucketed(q->gw, q->activity_id)->nbuckets) {
        /* The order number does not say which bucket holds the order: ask the next. */
        q->bucket++;
        send_order_lookup(q);
        return;
    } else if (!reply || reply->type == REDIS_REPLY_ERROR) {
        unavailable(q->gw, q->kind, q->http);
    } else {
        bool waits = false;
        switch (q->kind) {
        case QUERY_STOCK: waits = answer_stock(q, reply); break;
        case QUERY_RESULT: waits = answer_result(q, reply); break;
        case QUERY_ORDER: waits = answer_order(q, reply); break;
        case QUERY_OWN_ORDER: waits = answer_own_order(q, reply); break;
        case QUERY_ACTIVITY: waits = answer_activity(q, reply); break;
        }
        if (waits)
            return;
    }
    query_free(q);
}

/* pending.h's hook at http.request-timeout-ms for a stock read under spring_stock: its
 * failure answer rather than the 503. The Redis callback still comes and frees q. */
static void on_stock_deadline(struct pending *p)
{
    struct query *q = (struct query *)((char *)p - offsetof(struct query, p));
    struct evhttp_request *req = q->http;
    q->http = NULL;
    stock_failed(q->gw, req, "request timed out, please retry");
}

/* A query about one activity, with its keys; NULL when it could not be made (answered). */
static struct query *query_new(struct gateway *gw, struct evhttp_request *req, enum query_kind kind,
                               int64_t activity_id)
{
    struct query *q = calloc(1, sizeof(*q));
    if (q)
        q->keys = activity_keys(gw->activities, activity_id, &q->scratch);
    if (!q || !q->keys) {
        unavailable(gw, kind, req);
        free(q);
        return NULL;
    }
    q->gw = gw;
    q->http = req;
    q->kind = kind;
    q->activity_id = activity_id;
    pending_start(gw->pending, &q->p, &q->http, spring_stock(gw, kind) ? on_stock_deadline : NULL);
    return q;
}

static void query_send(struct query *q, enum luascript_id script, int nkeys, int nargs,
                       const char *const *argv)
{
    int rc = script == LUASCRIPT_COUNT
                 ? redisconn_command_argv(q->gw->redis, nkeys + nargs, argv, NULL, on_query, q)
                 : redisconn_eval(q->gw->redis, script, nkeys, nargs, argv, NULL, on_query, q);
    if (rc != 0) {
        unavailable(q->gw, q->kind, q->http);
        query_free(q);
    }
}

/* A query about the activity whose id is the rest of the path. */
static struct query *path_query(struct gateway *gw, struct evhttp_request *req, const char *text,
                                enum query_kind kind)
{
    int64_t id;
    bool long_ids = gw->cfg->http_long_ids;
    if (parse_client_id(text, long_ids, &id) != 0) {
        char message[64];
        snprintf(message, sizeof(message), "the id must be a positive integer below %s",
                 PARSE_ID_BOUND(long_ids));
        reply_error(req, REPLY_INVALID, message, 0, NULL, NULL);
        return NULL;
    }
    return query_new(gw, req, kind, id);
}

void readapi_stock(struct gateway *gw, struct evhttp_request *req, const char *activity_id)
{
    struct query *q = path_query(gw, req, activity_id, QUERY_STOCK);
    if (!q || archived_at_once(q))
        return;
    const struct activity *a = bucketed(gw, q->activity_id);
    if (a) {
        cJSON *json = cJSON_CreateObject();
        cJSON_AddBoolToObject(json, "success", 1);
        json_add_int(json, "activityId", q->activity_id);
        json_add_int(json, "stock", a->stock_left);
        reply_json(q->http, 200, json);
        q->http = NULL;
        query_free(q);
        return;
    }
    const char *argv[] = { "GET", q->keys->name[KEYS_STOCK] };
    query_send(q, LUASCRIPT_COUNT, 2, 0, argv);
}

void readapi_result(struct gateway *gw, struct evhttp_request *req)
{
    struct httpparams params;
    char err[160];
    int64_t user_id, activity_id;
    enum reply_status status = REPLY_INVALID;
    int bad = httpparams_parse(req, &params, err, sizeof(err)) != 0 ||
              auth_user(gw->cfg, req, &params, &user_id, &status, err, sizeof(err)) != 0;
    /* One message for absent, repeated and malformed alike, as this endpoint always said. */
    bool long_ids = gw->cfg->http_long_ids;
    if (!bad && httpparams_get_id(&params, "activityId", long_ids, &activity_id, err, sizeof(err)) != 0) {
        snprintf(err, sizeof(err), "activityId must be a positive integer below %s",
                 PARSE_ID_BOUND(long_ids));
        bad = 1;
    }
    httpparams_free(&params);
    int wait_s = 0;
    if (!bad && longpoll_wait_param(req, &wait_s, err, sizeof(err)) != 0)
        bad = 1;
    if (bad) {
        reply_error(req, status, err, 0, NULL, NULL);
        return;
    }
    struct query *q = query_new(gw, req, QUERY_RESULT, activity_id);
    if (!q)
        return;
    q->user_id = user_id;
    q->wait_s = wait_s;
    if (archived_at_once(q))
        return;
    int bucket;
    q->keys = activity_user_keys(gw->activities, activity_id, user_id, &bucket, &q->scratch);
    char uid[24];
    snprintf(uid, sizeof(uid), "%" PRId64, user_id);
    const char *argv[] = { q->keys->name[KEYS_USERS], q->keys->name[KEYS_ORDERS],
                           q->keys->name[KEYS_FAILED_USERS], q->keys->name[KEYS_ACTIVITY], uid };
    query_send(q, LUASCRIPT_RESULT, 4, 1, argv);
}

/* Order numbers are guessable: with auth.mode=jwt only the token's user sees theirs. */
static int order_owner(struct gateway *gw, struct evhttp_request *req, int64_t *user_id)
{
    if (strcmp(gw->cfg->auth_mode, "jwt") != 0)
        return 0;
    struct httpparams params;
    char err[160];
    enum reply_status status = REPLY_INVALID;
    int bad = httpparams_parse(req, &params, err, sizeof(err)) != 0 ||
              auth_user(gw->cfg, req, &params, user_id, &status, err, sizeof(err)) != 0;
    httpparams_free(&params);
    if (bad)
        reply_error(req, status, err, 0, NULL, NULL);
    return bad ? -1 : 0;
}

void readapi_order(struct gateway *gw, struct evhttp_request *req, const char *order_no)
{
    uint64_t id;
    int64_t activity_id, user_id = 0;
    if (strlen(order_no) >= ORDERNO_LEN || orderno_parse(order_no, &id, &activity_id) != 0) {
        reply_error(req, REPLY_INVALID, "not an order number", 0, NULL, NULL);
        return;
    }
    if (order_owner(gw, req, &user_id) != 0)
        return;
    int wait_s;
    char err[160];
    if (longpoll_wait_param(req, &wait_s, err, sizeof(err)) != 0) {
        reply_error(req, REPLY_INVALID, err, 0, NULL, NULL);
        return;
    }
    struct query *q = query_new(gw, req, user_id ? QUERY_OWN_ORDER : QUERY_ORDER, activity_id);
    if (!q)
        return;
    q->wait_s = wait_s;
    q->user_id = user_id;
    snprintf(q->order_no, sizeof(q->order_no), "%s", order_no);
    if (archived_at_once(q))
        return;
    if (user_id) {
        int bucket;
        q->keys = activity_user_keys(gw->activities, activity_id, user_id, &bucket, &q->scratch);
        char uid[24];
        snprintf(uid, sizeof(uid), "%" PRId64, user_id);
        const char *argv[] = { q->keys->name[KEYS_USERS], q->keys->name[KEYS_ORDERS],
                               q->keys->name[KEYS_FAILED_USERS], q->keys->name[KEYS_ACTIVITY], uid };
        query_send(q, LUASCRIPT_RESULT, 4, 1, argv);
        return;
    }
    send_order_lookup(q);
}

static void send_order_lookup(struct query *q)
{
    const struct keys_set *k = q->bucket == 0 ? q->keys
                                              : activity_bucket_keys(q->gw->activities, q->activity_id,
                                                                     q->bucket, &q->scratch);
    if (!k) {
        unavailable(q->gw, q->kind, q->http);
        query_free(q);
        return;
    }
    q->keys = k;  /* where a held request reads the status again */
    const char *argv[] = { "HGET", k->name[KEYS_ORDERS], q->order_no };
    query_send(q, LUASCRIPT_COUNT, 3, 0, argv);
}

void readapi_activity(struct gateway *gw, struct evhttp_request *req, const char *activity_id)
{
    struct query *q = path_query(gw, req, activity_id, QUERY_ACTIVITY);
    if (!q)
        return;
    const char *argv[] = { q->keys->name[KEYS_ACTIVITY], q->keys->name[KEYS_STOCK],
                           q->keys->name[KEYS_USERS] };
    query_send(q, LUASCRIPT_ACTIVITY, 3, 0, argv);
}

void readapi_health(struct gateway *gw, struct evhttp_request *req)
{
    bool redis_up = redisconn_ready(gw->redis);
    bool kafka_up = kafkaprod_healthy(gw->kafka);
    bool ok = redis_up && kafka_up && !gw->draining;
    cJSON *json = cJSON_CreateObject();
    cJSON_AddBoolToObject(json, "success", ok);
    if (!ok) {
        cJSON_AddStringToObject(json, "status", "UNAVAILABLE");
        cJSON_AddStringToObject(json, "message", gw->draining ? "shutting down" : "a backend is unreachable");
    }
    cJSON_AddStringToObject(json, "redis", redis_up ? "up" : "down");
    cJSON_AddStringToObject(json, "kafka", kafka_up ? "up" : "down");
    json_add_int(json, "inFlight", (int64_t)gw->in_flight);
    reply_json(req, ok ? 200 : 503, json);
}
