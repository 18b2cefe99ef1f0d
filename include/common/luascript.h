#ifndef SK_LUASCRIPT_H
#define SK_LUASCRIPT_H

#include <hiredis/hiredis.h>
#include <stddef.h>

/* The Redis scripts of schema/lua, read once at start-up and named by their SHA-1 so that
 * EVALSHA can be sent at once; NOSCRIPT (Redis restarted or flushed) is answered with a
 * SCRIPT LOAD and a retry. */

enum luascript_id {
    LUASCRIPT_EXECUTE,
    LUASCRIPT_RELEASE,
    LUASCRIPT_QUEUED,
    LUASCRIPT_CONFIRM,
    LUASCRIPT_FINALIZE,
    LUASCRIPT_ACTIVITY,
    LUASCRIPT_RESULT,
    LUASCRIPT_USE,
    LUASCRIPT_UNUSE,
    LUASCRIPT_CANCEL,
    LUASCRIPT_ABANDON,
    LUASCRIPT_NODELEASE,
    LUASCRIPT_SALESTATS,
    LUASCRIPT_SUPERSEDE,
    LUASCRIPT_PAUSE,
    LUASCRIPT_REBALANCE,
    LUASCRIPT_REDELIVER,
    LUASCRIPT_ARCHIVE,
    LUASCRIPT_UPDATE,
    LUASCRIPT_ORDERCANCEL,
    LUASCRIPT_REFUND,
    LUASCRIPT_UNREFUND,
    LUASCRIPT_REVOKE,
    LUASCRIPT_REMARK,
    LUASCRIPT_REFUSED,
    LUASCRIPT_COUNT
};

struct luascript {
    const char *name;
    char *body;
    size_t body_len;
    char sha[41];
};

struct luascript_set {
    struct luascript scripts[LUASCRIPT_COUNT];
};

/* The file of what several scripts share, put before each script's text in its body. */
#define LUASCRIPT_PRELUDE "prelude.lua"

int luascript_load_all(struct luascript_set *set, const char *dir, char *err, size_t errlen);
void luascript_free_all(struct luascript_set *set);

/* Blocking EVALSHA for the consumer and seckillctl (never the gateway): argv holds the
 * keys then the arguments. Returns the reply (caller frees) or NULL with c->errstr set. */
redisReply *luascript_call_sync(redisContext *c, const struct luascript *s, int nkeys,
                                const char *const *keys, int nargs, const char *const *args);

/* The argv of one EVALSHA of s: "EVALSHA", its SHA-1, numkeys (written into the caller's
 * buffer, which must outlive the argv), the keys, the arguments; 3 + nkeys + nargs
 * entries. The caller frees the array (not the strings); NULL when out of memory. */
#define LUASCRIPT_NUMKEYS_LEN 16
const char **luascript_evalsha_argv(const struct luascript *s, int nkeys, const char *const *keys, int nargs,
                                   const char *const *args, char numkeys[LUASCRIPT_NUMKEYS_LEN]);

/* True when a reply is Redis saying it does not know the script. */
int luascript_is_noscript(const redisReply *reply);

#endif
