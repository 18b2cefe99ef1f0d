#ifndef SK_SLOTMAP_H
#define SK_SLOTMAP_H

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/redisslot.h"

/* Which master serves which slot, and what a redirect asks for. Pure: the gateway
 * (redisconn, async) and the blocking clients (redisroute) both route with it.
 *
 * Nodes are numbered in the order they were first seen and keep their number when the
 * map is reloaded, so a caller can index its connections by node. A node that no longer
 * owns a slot stays listed (it may be a master again after a failover).
 *
 * Single mode is a map whose every slot belongs to redis.host:redis.port. */

#define SLOTMAP_MAX_NODES 32
#define SLOTMAP_HOST_LEN 64
/* MOVED/ASK hops one command may take before it fails: a slot moving under a command
 * settles in one or two. */
#define SLOTMAP_MAX_REDIRECTS 5

struct slotmap_addr {
    char host[SLOTMAP_HOST_LEN];
    int port;
};

struct slotmap {
    size_t count;
    struct slotmap_addr nodes[SLOTMAP_MAX_NODES];
    int8_t owner[REDISSLOT_COUNT];  /* index into nodes; -1 while no master serves it */
};

/* "host:port" of len bytes. Returns 0, or -1 when it is not one. */
int slotmap_parse_addr(const char *s, size_t len, struct slotmap_addr *out);
/* redis.nodes: "host:port,host:port,..." (spaces around commas allowed). Returns the
 * number of addresses (0 for an empty list), or -1 with err naming the bad part. */
int slotmap_parse_nodes(const char *list, struct slotmap_addr *out, size_t max, char *err,
                        size_t errlen);

void slotmap_init(struct slotmap *m);
void slotmap_single(struct slotmap *m, const char *host, int port);
/* The index of a, added when new; -1 when the table is full. */
int slotmap_node(struct slotmap *m, const struct slotmap_addr *a);
/* Replaces the owners with the CLUSTER SLOTS reply r of the node at asked_host (the host of
 * an entry Redis reports empty). Returns 0, or -1 with err (the map is left unchanged). */
int slotmap_load(struct slotmap *m, const redisReply *r, const char *asked_host, char *err,
                 size_t errlen);
int slotmap_owner(const struct slotmap *m, int slot);
int slotmap_owner_of_key(const struct slotmap *m, const char *key, size_t len);
/* Slots no master serves (0 for a whole map). */
size_t slotmap_uncovered(const struct slotmap *m);
bool slotmap_owns_any(const struct slotmap *m, int node);

enum slotmap_verdict {
    SLOTMAP_DONE,   /* the reply is the command's answer, error or not */
    SLOTMAP_MOVED,  /* the slot lives on another master for good: update, resend there */
    SLOTMAP_ASK,    /* the slot is migrating: ASKING + resend to that node, map unchanged */
};

struct slotmap_redirect {
    enum slotmap_verdict verdict;
    int slot;
    struct slotmap_addr to;
};

/* What a reply asks for. A malformed -MOVED/-ASK is DONE: the caller sees the error. */
enum slotmap_verdict slotmap_redirect(const redisReply *r, struct slotmap_redirect *out);
/* Follows rd: the node to resend to (a MOVED also gives it the slot), or -1 when the
 * table is full. */
int slotmap_follow(struct slotmap *m, const struct slotmap_redirect *rd);

#endif
