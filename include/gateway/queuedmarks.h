#ifndef SK_QUEUEDMARKS_H
#define SK_QUEUEDMARKS_H

#include <event2/event.h>
#include <stddef.h>
#include <stdint.h>

#include "gateway/activity.h"
#include "common/config.h"
#include "gateway/redisconn.h"

/* "This order is durably in Kafka" marks, batched per activity and written with
 * queued.lua a few milliseconds after the delivery reports arrive. A marked reservation
 * leaves the reaper's view, so consumer lag can never expire an order Kafka holds.
 * Marks that fail to reach Redis stay buffered and are retried. */

struct queuedmarks;

/* The keys of each activity come from its cached entry (activity_keys). */
struct queuedmarks *queuedmarks_new(struct event_base *base, const struct config *cfg,
                                    struct redisconn *redis, struct activity_cache *activities);
void queuedmarks_free(struct queuedmarks *m);
/* member is "orderNo|userId"; bucket is the user's bucket of the activity (0 unbucketed). */
void queuedmarks_add(struct queuedmarks *m, int64_t activity_id, int bucket, const char *member);
void queuedmarks_flush(struct queuedmarks *m);
/* Marks buffered or on their way to Redis. */
size_t queuedmarks_pending(const struct queuedmarks *m);
/* The wall-clock millisecond of the oldest order (its number's time) whose mark has not
 * reached Redis yet; INT64_MAX when none. The reaper leaves reservations from then on
 * alone: such an order is in Kafka, and its mark only waits for Redis. */
int64_t queuedmarks_oldest_ms(const struct queuedmarks *m);

#endif
