#ifndef SK_RESERVATION_H
#define SK_RESERVATION_H

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/luascript.h"

struct consumer;

/* The Redis halves of a batch, each a Lua script per activity, in chunks of
 * RESERVATION_CHUNK orders: confirm.lua claims each reservation (or finds the order confirmed already)
 * before MySQL is written; finalize.lua shows SUCCESS after the COMMIT; abandon.lua ends
 * the claimed orders MySQL refused for good. */

#define RESERVATION_CHUNK 500   /* orders per confirm.lua / finalize.lua call */

/* Why the last script call of a step failed. */
enum reservation_failure {
    RESERVATION_FAILURE_RUN,       /* the script or its answer, for these orders only */
    RESERVATION_FAILURE_LINK,      /* no connection or no answer */
    RESERVATION_FAILURE_REPLICAS,  /* fewer replicas than redis.wait-replicas acknowledged it */
};

/* A step: sets c->batch.verdicts of every order, and settles those of archived sales in
 * MySQL (archived.h). Returns 0, or -1 with err set. */
int reservation_claim(struct consumer *c, char *err, size_t errlen);
/* A step, only after the COMMIT (I6: SUCCESS is never visible before the row is): every
 * accepted order with its row in MySQL becomes SUCCESS. Returns 0, or -1 with err set.
 * reservation_claim parks the runs (an activity's bucket) it cannot claim in, reservation_finalize
 * those it cannot finalize (parking.h), while the lot has room; the rest go on. */
int reservation_finalize(struct consumer *c, char *err, size_t errlen);
/* Whether the orders of a failed call may be parked: in a Redis Cluster always (the
 * others are on other masters), on one Redis only when the script failed on them alone. */
bool reservation_may_park(const struct consumer *c);
/* Parks accepted order i of the batch (a later step failed on it). Returns 0, or -1 when
 * the lot has no room. */
int reservation_park(struct consumer *c, size_t i);
/* One script call routed by keys[0], followed by a WAIT when redis.wait-replicas > 0:
 * the reply (caller frees), or NULL with err on an error reply, a lost connection (then
 * dropped) or fewer replicas than asked. */
redisReply *reservation_eval(struct consumer *c, enum luascript_id id, int nkeys, const char *const *keys,
                       int nargs, const char *const *args, char *err, size_t errlen);
/* A step, only after the refused orders' dead letters are acknowledged (so that a crash
 * in between replays them rather than losing them): every accepted order MySQL refused
 * (b->refused) becomes FAILED, its stock back and its user free, as a released
 * reservation; those refused by activity_sold_within_stock are supersede.h's. Returns 0, or
 * -1 with err set. */
int reservation_abandon(struct consumer *c, char *err, size_t errlen);

#endif
