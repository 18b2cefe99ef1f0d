#include "gateway/gateway.h"

#include <arpa/inet.h>
#include <event2/keyvalq_struct.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/auth.h"
#include "common/clock.h"
#include "gateway/httpparams.h"
#include "common/keys.h"
#include "common/log.h"
#include "gateway/metrics.h"
#include "common/orderevent.h"
#include "common/parse.h"
#include "gateway/purchasetoken.h"
#include "gateway/reply.h"

/* One POST /seckill/execute, from the local checks to its last callback.
 *
 * Ownership: the gateway allocates it after the local checks; the Redis callback owns it
 * next and either finishes it or hands it to Kafka; the delivery report then owns it and
 * frees it. `http` is the client's request until the one reply is sent, NULL after: with
 * reply-after-ack off the reply goes out before the delivery report, which still has to
 * mark or roll back the reservation. */
struct gw_req {
    struct kafkaprod_ticket ticket;  /* first: the delivery report hands it back */
    struct gateway *gw;
    struct evhttp_request *http;
    int64_t user_id;
    int64_t activity_id;
    int64_t coupon_id;
    int64_t accepted_ms;
    int64_t started_us;   /* monotonic, for the latency histogram */
    int64_t produced_us;
    uint64_t order_id;
    char user[24];
    char order_no[ORDERNO_LEN];
};

static void on_node_id(redisReply *reply, void *privdata)
{
    struct gateway *gw = privdata;
    if (!reply || reply->type != REDIS_REPLY_INTEGER) {
        LOG_WARN("could not draw an order-number node id; retrying on the next connect");
        return;
    }
    orderno_init(&gw->orderno, (uint32_t)(reply->integer % (ORDERNO_MAX_NODE + 1)));
    gw->node_ready = true;
    LOG_INFO("order-number node id %u", gw->orderno.node);
}

void gateway_on_redis_connect(void *arg)
{
    struct gateway *gw = arg;
    if (!gw->node_ready) {
        const char *argv[] = { "INCR", KEYS_NODE_SEQ };
        redisconn_command_argv(gw->redis, 2, argv, NULL, on_node_id, gw);
    }
    activity_cache_refresh(gw->activities);
}

void gateway_client_ip(const struct gateway *gw, struct evhttp_request *req, char *out, size_t outlen)
{
    if (gw->cfg->http_trust_forwarded_for) {
        const char *xff = evhttp_find_header(evhttp_request_get_input_headers(req), "X-Forwarded-For");
        if (xff) {
            /* The proxy in front of us appends the address it saw: the last hop is the
             * only one we can trust; anything before it came from the client. */
            const char *hop = strrchr(xff, ',');
            hop = hop ? hop + 1 : xff;
            while (*hop == ' ' || *hop == '\t')
                hop++;
            size_t n = strcspn(hop, " \t");
            unsigned char addr[sizeof(struct in6_addr)];
            char text[INET6_ADDRSTRLEN];
            if (n > 0 && n < sizeof(text)) {
                memcpy(text, hop, n);
                text[n] = '\0';
                if (inet_pton(AF_INET, text, addr) == 1 || inet_pton(AF_INET6, text, addr) == 1) {
                    snprintf(out, outlen, "%s", text);
                    return;
                }
            }
        }
    }
    const char *peer = NULL;
    ev_uint16_t port = 0;
    evhttp_connection_get_peer(evhttp_request_get_connection(req), (char **)&peer, &port);
    snprintf(out, outlen, "%s", peer ? peer : "unknown");
}

static void req_finish(struct gw_req *r)
{
    r->gw->in_flight--;
    free(r);
}

static void observe_latency(const struct gw_req *r)
{
    metrics_observe_us(METRIC_EXECUTE_LATENCY, clock_mono_us() - r->started_us);
}

static void reply_accepted(struct gw_req *r)
{
    observe_latency(r);
    char body[256];
    int n = snprintf(body, sizeof(body),
                     "{\"success\":true,\"message\":\"order accepted\",\"orderNo\":\"%s\",\"status\":\"PROCESSING\"}",
                     r->order_no);
    reply_send(r->http, 200, body, (size_t)n);
    r->http = NULL;
}

