#ifndef SK_CTLREDIS_H
#define SK_CTLREDIS_H

#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>

#include "ctl/ctlrun.h"
#include "common/luascript.h"
#include "store/redisroute.h"

/* The (blocking) Redis of one seckillctl run, one server or a Redis Cluster (redisroute),
 * and the ways the commands use it. Every failure prints the error and returns NULL (or
 * CTLRUN_FAIL). */

/* The Redis of this run, opened on first use; NULL after printing the error. */
struct redisroute *ctlredis_conn(struct ctlrun *ctl);
/* The connection of the master serving key, for a WATCH/MULTI on the keys of its slot. */
redisContext *ctlredis_for_key(struct ctlrun *ctl, const char *key);
/* One command, routed by its key argv[1]; returns the reply, or NULL after printing the
 * error (no reply, or an error reply). The caller frees the reply. */
redisReply *ctlredis_argv(struct ctlrun *ctl, int argc, const char **argv);
/* The same on connection c (from ctlredis_for_key), for commands that must stay on it. */
redisReply *ctlredis_on(struct ctlrun *ctl, redisContext *c, int argc, const char **argv);
/* A reply as an integer: integers, and strings holding one ("GET" of a counter).
 * Returns 0 on success, -1 when the reply is nil or not a number. */
int ctlredis_int(const redisReply *r, int64_t *out);
/* Any error element in an EXEC answer (a key of the wrong type): CTLRUN_FAIL after
 * printing the first, else CTLRUN_OK. */
int ctlredis_exec_errors(struct ctlrun *ctl, const redisReply *r);

/* One command of a MULTI/EXEC block. */
struct ctlredis_cmd {
    int argc;
    const char *argv[16];
};
/* Runs the commands (keys of one activity, argv[1] of each) as one MULTI/EXEC (one consistent snapshot, one
 * round trip) and returns EXEC's array reply, element i answering cmds[i]; an element may be an error
 * reply (WRONGTYPE) for the caller to judge. NULL after printing the error. */
redisReply *ctlredis_multi(struct ctlrun *ctl, const struct ctlredis_cmd *cmds, size_t n);
/* The schema/lua scripts, read from seckill.lua-dir on first use; NULL after printing. */
const struct luascript_set *ctlredis_scripts(struct ctlrun *ctl);
/* EVALSHA of one of the schema/lua scripts (read from seckill.lua-dir on first use; a
 * NOSCRIPT is answered with SCRIPT LOAD and a retry). Returns the reply, or NULL after
 * printing the error (an error reply included). The caller frees the reply. */
redisReply *ctlredis_script(struct ctlrun *ctl, enum luascript_id id, int nkeys,
                            const char *const *keys, int nargs, const char *const *args);

#endif
