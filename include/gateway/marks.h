#ifndef SK_MARKS_H
#define SK_MARKS_H

#include <event2/event.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "gateway/redisconn.h"

/* "This order is durably in Kafka" marks, batched per activity and written with
 * queued.lua a few milliseconds after the delivery reports arrive. A marked reservation
 * leaves the reaper's view, so consumer lag can never expire an order Kafka holds.
 * Marks that fail to reach Redis stay buffered and are retried. */

struct marks;

struct marks *marks_new(struct event_base *base, const struct config *cfg, struct redisconn *redis);
void marks_free(struct marks *m);
/* member is "orderNo|userId" */
void marks_add(struct marks *m, int64_t activity_id, const char *member);
void marks_flush(struct marks *m);
/* Marks buffered or on their way to Redis. */
size_t marks_pending(const struct marks *m);

#endif
