#include "consumer/backend.h"

#include <inttypes.h>
#include <stdio.h>

#include "common/clock.h"
#include "common/log.h"
#include "consumer/consumer.h"
#include "store/db.h"

int backend_redis(struct consumer *c, char *err, size_t errlen)
{
    if (c->redis)
        return 0;
    struct timeval tv = clock_timeval_ms(c->cfg.redis_timeout_ms);
    redisContext *r = redisConnectWithTimeout(c->cfg.redis_host, (int)c->cfg.redis_port, tv);
    if (!r || r->err || redisSetTimeout(r, tv) != REDIS_OK) {
        snprintf(err, errlen, "redis %s:%" PRId64 ": %s", c->cfg.redis_host, c->cfg.redis_port,
                 r ? r->errstr : "out of memory");
        if (r)
            redisFree(r);
        return -1;
    }
    c->redis = r;
    LOG_INFO("connected to redis %s:%" PRId64, c->cfg.redis_host, c->cfg.redis_port);
    return 0;
}

void backend_redis_drop(struct consumer *c)
{
    if (c->redis)
        redisFree(c->redis);
    c->redis = NULL;
}

int backend_db(struct consumer *c, char *err, size_t errlen)
{
    if (c->db)
        return 0;
    c->db = db_connect(&c->cfg, err, errlen);
    if (!c->db)
        return -1;
    LOG_INFO("connected to mysql %s:%" PRId64, c->cfg.mysql_host, c->cfg.mysql_port);
    return 0;
}

void backend_db_drop(struct consumer *c)
{
    if (c->db)
        mysql_close(c->db);
    c->db = NULL;
}