static void reply_failed(struct gw_req *r, enum reply_status status, const char *message)
{
    if (!r->http)
        return;
    observe_latency(r);
    reply_error(r->http, status, message, 0, NULL, NULL);
    r->http = NULL;
}

static void remember_winner(struct gw_req *r, const char *order_no);

/* The rollback's verdict decides the answer of a request still waiting: a delivery
 * report that says "failed" (a timeout, the broker gone before its ack) can be wrong, and
 * only Redis knows whether a consumer already has the order. */
static void on_rolled_back(redisReply *reply, void *privdata)
{
    struct gw_req *r = privdata;
    long long verdict = reply && reply->type == REDIS_REPLY_INTEGER ? reply->integer : -1;
    if (verdict == 2) {
        LOG_INFO("order %s: delivery reported failed but a consumer has it; answering accepted", r->order_no);
        remember_winner(r, r->order_no);
        if (r->http)
            reply_accepted(r);
    } else {
        if (verdict == 1) {
            metrics_inc(METRIC_ORDERS_ROLLED_BACK);
            LOG_INFO("order %s: rolled back, stock returned", r->order_no);
        } else if (verdict == 0) {
            LOG_INFO("order %s: rollback found it already expired", r->order_no);
        } else {
            LOG_WARN("order %s: rollback did not reach Redis; the reaper will return the stock", r->order_no);
        }
        reply_failed(r, REPLY_UNAVAILABLE, "order could not be queued, please retry");
    }
    req_finish(r);
}

/* Undo a reservation whose order did not reach Kafka, then answer (the request is
 * finished by on_rolled_back). Without the rollback the reaper returns the stock after
 * seckill.pre-reduce-timeout. */
static void rollback_and_answer(struct gw_req *r)
{
    struct activity *a = activity_cache_find(r->gw->activities, r->activity_id);
    if (a)
        intmap_remove(&a->winners, r->user_id);
    if (r->gw->cfg->enable_stock_rollback) {
        char stock[KEYS_LEN], users[KEYS_LEN], orders[KEYS_LEN], resv[KEYS_LEN];
        const struct config *cfg = r->gw->cfg;
        keys_activity(stock, sizeof(stock), cfg, KEYS_STOCK, r->activity_id);
        keys_activity(users, sizeof(users), cfg, KEYS_USERS, r->activity_id);
        keys_activity(orders, sizeof(orders), cfg, KEYS_ORDERS, r->activity_id);
        keys_activity(resv, sizeof(resv), cfg, KEYS_RESERVED, r->activity_id);
        const char *argv[] = { stock, users, orders, resv, "order", r->order_no, r->user };
        if (redisconn_eval(r->gw->redis, LUASCRIPT_RELEASE, 4, 3, argv, NULL, on_rolled_back, r) == 0)
            return;
        LOG_WARN("order %s: rollback could not be sent; the reaper will return the stock", r->order_no);
    }
    reply_failed(r, REPLY_UNAVAILABLE, "order could not be queued, please retry");
    req_finish(r);
}

static void on_delivery(struct kafkaprod_ticket *ticket, rd_kafka_resp_err_t err)
{
    struct gw_req *r = (struct gw_req *)ticket;
    metrics_observe_us(METRIC_KAFKA_DELIVERY, clock_mono_us() - r->produced_us);
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        metrics_inc(METRIC_ORDERS_ACCEPTED);
        char member[ORDERNO_LEN + 24];
        snprintf(member, sizeof(member), "%s|%s", r->order_no, r->user);
        queuedmarks_add(r->gw->marks, r->activity_id, member);
        if (r->http)
            reply_accepted(r);
    } else {
        metrics_inc(METRIC_KAFKA_DELIVERY_FAILURES);
        LOG_WARN("order %s: kafka delivery failed: %s", r->order_no, rd_kafka_err2str(err));
        rollback_and_answer(r);
        return;
    }
    req_finish(r);
}

