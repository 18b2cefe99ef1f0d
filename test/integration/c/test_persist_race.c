/* persist_batch against the real MariaDB of the tests' stack (the mysql.* keys of
 * SECKILL_CONF, default build/conf/test.conf), racing other sessions the way two consumers
 * and a replay race in a sale (docs/chaos.md, finding 9). An unreachable MariaDB is a
 * failure, not a skip. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <mysql.h>
#include <mysqld_error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/config.h"
#include "consumer/batch.h"
#include "consumer/persist.h"
#include "store/db.h"

#define ORDERS 37
#define HELD 2      /* the order whose user coupon another session holds, uncommitted */
#define REPLAYED 3  /* the order already in MySQL with its user coupon (a replay) */
#define TAKEN 20    /* auto-increment ids another session takes meanwhile */

static struct config cfg;

static MYSQL *connect_db(void)
{
    char err[512];
    MYSQL *db = db_connect(&cfg, err, sizeof(err));
    if (!db)
        fail_msg("%s", err);
    return db;
}

/* The statement's result set (NULL for one without); a failed statement fails the test. */
static MYSQL_RES *run_query(MYSQL *db, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
static MYSQL_RES *run_query(MYSQL *db, const char *fmt, va_list ap)
{
    char q[4096];
    vsnprintf(q, sizeof(q), fmt, ap);
    if (mysql_query(db, q) != 0)
        fail_msg("%s: %s", q, mysql_error(db));
    return mysql_store_result(db);
}

static void sql(MYSQL *db, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sql(MYSQL *db, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    MYSQL_RES *res = run_query(db, fmt, ap);
    va_end(ap);
    if (res)
        mysql_free_result(res);
}

static int64_t scalar(MYSQL *db, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int64_t scalar(MYSQL *db, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    MYSQL_RES *res = run_query(db, fmt, ap);
    va_end(ap);
    MYSQL_ROW row = res ? mysql_fetch_row(res) : NULL;
    int64_t v = row && row[0] ? strtoll(row[0], NULL, 10) : -1;
    if (res)
        mysql_free_result(res);
    return v;
}

/* True when another transaction holds the row of table whose key column is value (NOWAIT:
 * ER_LOCK_WAIT_TIMEOUT at once); false while it is not there yet. */
static int locked(MYSQL *db, const char *table, const char *column, const char *value)
{
    char q[256];
    snprintf(q, sizeof(q), "SELECT id FROM %s WHERE %s = '%s' LOCK IN SHARE MODE NOWAIT", table,
             column, value);
    if (mysql_query(db, q) != 0) {
        if (mysql_errno(db) != ER_LOCK_WAIT_TIMEOUT)
            fail_msg("%s: %s", q, mysql_error(db));
        return 1;
    }
    MYSQL_RES *res = mysql_store_result(db);
    if (res)
        mysql_free_result(res);
    return 0;
}

static int setup(void **state)
{
    (void)state;
    const char *path = getenv("SECKILL_CONF");
    char err[512];
    config_init(&cfg);
    if (config_load_file(&cfg, path ? path : "build/conf/test.conf", err, sizeof(err)) != 0)
        fail_msg("%s", err);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    config_free(&cfg);
    return 0;
}

/* A coupon and a running sale of it, for 1000. */
static void make_sale(MYSQL *db, int64_t *coupon, int64_t *activity)
{
    sql(db, "INSERT INTO coupon (name, type, amount, total_count, start_time, end_time) VALUES "
            "('race', 'CASH', 5.00, 1000, UTC_TIMESTAMP() - INTERVAL 1 DAY, "
            "UTC_TIMESTAMP() + INTERVAL 1 DAY)");
    *coupon = (int64_t)mysql_insert_id(db);
    sql(db, "INSERT INTO seckill_activity (name, coupon_id, stock, start_time, end_time, status) "
            "VALUES ('race', %" PRId64 ", 1000, UTC_TIMESTAMP() - INTERVAL 1 DAY, "
            "UTC_TIMESTAMP() + INTERVAL 1 DAY, 'ACTIVE')", *coupon);
    *activity = (int64_t)mysql_insert_id(db);
}

/* The sale's orders: same-length order numbers, so that batch_seal's order is theirs. */
static void make_orders(struct orderevent *ev, int64_t base, int64_t activity, int64_t coupon)
{
    memset(ev, 0, ORDERS * sizeof(*ev));
    for (int i = 0; i < ORDERS; i++) {
        snprintf(ev[i].order_no, sizeof(ev[i].order_no), "%" PRId64 "%04d-%" PRId64, base, i,
                 activity);
        ev[i].user_id = base * 100 + i;
        ev[i].activity_id = activity;
        ev[i].coupon_id = coupon;
        ev[i].created_ms = (int64_t)time(NULL) * 1000;
    }
}

/* The consumer's half, in a child with a connection of its own: one batch of all the
 * orders, claimed. Exits 0 when persist_batch succeeded. */
static void persist_in_child(const struct orderevent *ev)
{
    char err[512];
    MYSQL *db = db_connect(&cfg, err, sizeof(err));
    struct batch b;
    if (!db || batch_init(&b, ORDERS) != 0)
        _exit(2);
    for (int i = 0; i < ORDERS; i++)
        if (batch_add_order(&b, &ev[i], 0, i) != 0)
            _exit(2);
    batch_seal(&b);
    for (size_t i = 0; i < b.count; i++)
        b.verdicts[i] = BATCH_ACCEPTED;
    batch_collect_accepted(&b);
    struct sqltx_stats stats;
    memset(&stats, 0, sizeof(stats));
    enum persist_result r = persist_batch(db, &b, false, &stats, err, sizeof(err));
    if (r != PERSIST_OK)
        fprintf(stderr, "persist_batch: %s\n", err);
    else if (stats.conflicts > 0)
        fprintf(stderr, "persist_batch: %zu orders taken for orders of users holding another\n",
                stats.conflicts);
    _exit(r != PERSIST_OK ? 1 : stats.conflicts > 0 ? 3 : 0);
}

/* Which upsert of the batch the race hits. */
enum table { ORDERS_TABLE, COUPONS_TABLE };

/* The batch's upsert into table stops at the order whose row a third session holds
 * uncommitted; meanwhile another session takes the next auto-increment ids of the table; the
 * third session rolls back. The next row of the array is a replay (a duplicate): MariaDB
 * gives the statement back ids the other session holds, and the later rows of the array
 * collided with them, silently, under ON DUPLICATE KEY UPDATE id=id. Every order must still
 * end with its row and its user coupon, none counted as held by another order of its user,
 * each counted once. */
static void race(enum table t)
{
    MYSQL *db = connect_db(), *holder = connect_db();
    int64_t base = (int64_t)time(NULL) % 100000000 * 1000 + getpid() % 1000;
    int64_t coupon, activity;
    make_sale(db, &coupon, &activity);
    struct orderevent ev[ORDERS];
    make_orders(ev, base, activity, coupon);

    /* An earlier consumer wrote this one before its offset commit was lost. */
    sql(db, "INSERT INTO seckill_order (order_no, user_id, activity_id, coupon_id, accepted_at) "
            "VALUES ('%s', %" PRId64 ", %" PRId64 ", %" PRId64 ", UTC_TIMESTAMP(3))",
        ev[REPLAYED].order_no, ev[REPLAYED].user_id, activity, coupon);
    sql(db, "INSERT INTO user_coupon (user_id, coupon_id, source_ref) VALUES (%" PRId64 ", %"
            PRId64 ", '%s')", ev[REPLAYED].user_id, coupon, ev[REPLAYED].order_no);
    sql(holder, "START TRANSACTION");
    if (t == COUPONS_TABLE)
        sql(holder, "INSERT INTO user_coupon (user_id, coupon_id, source_ref) VALUES (%" PRId64
                    ", %" PRId64 ", '%s')", ev[HELD].user_id, coupon, ev[HELD].order_no);
    else
        sql(holder, "INSERT INTO seckill_order (order_no, user_id, activity_id, coupon_id, "
                    "accepted_at) VALUES ('%s', %" PRId64 ", %" PRId64 ", %" PRId64
                    ", UTC_TIMESTAMP(3))", ev[HELD].order_no, ev[HELD].user_id, activity, coupon);

    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0)
        persist_in_child(ev);

    /* The child's upsert has passed the order before the held one (whose row it locks,
     * uncommitted) and waits on the held one. */
    int passed = 0;
    for (int i = 0; i < 1000 && !passed; i++) {
        passed = t == COUPONS_TABLE ? locked(db, "user_coupon", "source_ref", ev[HELD - 1].order_no)
                                    : locked(db, "seckill_order", "order_no", ev[HELD - 1].order_no);
        if (!passed)
            nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
    }
    assert_true(passed);
    char rows[4096];
    size_t used = 0;
    for (int i = 0; i < TAKEN; i++) {
        const char *sep = i ? "," : "";
        if (t == COUPONS_TABLE)
            used += (size_t)snprintf(rows + used, sizeof(rows) - used, "%s(0, %" PRId64 ", 'race-%"
                                     PRId64 "-%d')", sep, coupon, base, i);
        else
            used += (size_t)snprintf(rows + used, sizeof(rows) - used, "%s('race-%" PRId64 "-%d', %"
                                     PRId64 ", 0, %" PRId64 ", UTC_TIMESTAMP(3))", sep, base, i,
                                     base * 100 + 50 + i, coupon);
    }
    if (t == COUPONS_TABLE)
        sql(db, "INSERT INTO user_coupon (user_id, coupon_id, source_ref) VALUES %s", rows);
    else
        sql(db, "INSERT INTO seckill_order (order_no, user_id, activity_id, coupon_id, accepted_at) "
                "VALUES %s", rows);
    sql(holder, "ROLLBACK");

    int status = 0;
    assert_int_equal(waitpid(child, &status, 0), child);
    sql(db, "DELETE FROM %s WHERE %s LIKE 'race-%" PRId64 "-%%'",
        t == COUPONS_TABLE ? "user_coupon" : "seckill_order",
        t == COUPONS_TABLE ? "source_ref" : "order_no", base);
    int64_t rows_now = scalar(db, "SELECT COUNT(*) FROM seckill_order WHERE activity_id = %" PRId64,
                              activity);
    int64_t missing = scalar(db, "SELECT COUNT(*) FROM seckill_order o LEFT JOIN user_coupon u "
                                 "ON u.source_ref = o.order_no WHERE o.activity_id = %" PRId64
                                 " AND u.id IS NULL", activity);
    int64_t issued = scalar(db, "SELECT issued_count FROM coupon WHERE id = %" PRId64, coupon);
    int64_t sold = scalar(db, "SELECT sold_count FROM seckill_activity WHERE id = %" PRId64, activity);
    mysql_close(holder);
    mysql_close(db);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_int_equal(rows_now, ORDERS);
    assert_int_equal(missing, 0);
    /* The replayed one was sold and issued before. */
    assert_int_equal(sold, ORDERS - 1);
    assert_int_equal(issued, ORDERS - 1);
}

static void test_every_order_keeps_its_user_coupon_when_ids_are_taken_mid_insert(void **state)
{
    (void)state;
    race(COUPONS_TABLE);
}

static void test_every_order_keeps_its_row_when_ids_are_taken_mid_insert(void **state)
{
    (void)state;
    race(ORDERS_TABLE);
}

/* One batch of one claimed order, persisted on db; the order's in_db and the conflicts. */
static void persist_one(MYSQL *db, const struct orderevent *ev, int *in_db, size_t *conflicts)
{
    char err[512];
    struct batch b;
    assert_int_equal(batch_init(&b, 1), 0);
    assert_int_equal(batch_add_order(&b, ev, 0, 0), 0);
    batch_seal(&b);
    b.verdicts[0] = BATCH_ACCEPTED;
    batch_collect_accepted(&b);
    struct sqltx_stats stats;
    memset(&stats, 0, sizeof(stats));
    if (persist_batch(db, &b, false, &stats, err, sizeof(err)) != PERSIST_OK)
        fail_msg("persist_batch: %s", err);
    *in_db = b.in_db[0];
    *conflicts = stats.conflicts;
    batch_free(&b);
}

/* Two gateways that held one node id at once can give one order number to two users (in
 * two buckets of a sale, whose orders hashes are apart): MySQL keeps the first, and the
 * second is not taken for a replay of it (which would show it SUCCESS without a row, its
 * user holding another user's coupon). */
static void test_a_number_another_user_holds_is_no_row_of_this_user(void **state)
{
    (void)state;
    MYSQL *db = connect_db();
    int64_t coupon, activity;
    make_sale(db, &coupon, &activity);
    int64_t base = (int64_t)time(NULL) % 100000000 * 1000 + getpid() % 1000;
    struct orderevent first;
    memset(&first, 0, sizeof(first));
    snprintf(first.order_no, sizeof(first.order_no), "%" PRId64 "7-%" PRId64, base, activity);
    first.user_id = base * 100 + 91;  /* apart from the users of race() */
    first.activity_id = activity;
    first.coupon_id = coupon;
    first.created_ms = (int64_t)time(NULL) * 1000;
    struct orderevent other = first;
    other.user_id = base * 100 + 92;
    int in_db;
    size_t conflicts;
    persist_one(db, &first, &in_db, &conflicts);
    assert_true(in_db && conflicts == 0);
    persist_one(db, &other, &in_db, &conflicts);
    assert_false(in_db);
    assert_int_equal(conflicts, 1);
    assert_int_equal(scalar(db, "SELECT user_id FROM seckill_order WHERE order_no = '%s'", first.order_no),
                     first.user_id);
    assert_int_equal(scalar(db, "SELECT COUNT(*) FROM user_coupon WHERE user_id = %" PRId64, other.user_id),
                     0);
    /* The first one's replay is still a replay. */
    persist_one(db, &first, &in_db, &conflicts);
    assert_true(in_db && conflicts == 0);
    assert_int_equal(scalar(db, "SELECT sold_count FROM seckill_activity WHERE id = %" PRId64, activity), 1);
    mysql_close(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_order_keeps_its_user_coupon_when_ids_are_taken_mid_insert),
        cmocka_unit_test(test_every_order_keeps_its_row_when_ids_are_taken_mid_insert),
        cmocka_unit_test(test_a_number_another_user_holds_is_no_row_of_this_user),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
