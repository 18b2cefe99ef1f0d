#ifndef SK_CLAIM_H
#define SK_CLAIM_H

#include <stddef.h>

struct consumer;

/* The two Redis halves of a batch, each a Lua script per activity, in chunks of
 * CLAIM_CHUNK orders: confirm.lua claims each reservation (or finds the order confirmed
 * already) before MySQL is written; finalize.lua shows SUCCESS after the COMMIT. */

#define CLAIM_CHUNK 500   /* orders per confirm.lua / finalize.lua call */

/* A step: sets c->batch.verdicts of every order. Returns 0, or -1 with err set. */
int claim_orders(struct consumer *c, char *err, size_t errlen);
/* A step, only after the COMMIT (I6: SUCCESS is never visible before the row is): every
 * accepted order with its row in MySQL becomes SUCCESS. Returns 0, or -1 with err set. */
int claim_finalize(struct consumer *c, char *err, size_t errlen);

#endif
