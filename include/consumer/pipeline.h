#ifndef SK_PIPELINE_H
#define SK_PIPELINE_H

struct consumer;

/* The steps of one batch, strictly in this order, each retried until it succeeds:
 * dead letters → claim in Redis → MySQL COMMIT (orders, then coupon uses; split when
 * MySQL refuses part of it for good) → user coupon records and SUCCESS in Redis → dead
 * letters of inconsistent uses and of what MySQL refused → refused orders FAILED in
 * Redis → Kafka offsets.
 * Seals c->batch first; counts the batch in c->total and the metrics. Returns 0, or -1
 * when stopping left the batch unfinished (uncommitted: it replays). */
int pipeline_run(struct consumer *c);

#endif
