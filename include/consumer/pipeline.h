#ifndef SK_PIPELINE_H
#define SK_PIPELINE_H

struct consumer;

/* The steps of one batch, strictly in this order, each retried until it succeeds:
 * dead letters → claim in Redis → MySQL COMMIT (orders, then coupon uses; split when
 * MySQL refuses part of it for good) → user coupon records and SUCCESS in Redis → dead
 * letters of inconsistent uses and of what MySQL refused → refused orders FAILED in
 * Redis → Kafka offsets.
 *
 * Two batches are in the pipeline at a time: the COMMIT of batch n runs on the writer's
 * thread (writer.h) while this thread claims batch n+1 and then finishes batch n-1 in
 * Redis and Kafka. What may overlap: a claim of n+1 before n's rows are committed finds an
 * order n holds already CONFIRMED and writes it again idempotently, as a redelivery; the
 * writes themselves never overlap and keep the order of the batches, and so do the
 * finalizes and the offset commits (n's offsets only after n's SUCCESS). A crash anywhere
 * replays what was not committed, as with one batch at a time.
 *
 * A turn: claims c->batch (just filled, or empty), takes back the batch the writer holds
 * (retrying its write here when the writer's attempt failed), hands the claimed one to
 * the writer, and finishes the one taken back. Counts each finished batch in c->total and
 * the metrics. Returns 0, or -1 when stopping left a batch unfinished (uncommitted: it
 * replays). */
int pipeline_turn(struct consumer *c);

/* How often a fill polls Kafka while the writer holds a batch (it ends when the write does). */
#define PIPELINE_WAIT_MS 2

#endif
