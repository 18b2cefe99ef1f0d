#ifndef SK_ARCHIVED_H
#define SK_ARCHIVED_H

#include <stddef.h>

struct consumer;

/* Orders of an archived sale (store/archive.h) that Kafka delivers again: confirm.lua
 * answers ARCHIVED and writes nothing, so that no key of the sale comes back. Such an order
 * is final already; this makes sure MySQL says how. One looked up in seckill_order or
 * seckill_order_failed is done; one in neither (an order Redis never knew, which confirm
 * would have rejected once the sale was over) is recorded FAILED with the reason REJECTED,
 * as confirm.lua and the outcomes pass would have recorded it. Runs in the claim step, on
 * the main thread's session: MySQL away fails the step, which is retried. */

/* Settles every order of c->batch whose verdict is BATCH_ARCHIVED. 0, or -1 with err. */
int archived_settle(struct consumer *c, char *err, size_t errlen);

#endif
