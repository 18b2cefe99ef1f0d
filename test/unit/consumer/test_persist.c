/* What persist writes, checked without a server: the SQL text of each statement (the
 * MYSQL handle only quotes, it is never connected), the counters applied at the end of
 * the transaction, and the verdict on each coupon.used and coupon.refunded event. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "consumer/counters.h"
#include "consumer/couponuse.h"
#include "consumer/orderbulk.h"
#include "consumer/orderrows.h"
#include "consumer/persist.h"
#include "store/sqltext.h"

/* 2026-12-01T12:00:00.250Z */
#define T0 1796126400250LL

static MYSQL *quoter;

static int setup(void **state)
{
    (void)state;
    quoter = mysql_init(NULL);
    return quoter ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    mysql_close(quoter);
    mysql_library_end();
    return 0;
}

static const char *datetime(struct sqltext *s, int64_t ms)
{
    sqltext_reset(s);
    sqltext_datetime(s, ms);
    return s->failed ? "(failed)" : s->data;
}

static void test_datetime_literal(void **state)
{
    (void)state;
    struct sqltext s = { 0 };
    assert_string_equal(datetime(&s, 0), "'1970-01-01 00:00:00.000'");
    assert_string_equal(datetime(&s, T0), "'2026-12-01 12:00:00.250'");
    assert_string_equal(datetime(&s, 4102444799999LL), "'2099-12-31 23:59:59.999'");
    assert_string_equal(datetime(&s, PERSIST_MAX_ACCEPTED_MS), "'9999-12-31 23:59:59.999'");
    assert_false(s.failed);
    assert_string_equal(datetime(&s, PERSIST_MAX_ACCEPTED_MS + 1), "(failed)");
    sqltext_free(&s);
    assert_string_equal(datetime(&s, -1), "(failed)");
    sqltext_free(&s);
}

static const char *mysql_time(const MYSQL_TIME *t)
{
    static char buf[40];
    snprintf(buf, sizeof(buf), "%04u-%02u-%02u %02u:%02u:%02u.%06lu", t->year, t->month, t->day,
             t->hour, t->minute, t->second, t->second_part);
    return t->time_type == MYSQL_TIMESTAMP_DATETIME && !t->neg ? buf : "(not a DATETIME)";
}

/* The bound DATETIME(3) holds the same instant as the text literal did. */
static void test_datetime_bound(void **state)
{
    (void)state;
    MYSQL_TIME t;
    assert_int_equal(orderbulk_datetime(T0, &t), 0);
    assert_string_equal(mysql_time(&t), "2026-12-01 12:00:00.250000");
    assert_int_equal(orderbulk_datetime(4102444799999LL, &t), 0);
    assert_string_equal(mysql_time(&t), "2099-12-31 23:59:59.999000");
    assert_int_equal(orderbulk_datetime(PERSIST_MAX_ACCEPTED_MS, &t), 0);
    assert_string_equal(mysql_time(&t), "9999-12-31 23:59:59.999000");
    assert_int_equal(orderbulk_datetime(PERSIST_MAX_ACCEPTED_MS + 1, &t), -1);
    assert_int_equal(orderbulk_datetime(-1, &t), -1);
}

static void test_cents_literal(void **state)
{
    (void)state;
    struct sqltext s = { 0 };
    sqltext_cents(&s, 1234);
    sqltext_printf(&s, " ");
    sqltext_cents(&s, 5);
    sqltext_printf(&s, " ");
    sqltext_cents(&s, 0);
    sqltext_printf(&s, " ");
    sqltext_cents(&s, SQLTEXT_MAX_CENTS);
    assert_false(s.failed);
    assert_string_equal(s.data, "12.34 0.05 0.00 9999999999999.99");
    sqltext_cents(&s, SQLTEXT_MAX_CENTS + 1);
    assert_true(s.failed);
    sqltext_free(&s);
    sqltext_cents(&s, -1);
    assert_true(s.failed);
    sqltext_free(&s);
}

