#ifndef SK_KAFKACONS_H
#define SK_KAFKACONS_H

#include <librdkafka/rdkafka.h>
#include <stddef.h>
#include <stdint.h>

struct consumer;

/* The consumer's Kafka group membership: set-up and subscription, rebalances, pausing the
 * assignment while a step is retried, the lag gauge, and the offset commit of a batch.
 * Everything librdkafka serves is served by rd_kafka_consumer_poll on the consumer
 * thread. */

/* Creates c->rk and subscribes it to kafka.topic. Returns 0, or -1 with err set. */
int kafkacons_start(struct consumer *c, char *err, size_t errlen);
/* Leaves the group (what is left unprocessed is fetched again by the next owner) and
 * destroys the stash. Safe when not started. */
void kafkacons_close(struct consumer *c);

/* The error callback of both Kafka handles: fatal errors and transport noise logged. */
void kafkacons_on_error(rd_kafka_t *rk, int err, const char *reason, void *opaque);

/* Pauses or resumes the whole assignment; rebalances keep to it meanwhile. */
void kafkacons_set_paused(struct consumer *c, int paused);
/* Sleeps ms in slices, serving the group (heartbeats, rebalances), stashing what still
 * arrives, and noticing c->stop. */
void kafkacons_wait(struct consumer *c, int64_t ms);
/* Sets the lag gauge from librdkafka's cached watermarks. */
void kafkacons_update_lag(struct consumer *c);
/* Commits the batch's offsets of the partitions still owned: asynchronously while
 * running, synchronously once stopping. */
void kafkacons_commit(struct consumer *c);

#endif
