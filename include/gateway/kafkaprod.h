#ifndef SK_KAFKAPROD_H
#define SK_KAFKAPROD_H

#include <event2/event.h>
#include <librdkafka/rdkafka.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/config.h"

/* The gateway's idempotent Kafka producer, driven by the libevent loop: librdkafka writes
 * a byte to a pipe when its main queue has events (delivery reports, errors, stats); the
 * loop drains the pipe and serves them with rd_kafka_poll(rk, 0). Nothing here blocks
 * except kafkaprod_flush, which only shutdown calls. */

/* Every message carries a ticket, embedded in the sender's request context; its `done`
 * runs on the loop exactly once per accepted produce, with RD_KAFKA_RESP_ERR_NO_ERROR
 * when the message is durably in Kafka (acks=all). */
struct kafkaprod_ticket;
typedef void (*kafkaprod_done_fn)(struct kafkaprod_ticket *ticket, rd_kafka_resp_err_t err);
struct kafkaprod_ticket {
    kafkaprod_done_fn done;
};

struct kafkaprod;

struct kafkaprod *kafkaprod_new(struct event_base *base, const struct config *cfg, char *err,
                                size_t errlen);
void kafkaprod_free(struct kafkaprod *kp);

/* 0 when queued (ticket->done will run), else the error and no callback
 * (queue full, unknown topic, fatal producer state, or kp NULL: the producer is gone at
 * shutdown). The queries below take NULL too. */
rd_kafka_resp_err_t kafkaprod_produce(struct kafkaprod *kp, const void *key, size_t keylen,
                                      const void *payload, size_t len, struct kafkaprod_ticket *ticket);

/* Waits for every queued message's delivery report; shutdown only. */
int kafkaprod_flush(struct kafkaprod *kp, int timeout_ms);
/* True while at least one broker connection is up (from the 1 s statistics). */
bool kafkaprod_healthy(const struct kafkaprod *kp);
int kafkaprod_in_flight(const struct kafkaprod *kp);

#endif
