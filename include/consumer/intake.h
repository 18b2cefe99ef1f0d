#ifndef SK_INTAKE_H
#define SK_INTAKE_H

struct consumer;

/* Reading one batch: polls (the stash first) until consumer.batch-size messages, or
 * consumer.batch-timeout-ms after the first one, or a stop; returns at once when idle.
 * Each message becomes an order, a coupon.used event or a dead letter of c->batch, and
 * its offset is noted. Out of memory sets c->stop, leaving that message to replay. */
void intake_fill(struct consumer *c);

#endif
