/* Coupons: the discount function couponterms_apply (every type, boundaries, the rounding rule,
 * amounts near INT64_MAX), cents formatting and type names, the user coupon record of
 * Redis (usercoupon) and the coupon.used Kafka message (redeemevent). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/couponterms.h"
#include "common/parse.h"
#include "common/usercoupon.h"
#include "common/redeemevent.h"

#define SENTINEL ((int64_t)-777)

/* ---- couponterms_apply ------------------------------------------------------------------- */

struct apply_case {
    const char *what;
    struct coupon_terms terms;
    int64_t order;
    enum coupon_verdict verdict;
    int64_t discount, payable;   /* when APPLIED */
};

#define CASH(amount, min) { COUPON_CASH, (amount), COUPON_RATE_ONE, (min), 0 }
#define DISC(rate, min, cap) { COUPON_DISCOUNT, 0, (rate), (min), (cap) }
#define GIFT(min) { COUPON_GIFT, 0, COUPON_RATE_ONE, (min), 0 }

/* Rounding rule (coupon.h): payable = order x rate rounded half up to the cent; the
 * discount is the rest. The rounding cases below are chosen so that the three usual
 * rules give different answers; the comment on each says which one differs. */
static const struct apply_case apply_cases[] = {
    /* CASH */
    { "cash: order exactly the minimum is accepted", CASH(1000, 10000), 10000, COUPON_APPLIED, 1000, 9000 },
    { "cash: one cent below the minimum", CASH(1000, 10000), 9999, COUPON_BELOW_MIN_ORDER, 0, 0 },
    { "cash: well above the minimum", CASH(1000, 10000), 25050, COUPON_APPLIED, 1000, 24050 },
    { "cash: amount larger than the order pays 0", CASH(5000, 0), 3000, COUPON_APPLIED, 3000, 0 },
    { "cash: amount equal to the order pays 0", CASH(3000, 0), 3000, COUPON_APPLIED, 3000, 0 },
    { "cash: zero order with min 0", CASH(1000, 0), 0, COUPON_APPLIED, 0, 0 },
    { "cash: zero amount takes nothing", CASH(0, 0), 500, COUPON_APPLIED, 0, 500 },
    { "cash: huge order", CASH(1000, 0), INT64_MAX, COUPON_APPLIED, 1000, INT64_MAX - 1000 },
    { "cash: huge amount, huge order", CASH(INT64_MAX, INT64_MAX), INT64_MAX, COUPON_APPLIED, INT64_MAX, 0 },

    /* DISCOUNT */
    { "discount: 0.85 of 100.00", DISC(8500, 0, 5000), 10000, COUPON_APPLIED, 1500, 8500 },
    { "discount: order exactly the minimum", DISC(8500, 10000, 0), 10000, COUPON_APPLIED, 1500, 8500 },
    { "discount: one cent below the minimum", DISC(8500, 10000, 0), 9999, COUPON_BELOW_MIN_ORDER, 0, 0 },
    { "discount: cap reached exactly", DISC(8500, 0, 1500), 10000, COUPON_APPLIED, 1500, 8500 },
    { "discount: cap one cent below the discount", DISC(8500, 0, 1499), 10000, COUPON_APPLIED, 1499, 8501 },
    { "discount: cap exceeded", DISC(8500, 0, 1000), 10000, COUPON_APPLIED, 1000, 9000 },
    { "discount: cap 0 means none", DISC(5000, 0, 0), 100000000, COUPON_APPLIED, 50000000, 50000000 },
    /* 1.01 x 0.85 = 0.8585: half up and half even give 0.86, truncation 0.85. */
    { "discount: 0.85 of 1.01 rounds 0.8585 up", DISC(8500, 0, 0), 101, COUPON_APPLIED, 15, 86 },
    /* 0.05 x 0.5 = 0.025: half up 0.03; half even 0.02; truncation 0.02. */
    { "discount: tie 0.025 rounds up (not to even)", DISC(5000, 0, 0), 5, COUPON_APPLIED, 2, 3 },
    /* 0.03 x 0.5 = 0.015: half up and half even 0.02, truncation 0.01. */
    { "discount: tie 0.015 rounds up (not truncated)", DISC(5000, 0, 0), 3, COUPON_APPLIED, 1, 2 },
    /* 0.01 x 0.5 = 0.005: half up 0.01 (the buyer keeps the cent off nothing); half even
     * and truncation 0.00. */
    { "discount: tie 0.005 rounds up to a cent", DISC(5000, 0, 0), 1, COUPON_APPLIED, 0, 1 },
    /* 0.02 x 0.25 = 0.005: same tie with another rate. */
    { "discount: tie 0.005 with rate 0.25", DISC(2500, 0, 0), 2, COUPON_APPLIED, 1, 1 },
    /* 0.01 x 0.49 = 0.0049, below half a cent: all three rules give 0.00. */
    { "discount: 0.0049 rounds down", DISC(4900, 0, 0), 1, COUPON_APPLIED, 1, 0 },
    /* 1.05 x 0.9999 = 1.049895: payable 1.05, nothing off (truncation would take 0.01). */
    { "discount: rate 0.9999 of 1.05", DISC(9999, 0, 0), 105, COUPON_APPLIED, 0, 105 },
    { "discount: rate 1.0 takes nothing", DISC(COUPON_RATE_ONE, 0, 0), 12345, COUPON_APPLIED, 0, 12345 },
    { "discount: rate 1.0 with a minimum", DISC(COUPON_RATE_ONE, 100, 50), 100, COUPON_APPLIED, 0, 100 },
    { "discount: rate 0.0001 of 100.00", DISC(1, 0, 0), 10000, COUPON_APPLIED, 9999, 1 },
    /* 50.00 x 0.0001 = 0.005: tie, half up 0.01. */
    { "discount: rate 0.0001 tie", DISC(1, 0, 0), 5000, COUPON_APPLIED, 4999, 1 },
    { "discount: rate 0.0001 below the tie", DISC(1, 0, 0), 4999, COUPON_APPLIED, 4999, 0 },
    { "discount: rate 0.0001 of one cent", DISC(1, 0, 0), 1, COUPON_APPLIED, 1, 0 },
    { "discount: rate 0.0001 capped", DISC(1, 0, 700), 10000, COUPON_APPLIED, 700, 9300 },
    { "discount: zero order with min 0", DISC(8500, 0, 1000), 0, COUPON_APPLIED, 0, 0 },
    /* INT64_MAX x 0.85 = 7839866231326559435.95 -> ...436. */
    { "discount: 0.85 of INT64_MAX", DISC(8500, 0, 0), INT64_MAX, COUPON_APPLIED,
      INT64_MAX - 7839866231326559436LL, 7839866231326559436LL },
    /* INT64_MAX x 0.0001 = 922337203685477.5807 -> ...478. */
    { "discount: 0.0001 of INT64_MAX", DISC(1, 0, 0), INT64_MAX, COUPON_APPLIED,
      INT64_MAX - 922337203685478LL, 922337203685478LL },
    { "discount: 1.0 of INT64_MAX", DISC(COUPON_RATE_ONE, 0, 0), INT64_MAX, COUPON_APPLIED, 0, INT64_MAX },
    { "discount: INT64_MAX capped", DISC(5000, 0, 100), INT64_MAX, COUPON_APPLIED, 100, INT64_MAX - 100 },

    /* GIFT: nothing off, a minimum still applies. */
    { "gift: nothing off", GIFT(0), 10000, COUPON_APPLIED, 0, 10000 },
    { "gift: order exactly the minimum", GIFT(3000), 3000, COUPON_APPLIED, 0, 3000 },
    { "gift: one cent below the minimum", GIFT(3000), 2999, COUPON_BELOW_MIN_ORDER, 0, 0 },
    { "gift: zero order", GIFT(0), 0, COUPON_APPLIED, 0, 0 },
    { "gift: huge order", GIFT(0), INT64_MAX, COUPON_APPLIED, 0, INT64_MAX },

    /* Invalid terms or input. */
    { "rate 0", DISC(0, 0, 0), 10000, COUPON_BAD_INPUT, 0, 0 },
    { "rate 1.0001", DISC(COUPON_RATE_ONE + 1, 0, 0), 10000, COUPON_BAD_INPUT, 0, 0 },
    { "negative rate", DISC(-8500, 0, 0), 10000, COUPON_BAD_INPUT, 0, 0 },
    { "negative cap", DISC(8500, 0, -1), 10000, COUPON_BAD_INPUT, 0, 0 },
    { "negative cash amount", CASH(-1, 0), 10000, COUPON_BAD_INPUT, 0, 0 },
    { "negative minimum", CASH(1000, -1), 10000, COUPON_BAD_INPUT, 0, 0 },
    { "negative minimum (gift)", GIFT(-1), 10000, COUPON_BAD_INPUT, 0, 0 },
    { "negative order", CASH(1000, 0), -1, COUPON_BAD_INPUT, 0, 0 },
    { "negative order (discount)", DISC(8500, 0, 0), INT64_MIN, COUPON_BAD_INPUT, 0, 0 },
    { "unknown type", { (enum coupon_type)7, 0, COUPON_RATE_ONE, 0, 0 }, 100, COUPON_BAD_INPUT, 0, 0 },
};

