#ifndef SK_WRITER_H
#define SK_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "consumer/batch.h"
#include "consumer/persist.h"

/* The MySQL write of a batch on a thread of its own, with a MySQL session of its own, so
 * that the consumer's thread reads and claims the next batch, and finishes the previous
 * one in Redis, while this one is written (pipeline.h says what may overlap what).
 *
 * One batch at a time: writer_start hands it over, writer_take waits for the one attempt
 * and gives its result back; between the two the consumer's thread does not touch the
 * batch. A failed attempt is retried by the consumer's thread with writer_persist, on the
 * same session, while the writer holds nothing: every write of the consumer goes through
 * this one session, in the order of the batches. */

struct writer;

/* Starts the thread; the session opens at the first write. NULL when out of resources. */
struct writer *writer_new(const struct config *cfg);
/* Waits for a write in progress (its result is dropped: the batch replays), ends the
 * thread and closes the session. Takes NULL. */
void writer_free(struct writer *w);

/* Hands b over and starts one attempt to persist it. The writer must hold nothing. */
void writer_start(struct writer *w, struct batch *b);
/* A batch was handed over and not taken back yet. */
bool writer_holds(struct writer *w);
/* The attempt is over: writer_take will not wait. */
bool writer_finished(struct writer *w);
/* Waits for the attempt to end and takes the batch back: its result, the batch's
 * sqltx_stats (zeroed before the attempt, as persist_batch asks) and how long the write
 * took; err is set when it is not PERSIST_OK. */
enum persist_result writer_take(struct writer *w, struct sqltx_stats *stats, int64_t *took_us,
                                char *err, size_t errlen);
/* One attempt on the calling thread, on the writer's session (the writer holds nothing):
 * for the retries of a failed write, stats kept from the attempts before. */
enum persist_result writer_persist(struct writer *w, struct batch *b, struct sqltx_stats *stats,
                                   char *err, size_t errlen);

#endif
