#ifndef SK_DELIVERY_H
#define SK_DELIVERY_H

#include <event2/http.h>
#include <librdkafka/rdkafka.h>
#include <stdbool.h>
#include <stdint.h>

#include "gateway/kafkaprod.h"

/* How a request that writes to Kafka ends: produce, wait for the delivery report, then
 * reply, or undo what the request did in Redis. POST /seckill/execute (order.created) and
 * POST /coupons/{id}/use (coupon.used) both end this way.
 *
 *   delivery_send --refused--> ops->failed(at_produce = true)
 *        |                     (reply-after-ack off: the success reply goes out here)
 *   delivery report --error--> ops->failed(at_produce = false)
 *        |
 *        ok --> ops->acked, the success reply if the client still waits, ops->finish
 *
 * The caller embeds a struct delivery first in its request context and casts back in the
 * callbacks. Ownership: the caller until delivery_send; from there the delivery report,
 * or ops->failed, which undoes (or, for an order its client was told 200 for already,
 * produces it again), answers a client still waiting and finishes the request
 * (at once or from a later callback of its own). `http` is the client's request until its
 * one reply is sent, NULL after: with reply-after-ack off the reply goes out before the
 * report, which still has to settle the Redis side. */

struct delivery;

struct delivery_ops {
    /* Sends the success reply; called only while d->http is set, which is cleared after. */
    void (*accepted)(struct delivery *d);
    /* Kafka holds the message (acks=all): the caller's bookkeeping. NULL for none. */
    void (*acked)(struct delivery *d);
    /* Kafka refused the message (at_produce) or failed to deliver it. Owns d. */
    void (*failed)(struct delivery *d, rd_kafka_resp_err_t err, bool at_produce);
    /* The request is over: frees the context d is embedded in. */
    void (*finish)(struct delivery *d);
};

struct delivery {
    struct kafkaprod_ticket ticket;  /* first: the delivery report hands it back */
    const struct delivery_ops *ops;
    struct evhttp_request *http;
    int64_t produced_us;             /* monotonic, set by delivery_send */
    bool held;                       /* the success reply waits on another verdict */
};

void delivery_init(struct delivery *d, const struct delivery_ops *ops, struct evhttp_request *http);
/* Produces payload keyed by key (a C string), or without a key (NULL): keyless messages
 * are batched "sticky" into one partition at a time by librdkafka; len < 0 means the
 * encoder failed, which counts as a message too large. d belongs to the delivery from here (see above). */
void delivery_send(struct delivery *d, struct kafkaprod *kp, bool reply_after_ack, const char *key,
                   const void *payload, int len);
/* Sends the success reply if the client still waits and the reply is not held. */
void delivery_accept(struct delivery *d);

#endif