static void test_apply_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(apply_cases) / sizeof(apply_cases[0]); i++) {
        const struct apply_case *c = &apply_cases[i];
        int64_t discount = SENTINEL, payable = SENTINEL;
        enum coupon_verdict v = couponterms_apply(&c->terms, c->order, &discount, &payable);
        if (v != c->verdict)
            fail_msg("%s: verdict %d, want %d", c->what, (int)v, (int)c->verdict);
        if (v != COUPON_APPLIED)
            continue;
        if (discount != c->discount || payable != c->payable)
            fail_msg("%s: discount %" PRId64 " payable %" PRId64 ", want %" PRId64 " / %" PRId64,
                     c->what, discount, payable, c->discount, c->payable);
    }
}

/* Against an independent computation in 128 bits (a GCC/Clang extension, fine in a test):
 * payable = round_half_up(order x rate / 10000), discount = order - payable, capped; and
 * payable + discount == order always, 0 <= discount <= order. Orders near INT64_MAX and
 * every remainder modulo 10000 near the rounding edges. */
static int64_t reference_payable(int64_t order, int64_t rate)
{
    __int128 p = ((__int128)order * rate + COUPON_RATE_ONE / 2) / COUPON_RATE_ONE;
    return (int64_t)p;
}

static void test_apply_against_reference(void **state)
{
    (void)state;
    static const int64_t rates[] = { 1, 2, 2500, 4999, 5000, 5001, 8500, 8888, 9999, COUPON_RATE_ONE };
    static const int64_t caps[] = { 0, 1, 150, 999999 };
    static const int64_t bases[] = { 0, 1, 99, 10000, 123456789, INT64_MAX / 2, INT64_MAX - 20000 };
    for (size_t r = 0; r < sizeof(rates) / sizeof(rates[0]); r++) {
        for (size_t b = 0; b < sizeof(bases) / sizeof(bases[0]); b++) {
            for (int64_t k = 0; k <= 20000; k += (k < 20 || k > 19980) ? 1 : 37) {
                int64_t order = bases[b] + k;
                for (size_t c = 0; c < sizeof(caps) / sizeof(caps[0]); c++) {
                    struct coupon_terms t = DISC(rates[r], 0, caps[c]);
                    int64_t discount = SENTINEL, payable = SENTINEL;
                    assert_int_equal(couponterms_apply(&t, order, &discount, &payable), COUPON_APPLIED);
                    int64_t want_off = order - reference_payable(order, rates[r]);
                    if (caps[c] > 0 && want_off > caps[c])
                        want_off = caps[c];
                    if (discount != want_off || payable != order - want_off)
                        fail_msg("rate %" PRId64 " cap %" PRId64 " order %" PRId64 ": discount %" PRId64
                                 " payable %" PRId64 ", want discount %" PRId64,
                                 rates[r], caps[c], order, discount, payable, want_off);
                    assert_true(discount >= 0 && discount <= order);
                }
            }
        }
    }
    /* CASH near INT64_MAX: never wraps. */
    for (int64_t k = 0; k < 1000; k++) {
        struct coupon_terms t = CASH(INT64_MAX - k, 0);
        int64_t order = INT64_MAX - 500, discount, payable;
        assert_int_equal(couponterms_apply(&t, order, &discount, &payable), COUPON_APPLIED);
        assert_true(payable >= 0 && discount >= 0);
        assert_true(payable == order - discount);
    }
}

