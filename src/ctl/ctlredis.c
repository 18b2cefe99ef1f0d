#include "ctl/ctlredis.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "ctl/ctlout.h"
#include "common/clock.h"

/* Admin commands may read whole hashes of a big sale: a slower answer than the gateway's
 * per-command deadline is expected, a dead server is not. */
#define CTLREDIS_COMMAND_TIMEOUT_MS 30000

redisContext *ctlredis_conn(struct ctlrun *ctl)
{
    if (ctl->redis)
        return ctl->redis;
    redisContext *c = redisConnectWithTimeout(ctl->cfg.redis_host, (int)ctl->cfg.redis_port,
                                              clock_timeval_ms(ctl->cfg.redis_timeout_ms));
    if (!c || c->err) {
        ctlout_fail(ctl, "redis %s:%" PRId64 ": %s", ctl->cfg.redis_host, ctl->cfg.redis_port,
                    c ? c->errstr : "out of memory");
        if (c)
            redisFree(c);
        return NULL;
    }
    int64_t timeout = ctl->cfg.redis_timeout_ms > CTLREDIS_COMMAND_TIMEOUT_MS
                          ? ctl->cfg.redis_timeout_ms
                          : CTLREDIS_COMMAND_TIMEOUT_MS;
    if (redisSetTimeout(c, clock_timeval_ms(timeout)) != REDIS_OK) {
        ctlout_fail(ctl, "redis: cannot set the command timeout");
        redisFree(c);
        return NULL;
    }
    ctl->redis = c;
    return c;
}

redisReply *ctlredis_argv(struct ctlrun *ctl, int argc, const char **argv)
{
    redisContext *c = ctlredis_conn(ctl);
    if (!c)
        return NULL;
    redisReply *r = redisCommandArgv(c, argc, argv, NULL);
    if (!r) {
        ctlout_fail(ctl, "redis %s: %s", argv[0], c->errstr[0] ? c->errstr : "no reply");
        return NULL;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        ctlout_fail(ctl, "redis %s: %s", argv[0], r->str);
        freeReplyObject(r);
        return NULL;
    }
    return r;
}

int ctlredis_int(const redisReply *r, int64_t *out)
{
    if (!r)
        return -1;
    if (r->type == REDIS_REPLY_INTEGER) {
        *out = (int64_t)r->integer;
        return 0;
    }
    if (r->type != REDIS_REPLY_STRING || r->len == 0)
        return -1;
    char *end;
    errno = 0;
    long long v = strtoll(r->str, &end, 10);
    if (errno != 0 || *end != '\0' || !(r->str[0] == '-' || (r->str[0] >= '0' && r->str[0] <= '9')))
        return -1;
    *out = (int64_t)v;
    return 0;
}

redisReply *ctlredis_multi(struct ctlrun *ctl, const struct ctlredis_cmd *cmds, size_t n)
{
    redisContext *c = ctlredis_conn(ctl);
    if (!c)
        return NULL;
    const char *multi[] = { "MULTI" }, *exec[] = { "EXEC" };
    int ok = redisAppendCommandArgv(c, 1, multi, NULL) == REDIS_OK;
    for (size_t i = 0; ok && i < n; i++)
        ok = redisAppendCommandArgv(c, cmds[i].argc, (const char **)cmds[i].argv, NULL) == REDIS_OK;
    ok = ok && redisAppendCommandArgv(c, 1, exec, NULL) == REDIS_OK;
    if (!ok) {
        ctlout_fail(ctl, "redis: %s", c->errstr[0] ? c->errstr : "out of memory");
        return NULL;
    }
    /* Read every reply, even after an error, so the connection stays in step. */
    redisReply *result = NULL;
    char problem[256] = "";
    for (size_t i = 0; i < n + 2; i++) {
        void *v = NULL;
        if (redisGetReply(c, &v) != REDIS_OK) {
            if (result)
                freeReplyObject(result);
            ctlout_fail(ctl, "redis: %s", c->errstr[0] ? c->errstr : "no reply");
            return NULL;
        }
        redisReply *r = v;
        if (r->type == REDIS_REPLY_ERROR && !problem[0])
            snprintf(problem, sizeof(problem), "%s", r->str);
        if (i == n + 1)
            result = r;
        else
            freeReplyObject(r);
    }
    if (!result || result->type != REDIS_REPLY_ARRAY || result->elements != n) {
        ctlout_fail(ctl, "redis: transaction failed%s%s", problem[0] ? ": " : "", problem);
        if (result)
            freeReplyObject(result);
        return NULL;
    }
    return result;
}

redisReply *ctlredis_script(struct ctlrun *ctl, enum luascript_id id, int nkeys,
                            const char *const *keys, int nargs, const char *const *args)
{
    redisContext *c = ctlredis_conn(ctl);
    if (!c)
        return NULL;
    if (!ctl->scripts) {
        struct luascript_set *set = malloc(sizeof(*set));
        char err[512];
        if (!set) {
            ctlout_fail(ctl, "out of memory");
            return NULL;
        }
        if (luascript_load_all(set, ctl->cfg.lua_dir, err, sizeof(err)) != 0) {
            free(set);
            ctlout_fail(ctl, "%s", err);
            return NULL;
        }
        ctl->scripts = set;
    }
    const struct luascript *s = &ctl->scripts->scripts[id];
    redisReply *r = luascript_call_sync(c, s, nkeys, keys, nargs, args);
    if (!r) {
        ctlout_fail(ctl, "redis %s.lua: %s", s->name, c->errstr[0] ? c->errstr : "no reply");
        return NULL;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        ctlout_fail(ctl, "redis %s.lua: %s", s->name, r->str);
        freeReplyObject(r);
        return NULL;
    }
    return r;
}

int ctlredis_exec_errors(struct ctlrun *ctl, const redisReply *r)
{
    for (size_t i = 0; i < r->elements; i++)
        if (r->element[i]->type == REDIS_REPLY_ERROR)
            return ctlout_fail(ctl, "redis: %s", r->element[i]->str);
    return CTLRUN_OK;
}
