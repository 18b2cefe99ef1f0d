#include "gateway/redeliver.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/holder.h"
#include "common/log.h"
#include "common/orderevent.h"
#include "common/orderno.h"
#include "common/parse.h"
#include "gateway/metrics.h"
#include "gateway/ordermsg.h"

struct redeliver {
    const struct config *cfg;
    struct redisconn *redis;
    struct kafkaprod *kafka;
    struct queuedmarks *marks;
    struct activity_cache *activities;
};

/* One redeliver.lua call; freed by its callback. */
struct redeliver_call {
    struct redeliver *rd;
    int64_t activity_id;
    int part;
};

/* One order produced again; freed by its delivery report. */
struct redeliver_msg {
    struct kafkaprod_ticket ticket;  /* first: the report hands it back */
    struct redeliver *rd;
    int64_t activity_id;
    int part;
    char member[ORDERNO_LEN + 24];
};

struct redeliver *redeliver_new(const struct config *cfg, struct redisconn *redis, struct kafkaprod *kafka,
                                struct queuedmarks *marks, struct activity_cache *activities)
{
    struct redeliver *rd = calloc(1, sizeof(*rd));
    if (!rd)
        return NULL;
    rd->cfg = cfg;
    rd->redis = redis;
    rd->kafka = kafka;
    rd->marks = marks;
    rd->activities = activities;
    return rd;
}

void redeliver_free(struct redeliver *rd)
{
    free(rd);
}

static void on_report(struct kafkaprod_ticket *ticket, rd_kafka_resp_err_t err)
{
    struct redeliver_msg *msg = (struct redeliver_msg *)ticket;
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR)
        queuedmarks_add(msg->rd->marks, msg->activity_id, msg->part, msg->member);
    else
        LOG_WARN("order %s produced again, not delivered: %s; the next reaper pass tries again", msg->member,
                 rd_kafka_err2str(err));
    free(msg);
}

/* Parses "orderNo|holder" (holder.h) into the order's message; -1 for a member of another
 * shape. */
static int member_event(struct redeliver *rd, int64_t activity_id, const char *member, struct orderevent *ev)
{
    const char *bar = strchr(member, '|');
    size_t no_len = bar ? (size_t)(bar - member) : 0;
    if (!bar || no_len == 0 || no_len >= sizeof(ev->order_no))
        return -1;
    memcpy(ev->order_no, member, no_len);
    ev->order_no[no_len] = '\0';
    uint64_t id;
    int64_t order_activity;
    struct activity *a = activity_cache_find(rd->activities, activity_id);
    if (!a || orderno_parse(ev->order_no, &id, &order_activity) != 0 || order_activity != activity_id ||
        holder_parse(bar + 1, &ev->user_id, &ev->slot) != 0)
        return -1;
    ev->activity_id = activity_id;
    ev->coupon_id = a->coupon_id;
    ev->created_ms = orderno_time_ms(id);
    return 0;
}

static void produce_again(struct redeliver *rd, int64_t activity_id, int part, const char *member)
{
    struct orderevent ev;
    char payload[ORDERMSG_MAX];
    int len;
    if (member_event(rd, activity_id, member, &ev) != 0 ||
        (len = ordermsg_encode(rd->activities, &ev, part, payload, sizeof(payload))) < 0) {
        LOG_ERROR("activity %" PRId64 ": stale reservation %s is not an order this gateway can rebuild",
                  activity_id, member);
        return;
    }
    struct redeliver_msg *msg = malloc(sizeof(*msg));
    if (!msg)
        return;
    msg->ticket.done = on_report;
    msg->rd = rd;
    msg->activity_id = activity_id;
    msg->part = part;
    snprintf(msg->member, sizeof(msg->member), "%s", member);
    rd_kafka_resp_err_t err = kafkaprod_produce(rd->kafka, NULL, 0, payload, (size_t)len, &msg->ticket);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        LOG_WARN("order %s produced again, refused: %s; the next reaper pass tries again", member,
                 rd_kafka_err2str(err));
        free(msg);
        return;
    }
    metrics_inc(METRIC_ORDERS_REDELIVERED);
}

static void on_taken(redisReply *reply, void *privdata)
{
    struct redeliver_call *call = privdata;
    if (reply && reply->type == REDIS_REPLY_ARRAY && reply->elements > 0) {
        LOG_WARN("activity %" PRId64 ": %zu reservations answered 200 have not reached Kafka in time; "
                 "producing them again", call->activity_id, reply->elements);
        for (size_t i = 0; i < reply->elements; i++)
            if (reply->element[i]->type == REDIS_REPLY_STRING)
                produce_again(call->rd, call->activity_id, call->part, reply->element[i]->str);
    }
    free(call);
}

void redeliver_stale(struct redeliver *rd, int64_t activity_id, int part, const struct keys_set *keys,
                     const char *cutoff_ms, const char *count, const char *mode, const char *nodes)
{
    struct redeliver_call *call = malloc(sizeof(*call));
    if (!call)
        return;
    call->rd = rd;
    call->activity_id = activity_id;
    call->part = part;
    const char *argv[] = { keys->name[KEYS_RESERVED], cutoff_ms, count, mode, nodes };
    if (redisconn_eval(rd->redis, LUASCRIPT_REDELIVER, 1, 4, argv, NULL, on_taken, call) != 0)
        free(call);
}