/* A refused order writes nothing: the caller must not read half an answer. */
static void test_apply_refusals_write_nothing(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(apply_cases) / sizeof(apply_cases[0]); i++) {
        const struct apply_case *c = &apply_cases[i];
        if (c->verdict == COUPON_APPLIED)
            continue;
        int64_t discount = SENTINEL, payable = SENTINEL;
        couponterms_apply(&c->terms, c->order, &discount, &payable);
        if (discount != SENTINEL || payable != SENTINEL)
            fail_msg("%s: wrote an answer on refusal", c->what);
    }
}

/* ---- cents and type names ----------------------------------------------------------- */

static void test_format_cents(void **state)
{
    (void)state;
    static const struct { int64_t cents; const char *want; } cases[] = {
        { 0, "0.00" },
        { 5, "0.05" },
        { 50, "0.50" },
        { 100, "1.00" },
        { 1234, "12.34" },
        { 100000, "1000.00" },
        { -5, "-0.05" },
        { -1234, "-12.34" },
        { INT64_MAX, "92233720368547758.07" },
        { INT64_MIN, "-92233720368547758.08" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char buf[32];
        int n = couponterms_format_cents(cases[i].cents, buf, sizeof(buf));
        assert_int_equal(n, (int)strlen(cases[i].want));
        assert_string_equal(buf, cases[i].want);
    }
    /* Too small a buffer is an error, not a silently cut amount. */
    char small[5];
    assert_int_equal(couponterms_format_cents(1234, small, sizeof(small)), -1);
    char exact[6];
    assert_int_equal(couponterms_format_cents(1234, exact, sizeof(exact)), 5);
    assert_string_equal(exact, "12.34");
}

/* What the gateway prints, parse_cents reads back exactly (requests and MySQL DECIMALs). */
static void test_format_parse_round_trip(void **state)
{
    (void)state;
    static const int64_t values[] = { 0, 1, 9, 10, 99, 100, 101, 12345, 999999999999999LL,
                                      INT64_MAX - 1, INT64_MAX };
    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        char buf[32];
        assert_true(couponterms_format_cents(values[i], buf, sizeof(buf)) > 0);
        int64_t back = SENTINEL;
        if (parse_cents(buf, &back) != 0)
            fail_msg("parse_cents refused \"%s\"", buf);
        assert_true(back == values[i]);
    }
}

