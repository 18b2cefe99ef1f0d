#ifndef SK_DEADLETTER_H
#define SK_DEADLETTER_H

#include <stddef.h>

struct consumer;

/* The dead-letter producer: messages that cannot become orders, coupon.used events MySQL
 * finds inconsistent, and the orders and events MySQL refused for good (persist's split)
 * go to kafka.dead-letter-topic with headers naming the error (x-error) and the source
 * partition and offset, before the batch's offsets may commit past them. */

/* Creates c->dlq, an idempotent producer. Returns 0, or -1 with err set. */
int deadletter_start(struct consumer *c, char *err, size_t errlen);
/* A step of the batch: produces every PENDING dead letter of c->batch and waits (at most
 * 10 s, 1 s once stopping) for their delivery reports. Returns 0 when all are delivered,
 * else -1 with err set (retry: only the undelivered ones go again). */
int deadletter_send(struct consumer *c, char *err, size_t errlen);
/* Serves the producer's own events (errors) between batches. */
void deadletter_poll(struct consumer *c);
/* Flushes (2 s at most) and destroys the producer. Before the batch is freed: its dead
 * letters are the opaques of messages still queued here. */
void deadletter_close(struct consumer *c);

#endif