static void test_text_grows_and_failure_sticks(void **state)
{
    (void)state;
    struct sqltext s = { 0 };
    for (int i = 0; i < 10000; i++)
        sqltext_printf(&s, "%d,", i % 10);
    assert_false(s.failed);
    assert_int_equal(s.len, 20000);
    assert_int_equal(strlen(s.data), 20000);
    assert_memory_equal(s.data + 19990, "5,6,7,8,9,", 10);
    sqltext_reset(&s);
    assert_int_equal(s.len, 0);
    assert_string_equal(s.data, "");
    /* A statement with a value MySQL cannot hold must never be sent. */
    sqltext_datetime(&s, -5);
    sqltext_reset(&s);
    sqltext_printf(&s, "SELECT 1");
    assert_true(s.failed);
    sqltext_free(&s);
    assert_false(s.failed);
}

static void test_quoted_escapes(void **state)
{
    (void)state;
    struct sqltext s = { 0 };
    sqltext_quoted(&s, quoter, "12-3");
    sqltext_printf(&s, ",");
    sqltext_quoted(&s, quoter, "a'b\\c");
    sqltext_printf(&s, ",");
    sqltext_quoted(&s, quoter, "");
    assert_string_equal(s.data, "'12-3','a\\'b\\\\c',''");
    sqltext_free(&s);
}

static void test_counters_coalesce_in_id_order(void **state)
{
    (void)state;
    struct counters c = { 0 };
    assert_int_equal(counters_add(&c, 9, 3, 0), 0);
    assert_int_equal(counters_add(&c, 2, 0, 0), 0);   /* nothing to change: not kept */
    assert_int_equal(counters_add(&c, 4, 1, 0), 0);
    assert_int_equal(counters_add(&c, 9, 0, 2), 0);
    assert_int_equal(counters_add(&c, 4, 5, 1), 0);
    for (int i = 0; i < 40; i++)
        assert_int_equal(counters_add(&c, 7, 1, 0), 0);
    assert_int_equal(counters_add(&c, 9, 0, -1), 0);   /* a refund gives one back */
    assert_int_equal(counters_add(&c, 9, 0, 1), 0);
    assert_int_equal(c.count, 46);
    counters_coalesce(&c);
    assert_int_equal(c.count, 3);
    assert_int_equal(c.v[0].id, 4);
    assert_int_equal(c.v[0].first, 6);
    assert_int_equal(c.v[0].second, 1);
    assert_int_equal(c.v[1].id, 7);
    assert_int_equal(c.v[1].first, 40);
    assert_int_equal(c.v[2].id, 9);
    assert_int_equal(c.v[2].first, 3);
    assert_int_equal(c.v[2].second, 2);
    counters_free(&c);
    assert_int_equal(c.count, 0);
    counters_coalesce(&c);   /* empty: nothing to do */
}

static struct orderevent order(const char *no, int64_t user, int64_t created_ms)
{
    struct orderevent ev;
    memset(&ev, 0, sizeof(ev));
    snprintf(ev.order_no, sizeof(ev.order_no), "%s", no);
    ev.user_id = user;
    ev.activity_id = 5;
    ev.created_ms = created_ms;
    return ev;
}