static void test_type_names(void **state)
{
    (void)state;
    static const enum coupon_type types[] = { COUPON_CASH, COUPON_DISCOUNT, COUPON_GIFT };
    static const char *const names[] = { "CASH", "DISCOUNT", "GIFT" };
    for (size_t i = 0; i < 3; i++) {
        assert_string_equal(couponterms_type_name(types[i]), names[i]);
        enum coupon_type back = (enum coupon_type)99;
        assert_int_equal(couponterms_type_parse(couponterms_type_name(types[i]), &back), 0);
        assert_int_equal(back, types[i]);
    }
    assert_string_equal(couponterms_type_name((enum coupon_type)3), "UNKNOWN");
    assert_string_equal(couponterms_type_name((enum coupon_type)-1), "UNKNOWN");
    static const char *const bad[] = { "", "cash", "Cash", "CASH ", " CASH", "CASHX", "DISC", "UNKNOWN" };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        enum coupon_type back = (enum coupon_type)99;
        if (couponterms_type_parse(bad[i], &back) == 0)
            fail_msg("couponterms_type_parse accepted \"%s\"", bad[i]);
        assert_int_equal(back, 99);
    }
}

/* ---- usercoupon: the Redis record of a user coupon ------------------------------------- */

static struct usercoupon make_ucoupon(int64_t id, int64_t user, int64_t coupon, struct coupon_terms t,
                                   int64_t start, int64_t end)
{
    struct usercoupon uc;
    memset(&uc, 0, sizeof(uc));
    uc.id = id;
    uc.user_id = user;
    uc.coupon_id = coupon;
    uc.terms = t;
    uc.start_ms = start;
    uc.end_ms = end;
    strcpy(uc.status, "UNUSED");
    return uc;
}

/* The terms JSON without a terminating NUL after it, so ASan sees any over-read. */
static int decode_exact(const char *json, struct usercoupon *uc)
{
    size_t len = strlen(json);
    char *copy = malloc(len ? len : 1);
    assert_non_null(copy);
    memcpy(copy, json, len);
    int rc = usercoupon_decode(copy, len, uc);
    free(copy);
    return rc;
}

static void check_ucoupon_round_trip(const struct usercoupon *want)
{
    char *json = usercoupon_encode(want);
    assert_non_null(json);
    struct usercoupon back;
    bool ok = decode_exact(json, &back) == 0 && back.id == want->id &&
              back.user_id == want->user_id && back.coupon_id == want->coupon_id &&
              back.terms.type == want->terms.type && back.terms.amount == want->terms.amount &&
              back.terms.rate == want->terms.rate && back.terms.min_order == want->terms.min_order &&
              back.terms.max_discount == want->terms.max_discount &&
              back.start_ms == want->start_ms && back.end_ms == want->end_ms &&
              strcmp(back.name, want->name) == 0 && strcmp(back.status, "UNUSED") == 0;
    /* The message is kept and the text freed first: fail_msg does not return. */
    char msg[2048];
    snprintf(msg, sizeof(msg), "%s did not read back as written (id %" PRId64 ", user %" PRId64 ")",
             json, want->id, want->user_id);
    free(json);
    if (!ok)
        fail_msg("%s", msg);
}

