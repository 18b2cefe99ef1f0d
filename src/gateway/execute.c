#include "gateway/execute.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/auth.h"
#include "gateway/bans.h"
#include "gateway/clientip.h"
#include "gateway/ratelimit.h"
#include "common/clock.h"
#include "common/holder.h"
#include "gateway/delivery.h"
#include "gateway/executeanswer.h"
#include "gateway/executebatch.h"
#include "gateway/executestage.h"
#include "gateway/executeverdict.h"
#include "gateway/httpparams.h"
#include "common/keys.h"
#include "common/log.h"
#include "gateway/metrics.h"
#include "gateway/nodelease.h"
#include "common/orderevent.h"
#include "gateway/ordermsg.h"
#include "gateway/pending.h"
#include "gateway/refusals.h"
#include "gateway/purchasetoken.h"
#include "gateway/rebalance.h"
#include "gateway/reply.h"

/* One POST /seckill/execute, from the local checks to its last callback.
 *
 * Ownership: execute_request allocates it after the local checks; the Redis callback
 * owns it next and either finishes it or hands it to the delivery (delivery.h), whose
 * report, or the rollback after a failed one, frees it. A rollback sent at the request
 * deadline holds it too: `holds` counts the callbacks still to come, and the last one
 * frees it. `d.http` is the client's request until the one reply is sent, NULL after;
 * pending.h may answer it (deadline, shutdown) and clear it, after which the callbacks
 * only settle the Redis side. */
/* A promised order whose delivery failed is produced again this long after: a refusal at
 * produce (the producer's queue full) would otherwise come straight back. */
#define EXECUTE_REDELIVER_MS 200

struct order {
    struct delivery d;  /* first: the delivery's callbacks hand it back */
    struct executebatch_item script;  /* its part of this pass's execute.lua call */
    struct pending p;       /* gw->pending: http.request-timeout-ms */
    struct pending cut;     /* gw->delivery_cut: the same less redis.timeout-ms */
    enum executestage stage;
    unsigned holds;
    bool released_at_deadline;  /* the deadline's release rolled it back (verdict 1) */
    struct gateway *gw;
    int64_t user_id;
    int64_t activity_id;
    int bucket;           /* the user's bucket of the activity (0 when not bucketed) */
    int64_t coupon_id;
    int64_t accepted_ms;
    int64_t started_us;   /* monotonic, for the latency histogram */
    uint64_t order_id;
    int slot;             /* the user's slot the order took (holder.h), from the script */
    char user[24];
    char order_no[ORDERNO_LEN];
    /* A consumer may get it, so only Redis can tell what to answer: handed to Kafka, or
     * (reply-after-ack off) its script's verdict lost, where a reaper would deliver it. */
    bool may_live;
    bool no_retry;        /* its release can no longer be sent (see release_later) */
    struct event *retry;  /* sends the release (or a promised order) again */
    redisconn_cb retry_cb;
    struct order *retry_prev, *retry_next;  /* in execute.retries while armed */
    struct order *spare_next;  /* in execute.spares once finished */
};

/* Finished orders are kept for the next requests (up to EXECUTE_SPARE_MAX): a sale
 * allocates once per concurrent request, not once per request. */
#define EXECUTE_SPARE_MAX 4096

/* The gateway's execute requests as a whole (gw->execute). */
struct execute {
    struct order *spares;    /* finished, kept for reuse */
    unsigned spare_count;
    struct order *retries;   /* orders whose release waits to be sent again */
};

int execute_start(struct gateway *gw)
{
    gw->execute = calloc(1, sizeof(*gw->execute));
    return gw->execute ? 0 : -1;
}

/* Every change of a request's stage. A move the protocol does not have is a bug: logged,
 * and the stage left as it was. */
static void move(struct order *r, enum executestage to)
{
    if (!executestage_move(&r->stage, to))
        LOG_ORDER_ERROR(r->order_no, "execute: no move from %s to %s", executestage_name(r->stage),
                        executestage_name(to));
}

