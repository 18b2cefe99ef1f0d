#ifndef SK_REDISCONN_H
#define SK_REDISCONN_H

#include <event2/event.h>
#include <hiredis/hiredis.h>
#include <limits.h>
#include <stdbool.h>

#include "common/config.h"
#include "common/luascript.h"

/* The gateway's Redis on the libevent loop: the one place every command goes through.
 *
 * - Single (redis.nodes empty): one connection (redisnode) to redis.host:redis.port.
 * - Cluster: a connection to every node of redis.nodes and to any node a slot map or a
 *   redirect names; the slot map (slotmap) comes from CLUSTER SLOTS at the first connect,
 *   every redis.cluster-refresh-ms, and soon after a MOVED or a lost node. A node that
 *   leaves the map (neither a seed nor a master any more) has its connection closed once
 *   the commands out on it are answered.
 * - A command goes to the master of its first key's slot (a script's KEYS[1], a plain
 *   command's argv[1]); every key of one call must share that slot (keys.h). -MOVED
 *   updates the map and resends there, -ASK resends once behind ASKING to the node named,
 *   on the loop, at most SLOTMAP_MAX_REDIRECTS hops.
 * - Each connection has today's deadline, reconnect with backoff and NOSCRIPT handling
 *   (redisnode.h). A master that is down fails only the commands of its slots, at once.
 *
 * Callbacks run exactly once, with reply == NULL on any failure; the reply is owned by
 * hiredis and valid only during the callback. */

typedef void (*redisconn_cb)(redisReply *reply, void *privdata);
typedef void (*redisconn_connect_cb)(void *arg);

struct redisconn;

struct redisconn *redisconn_new(struct event_base *base, const struct config *cfg,
                                const struct luascript_set *scripts);
void redisconn_free(struct redisconn *rc);

/* Called on the loop after every successful (re)connect of a node once the slot map is
 * known, and when it first is. */
void redisconn_on_connect(struct redisconn *rc, redisconn_connect_cb cb, void *arg);

unsigned long redisconn_pending(const struct redisconn *rc);
unsigned long redisconn_reconnects(const struct redisconn *rc);

/* True when the slot map is known and a master is connected. */
bool redisconn_ready(const struct redisconn *rc);
/* argv: the keys, then the arguments. Returns 0 when sent (cb will run), -1 when the
 * master of the first key's slot is not connected (cb will not run). */
int redisconn_eval(struct redisconn *rc, enum luascript_id script, int nkeys, int nargs,
                   const char *const *argv, const size_t *argvlen, redisconn_cb cb, void *privdata);
/* Like redisconn_eval, then WAIT redis.wait-replicas redis.wait-timeout-ms on the same
 * connection, which counts the replicas holding every write that connection made before
 * it. A connection has at most one WAIT outstanding (a WAIT blocks it in Redis): the
 * first call goes out with one pipelined behind it, the calls sent while it is out share
 * the next. After a MOVED or ASK the call waits for a WAIT of the node named, so the WAIT
 * always follows the script to the node that finally ran it. cb runs once, after a WAIT
 * sent after the script's reply has answered, with the script's reply (NULL on failure)
 * and the replicas that WAIT counted (-1 when it failed or could not be sent). */
typedef void (*redisconn_wait_cb)(redisReply *reply, long long replicas, void *privdata);
int redisconn_eval_wait(struct redisconn *rc, enum luascript_id script, int nkeys, int nargs,
                        const char *const *argv, const size_t *argvlen, redisconn_wait_cb cb,
                        void *privdata);
/* What redisconn_eval_replicated gives cb for the replicas when redis.wait-replicas is 0:
 * no WAIT was sent, and none was asked for. */
#define REDISCONN_UNWAITED LLONG_MAX
/* redisconn_eval_wait when redis.wait-replicas > 0; else the script alone, cb given
 * REDISCONN_UNWAITED. For callers that decide the same way whichever the setting. */
int redisconn_eval_replicated(struct redisconn *rc, enum luascript_id script, int nkeys, int nargs,
                              const char *const *argv, const size_t *argvlen, redisconn_wait_cb cb,
                              void *privdata);
int redisconn_command_argv(struct redisconn *rc, int argc, const char *const *argv,
                           const size_t *argvlen, redisconn_cb cb, void *privdata);

#endif