static void test_ucoupon_round_trip(void **state)
{
    (void)state;
    const struct usercoupon cases[] = {
        make_ucoupon(1, 1, 1, (struct coupon_terms)CASH(1000, 10000), 0, 1),
        make_ucoupon(7, 1001, 3, (struct coupon_terms)DISC(8500, 0, 5000), 1733000000000LL, 1796126400123LL),
        make_ucoupon(42, 5, 9, (struct coupon_terms)GIFT(3000), 1733000000000LL, 1733000000001LL),
        /* DECIMAL(15,2): the largest amount the schema holds, 15 digits of cents. */
        make_ucoupon(123456789, 999999999999999LL, 77,
                     (struct coupon_terms)DISC(1, 999999999999999LL, 999999999999999LL),
                     253402300799999LL, 253402300799999LL),
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        check_ucoupon_round_trip(&cases[i]);
}

/* The coupon's name goes into the record as the shop typed it: quotes, backslashes,
 * control characters and any UTF-8 come back unchanged, and the longest name fits. */
static void test_ucoupon_name_round_trip(void **state)
{
    (void)state;
    const char *names[] = { "", "满100减20 \"双11\" \\ 券\n\t\x01", "plain" };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        struct usercoupon uc = make_ucoupon(3, 4, 5, (struct coupon_terms)CASH(1000, 0), 1, 2);
        strcpy(uc.name, names[i]);
        check_ucoupon_round_trip(&uc);
    }
    struct usercoupon longest = make_ucoupon(3, 4, 5, (struct coupon_terms)CASH(1000, 0), 1, 2);
    for (size_t i = 0; i + 4 < sizeof(longest.name); i += 4)
        memcpy(longest.name + i, "\xe5\x88\xb8\"", 4);  /* 4 bytes: escaped, 5 */
    check_ucoupon_round_trip(&longest);
}

/* A record written before names were kept has none: it still reads, with an empty name;
 * a name that is not a string is refused. */
static void test_ucoupon_without_name(void **state)
{
    (void)state;
    static const char *const before = "{\"id\":1,\"userId\":2,\"couponId\":3,\"type\":\"CASH\","
                                      "\"amount\":100,\"rate\":10000,\"minOrder\":0,\"maxDiscount\":0,"
                                      "\"start\":1,\"end\":2";
    char json[256];
    struct usercoupon uc;
    snprintf(json, sizeof(json), "%s}", before);
    assert_int_equal(decode_exact(json, &uc), 0);
    assert_string_equal(uc.name, "");
    snprintf(json, sizeof(json), "%s,\"name\":7}", before);
    assert_int_equal(decode_exact(json, &uc), -1);
}

/* Ids and user ids up to 2^53 - 1 are valid everywhere else (JSON_MAX_EXACT_INT); the
 * record must carry them exactly too. cJSON prints numbers with 15 significant digits
 * when its tolerant comparison finds that close enough, so 16-digit values need care. */
static void test_ucoupon_large_ids_exact(void **state)
{
    (void)state;
    const int64_t max_exact = 9007199254740991LL; /* 2^53 - 1 */
    const struct usercoupon cases[] = {
        make_ucoupon(1, 1000000000000001LL, 1, (struct coupon_terms)GIFT(0), 0, 1),
        make_ucoupon(max_exact, max_exact, max_exact,
                     (struct coupon_terms)DISC(1, max_exact, max_exact), max_exact - 1, max_exact),
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        check_ucoupon_round_trip(&cases[i]);
}

static void test_ucoupon_decode_rejects(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "null",
        "[]",
        "{}",
        "\"CASH\"",
        /* one field missing */
        "{\"id\":1,\"userId\":2,\"couponId\":3,\"type\":\"CASH\",\"amount\":1,\"rate\":10000,"
        "\"minOrder\":0,\"maxDiscount\":0,\"start\":0}",
        /* unknown type */
        "{\"id\":1,\"userId\":2,\"couponId\":3,\"type\":\"FREE\",\"amount\":1,\"rate\":10000,"
        "\"minOrder\":0,\"maxDiscount\":0,\"start\":0,\"end\":1}",
        /* type in lower case */
        "{\"id\":1,\"userId\":2,\"couponId\":3,\"type\":\"cash\",\"amount\":1,\"rate\":10000,"
        "\"minOrder\":0,\"maxDiscount\":0,\"start\":0,\"end\":1}",
        /* negative amount */
        "{\"id\":1,\"userId\":2,\"couponId\":3,\"type\":\"CASH\",\"amount\":-1,\"rate\":10000,"
        "\"minOrder\":0,\"maxDiscount\":0,\"start\":0,\"end\":1}",
        /* an amount as a string */
        "{\"id\":1,\"userId\":2,\"couponId\":3,\"type\":\"CASH\",\"amount\":\"10.00\",\"rate\":10000,"
        "\"minOrder\":0,\"maxDiscount\":0,\"start\":0,\"end\":1}",
        /* above 2^53: not exact in JSON */
        "{\"id\":1,\"userId\":2,\"couponId\":3,\"type\":\"CASH\",\"amount\":9007199254740993,"
        "\"rate\":10000,\"minOrder\":0,\"maxDiscount\":0,\"start\":0,\"end\":1}",
        /* type not a string */
        "{\"id\":1,\"userId\":2,\"couponId\":3,\"type\":0,\"amount\":1,\"rate\":10000,"
        "\"minOrder\":0,\"maxDiscount\":0,\"start\":0,\"end\":1}",
        /* junk after the object */
        "{\"id\":1,\"userId\":2,\"couponId\":3,\"type\":\"CASH\",\"amount\":1,\"rate\":10000,"
        "\"minOrder\":0,\"maxDiscount\":0,\"start\":0,\"end\":1}x",
        /* cut short */
        "{\"id\":1,\"userId\":2,\"couponId\":3,\"type\":\"CASH\",\"amount\":1,\"rate\":10000,",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct usercoupon uc;
        if (decode_exact(bad[i], &uc) == 0)
            fail_msg("usercoupon_decode accepted %s", bad[i]);
    }
}

