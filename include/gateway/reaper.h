#ifndef SK_REAPER_H
#define SK_REAPER_H

#include <event2/event.h>

#include "gateway/activity.h"
#include "common/config.h"
#include "gateway/redisconn.h"

/* Expires reservations that never reached Kafka (older than seckill.pre-reduce-timeout
 * and not marked queued) on a timer: the stock returns, the user may try again, the
 * order becomes FAILED. Safe with several gateways: release.lua is atomic. */

struct reaper;

struct reaper *reaper_new(struct event_base *base, const struct config *cfg, struct redisconn *redis,
                          struct activity_cache *activities);
void reaper_free(struct reaper *reaper);

#endif