static void test_order_statements(void **state)
{
    (void)state;
    struct orderevent orders[3] = { order("100-5", 1, T0), order("200-5", 2, 0),
                                    order("300-5", 3, T0) };
    unsigned char in_db[3] = { 1, 0, 1 };
    struct batch_coupon coupons[3] = { { 0, 0 } };
    struct orderrun r = { orders, in_db, coupons, 3, 5, 8 };
    struct sqltext s = { 0 };

    /* The rows bound to the prepared INSERT: the run's activity and resolved coupon on
     * every row, the acceptance time as DATETIME(3). */
    struct orderbulk_order rows[3];
    memset(rows, 0xa5, sizeof(rows));
    assert_int_equal(orderbulk_order_rows(&r, 0, 2, rows), 0);
    assert_string_equal(rows[0].order_no, "100-5");
    assert_int_equal(rows[0].order_no_len, 5);
    assert_int_equal(rows[0].user_id, 1);
    assert_int_equal(rows[0].activity_id, 5);
    assert_int_equal(rows[0].coupon_id, 8);
    assert_string_equal(mysql_time(&rows[0].accepted_at), "2026-12-01 12:00:00.250000");
    assert_string_equal(rows[1].order_no, "200-5");
    assert_int_equal(rows[1].user_id, 2);
    assert_string_equal(mysql_time(&rows[1].accepted_at), "1970-01-01 00:00:00.000000");
    assert_int_equal(orderbulk_order_rows(&r, 2, 3, rows), 0);
    assert_string_equal(rows[0].order_no, "300-5");
    assert_int_equal(rows[0].user_id, 3);

    orderrows_present_sql(&s, quoter, &r, 1, 3);
    assert_string_equal(s.data, "SELECT order_no, user_id FROM seckill_order WHERE order_no IN "
                                "('200-5','300-5') LOCK IN SHARE MODE");

    /* Only the orders that have their row get a user coupon. */
    size_t next = 0;
    struct orderbulk_coupon ucs[3];
    memset(ucs, 0xa5, sizeof(ucs));
    assert_int_equal(orderbulk_coupon_rows(&r, &next, ucs), 2);
    assert_int_equal(next, 3);
    assert_int_equal(ucs[0].user_id, 1);
    assert_int_equal(ucs[0].coupon_id, 8);
    assert_string_equal(ucs[0].source_ref, "100-5");
    assert_int_equal(ucs[0].source_ref_len, 5);
    assert_int_equal(ucs[1].user_id, 3);
    assert_int_equal(ucs[1].coupon_id, 8);
    assert_string_equal(ucs[1].source_ref, "300-5");
    assert_int_equal(orderbulk_coupon_rows(&r, &next, ucs), 0);

    next = 0;
    assert_int_equal(orderrows_coupon_select_sql(&s, quoter, &r, &next, 1), 2);
    assert_string_equal(s.data, "SELECT id, source_ref FROM user_coupon WHERE source_ref IN "
                                "('100-5','300-5') LOCK IN SHARE MODE");
    assert_int_equal(orderrows_coupon_select_sql(&s, quoter, &r, &next, 1), 0);
    next = 0;
    assert_int_equal(orderrows_coupon_select_sql(&s, quoter, &r, &next, 0), 2);
    assert_string_equal(s.data, "SELECT id, source_ref FROM user_coupon WHERE source_ref IN "
                                "('100-5','300-5')");

    /* An order accepted beyond DATETIME cannot be written. */
    orders[1].created_ms = PERSIST_MAX_ACCEPTED_MS + 1;
    assert_int_equal(orderbulk_order_rows(&r, 0, 3, rows), -1);
    orders[1].created_ms = -1;
    assert_int_equal(orderbulk_order_rows(&r, 0, 3, rows), -1);
    sqltext_free(&s);
}

static void test_user_coupon_statements_are_chunked(void **state)
{
    (void)state;
    enum { N = SQLTX_ROWS_PER_STATEMENT * 9 / 5 };   /* 6000 of them have their row */
    struct orderevent *orders = calloc(N, sizeof(*orders));
    unsigned char *in_db = calloc(N, 1);
    struct batch_coupon *coupons = calloc(N, sizeof(*coupons));
    assert_non_null(orders);
    assert_non_null(in_db);
    assert_non_null(coupons);
    size_t want = 0;
    for (size_t i = 0; i < N; i++) {
        char no[32];
        snprintf(no, sizeof(no), "%06zu-5", i);
        orders[i] = order(no, (int64_t)i, T0);
        in_db[i] = i % 3 != 0;   /* a third refused by MySQL */
        want += in_db[i];
    }
    struct orderrun r = { orders, in_db, coupons, N, 5, 8 };
    struct orderbulk_coupon *ucs = calloc(SQLTX_ROWS_PER_STATEMENT, sizeof(*ucs));
    assert_non_null(ucs);
    size_t next = 0, total = 0, statements = 0, rows;
    while ((rows = orderbulk_coupon_rows(&r, &next, ucs)) > 0) {
        assert_true(rows <= SQLTX_ROWS_PER_STATEMENT);
        /* Each statement's rows are the next orders with their row, in order. */
        for (size_t k = 0; k < rows; k++) {
            size_t pos;
            assert_int_equal(orderrows_find(&r, ucs[k].source_ref, &pos), 0);
            assert_true(in_db[pos]);
            assert_int_equal(ucs[k].user_id, (int64_t)pos);
            if (k > 0)
                assert_true(strcmp(ucs[k - 1].source_ref, ucs[k].source_ref) < 0);
        }
        total += rows;
        statements++;
    }
    assert_int_equal(total, want);
    assert_int_equal(statements, 2);
    assert_int_equal(next, N);

    size_t pos;
    assert_int_equal(orderrows_find(&r, "000000-5", &pos), 0);
    assert_int_equal(pos, 0);
    assert_int_equal(orderrows_find(&r, "004321-5", &pos), 0);
    assert_int_equal(pos, 4321);
    assert_int_equal(orderrows_find(&r, "008999-5", &pos), 0);
    assert_int_equal(pos, N - 1);
    assert_int_equal(orderrows_find(&r, "004321-6", &pos), -1);
    assert_int_equal(orderrows_find(&r, "", &pos), -1);
    free(ucs);
    free(orders);
    free(in_db);
    free(coupons);
}