static void test_ucoupon_used(void **state)
{
    (void)state;
    struct usercoupon uc = make_ucoupon(7, 1001, 3, (struct coupon_terms)CASH(1000, 0), 0, 10);
    assert_int_equal(usercoupon_decode_used("CHK-1|1000|9000|1733000000000", &uc), 0);
    assert_string_equal(uc.status, "USED");
    assert_string_equal(uc.order_ref, "CHK-1");
    assert_true(uc.discount == 1000 && uc.payable == 9000 && uc.used_ms == 1733000000000LL);
    assert_string_equal(usercoupon_state_at(&uc, 5), "USED");
    assert_string_equal(usercoupon_state_at(&uc, 100), "USED");   /* used stays used */

    /* What couponsync_publish writes (ref|discount|payable|usedAtMs) reads back. */
    char ref64[USERCOUPON_REF_LEN];
    memset(ref64, 'r', USERCOUPON_REF_LEN - 1);
    ref64[USERCOUPON_REF_LEN - 1] = '\0';
    char value[256];
    snprintf(value, sizeof(value), "%s|%" PRId64 "|%" PRId64 "|%" PRId64, ref64, (int64_t)0,
             INT64_MAX, (int64_t)1796126400123LL);
    struct usercoupon big = make_ucoupon(1, 1, 1, (struct coupon_terms)GIFT(0), 0, 10);
    assert_int_equal(usercoupon_decode_used(value, &big), 0);
    assert_string_equal(big.order_ref, ref64);
    assert_true(big.payable == INT64_MAX);

    char ref65[USERCOUPON_REF_LEN + 1];
    memset(ref65, 'r', USERCOUPON_REF_LEN);
    ref65[USERCOUPON_REF_LEN] = '\0';
    char too_long[256];
    snprintf(too_long, sizeof(too_long), "%s|1|2|3", ref65);
    static const char *const bad[] = {
        "", "CHK-1", "CHK-1|", "CHK-1|1000", "CHK-1|1000|9000", "CHK-1|1000|9000|",
        "CHK-1|x|9000|1", "CHK-1|1000|9000|1|", "CHK-1|1000|9000|1 ", "CHK-1|1000|9000|1x",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct usercoupon u = make_ucoupon(1, 1, 1, (struct coupon_terms)GIFT(0), 0, 10);
        if (usercoupon_decode_used(bad[i], &u) == 0)
            fail_msg("usercoupon_decode_used accepted \"%s\"", bad[i]);
        assert_string_equal(u.status, "UNUSED");   /* nothing applied on failure */
    }
    struct usercoupon u = make_ucoupon(1, 1, 1, (struct coupon_terms)GIFT(0), 0, 10);
    assert_int_equal(usercoupon_decode_used(too_long, &u), -1);
    assert_string_equal(u.status, "UNUSED");
}

