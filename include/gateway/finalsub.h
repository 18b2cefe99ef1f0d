#ifndef SK_FINALSUB_H
#define SK_FINALSUB_H

#include <event2/event.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/config.h"
#include "gateway/redisconn.h"

/* The gateway's subscriptions to the news of final orders: the scripts that make an order
 * SUCCESS or FAILED SPUBLISH "<STATUS> <orderNo> ..." to seckill:final:{tag}, the tag of
 * the order's bucket (the same slot as its keys, so in a Redis Cluster the message stays
 * on the shard that owns the slot).
 *
 * - A channel is subscribed while someone holds it (finalsub_hold) and for
 *   FINALSUB_GRACE_MS after the last finalsub_release: a burst of waiters on one sale
 *   costs one SSUBSCRIBE.
 * - One subscriber connection per node, apart from redisconn's (a subscribed connection
 *   takes no other command), opened on first need. hiredis 0.14's async API knows only
 *   SUBSCRIBE/PSUBSCRIBE, so the replies are read with its reader and parsed here.
 * - Cluster: the channel goes to the master of its slot, from a slot map of this module's
 *   own (CLUSTER SLOTS sent through redisconn). A -MOVED answer, a server-sent
 *   sunsubscribe (the slot left that node) or a lost connection makes the channel
 *   subscribe again, with the map reloaded, on a timer with backoff.
 * - Messages published while a channel was not subscribed are lost: every (re)subscribe
 *   acknowledged calls on_subscribed(tag) so that the caller re-reads what it waits for.
 *
 * Callbacks run on the loop; the strings they get are valid during the call only. */

#define FINALSUB_GRACE_MS 5000

/* tag: the hash tag (no braces); status: SUCCESS or FAILED; order_no one order. */
typedef void (*finalsub_final_fn)(void *arg, const char *tag, const char *status, const char *order_no);
typedef void (*finalsub_subscribed_fn)(void *arg, const char *tag);

struct finalsub;

struct finalsub *finalsub_new(struct event_base *base, const struct config *cfg, struct redisconn *redis,
                              finalsub_final_fn on_final, finalsub_subscribed_fn on_subscribed, void *arg);
void finalsub_free(struct finalsub *fs);

/* One more holder of the channel of tag. Returns 1 when it is subscribed already (the
 * caller re-reads now), 0 when on_subscribed will tell, -1 out of memory. */
int finalsub_hold(struct finalsub *fs, const char *tag);
void finalsub_release(struct finalsub *fs, const char *tag);

/* Channels subscribed now (acknowledged). */
size_t finalsub_subscribed(const struct finalsub *fs);
unsigned long finalsub_resubscribes(const struct finalsub *fs);

#endif
