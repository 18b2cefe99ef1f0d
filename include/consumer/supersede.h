#ifndef SK_SUPERSEDE_H
#define SK_SUPERSEDE_H

#include <stddef.h>

struct consumer;

/* The consumer as the last line against a Redis failover that lost writes. Replication is
 * asynchronous: a master can die after it reserved (or claimed, or finalized) an order and
 * before its replica got it; the promoted replica then sells that user, or that unit, again,
 * while the first order is in Kafka or already in MySQL. MySQL refuses the second:
 * UNIQUE(user_id, activity_id, user_slot) (the upsert skips it: persisted as a conflict) or
 * the CHECK activity_sold_within_stock (batch.refused = BATCH_REFUSED_SOLD_OUT). Such a loser ends
 * FAILED without its unit going back to the stock — it stands for the winner Redis forgot,
 * which MySQL has sold — and the winners MySQL holds for that sale are recorded SUCCESS in
 * Redis with their users (supersede.lua). docs/protocol.md, "Redis failover". */

/* A step, after finalize and abandon: ends this batch's losers. Returns 0 (also when there
 * are none, without any I/O), or -1 with err set (retry: the script is idempotent). */
int supersede_orders(struct consumer *c, char *err, size_t errlen);

#endif