static void order_finish(struct order *r)
{
    if (--r->holds > 0)
        return;
    struct gateway *gw = r->gw;
    pending_end(&r->p);
    pending_end(&r->cut);
    if (r->retry)
        event_free(r->retry);
    r->retry = NULL;
    gw->in_flight--;
    if (gw->execute->spare_count < EXECUTE_SPARE_MAX) {
        r->spare_next = gw->execute->spares;
        gw->execute->spares = r;
        gw->execute->spare_count++;
    } else {
        free(r);
    }
}

static struct order *order_new(struct gateway *gw)
{
    struct order *r = gw->execute->spares;
    if (r) {
        gw->execute->spares = r->spare_next;
        gw->execute->spare_count--;
        memset(r, 0, sizeof(*r));
        return r;
    }
    return calloc(1, sizeof(*r));
}

void execute_free(struct gateway *gw)
{
    if (!gw->execute)
        return;
    while (gw->execute->spares) {
        struct order *next = gw->execute->spares->spare_next;
        free(gw->execute->spares);
        gw->execute->spares = next;
    }
    free(gw->execute);
    gw->execute = NULL;
}

static void observe_latency(const struct order *r)
{
    metrics_observe(METRIC_EXECUTE_LATENCY, clock_mono_us() - r->started_us);
}

/* delivery_ops.accepted: the one success reply. */
static void answer_accepted(struct delivery *d)
{
    struct order *r = (struct order *)d;
    observe_latency(r);
    if (r->stage == EXECUTESTAGE_DELIVERING && !r->gw->cfg->reply_after_ack)
        move(r, EXECUTESTAGE_PROMISED);  /* before the ack: never rolled back now */
    struct executeanswer_about about = { r->user_id, r->activity_id, r->accepted_ms };
    executeanswer_accepted(r->gw->cfg, d->http, &about, r->order_no);
}

/* Every refusal of this endpoint (executeanswer.h: the Spring service's fields, and
 * http.refusal-status). UNAVAILABLE is no refusal: those answers are unavailable()'s. */
static void refuse(struct gateway *gw, struct evhttp_request *req, int64_t user_id, int64_t activity_id,
                   enum reply_status status, const char *message, int64_t retry_after, const char *order_no)
{
    struct executeanswer_about about = { user_id, activity_id, clock_wall_ms() };
    refusals_count(gw->refusals, activity_id, status);
    executeanswer_refused(gw->cfg, req, &about, status, message, retry_after, order_no);
}

/* Every UNAVAILABLE of this endpoint. Each is sent only where nothing was sold nor will be
 * (a 503 never ends SUCCESS: docs/protocol.md), so http.unavailable-status = 200 may answer
 * it as the Spring service answered a failure, 200 FAILED, which promises the same. */
static void unavailable(struct gateway *gw, struct evhttp_request *req, int64_t user_id, int64_t activity_id,
                        const char *reason, int64_t retry_after)
{
    struct executeanswer_about about = { user_id, activity_id, clock_wall_ms() };
    refusals_count(gw->refusals, activity_id, REPLY_UNAVAILABLE);
    executeanswer_unavailable(gw->cfg, req, &about, reason, retry_after);
}

static void answer_failed(struct order *r, const char *message)
{
    if (!r->d.http)
        return;
    observe_latency(r);
    /* Not replicated in time (redis.wait-replicas): a replica is lagging or being
     * replaced, which passes within seconds. */
    if (r->script.unreplicated)
        message = "stock service not replicated in time, please retry";
    unavailable(r->gw, r->d.http, r->user_id, r->activity_id, message, r->script.unreplicated ? 1 : 0);
    r->d.http = NULL;
}

static void remember_winner(struct order *r, const char *order_no);

static void forget_winner(struct order *r)
{
    struct activity *a = activity_cache_find(r->gw->activities, r->activity_id);
    if (a)
        intmap_remove(&a->winners, r->user_id);
}

/* release.lua for r in order mode (confirm.lua then refuses a late delivery), or in
 * forget mode when the script's verdict was lost (a script still to run then finds the
 * order number taken and reserves nothing): 0 sent, -1 not now (its master is not
 * connected), 1 never (rollback off, or the sale left the cache): the reaper returns the
 * stock. */
