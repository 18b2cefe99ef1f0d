#ifndef SK_CTLRUN_H
#define SK_CTLRUN_H

#include <hiredis/hiredis.h>
#include <mysql.h>
#include <stdbool.h>

#include "common/config.h"
#include "common/luascript.h"
#include "store/redisroute.h"

/* One run of seckillctl, the admin CLI, as every command module sees it. seckillctl.c holds main
 * and the command table; the shared helpers are ctlargs (options and values), ctlout
 * (messages and JSON), ctltable, ctldb and ctlredis; the records are ctlactivity and
 * ctlcoupon, the rule between them ctlallotment; each command lives in a module of its
 * own (ctlcouponcreate, ctlactivitywarmup, ctlverify, ...).
 *
 * Exit status: 0 done, 1 the operation failed (a backend refused, a check failed),
 * 2 the command line is wrong (nothing was written). Errors are one line on stderr. */

enum ctlrun_exit { CTLRUN_OK = 0, CTLRUN_FAIL = 1, CTLRUN_USAGE = 2 };

struct ctlcall;

/* One run of the CLI. Owned by main; the connections are opened on first use by
 * ctldb_conn / ctlredis_conn, and ctlrun_close releases them with the config after the
 * command returns. seckill-admin keeps one for its life and runs each request's command
 * through ctlcall.h, which closes the connections after each. */
struct ctlrun {
    struct config cfg;
    bool json;              /* --json anywhere on the command line */
    const char *command;    /* "activity create": for messages */
    const char *usage;      /* its arguments, for usage errors */
    MYSQL *db;
    struct redisroute *redis;
    struct luascript_set *scripts;  /* read on first use by ctlredis_script */
    struct ctlcall *call;   /* NULL: print (the CLI); else ctlout collects (ctlcall.h) */
    /* Who runs the command, for the records that keep it (a ban's created_by): NULL for
     * the CLI, whose OS user it is; seckill-admin names its caller. */
    const char *actor;
};

/* A command handler gets the arguments after the command words. */
typedef int (*ctlrun_handler)(struct ctlrun *ctl, int argc, char **argv);

/* Closes what the run opened (Redis, MySQL, the scripts) and frees the config. */
void ctlrun_close(struct ctlrun *ctl);
/* Closes the connections only; the next command opens them again. */
void ctlrun_disconnect(struct ctlrun *ctl);
/* The records that name who did something (created_by, admin_audit's origin) hold at most
 * this many characters. */
#define CTLRUN_ACTOR_CHARS 128
/* Who runs this command: ctl->actor (seckill-admin's caller), else the OS user of the CLI
 * and the host, "alice@ops1" ("root@ops1 (login alice)" under sudo). At most 128
 * characters. */
void ctlrun_actor(struct ctlrun *ctl, char *buf, size_t len);

#endif