static void produce(struct gw_req *r)
{
    struct orderevent ev;
    memcpy(ev.order_no, r->order_no, sizeof(ev.order_no));
    ev.user_id = r->user_id;
    ev.activity_id = r->activity_id;
    ev.coupon_id = r->coupon_id;
    ev.created_ms = r->accepted_ms;
    char payload[256];
    int len = orderevent_encode(&ev, payload, sizeof(payload));
    r->produced_us = clock_mono_us();
    rd_kafka_resp_err_t err = len < 0 ? RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE
                                      : kafkaprod_produce(r->gw->kafka, r->user, strlen(r->user), payload, (size_t)len, &r->ticket);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        metrics_inc(METRIC_KAFKA_DELIVERY_FAILURES);
        LOG_WARN("order %s: kafka produce refused: %s", r->order_no, rd_kafka_err2str(err));
        rollback_and_answer(r);
        return;
    }
    /* From here the delivery report owns r. */
    if (!r->gw->cfg->reply_after_ack)
        reply_accepted(r);
}

static int64_t element_int(const redisReply *reply, size_t i, int64_t fallback)
{
    if (reply->elements <= i)
        return fallback;
    const redisReply *e = reply->element[i];
    if (e->type == REDIS_REPLY_INTEGER)
        return e->integer;
    if (e->type == REDIS_REPLY_STRING)
        return strtoll(e->str, NULL, 10);
    return fallback;
}

static const char *element_str(const redisReply *reply, size_t i)
{
    if (reply->elements <= i || reply->element[i]->type != REDIS_REPLY_STRING)
        return NULL;
    return reply->element[i]->str;
}

static void remember_winner(struct gw_req *r, const char *order_no)
{
    struct activity *a = activity_cache_find(r->gw->activities, r->activity_id);
    uint64_t id;
    int64_t activity_id;
    if (a && orderno_parse(order_no, &id, &activity_id) == 0)
        intmap_put(&a->winners, r->user_id, id);
}

static void on_executed(redisReply *reply, void *privdata)
{
    struct gw_req *r = privdata;
    if (!reply || reply->type != REDIS_REPLY_ARRAY || reply->elements < 1 ||
        reply->element[0]->type != REDIS_REPLY_STRING) {
        if (reply && reply->type == REDIS_REPLY_ERROR)
            LOG_WARN("order %s: execute script failed: %s", r->order_no, reply->str);
        reply_failed(r, REPLY_UNAVAILABLE, "stock service unavailable, please retry");
        req_finish(r);
        return;
    }
    const char *status = reply->element[0]->str;
    if (strcmp(status, "OK") == 0) {
        r->coupon_id = element_int(reply, 2, 0);
        remember_winner(r, r->order_no);
        produce(r);
        return;
    }
    struct activity *a = activity_cache_find(r->gw->activities, r->activity_id);
    observe_latency(r);
    if (strcmp(status, "DUPLICATE") == 0) {
        const char *existing = element_str(reply, 1);
        if (existing)
            remember_winner(r, existing);
        reply_error(r->http, REPLY_DUPLICATE, "you already hold an order for this activity", 0, "orderNo", existing);
    } else if (strcmp(status, "OUT_OF_STOCK") == 0) {
        if (a)
            activity_cache_sold_out(r->gw->activities, a);
        reply_error(r->http, REPLY_OUT_OF_STOCK, "sold out", 0, NULL, NULL);
    } else if (strcmp(status, "NOT_STARTED") == 0) {
        reply_error(r->http, REPLY_NOT_STARTED, "the sale has not started", 0, NULL, NULL);
    } else if (strcmp(status, "ENDED") == 0) {
        reply_error(r->http, REPLY_ENDED, "the sale has ended", 0, NULL, NULL);
    } else if (strcmp(status, "CANCELLED") == 0) {
        if (a)
            a->cancelled = true;
        reply_error(r->http, REPLY_CANCELLED, "the sale was cancelled", 0, NULL, NULL);
    } else if (strcmp(status, "RATE_LIMITED") == 0) {
        reply_error(r->http, REPLY_RATE_LIMITED, "too many requests", element_int(reply, 1, 1), NULL, NULL);
    } else if (strcmp(status, "BLOCKED") == 0) {
        reply_error(r->http, REPLY_BLOCKED, "too many attempts, temporarily blocked", element_int(reply, 1, 1), NULL, NULL);
    } else if (strcmp(status, "TOKEN_USED") == 0) {
        reply_error(r->http, REPLY_FORBIDDEN, "purchase token already used", 0, NULL, NULL);
    } else if (strcmp(status, "NOT_FOUND") == 0) {
        reply_error(r->http, REPLY_NOT_FOUND, "no such activity", 0, NULL, NULL);
    } else {
        LOG_ERROR("order %s: unexpected execute answer %s", r->order_no, status);
        reply_error(r->http, REPLY_UNAVAILABLE, "unexpected stock service answer", 0, NULL, NULL);
    }
    r->http = NULL;
    req_finish(r);
}

