#ifndef SK_BACKEND_H
#define SK_BACKEND_H

#include <stddef.h>

struct consumer;

/* The consumer's blocking Redis and MySQL connections, opened on first need and again
 * after a step dropped them: Redis or MySQL may be down at start and come and go. */

/* Connects c->redis unless it is open. Returns 0, or -1 with err set. */
int backend_redis(struct consumer *c, char *err, size_t errlen);
void backend_redis_drop(struct consumer *c);
/* The same for c->db. */
int backend_db(struct consumer *c, char *err, size_t errlen);
void backend_db_drop(struct consumer *c);

#endif
