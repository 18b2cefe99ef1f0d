#ifndef SK_RETRY_H
#define SK_RETRY_H

#include <stddef.h>
#include <stdint.h>

#include "consumer/consumermetrics.h"

struct consumer;

/* One step of a batch: 0 when done, or -1 with err set when it is to be tried again. */
typedef int (*retry_step_fn)(struct consumer *c, char *err, size_t errlen);

/* Runs step until it succeeds, backing off from consumer.retry-min-ms to
 * consumer.retry-max-ms in between, with the assignment paused and the group served.
 * Each retry counts in metric; the ready gauge is 0 while failing. Gives up only when
 * asked to stop (-1), leaving the batch uncommitted so that it replays. The time it took
 * is added to *ms. */
int retry_step(struct consumer *c, const char *what, retry_step_fn step,
               enum consumermetrics_id metric, int64_t *ms);

#endif