static int release_send(struct order *r, redisconn_cb cb)
{
    struct keys_set scratch;
    const struct keys_set *keys = activity_bucket_keys(r->gw->activities, r->activity_id, r->bucket,
                                                       &scratch);
    if (!r->gw->cfg->enable_stock_rollback || !keys)
        return 1;
    const char *mode = r->stage == EXECUTESTAGE_FORGETTING ? "forget" : "order";
    const char *argv[] = { keys->name[KEYS_STOCK], keys->name[KEYS_USERS], keys->name[KEYS_ORDERS],
                           keys->name[KEYS_RESERVED], keys->name[KEYS_FAILED], keys->name[KEYS_ACTIVITY],
                           keys->name[KEYS_FAILED_USERS], mode, r->order_no, r->user };
    return redisconn_eval(r->gw->redis, LUASCRIPT_RELEASE, 7, 3, argv, NULL, cb, r) == 0 ? 0 : -1;
}

static void retry_unlink(struct order *r)
{
    struct gateway *gw = r->gw;
    if (r->retry_prev)
        r->retry_prev->retry_next = r->retry_next;
    else if (gw->execute->retries == r)
        gw->execute->retries = r->retry_next;
    if (r->retry_next)
        r->retry_next->retry_prev = r->retry_prev;
    r->retry_prev = r->retry_next = NULL;
}

static void on_retry(evutil_socket_t fd, short what, void *arg);

static void retry_link(struct order *r, int64_t after_ms)
{
    struct gateway *gw = r->gw;
    r->retry_next = gw->execute->retries;
    if (r->retry_next)
        r->retry_next->retry_prev = r;
    gw->execute->retries = r;
    struct timeval tv = clock_timeval_ms(after_ms);
    evtimer_add(r->retry, &tv);
}

/* The release of an order already given to Kafka got no verdict (Redis away, or slower
 * than redis.timeout-ms). Only Redis knows whether a consumer has the order, so a 503 now
 * could turn out a lie: the answer waits, past the request timeout if need be, and the
 * release goes again every redis.reconnect-min-ms until a verdict comes (docs/protocol.md,
 * "Request timeout"). False when it cannot wait: then the caller answers 503 as before. */
static bool release_later(struct order *r, redisconn_cb cb)
{
    struct gateway *gw = r->gw;
    if (!r->may_live || r->no_retry || gw->orders_stopped)
        return false;
    if (!r->retry && !(r->retry = evtimer_new(gw->base, on_retry, r)))
        return false;
    if (!r->retry_cb)
        LOG_ORDER_WARN(r->order_no, "rollback got no verdict from Redis; the answer to user %s waits for one",
                       r->user);
    r->retry_cb = cb;
    metrics_inc(METRIC_RELEASE_RETRIES);
    retry_link(r, gw->cfg->redis_reconnect_min_ms);
    return true;
}

static void produce(struct order *r);

/* A promised order is never rolled back: its delivery goes on until Kafka has it. Once
 * shutdown began (or without memory for a timer) it is left to the reaper of this or
 * another gateway, which hands stale reservations back to Kafka (redeliver.h). */
static void redeliver_later(struct order *r)
{
    struct gateway *gw = r->gw;
    move(r, EXECUTESTAGE_REDELIVERING);
    if (gw->draining || gw->orders_stopped ||
        (!r->retry && !(r->retry = evtimer_new(gw->base, on_retry, r)))) {
        LOG_ORDER_WARN(r->order_no, "answered 200 and not delivered; left to the reaper, which produces it "
                       "again");
        order_finish(r);
        return;
    }
    retry_link(r, EXECUTE_REDELIVER_MS);
}

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct order *r = arg;
    retry_unlink(r);
    if (r->stage == EXECUTESTAGE_REDELIVERING) {
        if (r->gw->draining) {
            redeliver_later(r);  /* hands it to the reaper */
            return;
        }
        metrics_inc(METRIC_ORDERS_REDELIVERED);
        produce(r);
        return;
    }
    int sent = release_send(r, r->retry_cb);
    if (sent == 0 || (sent < 0 && release_later(r, r->retry_cb)))
        return;
    r->no_retry = true;
    r->retry_cb(NULL, r);
}