static struct redeemevent use(int64_t uc, int64_t user, const char *ref)
{
    struct redeemevent ev;
    memset(&ev, 0, sizeof(ev));
    ev.user_coupon_id = uc;
    ev.user_id = user;
    snprintf(ev.order_ref, sizeof(ev.order_ref), "%s", ref);
    ev.discount = 1000;
    ev.payable = 9000;
    ev.used_ms = T0;
    return ev;
}

static struct couponuse_row row(int64_t id, int64_t user, const char *status, const char *ref)
{
    struct couponuse_row u;
    memset(&u, 0, sizeof(u));
    u.id = id;
    u.user_id = user;
    u.coupon_id = 3;
    snprintf(u.status, sizeof(u.status), "%s", status);
    snprintf(u.order_ref, sizeof(u.order_ref), "%s", ref);
    return u;
}

static void test_use_verdicts(void **state)
{
    (void)state;
    char why[160];
    struct redeemevent ev = use(7, 1001, "CHK-1");
    struct couponuse_row u = row(7, 1001, "UNUSED", "");
    why[0] = '\0';
    assert_int_equal(couponuse_judge(&ev, &u, why, sizeof(why)), BATCH_USE_APPLIED);

    u = row(7, 1001, "USED", "CHK-1");
    assert_int_equal(couponuse_judge(&ev, &u, why, sizeof(why)), BATCH_USE_REPEATED);

    u = row(7, 1001, "USED", "CHK-2");
    assert_int_equal(couponuse_judge(&ev, &u, why, sizeof(why)), BATCH_USE_INCONSISTENT);
    assert_string_equal(why, "user coupon 7 is already used by order 'CHK-2', not 'CHK-1'");

    u = row(7, 1002, "UNUSED", "");
    assert_int_equal(couponuse_judge(&ev, &u, why, sizeof(why)), BATCH_USE_INCONSISTENT);
    assert_string_equal(why, "user coupon 7 belongs to user 1002, not 1001");

    /* The lifecycle pass expired it after the gateway had redeemed it before its end. */
    u = row(7, 1001, "EXPIRED", "");
    assert_int_equal(couponuse_judge(&ev, &u, why, sizeof(why)), BATCH_USE_APPLIED);

    u = row(7, 1001, "REVOKED", "");
    assert_int_equal(couponuse_judge(&ev, &u, why, sizeof(why)), BATCH_USE_INCONSISTENT);
    assert_string_equal(why, "user coupon 7 is REVOKED");

    assert_int_equal(couponuse_judge(&ev, NULL, why, sizeof(why)), BATCH_USE_INCONSISTENT);
    assert_string_equal(why, "user coupon 7 does not exist");

    u = row(7, 1001, "UNUSED", "");
    ev.payable = SQLTEXT_MAX_CENTS + 1;
    assert_int_equal(couponuse_judge(&ev, &u, why, sizeof(why)), BATCH_USE_INCONSISTENT);
    assert_non_null(strstr(why, "does not fit DECIMAL(15,2)"));
    ev = use(7, 1001, "CHK-1");
    ev.used_ms = PERSIST_MAX_ACCEPTED_MS + 1;
    assert_int_equal(couponuse_judge(&ev, &u, why, sizeof(why)), BATCH_USE_INCONSISTENT);
    assert_non_null(strstr(why, "beyond the range of DATETIME"));
}

static struct redeemevent refund(int64_t uc, int64_t user, const char *ref, int64_t seq)
{
    struct redeemevent ev = use(uc, user, ref);
    ev.kind = REDEEMEVENT_REFUNDED;
    ev.discount = ev.payable = 0;
    ev.used_ms = T0 + 1000;
    ev.seq = seq;
    return ev;
}

