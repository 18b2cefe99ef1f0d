#include "ctl/ctlredis.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctlout.h"
#include "common/clock.h"

/* Admin commands may read whole hashes of a big sale: a slower answer than the gateway's
 * per-command deadline is expected, a dead server is not. */
#define CTLREDIS_COMMAND_TIMEOUT_MS 30000

struct redisroute *ctlredis_conn(struct ctlrun *ctl)
{
    if (ctl->redis)
        return ctl->redis;
    int64_t timeout = ctl->cfg.redis_timeout_ms > CTLREDIS_COMMAND_TIMEOUT_MS
                          ? ctl->cfg.redis_timeout_ms
                          : CTLREDIS_COMMAND_TIMEOUT_MS;
    struct redisroute *rr = redisroute_new(&ctl->cfg, timeout);
    char err[256];
    if (!rr) {
        ctlout_fail(ctl, "redis: out of memory");
        return NULL;
    }
    if (redisroute_open(rr, err, sizeof(err)) != 0) {
        ctlout_unavailable(ctl, "%s", err);
        redisroute_free(rr);
        return NULL;
    }
    ctl->redis = rr;
    return rr;
}

redisContext *ctlredis_for_key(struct ctlrun *ctl, const char *key)
{
    struct redisroute *rr = ctlredis_conn(ctl);
    if (!rr)
        return NULL;
    char err[256];
    redisContext *c = redisroute_for_key(rr, key, strlen(key), err, sizeof(err));
    if (!c)
        ctlout_unavailable(ctl, "%s", err);
    return c;
}

/* An error reply is printed and freed: the callers want an answer or nothing. */
static redisReply *ctlredis_checked(struct ctlrun *ctl, const char *what, redisReply *r, const char *err)
{
    if (!r) {
        ctlout_unavailable(ctl, "%s", err);
        return NULL;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        ctlout_fail(ctl, "redis %s: %s", what, r->str);
        freeReplyObject(r);
        return NULL;
    }
    return r;
}

redisReply *ctlredis_argv(struct ctlrun *ctl, int argc, const char **argv)
{
    struct redisroute *rr = ctlredis_conn(ctl);
    if (!rr)
        return NULL;
    char err[256];
    redisReply *r = redisroute_argv(rr, argc, argv, NULL, argc > 1 ? 1 : -1, err, sizeof(err));
    return ctlredis_checked(ctl, argv[0], r, err);
}

redisReply *ctlredis_on(struct ctlrun *ctl, redisContext *c, int argc, const char **argv)
{
    redisReply *r = redisCommandArgv(c, argc, argv, NULL);
    char err[256];
    if (!r) {
        snprintf(err, sizeof(err), "redis %s: %s", argv[0], c->errstr[0] ? c->errstr : "no reply");
        redisroute_failed(ctl->redis, c);
    }
    return ctlredis_checked(ctl, argv[0], r, err);
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
    /* Every command names a key of one activity: one slot, one master. */
    redisContext *c = ctlredis_for_key(ctl, cmds[0].argv[1]);
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
            ctlout_unavailable(ctl, "redis: %s", c->errstr[0] ? c->errstr : "no reply");
            redisroute_failed(ctl->redis, c);
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
        redisroute_failed(ctl->redis, c);  /* a MOVED here: the next command reloads the map */
        ctlout_fail(ctl, "redis: transaction failed%s%s", problem[0] ? ": " : "", problem);
        if (result)
            freeReplyObject(result);
        return NULL;
    }
    return result;
}

const struct luascript_set *ctlredis_scripts(struct ctlrun *ctl)
{
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
    return ctl->scripts;
}

redisReply *ctlredis_script(struct ctlrun *ctl, enum luascript_id id, int nkeys,
                            const char *const *keys, int nargs, const char *const *args)
{
    struct redisroute *rr = ctlredis_conn(ctl);
    if (!rr || !ctlredis_scripts(ctl))
        return NULL;
    const struct luascript *s = &ctl->scripts->scripts[id];
    char err[256], what[64];
    redisReply *r = redisroute_script(rr, s, nkeys, keys, nargs, args, err, sizeof(err));
    snprintf(what, sizeof(what), "%s.lua", s->name);
    return ctlredis_checked(ctl, what, r, err);
}

int ctlredis_exec_errors(struct ctlrun *ctl, const redisReply *r)
{
    for (size_t i = 0; i < r->elements; i++)
        if (r->element[i]->type == REDIS_REPLY_ERROR)
            return ctlout_fail(ctl, "redis: %s", r->element[i]->str);
    return CTLRUN_OK;
}