void execute_stop(struct gateway *gw)
{
    gw->orders_stopped = true;
    while (gw->execute && gw->execute->retries) {
        struct order *r = gw->execute->retries;
        retry_unlink(r);
        evtimer_del(r->retry);
        if (r->stage == EXECUTESTAGE_REDELIVERING)
            redeliver_later(r);  /* orders_stopped: hands it to the reaper */
        else
            r->retry_cb(NULL, r);
    }
}

/* The rollback's verdict decides the answer of a request still waiting: a delivery
 * report that says "failed" (a timeout, the broker gone before its ack) can be wrong, and
 * only Redis knows whether a consumer already has the order. */
static void on_rolled_back(redisReply *reply, void *privdata)
{
    struct order *r = privdata;
    long long verdict = reply && reply->type == REDIS_REPLY_INTEGER ? reply->integer : -1;
    if (verdict < 0 && release_later(r, on_rolled_back))
        return;
    if (verdict == 2) {
        LOG_ORDER_INFO(r->order_no, "%s but a consumer has it; answering accepted",
                       r->stage == EXECUTESTAGE_FORGETTING ? "its script's verdict was lost"
                                                           : "delivery reported failed");
        remember_winner(r, r->order_no);
        delivery_accept(&r->d);
    } else {
        if (verdict == 1) {
            metrics_inc(METRIC_ORDERS_ROLLED_BACK);
            LOG_ORDER_INFO(r->order_no, "rolled back, stock returned");
        } else if (verdict == 0 && r->stage == EXECUTESTAGE_FORGETTING) {
            LOG_ORDER_INFO(r->order_no, "its script's verdict was lost; it reserved nothing and never will");
        } else if (verdict == 0) {
            LOG_ORDER_INFO(r->order_no, "rollback found it already expired");
        } else {
            LOG_ORDER_WARN(r->order_no, "rollback did not reach Redis; the reaper will return the stock");
        }
        answer_failed(r, "order could not be queued, please retry");
    }
    order_finish(r);
}

/* Undo a reservation whose order did not reach Kafka (to: ROLLING_BACK), or one whose
 * script's verdict was lost (to: FORGETTING), then answer (the request is finished by
 * on_rolled_back). Without the rollback the reaper returns the stock after
 * seckill.pre-reduce-timeout. */
static void rollback_and_answer(struct order *r, enum executestage to)
{
    forget_winner(r);
    move(r, to);
    int sent = release_send(r, on_rolled_back);
    if (sent == 0 || (sent < 0 && release_later(r, on_rolled_back)))
        return;
    if (sent < 0)
        LOG_ORDER_WARN(r->order_no, "rollback could not be sent; the reaper will return the stock");
    answer_failed(r, "order could not be queued, please retry");
    order_finish(r);
}

static void answer_timed_out(struct order *r)
{
    if (!r->d.http)
        return;
    observe_latency(r);
    unavailable(r->gw, r->d.http, r->user_id, r->activity_id, "request timed out, please retry", 1);
    r->d.http = NULL;
}

/* The rollback sent at the request deadline while the delivery was still out: as after a
 * failed delivery, Redis decides (docs/protocol.md, "Request timeout"). The delivery
 * report still comes and finishes its share. */
static void on_deadline_rolled_back(redisReply *reply, void *privdata)
{
    struct order *r = privdata;
    long long verdict = reply && reply->type == REDIS_REPLY_INTEGER ? reply->integer : -1;
    if (verdict < 0 && release_later(r, on_deadline_rolled_back))
        return;  /* still held: an ack meanwhile must not answer 200 */
    r->d.held = false;
    if (verdict == 2) {
        LOG_ORDER_INFO(r->order_no, "past the request timeout but in Kafka; answering accepted");
        delivery_accept(&r->d);
    } else {
        if (verdict == 1) {
            metrics_inc(METRIC_ORDERS_ROLLED_BACK);
            forget_winner(r);
            r->released_at_deadline = true;
            LOG_ORDER_INFO(r->order_no, "not delivered within the request timeout; rolled back");
        } else if (verdict < 0) {
            LOG_ORDER_WARN(r->order_no, "rollback at the request timeout did not reach Redis");
        }
        answer_timed_out(r);
    }
    order_finish(r);
}