static void test_ucoupon_state_and_refs(void **state)
{
    (void)state;
    struct usercoupon uc = make_ucoupon(1, 1, 1, (struct coupon_terms)CASH(100, 0), 1000, 2000);
    assert_string_equal(usercoupon_state_at(&uc, 1999), "UNUSED");
    assert_string_equal(usercoupon_state_at(&uc, 2000), "EXPIRED");   /* the end is exclusive */
    assert_string_equal(usercoupon_state_at(&uc, 5000), "EXPIRED");

    char key[64];
    assert_true(usercoupon_key(key, sizeof(key), 1001) > 0);
    assert_string_equal(key, "seckill:ucoupon:{u1001}");
    char small[10];
    assert_int_equal(usercoupon_key(small, sizeof(small), 1001), -1);

    char ref64[USERCOUPON_REF_LEN], ref65[USERCOUPON_REF_LEN + 1];
    memset(ref64, 'a', sizeof(ref64) - 1);
    ref64[sizeof(ref64) - 1] = '\0';
    memset(ref65, 'a', sizeof(ref65) - 1);
    ref65[sizeof(ref65) - 1] = '\0';
    static const char *const ok[] = { "a", "CHK-1", "order_2026.12.01:7", "0", "A-Z_a-z.0-9:" };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
        if (!usercoupon_valid_ref(ok[i]))
            fail_msg("usercoupon_valid_ref refused \"%s\"", ok[i]);
    assert_true(usercoupon_valid_ref(ref64));
    static const char *const bad[] = { "", "a|b", "a b", "a\"b", "a\\b", "a/b", "a\nb", "\xc3\xa9" };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (usercoupon_valid_ref(bad[i]))
            fail_msg("usercoupon_valid_ref accepted \"%s\"", bad[i]);
    assert_false(usercoupon_valid_ref(ref65));
}

/* ---- redeemevent: the coupon.used message ---------------------------------------------- */

static int use_decode_exact(const char *msg, struct redeemevent *ev, char *err, size_t errlen)
{
    size_t len = strlen(msg);
    char *copy = malloc(len ? len : 1);
    assert_non_null(copy);
    memcpy(copy, msg, len);
    int rc = redeemevent_decode(copy, len, ev, err, errlen);
    free(copy);
    return rc;
}

static struct redeemevent make_use(int64_t ucid, int64_t user, const char *ref, int64_t discount,
                                int64_t payable, int64_t used)
{
    struct redeemevent ev;
    memset(&ev, 0, sizeof(ev));
    ev.user_coupon_id = ucid;
    ev.user_id = user;
    snprintf(ev.order_ref, sizeof(ev.order_ref), "%s", ref);
    ev.discount = discount;
    ev.payable = payable;
    ev.used_ms = used;
    return ev;
}

static void test_useevent_round_trip(void **state)
{
    (void)state;
    const int64_t max_exact = 9007199254740991LL;
    char ref64[USERCOUPON_REF_LEN];
    memset(ref64, 'z', sizeof(ref64) - 1);
    ref64[sizeof(ref64) - 1] = '\0';
    struct redeemevent cases[] = {
        make_use(7, 1001, "CHK-1", 1000, 9000, 1733000000000LL),
        make_use(1, 1, "a", 0, 0, 0),
        make_use(max_exact, max_exact, ref64, max_exact, max_exact, max_exact),
        make_use(3, 4, "order_2026.12.01:7-x", 15, 86, 1796126400123LL),
        make_use(3, 4, "CHK-9", 0, 0, 1796126400123LL),
        make_use(3, 4, "CHK-9", 0, 0, 1796126400999LL),
    };
    cases[4].seq = 1796126400123LL;
    cases[5].seq = 1796126400999LL;
    cases[5].kind = REDEEMEVENT_REFUNDED;   /* its amounts (0) are not carried */
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char buf[512];
        int n = redeemevent_encode(&cases[i], buf, sizeof(buf));
        assert_true(n > 0);
        assert_int_equal((size_t)n, strlen(buf));
        assert_true(redeemevent_is(buf, (size_t)n));
        struct redeemevent back;
        char err[128] = "";
        if (use_decode_exact(buf, &back, err, sizeof(err)) != 0)
            fail_msg("decode of %s failed: %s", buf, err);
        assert_true(back.user_coupon_id == cases[i].user_coupon_id);
        assert_true(back.user_id == cases[i].user_id);
        assert_string_equal(back.order_ref, cases[i].order_ref);
        assert_true(back.discount == cases[i].discount);
        assert_true(back.payable == cases[i].payable);
        assert_true(back.used_ms == cases[i].used_ms);
        assert_true(back.seq == cases[i].seq);
        assert_true(back.kind == cases[i].kind);
    }
    char small[16];
    assert_int_equal(redeemevent_encode(&cases[0], small, sizeof(small)), -1);
}

