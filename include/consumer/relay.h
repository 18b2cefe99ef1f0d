#ifndef SK_RELAY_H
#define SK_RELAY_H

#include <stddef.h>

#include "common/config.h"

/* The outcome relay: a thread of the consumer, with a MySQL session and a Kafka producer
 * of its own, that publishes the rows of outcome_outbox (outbox.h) to kafka.outcome-topic
 * in id order and deletes each once Kafka has acknowledged it. Of all the consumers on
 * one database one relays at a time (the holder of a MySQL named lock, freed when its
 * session ends), so events leave in the order their outcomes were committed. A crash
 * between the acknowledgement and the delete publishes those events again, under the
 * same ids (docs/events.md). */
struct relay;

/* Starts the thread when kafka.outcome-topic is set; NULL with err empty when it is not,
 * NULL with err set when it cannot start. cfg must outlive the relay. */
struct relay *relay_start(const struct config *cfg, char *err, size_t errlen);
/* Stops and joins the thread: what it published and has not deleted is published again
 * by the next relay. Safe on NULL. */
void relay_stop(struct relay *r);

#endif
