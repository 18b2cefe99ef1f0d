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
 * The node table holds the seeds (redis.nodes) and the masters of the last CLUSTER SLOTS,
 * plus any node a redirect named since. Each load rebuilds it from the reply and the
 * seeds: a node no longer named leaves the table, so a cluster whose masters are replaced
 * at new addresses again and again never fills it. A node keeps its number while it stays
 * in the table, so a caller can index its connections by node; the number of a node that
 * left may be given to a node first heard of later, and slotmap_load says which numbers
 * changed hands so the caller closes (or drains) their connections first.
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

/* A set of node numbers: bit i is node i. */
typedef uint32_t slotmap_set;
_Static_assert(SLOTMAP_MAX_NODES <= 32, "a slotmap_set holds every node number");

struct slotmap {
    size_t count;                   /* nodes[0..count) are numbered; above is free */
    slotmap_set seeds;              /* kept by every load */
    struct slotmap_addr nodes[SLOTMAP_MAX_NODES];  /* port 0: a free number (see slotmap_known) */
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
/* The index of a, added when new (at the lowest free number); -1 when the table is full. */
int slotmap_node(struct slotmap *m, const struct slotmap_addr *a);
/* slotmap_node, and a stays in the table for good (an address of redis.nodes). */
int slotmap_seed(struct slotmap *m, const struct slotmap_addr *a);
/* Whether node numbers a node now (false for a number freed by a load, or out of range). */
bool slotmap_known(const struct slotmap *m, int node);
/* Replaces the owners with the CLUSTER SLOTS reply r of the node at asked_host (the host of
 * an entry Redis reports empty), and the table with the seeds and r's masters. Returns 0
 * with *dropped (when not NULL) the numbers whose node left the table or was replaced by
 * another, or -1 with err (the map is left unchanged). */
int slotmap_load(struct slotmap *m, const redisReply *r, const char *asked_host, slotmap_set *dropped,
                 char *err, size_t errlen);
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