static void test_useevent_rejects(void **state)
{
    (void)state;
#define USE_FIELDS(type, ucid, ref, discount) \
    "{\"type\":" type ",\"userCouponId\":" ucid ",\"userId\":1001,\"orderRef\":" ref \
    ",\"discount\":" discount ",\"payable\":9000,\"usedAt\":1733000000000}"
    static const char *const bad[] = {
        "",
        "[]",
        "{}",
        USE_FIELDS("\"order.created\"", "7", "\"CHK-1\"", "1000"),
        USE_FIELDS("\"coupon.used \"", "7", "\"CHK-1\"", "1000"),
        USE_FIELDS("1", "7", "\"CHK-1\"", "1000"),
        USE_FIELDS("\"coupon.used\"", "0", "\"CHK-1\"", "1000"),
        USE_FIELDS("\"coupon.used\"", "-7", "\"CHK-1\"", "1000"),
        USE_FIELDS("\"coupon.used\"", "7.5", "\"CHK-1\"", "1000"),
        USE_FIELDS("\"coupon.used\"", "\"7\"", "\"CHK-1\"", "1000"),
        USE_FIELDS("\"coupon.used\"", "9007199254740993", "\"CHK-1\"", "1000"),
        USE_FIELDS("\"coupon.used\"", "7", "\"\"", "1000"),
        USE_FIELDS("\"coupon.used\"", "7", "\"CHK|1\"", "1000"),
        USE_FIELDS("\"coupon.used\"", "7", "\"CHK 1\"", "1000"),
        USE_FIELDS("\"coupon.used\"", "7", "7", "1000"),
        USE_FIELDS("\"coupon.used\"", "7", "\"CHK-1\"", "-1"),
        USE_FIELDS("\"coupon.used\"", "7", "\"CHK-1\"", "10.5"),
        USE_FIELDS("\"coupon.used\"", "7", "\"CHK-1\"", "1000") "x",
        "{\"type\":\"coupon.used\",\"userCouponId\":7,\"userId\":1001,\"orderRef\":\"CHK-1\","
        "\"discount\":1000,\"payable\":9000}",
    };
#undef USE_FIELDS
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct redeemevent ev;
        char err[128] = "";
        if (use_decode_exact(bad[i], &ev, err, sizeof(err)) == 0)
            fail_msg("redeemevent_decode accepted %s", bad[i]);
        assert_true(err[0] != '\0');   /* always says why */
    }
    /* A refund must carry its seq and no amounts are read from it. */
    struct redeemevent ev;
    char err[128] = "";
    assert_int_equal(use_decode_exact("{\"type\":\"coupon.refunded\",\"userCouponId\":7,\"userId\":1,"
                                      "\"orderRef\":\"A\",\"refundedAt\":5}", &ev, err, sizeof(err)), -1);
    assert_int_equal(use_decode_exact("{\"type\":\"coupon.refunded\",\"userCouponId\":7,\"userId\":1,"
                                      "\"orderRef\":\"A\",\"refundedAt\":5,\"seq\":9}",
                                      &ev, err, sizeof(err)), 0);
    assert_true(ev.kind == REDEEMEVENT_REFUNDED && ev.seq == 9 && ev.used_ms == 5);
    /* A coupon.used from before seq existed is read with seq 0. */
    assert_int_equal(use_decode_exact("{\"type\":\"coupon.used\",\"userCouponId\":7,\"userId\":1,"
                                      "\"orderRef\":\"A\",\"discount\":1,\"payable\":2,\"usedAt\":5}",
                                      &ev, err, sizeof(err)), 0);
    assert_true(ev.kind == REDEEMEVENT_USED && ev.seq == 0);
    /* An order event is not a coupon.used event. */
    static const char order[] = "{\"orderNo\":\"1-2\",\"userId\":1,\"activityId\":2,\"couponId\":3,"
                                "\"createdAt\":1}";
    assert_false(redeemevent_is(order, sizeof(order) - 1));
    assert_false(redeemevent_is("", 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_apply_table),
        cmocka_unit_test(test_apply_against_reference),
        cmocka_unit_test(test_apply_refusals_write_nothing),
        cmocka_unit_test(test_format_cents),
        cmocka_unit_test(test_format_parse_round_trip),
        cmocka_unit_test(test_type_names),
        cmocka_unit_test(test_ucoupon_round_trip),
        cmocka_unit_test(test_ucoupon_name_round_trip),
        cmocka_unit_test(test_ucoupon_without_name),
        cmocka_unit_test(test_ucoupon_large_ids_exact),
        cmocka_unit_test(test_ucoupon_decode_rejects),
        cmocka_unit_test(test_ucoupon_used),
        cmocka_unit_test(test_ucoupon_state_and_refs),
        cmocka_unit_test(test_useevent_round_trip),
        cmocka_unit_test(test_useevent_rejects),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
