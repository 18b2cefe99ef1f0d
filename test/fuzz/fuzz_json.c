/* libFuzzer harness for the JSON that crosses a trust boundary: HTTP bodies
 * (json_parse_object), the Kafka messages the consumer decodes (orderevent, redeemevent)
 * and the user coupon records read back from Redis (usercoupon, and its ":used" field).
 * Beyond crashes and leaks it checks the codecs' round trip: whatever decodes must
 * encode, and decode again to the same struct, or a consumer restart would read back
 * something other than what was sent. */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/orderevent.h"
#include "common/usercoupon.h"
#include "common/redeemevent.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A property the code promises did not hold: a crash that libFuzzer saves as a reproducer. */
#define CHECK(cond) do { if (!(cond)) __builtin_trap(); } while (0)

static void check_orderevent(const char *text, size_t size)
{
    struct orderevent ev, back;
    char err[128], buf[512];
    if (orderevent_decode(text, size, &ev, err, sizeof(err)) != 0) {
        CHECK(err[0] != '\0');
        return;
    }
    int n = orderevent_encode(&ev, buf, sizeof(buf));
    CHECK(n > 0);
    CHECK(orderevent_decode(buf, (size_t)n, &back, err, sizeof(err)) == 0);
    CHECK(strcmp(ev.order_no, back.order_no) == 0);
    CHECK(ev.user_id == back.user_id && ev.activity_id == back.activity_id &&
          ev.coupon_id == back.coupon_id && ev.created_ms == back.created_ms);
    /* An order event must never be taken for a coupon.used event. */
    CHECK(!redeemevent_is(buf, (size_t)n));
}

static void check_useevent(const char *text, size_t size)
{
    struct redeemevent ev, back;
    char err[128], buf[512];
    (void)redeemevent_is(text, size);
    if (redeemevent_decode(text, size, &ev, err, sizeof(err)) != 0) {
        CHECK(err[0] != '\0');
        return;
    }
    int n = redeemevent_encode(&ev, buf, sizeof(buf));
    CHECK(n > 0);
    /* The consumer routes on redeemevent_is before decoding. */
    CHECK(redeemevent_is(buf, (size_t)n));
    CHECK(redeemevent_decode(buf, (size_t)n, &back, err, sizeof(err)) == 0);
    CHECK(strcmp(ev.order_ref, back.order_ref) == 0);
    CHECK(ev.user_coupon_id == back.user_coupon_id && ev.user_id == back.user_id &&
          ev.discount == back.discount && ev.payable == back.payable && ev.used_ms == back.used_ms);
}

static void check_same_terms(const struct usercoupon *a, const struct usercoupon *b)
{
    CHECK(a->id == b->id && a->user_id == b->user_id && a->coupon_id == b->coupon_id);
    CHECK(a->terms.type == b->terms.type && a->terms.amount == b->terms.amount &&
          a->terms.rate == b->terms.rate && a->terms.min_order == b->terms.min_order &&
          a->terms.max_discount == b->terms.max_discount);
    CHECK(a->start_ms == b->start_ms && a->end_ms == b->end_ms);
    CHECK(strcmp(a->status, b->status) == 0);
}

static void check_ucoupon(const char *text, size_t size)
{
    struct usercoupon uc, back;
    if (usercoupon_decode(text, size, &uc) == 0) {
        CHECK(strcmp(uc.status, "UNUSED") == 0);
        char *json = usercoupon_encode(&uc);
        CHECK(json != NULL);
        CHECK(usercoupon_decode(json, strlen(json), &back) == 0);
        check_same_terms(&uc, &back);
        free(json);
    }

    /* The ":used" field is a C string from Redis: "orderRef|discount|payable|usedAt". */
    char *field = malloc(size + 1);
    if (!field)
        abort();
    memcpy(field, text, size);
    field[size] = '\0';
    memset(&uc, 0, sizeof(uc));
    if (usercoupon_decode_used(field, &uc) == 0) {
        CHECK(strcmp(uc.status, "USED") == 0 && usercoupon_valid_ref(uc.order_ref));
        CHECK(uc.discount >= 0 && uc.payable >= 0 && uc.used_ms >= 0);
        /* use.lua writes the field the same way. */
        char again[160];
        snprintf(again, sizeof(again), "%s|%" PRId64 "|%" PRId64 "|%" PRId64, uc.order_ref, uc.discount,
                 uc.payable, uc.used_ms);
        memset(&back, 0, sizeof(back));
        CHECK(usercoupon_decode_used(again, &back) == 0);
        CHECK(strcmp(uc.order_ref, back.order_ref) == 0 && uc.discount == back.discount &&
              uc.payable == back.payable && uc.used_ms == back.used_ms);
        CHECK(strcmp(usercoupon_state_at(&uc, 0), "USED") == 0);
    }
    free(field);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* libFuzzer's buffer is exactly size bytes with no NUL after it, like an HTTP body
     * or a Kafka payload: ASan reports any read past the end. */
    const char *text = (const char *)data;
    char err[128];
    cJSON *root = json_parse_object(text, size, err, sizeof(err));
    CHECK(root ? cJSON_IsObject(root) : err[0] != '\0');
    cJSON_Delete(root);

    check_orderevent(text, size);
    check_useevent(text, size);
    check_ucoupon(text, size);
    return 0;
}