static bool local_answer(struct gateway *gw, struct evhttp_request *req, int64_t activity_id, int64_t user_id);

/* The answers the gateway can give without I/O. Returns true when it replied. */
static bool answer_locally(struct gateway *gw, struct evhttp_request *req, int64_t activity_id, int64_t user_id)
{
    bool answered = local_answer(gw, req, activity_id, user_id);
    if (answered)
        metrics_inc(METRIC_LOCAL_ANSWERS);
    return answered;
}

static bool local_answer(struct gateway *gw, struct evhttp_request *req, int64_t activity_id, int64_t user_id)
{
    if (gw->cfg->enable_rate_limit && !tokenbucket_take(&gw->bucket, clock_mono_us())) {
        reply_error(req, REPLY_RATE_LIMITED, "too many requests", tokenbucket_retry_after(&gw->bucket), NULL, NULL);
        return true;
    }
    struct activity *a = activity_cache_find(gw->activities, activity_id);
    if (!a || !a->loaded)
        return false;
    switch (activity_status_at(a, clock_wall_ms())) {
    case ACTIVITY_PENDING:
        reply_error(req, REPLY_NOT_STARTED, "the sale has not started", 0, NULL, NULL);
        return true;
    case ACTIVITY_ENDED:
        reply_error(req, REPLY_ENDED, "the sale has ended", 0, NULL, NULL);
        return true;
    case ACTIVITY_CANCELLED:
        reply_error(req, REPLY_CANCELLED, "the sale was cancelled", 0, NULL, NULL);
        return true;
    case ACTIVITY_ACTIVE:
        break;
    }
    if (!activity_answers_locally(a))
        return false;
    uint64_t order_id;
    if (intmap_get(&a->winners, user_id, &order_id)) {
        char order_no[ORDERNO_LEN];
        orderno_format(order_no, sizeof(order_no), order_id, activity_id);
        reply_error(req, REPLY_DUPLICATE, "you already hold an order for this activity", 0, "orderNo", order_no);
    } else {
        reply_error(req, REPLY_OUT_OF_STOCK, "sold out", 0, NULL, NULL);
    }
    return true;
}

static int read_id_param(struct httpparams *params, const char *name, int64_t *out, char *err, size_t errlen)
{
    char value[HTTPPARAMS_VALUE_LEN];
    int found = httpparams_get(params, name, value, sizeof(value), err, errlen);
    if (found < 0)
        return -1;
    if (found == 0) {
        snprintf(err, errlen, "%s is required", name);
        return -1;
    }
    if (parse_json_id(value, out) != 0) {
        snprintf(err, errlen, "%s must be a positive integer below 2^53", name);
        return -1;
    }
    return 0;
}

