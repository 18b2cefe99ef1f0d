#include "consumer/backend.h"

#include <inttypes.h>
#include <stdio.h>

#include "common/log.h"
#include "consumer/consumer.h"
#include "store/db.h"

int backend_redis(struct consumer *c, char *err, size_t errlen)
{
    if (c->redis)
        return 0;
    struct redisroute *rr = redisroute_new(&c->cfg, c->cfg.redis_timeout_ms);
    if (!rr) {
        snprintf(err, errlen, "redis: out of memory");
        return -1;
    }
    if (redisroute_open(rr, err, errlen) != 0) {
        redisroute_free(rr);
        return -1;
    }
    c->redis = rr;
    if (redisroute_cluster(rr))
        LOG_INFO("connected to the redis cluster of %s", c->cfg.redis_nodes);
    else
        LOG_INFO("connected to redis %s:%" PRId64, c->cfg.redis_host, c->cfg.redis_port);
    return 0;
}

void backend_redis_drop(struct consumer *c)
{
    redisroute_free(c->redis);
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