static void test_refund_verdicts(void **state)
{
    (void)state;
    char why[200];
    struct redeemevent ev = refund(7, 1001, "CHK-1", 20);
    struct couponuse_row u = row(7, 1001, "USED", "CHK-1");
    u.seq = 10;
    assert_int_equal(couponuse_judge(&ev, &u, why, sizeof(why)), BATCH_USE_APPLIED);
    assert_int_equal(couponuse_step(&u, &ev, 0), -1);

    /* Numbered after what MySQL has: the state Redis reached, even where an event between
     * never reached Kafka (a use lost, then its refund: nothing to give back). */
    u = row(7, 1001, "USED", "CHK-2");
    assert_int_equal(couponuse_judge(&ev, &u, why, sizeof(why)), BATCH_USE_APPLIED);
    u = row(7, 1001, "UNUSED", "");
    assert_int_equal(couponuse_judge(&ev, &u, why, sizeof(why)), BATCH_USE_APPLIED);
    assert_int_equal(couponuse_step(&u, &ev, 0), 0);
    assert_string_equal(u.refunded_ref, "CHK-1");

    u = row(7, 1001, "REVOKED", "");
    assert_int_equal(couponuse_judge(&ev, &u, why, sizeof(why)), BATCH_USE_INCONSISTENT);
    assert_string_equal(why, "user coupon 7 is REVOKED");
    u = row(7, 1002, "USED", "CHK-1");
    assert_int_equal(couponuse_judge(&ev, &u, why, sizeof(why)), BATCH_USE_INCONSISTENT);
    assert_int_equal(couponuse_judge(&ev, NULL, why, sizeof(why)), BATCH_USE_INCONSISTENT);

    /* Applied before: its number is not above the row's, whatever the row says now. */
    u = row(7, 1001, "USED", "CHK-9");
    u.seq = 20;
    assert_int_equal(couponuse_judge(&ev, &u, why, sizeof(why)), BATCH_USE_REPEATED);
    struct redeemevent again = use(7, 1001, "CHK-1");
    again.seq = 5;
    u = row(7, 1001, "UNUSED", "");
    u.seq = 20;
    assert_int_equal(couponuse_judge(&again, &u, why, sizeof(why)), BATCH_USE_REPEATED);

    /* A use numbered after a use MySQL has by another order: that one's refund was lost;
     * the coupon stays counted once. */
    again.seq = 21;
    u = row(7, 1001, "USED", "CHK-0");
    u.seq = 20;
    assert_int_equal(couponuse_judge(&again, &u, why, sizeof(why)), BATCH_USE_APPLIED);
    assert_int_equal(couponuse_step(&u, &again, 0), 0);
    assert_string_equal(u.order_ref, "CHK-1");
}

/* A use, its refund and another checkout's use of the same coupon in one batch apply in
 * arrival order; the same events again (a replayed batch) change nothing. */
static void test_use_refund_use_in_order(void **state)
{
    (void)state;
    char why[200];
    struct redeemevent ev[4] = { use(7, 1001, "CHK-A"), refund(7, 1001, "CHK-A", 2),
                                 use(7, 1001, "CHK-B"), refund(7, 1001, "CHK-A", 2) };
    ev[0].seq = 1;
    ev[2].seq = 3;
    struct couponuse_row u = row(7, 1001, "UNUSED", "");
    int delta = 0;
    static const enum batch_use_verdict want[4] = { BATCH_USE_APPLIED, BATCH_USE_APPLIED,
                                                    BATCH_USE_APPLIED, BATCH_USE_REPEATED };
    for (size_t i = 0; i < 4; i++) {
        enum batch_use_verdict v = couponuse_judge(&ev[i], &u, why, sizeof(why));
        assert_int_equal(v, want[i]);
        if (v == BATCH_USE_APPLIED)
            delta += couponuse_step(&u, &ev[i], i);
    }
    assert_int_equal(delta, 1);
    assert_string_equal(u.status, "USED");
    assert_string_equal(u.order_ref, "CHK-B");
    assert_string_equal(u.refunded_ref, "CHK-A");
    assert_true(u.use == &ev[2] && u.refund == &ev[1]);
    assert_int_equal(u.seq, 3);
    assert_int_equal(u.last, 2);
    assert_true(u.changed);

    struct couponuse_row after = u;   /* as the next read finds it */
    after.use = after.refund = NULL;
    after.changed = false;
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(couponuse_judge(&ev[i], &after, why, sizeof(why)), BATCH_USE_REPEATED);

    /* A use and its refund leave the coupon as it was, but with the refund recorded. */
    u = row(7, 1001, "UNUSED", "");
    assert_int_equal(couponuse_step(&u, &ev[0], 0) + couponuse_step(&u, &ev[1], 1), 0);
    assert_string_equal(u.status, "UNUSED");
    assert_string_equal(u.order_ref, "");
    assert_null(u.use);
}

