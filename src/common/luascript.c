#define _POSIX_C_SOURCE 200809L
#include "common/luascript.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sha1.h"

static const char *const script_names[LUASCRIPT_COUNT] = {
    [LUASCRIPT_EXECUTE] = "execute",   [LUASCRIPT_RELEASE] = "release",
    [LUASCRIPT_QUEUED] = "queued",     [LUASCRIPT_CONFIRM] = "confirm",
    [LUASCRIPT_FINALIZE] = "finalize", [LUASCRIPT_ACTIVITY] = "activity",
    [LUASCRIPT_RESULT] = "result",     [LUASCRIPT_USE] = "use",
    [LUASCRIPT_UNUSE] = "unuse",       [LUASCRIPT_CANCEL] = "cancel",
    [LUASCRIPT_ABANDON] = "abandon",
    [LUASCRIPT_NODELEASE] = "nodelease", [LUASCRIPT_SALESTATS] = "salestats",
    [LUASCRIPT_SUPERSEDE] = "supersede",
    [LUASCRIPT_PAUSE] = "pause",
    [LUASCRIPT_REBALANCE] = "rebalance", [LUASCRIPT_REDELIVER] = "redeliver",
    [LUASCRIPT_ARCHIVE] = "archive",    [LUASCRIPT_UPDATE] = "update",
    [LUASCRIPT_REFUND] = "refund",      [LUASCRIPT_UNREFUND] = "unrefund",
    [LUASCRIPT_REVOKE] = "revoke",      [LUASCRIPT_REMARK] = "remark",
    [LUASCRIPT_ORDERCANCEL] = "ordercancel", [LUASCRIPT_REFUSED] = "refused",
};

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t cap = 0, used = 0;
    for (;;) {
        if (used + 4096 > cap) {
            cap = cap ? cap * 2 : 8192;
            char *grown = realloc(buf, cap);
            if (!grown) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = grown;
        }
        size_t n = fread(buf + used, 1, cap - used - 1, f);
        used += n;
        if (n == 0)
            break;
    }
    int failed = ferror(f);
    fclose(f);
    if (failed) {
        free(buf);
        return NULL;
    }
    buf[used] = '\0';
    *len = used;
    return buf;
}

/* prelude, a newline, then the file's text: the one body Redis runs and names. */
static char *with_prelude(const char *prelude, size_t prelude_len, const char *text, size_t text_len,
                          size_t *len)
{
    char *body = malloc(prelude_len + 1 + text_len + 1);
    if (!body)
        return NULL;
    memcpy(body, prelude, prelude_len);
    body[prelude_len] = '\n';
    memcpy(body + prelude_len + 1, text, text_len + 1);
    *len = prelude_len + 1 + text_len;
    return body;
}

static int read_failed(const char *path, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s: %s (seckill.lua-dir)", path, strerror(errno ? errno : EIO));
    return -1;
}

int luascript_load_all(struct luascript_set *set, const char *dir, char *err, size_t errlen)
{
    memset(set, 0, sizeof(*set));
    char path[4096];
    /* What several scripts share (schema/lua/prelude.lua) goes before each of them. */
    snprintf(path, sizeof(path), "%s/%s", dir, LUASCRIPT_PRELUDE);
    size_t prelude_len;
    char *prelude = read_file(path, &prelude_len);
    if (!prelude)
        return read_failed(path, err, errlen);
    for (int i = 0; i < LUASCRIPT_COUNT; i++) {
        struct luascript *s = &set->scripts[i];
        snprintf(path, sizeof(path), "%s/%s.lua", dir, script_names[i]);
        s->name = script_names[i];
        size_t text_len;
        char *text = read_file(path, &text_len);
        if (text) {
            s->body = with_prelude(prelude, prelude_len, text, text_len, &s->body_len);
            free(text);
        }
        if (!s->body) {
            read_failed(path, err, errlen);
            free(prelude);
            luascript_free_all(set);
            return -1;
        }
        sha1_hex(s->body, s->body_len, s->sha);
    }
    free(prelude);
    return 0;
}

void luascript_free_all(struct luascript_set *set)
{
    for (int i = 0; i < LUASCRIPT_COUNT; i++) {
        free(set->scripts[i].body);
        set->scripts[i].body = NULL;
    }
}

int luascript_is_noscript(const redisReply *reply)
{
    return reply && reply->type == REDIS_REPLY_ERROR && strncmp(reply->str, "NOSCRIPT", 8) == 0;
}

const char **luascript_evalsha_argv(const struct luascript *s, int nkeys, const char *const *keys, int nargs,
                                   const char *const *args, char numkeys[LUASCRIPT_NUMKEYS_LEN])
{
    const char **argv = malloc(sizeof(char *) * (size_t)(3 + nkeys + nargs));
    if (!argv)
        return NULL;
    snprintf(numkeys, LUASCRIPT_NUMKEYS_LEN, "%d", nkeys);
    argv[0] = "EVALSHA";
    argv[1] = s->sha;
    argv[2] = numkeys;
    for (int i = 0; i < nkeys; i++)
        argv[3 + i] = keys[i];
    for (int i = 0; i < nargs; i++)
        argv[3 + nkeys + i] = args[i];
    return argv;
}

redisReply *luascript_call_sync(redisContext *c, const struct luascript *s, int nkeys,
                                const char *const *keys, int nargs, const char *const *args)
{
    int argc = 3 + nkeys + nargs;
    char numkeys[LUASCRIPT_NUMKEYS_LEN];
    const char **argv = luascript_evalsha_argv(s, nkeys, keys, nargs, args, numkeys);
    if (!argv)
        return NULL;
    redisReply *reply = redisCommandArgv(c, argc, argv, NULL);
    if (luascript_is_noscript(reply)) {
        freeReplyObject(reply);
        reply = redisCommand(c, "SCRIPT LOAD %b", s->body, s->body_len);
        if (reply && reply->type != REDIS_REPLY_ERROR) {
            freeReplyObject(reply);
            reply = redisCommandArgv(c, argc, argv, NULL);
        }
    }
    free(argv);
    return reply;
}