static void send_execute(struct gw_req *r, const char *ip, const char *nonce)
{
    struct gateway *gw = r->gw;
    const struct config *cfg = gw->cfg;
    char k_activity[KEYS_LEN], k_stock[KEYS_LEN], k_users[KEYS_LEN], k_orders[KEYS_LEN],
        k_resv[KEYS_LEN], k_rl_user[KEYS_LEN + 64], k_rl_ip[KEYS_LEN + 64], k_brush[KEYS_LEN + 64],
        k_ban[KEYS_LEN + 64], k_token[KEYS_LEN + 64];
    keys_activity(k_activity, sizeof(k_activity), cfg, KEYS_ACTIVITY, r->activity_id);
    keys_activity(k_stock, sizeof(k_stock), cfg, KEYS_STOCK, r->activity_id);
    keys_activity(k_users, sizeof(k_users), cfg, KEYS_USERS, r->activity_id);
    keys_activity(k_orders, sizeof(k_orders), cfg, KEYS_ORDERS, r->activity_id);
    keys_activity(k_resv, sizeof(k_resv), cfg, KEYS_RESERVED, r->activity_id);
    keys_subject(k_rl_user, sizeof(k_rl_user), KEYS_RATE_USER, r->activity_id, r->user);
    keys_subject(k_rl_ip, sizeof(k_rl_ip), KEYS_RATE_IP, r->activity_id, ip);
    keys_subject(k_brush, sizeof(k_brush), KEYS_BRUSH, r->activity_id, r->user);
    keys_subject(k_ban, sizeof(k_ban), KEYS_BAN, r->activity_id, r->user);
    keys_subject(k_token, sizeof(k_token), KEYS_TOKEN, r->activity_id, nonce);
    char now[24], per_user[24], per_ip[24], threshold[24], ban[24], token_ttl[24];
    snprintf(now, sizeof(now), "%" PRId64, r->accepted_ms);
    snprintf(per_user, sizeof(per_user), "%" PRId64, cfg->max_requests_per_user);
    snprintf(per_ip, sizeof(per_ip), "%" PRId64, cfg->max_requests_per_ip);
    snprintf(threshold, sizeof(threshold), "%" PRId64, cfg->anti_brush_threshold);
    snprintf(ban, sizeof(ban), "%" PRId64, cfg->anti_brush_ban_seconds);
    snprintf(token_ttl, sizeof(token_ttl), "%" PRId64, cfg->require_token ? cfg->token_ttl_seconds : 0);
    const char *argv[] = {
        k_activity, k_stock, k_users, k_orders, k_resv, k_rl_user, k_rl_ip, k_brush, k_ban, k_token,
        r->user, r->order_no, now, cfg->enable_rate_limit ? "1" : "0", per_user, per_ip,
        cfg->enable_anti_brush ? "1" : "0", threshold, ban, token_ttl,
    };
    if (redisconn_eval(gw->redis, LUASCRIPT_EXECUTE, 10, 10, argv, NULL, on_executed, r) != 0) {
        reply_failed(r, REPLY_UNAVAILABLE, "stock service unavailable, please retry");
        req_finish(r);
    }
}