/* Sends release.lua for an order whose delivery report has not come by the deadline.
 * Without Redis (or with rollback off) the delivery report answers, however late. */
static void rollback_at_deadline(struct order *r)
{
    if (release_send(r, on_deadline_rolled_back) != 0)
        return;
    r->d.held = true;  /* an ack arriving now must not answer 200 for what may be released */
    r->holds++;
    move(r, EXECUTESTAGE_ROLLING_BACK);
}

/* pending.h's hook at http.request-timeout-ms: a 503 only where it cannot turn out a lie. */
static void on_request_deadline(struct pending *p)
{
    struct order *r = (struct order *)((char *)p - offsetof(struct order, p));
    switch (r->stage) {
    case EXECUTESTAGE_RESERVING:
        answer_timed_out(r);  /* a late OK verdict releases the stock (on_executed) */
        break;
    case EXECUTESTAGE_DELIVERING:
        rollback_at_deadline(r);  /* Redis was away at the cut: try again */
        break;
    case EXECUTESTAGE_ROLLING_BACK:
    case EXECUTESTAGE_FORGETTING:
        break;  /* its verdict answers within redis.timeout-ms */
    case EXECUTESTAGE_PROMISED:
    case EXECUTESTAGE_REDELIVERING:
        break;  /* answered 200 already */
    case EXECUTESTAGE_COUNT:
        break;  /* not a stage */
    }
}

/* redis.timeout-ms before the deadline, an order still with Kafka is rolled back, so that
 * the verdict that decides its answer comes by the deadline. */
static void on_delivery_cut(struct pending *p)
{
    struct order *r = (struct order *)((char *)p - offsetof(struct order, cut));
    if (r->stage == EXECUTESTAGE_DELIVERING)
        rollback_at_deadline(r);
}

static void observe_delivery(const struct order *r)
{
    metrics_observe(METRIC_KAFKA_DELIVERY, clock_mono_us() - r->d.produced_us);
}

/* delivery_ops.acked: the order is durably in Kafka; the reaper must leave it alone. */
static void on_acked(struct delivery *d)
{
    struct order *r = (struct order *)d;
    observe_delivery(r);
    metrics_inc(METRIC_ORDERS_ACCEPTED);
    char member[ORDERNO_LEN + HOLDER_LEN], holder[HOLDER_LEN];
    holder_format(holder, sizeof(holder), r->user_id, r->slot);
    snprintf(member, sizeof(member), "%s|%s", r->order_no, holder);
    queuedmarks_add(r->gw->marks, r->activity_id, r->bucket, member);
}

/* delivery_ops.failed: Kafka refused or lost the order; the rollback answers. */
static void on_not_delivered(struct delivery *d, rd_kafka_resp_err_t err, bool at_produce)
{
    struct order *r = (struct order *)d;
    if (!at_produce)
        observe_delivery(r);
    metrics_inc(METRIC_KAFKA_DELIVERY_FAILURES);
    if (at_produce)
        LOG_ORDER_WARN(r->order_no, "kafka produce refused: %s", rd_kafka_err2str(err));
    else
        LOG_ORDER_WARN(r->order_no, "kafka delivery failed: %s", rd_kafka_err2str(err));
    if (r->stage == EXECUTESTAGE_PROMISED || r->stage == EXECUTESTAGE_REDELIVERING) {
        redeliver_later(r);
        return;
    }
    if (r->stage == EXECUTESTAGE_ROLLING_BACK && (r->d.held || r->released_at_deadline)) {
        /* The release sent at the deadline is out: its verdict answers. A second one
         * would only race it. Or it rolled the order back already: a second one would
         * find nothing and say the reservation had expired, which it had not (a broker
         * cut off from the others, whose produce requests time out after the deadline). */
        order_finish(r);
        return;
    }
    if (at_produce)
        r->may_live = false;  /* refused: no consumer can ever have it */
    rollback_and_answer(r, EXECUTESTAGE_ROLLING_BACK);
}

