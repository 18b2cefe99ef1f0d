#ifndef SK_REDISNODE_H
#define SK_REDISNODE_H

#include <event2/event.h>
#include <hiredis/hiredis.h>
#include <stdbool.h>

#include "common/config.h"
#include "common/luascript.h"

/* One asynchronous hiredis connection to one Redis server on the libevent loop; redisconn
 * routes the gateway's commands over one of these (single Redis) or one per cluster node.
 *
 * - Commands pipeline on the context; replies come back in order.
 * - Every command carries a deadline (redis.timeout-ms). When the oldest one passes it,
 *   the connection is dropped: every pending callback runs at once with reply == NULL,
 *   so no request waits on a frozen Redis. hiredis 0.14 has no timeout of its own.
 * - While disconnected, sends fail at once (the caller answers 503) and a reconnect is
 *   tried on a timer with exponential backoff. A connect unanswered for redis.timeout-ms
 *   (a partition drops the SYN, nothing refuses it) is given up and tried again, rather
 *   than left to the kernel's SYN retransmissions (1, 3, 7, 15 ... s).
 * - A script's NOSCRIPT answer sends SCRIPT LOAD and the same bytes again, which queue
 *   behind the load and succeed: scripts are cached per server.
 *
 * Callbacks run exactly once, with reply == NULL on any failure; the reply is owned by
 * hiredis and valid only during the callback. */

struct redisnode;

typedef void (*redisnode_cb)(redisReply *reply, void *privdata);
/* up: the connection was just established (scripts loaded), or lost. */
typedef void (*redisnode_event_cb)(void *arg, struct redisnode *node, bool up);

struct redisnode *redisnode_new(struct event_base *base, const struct config *cfg,
                                const struct luascript_set *scripts, const char *host, int port,
                                redisnode_event_cb on_event, void *arg);
/* Fails every pending command (reply NULL) and closes. */
void redisnode_free(struct redisnode *n);

bool redisnode_ready(const struct redisnode *n);
unsigned long redisnode_pending(const struct redisnode *n);
unsigned long redisnode_reconnects(const struct redisnode *n);

/* Sends the formatted command buf (hiredis copies it; the caller keeps it until cb has run,
 * for a NOSCRIPT retry). script: the script it runs, or LUASCRIPT_COUNT for none. asking:
 * preceded by ASKING (a slot being imported here). Returns 0 when sent (cb will run), -1
 * when not connected (cb will not run). */
int redisnode_send(struct redisnode *n, const char *buf, size_t len, enum luascript_id script,
                   bool asking, redisnode_cb cb, void *privdata);

#endif
