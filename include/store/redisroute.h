#ifndef SK_REDISROUTE_H
#define SK_REDISROUTE_H

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "common/luascript.h"

/* Blocking Redis for the consumer and seckillctl (never the gateway): one connection to
 * redis.host:redis.port, or, when redis.nodes is set, one per Redis Cluster master,
 * opened on first use.
 *
 * A command goes to the master of its first key's slot (slotmap). -MOVED reloads the map
 * (CLUSTER SLOTS) and resends to the new owner; -ASK sends ASKING and the command to the
 * node named, once, leaving the map alone; NOSCRIPT loads the script on that node and
 * resends. A broken connection is dropped and the map reloaded before the next command:
 * the command itself is not resent, since it may have run (the callers' steps retry).
 *
 * The struct owns its connections; redisroute_free closes them. */

struct redisroute;

/* command_timeout_ms bounds each command; connects use redis.timeout-ms. */
struct redisroute *redisroute_new(const struct config *cfg, int64_t command_timeout_ms);
void redisroute_free(struct redisroute *rr);

/* Connects (single) or loads the slot map from the first of redis.nodes that answers
 * (cluster), so a caller learns at once that Redis is not there. 0, or -1 with err. */
int redisroute_open(struct redisroute *rr, char *err, size_t errlen);
bool redisroute_cluster(const struct redisroute *rr);

/* The connection of the master serving key's slot, for a caller's own pipeline or
 * MULTI (whose keys must then share the slot). NULL with err. Valid until the next call
 * that may reload the map (one after redisroute_failed, or a redirected command): a
 * reload closes the connections of the nodes that left the map. */
redisContext *redisroute_for_key(struct redisroute *rr, const char *key, size_t keylen, char *err,
                                 size_t errlen);
/* The node (an index, stable while that node stays in the map) of the master serving key's
 * slot, or -1 with err: seckillctl places an activity's buckets on different masters with it. */
int redisroute_master_of(struct redisroute *rr, const char *key, size_t keylen, char *err, size_t errlen);
/* How many masters serve slots (1 for a single Redis), or -1 with err. */
int redisroute_masters(struct redisroute *rr, char *err, size_t errlen);
/* "host:port" of node. */
const char *redisroute_node_name(const struct redisroute *rr, int node, char *buf, size_t len);
/* Such a pipeline failed (c broken, or a redirect among its replies): c is closed when
 * broken and the map is reloaded before the next command. */
void redisroute_failed(struct redisroute *rr, redisContext *c);

/* argv[key] is the first key, or key = -1 for a command without one (any master).
 * Returns the reply (caller frees; Redis errors included), or NULL with err. */
redisReply *redisroute_argv(struct redisroute *rr, int argc, const char **argv, const size_t *lens,
                            int key, char *err, size_t errlen);
/* EVALSHA of s, routed by keys[0]. */
redisReply *redisroute_script(struct redisroute *rr, const struct luascript *s, int nkeys,
                              const char *const *keys, int nargs, const char *const *args,
                              char *err, size_t errlen);
/* redisroute_script, then WAIT redis.wait-replicas redis.wait-timeout-ms on the connection
 * that ran it (the node a redirect led to): *replicas is what WAIT counted, -1 when it
 * failed or the script did not run. */
redisReply *redisroute_script_wait(struct redisroute *rr, const struct luascript *s, int nkeys,
                                   const char *const *keys, int nargs, const char *const *args,
                                   long long *replicas, char *err, size_t errlen);

#endif