static void on_finished(struct delivery *d)
{
    order_finish((struct order *)d);
}

static const struct delivery_ops order_delivery = {
    .accepted = answer_accepted,
    .acked = on_acked,
    .failed = on_not_delivered,
    .finish = on_finished,
};

static void produce(struct order *r)
{
    struct orderevent ev;
    memcpy(ev.order_no, r->order_no, sizeof(ev.order_no));
    ev.user_id = r->user_id;
    ev.activity_id = r->activity_id;
    ev.coupon_id = r->coupon_id;
    ev.created_ms = r->accepted_ms;
    ev.slot = r->slot;
    char payload[ORDERMSG_MAX];
    int len = ordermsg_encode(r->gw->activities, &ev, r->bucket, payload, sizeof(payload));
    /* No key: keyless orders go sticky into one partition per linger window, so a produce
     * request carries many orders (docs/protocol.md, "Orders on the topic"). */
    r->may_live = true;
    delivery_send(&r->d, r->gw->kafka, r->gw->cfg->reply_after_ack, NULL, payload, len);
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

static void remember_winner(struct order *r, const char *order_no)
{
    struct activity *a = activity_cache_find(r->gw->activities, r->activity_id);
    uint64_t id;
    int64_t activity_id;
    /* A sale of several orders per user keeps no winners (activity.h). */
    if (a && a->per_user <= 1 && orderno_parse(order_no, &id, &activity_id) == 0)
        intmap_put(&a->winners, r->user_id, id);
}

/* executebatch's verdict: reply is this request's element of the script's answer. */
static void on_executed(struct executebatch_item *script, const redisReply *reply)
{
    struct order *r = (struct order *)((char *)script - offsetof(struct order, script));
    if (!reply || reply->type != REDIS_REPLY_ARRAY || reply->elements < 1 ||
        reply->element[0]->type != REDIS_REPLY_STRING) {
        if (reply && reply->type == REDIS_REPLY_ERROR)
            LOG_ORDER_WARN(r->order_no, "execute script failed: %s", reply->str);
        if (!reply && r->script.sent && !r->gw->cfg->reply_after_ack) {
            /* The script was sent and its verdict lost (a dropped connection): Redis may
             * still run it, and with reply-after-ack off a reaper delivers a stale
             * reservation instead of expiring it, so a 503 now could end SUCCESS. The
             * answer waits for release.lua's 'forget' (also when the deadline answered it
             * already: the reservation must not outlive that 503). */
            r->may_live = true;
            rollback_and_answer(r, EXECUTESTAGE_FORGETTING);
            return;
        }
        answer_failed(r, "stock service unavailable, please retry");
        order_finish(r);
        return;
    }
    const char *verdict = reply->element[0]->str;
    struct executeverdict v = executeverdict_of(verdict);
    if (v.action == EXECUTEVERDICT_RESERVED) {
        r->coupon_id = element_int(reply, 2, 0);
        int64_t slot = element_int(reply, 3, 1);
        r->slot = slot >= 1 && slot <= HOLDER_MAX_SLOT ? (int)slot : 1;
        if (!r->d.http) {
            /* Told 503 already (deadline or shutdown): the order must not reach Kafka. */
            LOG_ORDER_INFO(r->order_no, "reserved after its client was answered; releasing it");
            rollback_and_answer(r, EXECUTESTAGE_ROLLING_BACK);
            return;
        }
        if (r->script.unreplicated) {
            /* A failover now could forget the reservation while Kafka has the order. */
            LOG_ORDER_INFO(r->order_no, "reservation not acknowledged by enough replicas; releasing it");
            rollback_and_answer(r, EXECUTESTAGE_ROLLING_BACK);
            return;
        }
        remember_winner(r, r->order_no);
        move(r, EXECUTESTAGE_DELIVERING);
        produce(r);
        return;
    }
    struct activity *a = activity_cache_find(r->gw->activities, r->activity_id);
    observe_latency(r);
    switch (v.action) {
    case EXECUTEVERDICT_RESERVED:
        break;  /* above */
    case EXECUTEVERDICT_REFUSE: {
        const char *holder = v.holder ? element_str(reply, 1) : NULL;
        if (holder)
            remember_winner(r, holder);
        if (v.cancelled && a)
            a->cancelled = true;
        refuse(r->gw, r->d.http, r->user_id, r->activity_id, v.status, v.message,
               v.retry_after ? element_int(reply, 1, 1) : 0, holder);
        break;
    }
    case EXECUTEVERDICT_SOLD_OUT: {
        /* A bucketed sale is sold out only when every bucket is: until then the stock left
         * elsewhere is moved here (rebalance.h) and the client retries. A sale this
         * gateway's cache does not know yet, or knows with fewer buckets than the script
         * says, cannot be judged: the client retries once the cache has it. */
        int64_t buckets = element_int(reply, 1, 1);
        if (buckets > 1 && (!a || a->nbuckets != buckets)) {
            activity_cache_refresh(r->gw->activities);
            unavailable(r->gw, r->d.http, r->user_id, r->activity_id,
                        "the sale is being set up, please retry", 1);
        } else if (!a || activity_bucket_empty(r->gw->activities, a, r->bucket)) {
            refuse(r->gw, r->d.http, r->user_id, r->activity_id, REPLY_OUT_OF_STOCK, NULL, 0, NULL);
        } else {
            metrics_inc(METRIC_BUCKET_EMPTY_RETRIES);
            rebalance_soon(r->gw->rebalance);
            unavailable(r->gw, r->d.http, r->user_id, r->activity_id,
                        "stock is being moved to your part of the sale, please retry", 1);
        }
        break;
    }
    case EXECUTEVERDICT_SETUP:
        /* the activity has buckets this gateway does not know yet */
        activity_cache_refresh(r->gw->activities);
        unavailable(r->gw, r->d.http, r->user_id, r->activity_id, v.message, 1);
        break;
    case EXECUTEVERDICT_LOST:
        unavailable(r->gw, r->d.http, r->user_id, r->activity_id, v.message, 1);
        break;
    case EXECUTEVERDICT_UNKNOWN:
        LOG_ORDER_ERROR(r->order_no, "unexpected execute answer %s", verdict);
        unavailable(r->gw, r->d.http, r->user_id, r->activity_id, v.message, 0);
        break;
    }
    r->d.http = NULL;
    order_finish(r);
}

static bool local_answer(struct gateway *gw, struct evhttp_request *req, int64_t activity_id,
                         int64_t user_id);

/* The answers the gateway can give without I/O. Returns true when it replied. */
static bool answer_locally(struct gateway *gw, struct evhttp_request *req, int64_t activity_id,
                           int64_t user_id)
{
    bool answered = local_answer(gw, req, activity_id, user_id);
    if (answered)
        metrics_inc(METRIC_LOCAL_ANSWERS);
    return answered;
}

static bool local_answer(struct gateway *gw, struct evhttp_request *req, int64_t activity_id, int64_t user_id)
{
    const char *limited;
    int64_t retry_after;
    /* First: a banned client takes no permit from the buckets everybody shares. */
    if (bans_refused(gw->bans, req, user_id, activity_id, &limited, &retry_after)) {
        refuse(gw, req, user_id, activity_id, REPLY_BLOCKED, limited, retry_after, NULL);
        return true;
    }
    if (gw->cfg->enable_rate_limit && ratelimit_refused(gw, req, &limited, &retry_after)) {
        refuse(gw, req, user_id, activity_id, REPLY_RATE_LIMITED, limited, retry_after, NULL);
        return true;
    }
    struct activity *a = activity_cache_find(gw->activities, activity_id);
    if (!a || !a->loaded)
        return false;
    switch (activity_status_at(a, clock_wall_ms())) {
    case ACTIVITY_PENDING:
        refuse(gw, req, user_id, activity_id, REPLY_NOT_STARTED, NULL, 0, NULL);
        return true;
    case ACTIVITY_ENDED:
        refuse(gw, req, user_id, activity_id, REPLY_ENDED, NULL, 0, NULL);
        return true;
    case ACTIVITY_CANCELLED:
        refuse(gw, req, user_id, activity_id, REPLY_CANCELLED, NULL, 0, NULL);
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
        refuse(gw, req, user_id, activity_id, REPLY_DUPLICATE, NULL, 0, order_no);
    } else {
        refuse(gw, req, user_id, activity_id, REPLY_OUT_OF_STOCK, NULL, 0, NULL);
    }
    return true;
}

void execute_request(struct gateway *gw, struct evhttp_request *req)
{
    struct httpparams params;
    char err[160];
    char token[HTTPPARAMS_VALUE_LEN] = "";
    int64_t user_id = 0, activity_id = 0;  /* 0 until read: the answer says null */
    int64_t id;
    enum reply_status status = REPLY_INVALID;
    int bad = httpparams_parse(req, &params, err, sizeof(err)) != 0 ||
              httpparams_get_id(&params, "activityId", gw->cfg->http_long_ids, &id, err, sizeof(err)) != 0;
    if (!bad)
        activity_id = id;
    bad = bad || auth_user(gw->cfg, req, &params, &id, &status, err, sizeof(err)) != 0;
    if (!bad)
        user_id = id;
    if (!bad && gw->cfg->require_token &&
        httpparams_get(&params, "token", token, sizeof(token), err, sizeof(err)) != 1) {
        status = REPLY_FORBIDDEN;
        snprintf(err, sizeof(err), "a purchase token from GET /seckill/token is required");
        bad = 1;
    }
    httpparams_free(&params);
    if (bad) {
        refuse(gw, req, user_id, activity_id, status, err, 0, NULL);
        return;
    }
    if (gw->draining) {
        unavailable(gw, req, user_id, activity_id, "shutting down", 1);
        return;
    }
    char nonce[PURCHASETOKEN_NONCE_LEN] = "-";
    if (gw->cfg->require_token &&
        purchasetoken_check(gw->cfg->token_secret, token, activity_id, user_id, clock_wall_ms() / 1000,
                            nonce) != 0) {
        refuse(gw, req, user_id, activity_id, REPLY_FORBIDDEN, "purchase token invalid or expired", 0, NULL);
        return;
    }
    if (answer_locally(gw, req, activity_id, user_id))
        return;
    if (!nodelease_valid(gw->lease) || !redisconn_ready(gw->redis)) {
        unavailable(gw, req, user_id, activity_id, "stock service unavailable, please retry", 1);
        return;
    }
    struct order *r = order_new(gw);
    if (!r) {
        unavailable(gw, req, user_id, activity_id, "out of memory", 1);
        return;
    }
    delivery_init(&r->d, &order_delivery, req);
    r->holds = 1;
    r->stage = EXECUTESTAGE_RESERVING;  /* where every request starts */
    pending_start(gw->pending, &r->p, &r->d.http, on_request_deadline);
    pending_start(gw->delivery_cut, &r->cut, &r->d.http, on_delivery_cut);
    r->gw = gw;
    r->user_id = user_id;
    r->activity_id = activity_id;
    r->slot = 1;
    r->accepted_ms = clock_wall_ms();
    r->started_us = clock_mono_us();
    r->order_id = orderno_next(&gw->orderno, r->accepted_ms);
    snprintf(r->user, sizeof(r->user), "%" PRId64, user_id);
    orderno_format(r->order_no, sizeof(r->order_no), r->order_id, activity_id);
    gw->in_flight++;
    struct keys_set scratch;
    (void)activity_user_keys(gw->activities, activity_id, user_id, &r->bucket, &scratch);
    r->script.activity_id = activity_id;
    r->script.bucket = r->bucket;
    r->script.user = r->user;
    r->script.order_no = r->order_no;
    r->script.accepted_ms = r->accepted_ms;
    r->script.verdict = on_executed;
    clientip_of(gw->cfg, req, r->script.ip, sizeof(r->script.ip));
    snprintf(r->script.nonce, sizeof(r->script.nonce), "%s", nonce);
    executebatch_add(gw->batch, &r->script);
}
