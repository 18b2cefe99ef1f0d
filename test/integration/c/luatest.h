/* What the tests of the Redis scripts (test_lua_*.c) share: a real Redis
 * (SECKILL_TEST_REDIS_HOST/PORT, default 127.0.0.1:16379) with the scripts loaded, a fresh
 * activity A per test (setup/teardown warm it under a random id and delete its keys), and a
 * caller of each script. An unreachable Redis is a failure, not a skip. */
#ifndef SK_TEST_LUATEST_H
#define SK_TEST_LUATEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include "common/config.h"
#include "common/keys.h"
#include "common/luascript.h"
#include "common/orderno.h"
#include "common/sha1.h"

/* 2026-12-01T12:00:00Z: every test runs its sale around this instant. */
#define NOW 1796126400000LL
#define HOUR 3600000LL
#define COUPON_ID 7

extern redisContext *redis;
extern struct luascript_set scripts;
extern struct config cfg;
extern struct orderno_gen gen;
extern int64_t next_activity;
extern int64_t gen_clock;

/* The activity of the running test. */
extern int64_t A;

#define assert_str(reply_str, want)                                                          \
    do {                                                                                     \
        const char *got_ = (reply_str);                                                      \
        if (!got_ || strcmp(got_, (want)) != 0)                                              \
            fail_msg("got '%s', expected '%s'", got_ ? got_ : "(nil)", (want));              \
    } while (0)

struct exec_opts {
    bool limits;
    int64_t per_user, per_ip;
    bool brush;
    int64_t threshold, ban_seconds;
    const char *token_nonce; /* NULL: purchase tokens off */
};

extern const struct exec_opts NO_LIMITS;

struct xres {
    char status[32];
    char order_no[ORDERNO_LEN]; /* OK / DUPLICATE / LIMIT_REACHED */
    char coupon[32];            /* OK */
    int64_t slot;               /* OK: the user's slot the order took (holder.h) */
    int64_t retry_after;        /* RATE_LIMITED / BLOCKED */
    char sent_no[ORDERNO_LEN];  /* the order number this attempt offered */
};

/* One request of an execute call. */
struct xreq {
    int64_t user;
    const char *ip;
    int64_t now;
};

redisReply *cmd(const char *fmt, ...);
void cmd_ok(const char *fmt, ...);
int64_t cmd_int(const char *fmt, ...);
bool cmd_str(char *buf, size_t len, const char *fmt, ...);
void key(char *buf, enum keys_kind kind);
redisReply *script_call(enum luascript_id id, const enum keys_kind *kinds, int nkeys, int nargs,
                        const char *const *args);
struct pairs {
    const char **args;
    char (*uids)[24];
    int nargs;
};
struct pairs pairs_of(size_t n, const char *const *order_nos, const int64_t *users);
void pairs_free(struct pairs *p);
void subject_key(char *buf, enum keys_subject_kind kind, const char *subject);
int64_t stock_left(void);
int64_t count(const char *verb, enum keys_kind kind);
bool order_status(const char *order_no, char *out, size_t len);
void assert_order_status(const char *order_no, const char *want);
void assert_last_failed(const char *order_no, int64_t user, const char *reason, long long entries);
bool user_order(int64_t user, char *out, size_t len);
int64_t success_count(void);
int64_t sold_counter(void);
bool in_set(enum keys_kind kind, const char *member);
void warm(int64_t stock, int64_t start, int64_t end, const char *status);
void warm_open(int64_t stock);
size_t delete_activity_keys(int64_t activity);
int setup(void **state);
int teardown(void **state);
void execute_batch(const struct xreq *reqs, size_t n, const struct exec_opts *o, struct xres *out);
struct xres execute_at(int64_t user, const char *ip, int64_t now,
                       const struct exec_opts *o);
struct xres execute(int64_t user);
struct xres execute_ok(int64_t user);
int64_t release_call_n(int nargs, const char *const *args);
int64_t release_call(const char *mode, const char *a1, const char *a2);
int64_t rollback(const char *order_no, int64_t user);
int64_t reap(int64_t cutoff_ms, int64_t max_count);
int64_t reap_nodes(int64_t cutoff_ms, int64_t max_count, const char *mode, const char *nodes);
void member_of(char *buf, size_t len, const char *order_no, int64_t user);
int64_t mark_queued(const char *order_no, int64_t user);
void confirm_many(size_t n, const char *const *order_nos, const int64_t *users,
                  char (*out)[16]);
void assert_confirm(const char *order_no, int64_t user, const char *want);
int64_t finalize(size_t n, const char *const *order_nos, const int64_t *users);
int64_t finalize_one(const char *order_no, int64_t user);
void assert_conserved(int64_t initial);

/* Connects, loads the scripts and runs the group; its exit status. */
int luatest_run(const char *name, const struct CMUnitTest *tests, size_t count);

#endif