void gateway_execute(struct gateway *gw, struct evhttp_request *req)
{
    struct httpparams params;
    char err[160];
    char token[HTTPPARAMS_VALUE_LEN] = "";
    int64_t user_id, activity_id;
    enum reply_status status = REPLY_INVALID;
    int bad = httpparams_parse(req, &params, err, sizeof(err)) != 0 ||
              read_id_param(&params, "activityId", &activity_id, err, sizeof(err)) != 0 ||
              auth_user(gw, req, &params, &user_id, &status, err, sizeof(err)) != 0;
    if (!bad && gw->cfg->require_token &&
        httpparams_get(&params, "token", token, sizeof(token), err, sizeof(err)) != 1) {
        status = REPLY_FORBIDDEN;
        snprintf(err, sizeof(err), "a purchase token from GET /seckill/token is required");
        bad = 1;
    }
    httpparams_free(&params);
    if (bad) {
        reply_error(req, status, err, 0, NULL, NULL);
        return;
    }
    if (gw->draining) {
        evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
        reply_error(req, REPLY_UNAVAILABLE, "shutting down", 1, NULL, NULL);
        return;
    }
    char nonce[PURCHASETOKEN_NONCE_LEN] = "-";
    if (gw->cfg->require_token &&
        purchasetoken_check(gw->cfg->token_secret, token, activity_id, user_id, clock_wall_ms() / 1000, nonce) != 0) {
        reply_error(req, REPLY_FORBIDDEN, "purchase token invalid or expired", 0, NULL, NULL);
        return;
    }
    if (answer_locally(gw, req, activity_id, user_id))
        return;
    if (!gw->node_ready || !redisconn_ready(gw->redis)) {
        reply_error(req, REPLY_UNAVAILABLE, "stock service unavailable, please retry", 1, NULL, NULL);
        return;
    }
    struct gw_req *r = calloc(1, sizeof(*r));
    if (!r) {
        reply_error(req, REPLY_UNAVAILABLE, "out of memory", 1, NULL, NULL);
        return;
    }
    r->ticket.done = on_delivery;
    r->gw = gw;
    r->http = req;
    r->user_id = user_id;
    r->activity_id = activity_id;
    r->accepted_ms = clock_wall_ms();
    r->started_us = clock_mono_us();
    r->order_id = orderno_next(&gw->orderno, r->accepted_ms);
    snprintf(r->user, sizeof(r->user), "%" PRId64, user_id);
    orderno_format(r->order_no, sizeof(r->order_no), r->order_id, activity_id);
    gw->in_flight++;
    char ip[INET6_ADDRSTRLEN];
    gateway_client_ip(gw, req, ip, sizeof(ip));
    send_execute(r, ip, nonce);
}

void gateway_token(struct gateway *gw, struct evhttp_request *req)
{
    struct httpparams params;
    char err[160];
    int64_t user_id, activity_id;
    enum reply_status status = REPLY_INVALID;
    int bad = httpparams_parse(req, &params, err, sizeof(err)) != 0 ||
              read_id_param(&params, "activityId", &activity_id, err, sizeof(err)) != 0 ||
              auth_user(gw, req, &params, &user_id, &status, err, sizeof(err)) != 0;
    httpparams_free(&params);
    if (bad) {
        reply_error(req, status, err, 0, NULL, NULL);
        return;
    }
    if (!gw->cfg->require_token) {
        reply_error(req, REPLY_NOT_FOUND, "purchase tokens are off (seckill.require-token)", 0, NULL, NULL);
        return;
    }
    struct activity *a = activity_cache_find(gw->activities, activity_id);
    if (!a || !a->loaded) {
        reply_error(req, REPLY_NOT_FOUND, "no such activity", 0, NULL, NULL);
        return;
    }
    int64_t now_ms = clock_wall_ms();
    switch (activity_status_at(a, now_ms)) {
    case ACTIVITY_PENDING:
        reply_error(req, REPLY_NOT_STARTED, "the sale has not started", 0, NULL, NULL);
        return;
    case ACTIVITY_ENDED:
        reply_error(req, REPLY_ENDED, "the sale has ended", 0, NULL, NULL);
        return;
    case ACTIVITY_CANCELLED:
        reply_error(req, REPLY_CANCELLED, "the sale was cancelled", 0, NULL, NULL);
        return;
    case ACTIVITY_ACTIVE:
        break;
    }
    int64_t expires = now_ms / 1000 + gw->cfg->token_ttl_seconds;
    char token[PURCHASETOKEN_LEN];
    gw->token_nonce += 0x9E3779B97F4A7C15ULL;  /* Weyl sequence from a random start: never repeats */
    if (purchasetoken_issue(gw->cfg->token_secret, activity_id, user_id, expires, gw->token_nonce, token,
                            sizeof(token)) < 0) {
        reply_error(req, REPLY_UNAVAILABLE, "could not issue a token", 1, NULL, NULL);
        return;
    }
    char body[256];
    int n = snprintf(body, sizeof(body),
                     "{\"success\":true,\"token\":\"%s\",\"activityId\":%" PRId64 ",\"expiresIn\":%" PRId64 "}",
                     token, activity_id, gw->cfg->token_ttl_seconds);
    reply_send(req, 200, body, (size_t)n);
}
