#ifndef SK_NODELEASE_H
#define SK_NODELEASE_H

#include <stdbool.h>
#include <stdint.h>

#include "gateway/redisconn.h"

struct gateway;

/* The gateway's order-number node id, held as a lease in Redis (schema/lua/nodelease.lua):
 * field <id> of the hash seckill:nodes holds this process's random token and an expiry
 * seckill.node-lease-ms ahead by Redis's clock, pushed on by a renew every third of it.
 * An expired lease is free for any gateway to take. Two live
 * gateways therefore never hold one id, however many times gateways restarted, and a dead
 * gateway's id comes free by itself.
 *
 * The lease counts as held only until the TTL measured from when the acquire or the last
 * successful renew was SENT, minus a margin: that is never later than the key's expiry in
 * Redis, so this gateway stops making order numbers with the id before any other gateway
 * can take it. While it holds none (Redis unreachable longer than the TTL, all 1,024 ids
 * held, or another gateway took the id), execute answers 503 and the lease is sought again.
 *
 * Callbacks of requests still pending when Redis is freed run with a NULL reply: free the
 * Redis connection before the lease. */

struct nodelease;

struct nodelease *nodelease_new(struct gateway *gw);
void nodelease_free(struct nodelease *lease);

/* After every Redis (re)connect: seek a lease when none is held, renew one that lapsed
 * meanwhile (a partition longer than the lease) without waiting for the next tick. */
void nodelease_on_connect(struct nodelease *lease);

/* Whether order numbers may be made now; sets gw->orderno's node when a lease is held. */
bool nodelease_valid(const struct nodelease *lease);

/* The id held, or -1. */
int nodelease_node(const struct nodelease *lease);

/* Asks Redis for the ids whose lease has not expired: cb gets an array of integers (or
 * NULL). Returns redisconn_eval's result. */
int nodelease_query_live(struct nodelease *lease, redisconn_cb cb, void *privdata);

/* At shutdown, once no order number will be made: gives the id back at once instead of
 * letting it expire. */
void nodelease_release(struct nodelease *lease);

#endif