static void test_use_statements(void **state)
{
    (void)state;
    struct redeemevent a = use(7, 1001, "CHK-1"), b = use(9, 1002, "O'Brien");
    struct redeemevent back = refund(9, 1002, "O'Brien", 1796126401250LL);
    b.discount = 5;
    b.payable = 195;
    b.seq = 1796126400250LL;
    struct couponuse_row ra = row(7, 1001, "UNUSED", ""), rb = row(9, 1002, "UNUSED", "");
    couponuse_step(&ra, &a, 0);
    couponuse_step(&rb, &b, 1);
    const struct couponuse_row *rows[2] = { &ra, &rb };
    struct sqltext s = { 0 };

    couponuse_update_sql(&s, quoter, rows, 1);
    assert_false(s.failed);
    assert_string_equal(s.data, "UPDATE user_coupon uc JOIN ("
                                "SELECT 7 AS id, 1001 AS user_id, 'USED' AS status, 'CHK-1' AS order_ref, "
                                "10.00 AS discount, 90.00 AS payable, '2026-12-01 12:00:00.250' AS used_at, "
                                "NULL AS refunded_ref, NULL AS refunded_at, 0 AS event_seq"
                                ") v ON uc.id = v.id AND uc.user_id = v.user_id "
                                "SET uc.status=v.status, uc.order_ref=v.order_ref, uc.discount=v.discount, "
                                "uc.payable=v.payable, uc.used_at=v.used_at, "
                                "uc.refunded_ref=COALESCE(v.refunded_ref, uc.refunded_ref), "
                                "uc.refunded_at=COALESCE(v.refunded_at, uc.refunded_at), "
                                "uc.event_seq=v.event_seq");

    couponuse_step(&rb, &back, 2);
    couponuse_update_sql(&s, quoter, rows, 2);
    assert_false(s.failed);
    assert_non_null(strstr(s.data, " UNION ALL SELECT 9 AS id, 1002 AS user_id, 'UNUSED' AS status, "
                                   "NULL AS order_ref, NULL AS discount, NULL AS payable, NULL AS used_at, "
                                   "'O\\'Brien' AS refunded_ref, '2026-12-01 12:00:01.250' AS refunded_at, "
                                   "1796126401250 AS event_seq) v ON "));

    int64_t ids[] = { 9, 3, 9, 7, 3, 3 };
    size_t n = couponuse_distinct_ids(ids, 6);
    assert_int_equal(n, 3);
    assert_int_equal(ids[0], 3);
    assert_int_equal(ids[1], 7);
    assert_int_equal(ids[2], 9);
    couponuse_lock_sql(&s, ids, n);
    assert_string_equal(s.data, "SELECT id, user_id, coupon_id, status, order_ref, refunded_ref, "
                                "event_seq FROM user_coupon WHERE id IN (3,7,9) ORDER BY id FOR UPDATE");
    sqltext_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_datetime_literal),
        cmocka_unit_test(test_datetime_bound),
        cmocka_unit_test(test_cents_literal),
        cmocka_unit_test(test_text_grows_and_failure_sticks),
        cmocka_unit_test(test_quoted_escapes),
        cmocka_unit_test(test_counters_coalesce_in_id_order),
        cmocka_unit_test(test_order_statements),
        cmocka_unit_test(test_user_coupon_statements_are_chunked),
        cmocka_unit_test(test_use_verdicts),
        cmocka_unit_test(test_refund_verdicts),
        cmocka_unit_test(test_use_refund_use_in_order),
        cmocka_unit_test(test_use_statements),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
