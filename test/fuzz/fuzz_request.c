/* libFuzzer harness for everything the gateway does with a request before any I/O:
 * evhttp's URI and query parsing, httpparams (query string plus a JSON, form or multipart
 * body, parsed strictly; multipart's Content-Type comes as line 2), the parameter values
 * through the strict parsers, purchase tokens and JWTs. Crashes, leaks and sanitizer
 * reports are the findings; the asserts below add the properties the parsers promise in
 * their headers.
 *
 * One input is one request:
 *   byte 0   flags: bits 0-2 pick the Content-Type (content_types[], 6 and 7 = line 2),
 *            bit 3 = line 1 is a request URI for evhttp_uri_parse, else a raw query
 *            string; bit 4 = sign the JWT with the test secret, so that the claims
 *            behind the signature get fuzzed too (no mutation guesses an HMAC)
 *   line 1   URI or query string, up to the first '\n'
 *   line 2   the Content-Type header, only when bits 0-2 are 6 or 7
 *   rest     the body, exactly the bytes that remain (evbuffer_pullup adds no NUL either)
 * The JWT and purchase-token checks also read everything after byte 0 as one token, the
 * way the Authorization header reaches jwt_verify. */
#include <cjson/cJSON.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gateway/httpparams.h"
#include "gateway/jwt.h"
#include "common/parse.h"
#include "gateway/purchasetoken.h"
#include "common/usercoupon.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A property the code promises did not hold: a crash that libFuzzer saves as a reproducer. */
#define CHECK(cond) do { if (!(cond)) __builtin_trap(); } while (0)

static const char SECRET[] = "fuzz-secret-0123456789abcdef-0123456789";
/* 2024-12-01, inside the range every timestamp here is checked against. */
static const int64_t NOW_S = 1733011200;

static const char *const content_types[6] = {
    NULL,
    "application/json",
    "application/x-www-form-urlencoded",
    "application/json; charset=utf-8",
    "APPLICATION/X-WWW-FORM-URLENCODED;charset=UTF-8",
    "text/plain",
};

static char *dup_bytes(const uint8_t *p, size_t n)
{
    char *s = malloc(n + 1);
    if (!s)
        abort();
    memcpy(s, p, n);
    s[n] = '\0';
    return s;
}

/* Splits off one '\n'-terminated line (or everything that is left). */
static char *take_line(const uint8_t **p, size_t *left)
{
    const uint8_t *nl = memchr(*p, '\n', *left);
    size_t n = nl ? (size_t)(nl - *p) : *left;
    char *line = dup_bytes(*p, n);
    *p += nl ? n + 1 : n;
    *left -= nl ? n + 1 : n;
    return line;
}

/* The strict parsers against each other and against their own output. */
static void check_value(const char *v)
{
    int64_t id = 0, json_id = 0, cents = 0;
    int id_ok = parse_id(v, &id) == 0;
    int json_ok = parse_json_id(v, &json_id) == 0;
    if (id_ok) {
        /* Strict means canonical: the decimal text of the value is the input itself. */
        char back[24];
        snprintf(back, sizeof(back), "%" PRId64, id);
        CHECK(id > 0 && strcmp(back, v) == 0);
    }
    CHECK(json_ok == (id_ok && id <= PARSE_MAX_JSON_ID));
    CHECK(!json_ok || json_id == id);

    if (parse_cents(v, &cents) == 0) {
        CHECK(cents >= 0);
        char back[32];
        int64_t again = -1;
        snprintf(back, sizeof(back), "%" PRId64 ".%02" PRId64, cents / 100, cents % 100);
        CHECK(parse_cents(back, &again) == 0 && again == cents);
    }
    if (id_ok && id <= INT64_MAX / 100) {
        /* Whole yuan are money too. */
        CHECK(parse_cents(v, &cents) == 0 && cents == id * 100);
    }

    if (usercoupon_valid_ref(v)) {
        size_t n = strlen(v);
        CHECK(n >= 1 && n <= USERCOUPON_REF_LEN - 1);
        CHECK(strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.:-") == n);
    }
}

/* Money is the same money whether it comes as form text or as a JSON number: the text
 * of an amount parse_cents accepts, sent as {"orderAmount":<text>}, must give the same
 * cents. (Up to 10^13 yuan: past that a double no longer tells the cents apart.) */
static void check_amount_as_json_number(const char *text)
{
    int64_t cents, again;
    if (parse_cents(text, &cents) != 0 || cents > 1000000000000000LL)
        return;
    char body[HTTPPARAMS_VALUE_LEN + 32], err[160], value[HTTPPARAMS_VALUE_LEN];
    int n = snprintf(body, sizeof(body), "{\"orderAmount\":%s}", text);
    struct httpparams p;
    if (httpparams_parse_parts(&p, NULL, "application/json", body, (size_t)n, err, sizeof(err)) == 0) {
        CHECK(httpparams_get(&p, "orderAmount", value, sizeof(value), err, sizeof(err)) == 1);
        CHECK(parse_cents(value, &again) == 0 && again == cents);
    }
    httpparams_free(&p);
}

/* httpparams.h: "a name given twice with different values is an error". Otherwise a
 * proxy that checks the last userId and a gateway that takes the first disagree about
 * who is buying. True when the query, the form or the JSON object has name twice with
 * different values (JSON: two different strings, or two different numbers). */
static bool kv_conflict(const struct evkeyvalq *q, const char *name)
{
    const char *seen = NULL;
    for (const struct evkeyval *kv = q->tqh_first; kv; kv = kv->next.tqe_next) {
        /* evhttp_find_header matches names without regard to case; so must the check. */
        if (strcasecmp(kv->key, name) != 0)
            continue;
        if (seen && strcmp(seen, kv->value) != 0)
            return true;
        seen = kv->value;
    }
    return false;
}

static bool given_twice(const struct httpparams *p, const char *name)
{
    if (p->has_query && kv_conflict(&p->query, name))
        return true;
    if (p->has_form && kv_conflict(&p->form, name))
        return true;
    if (!p->json)
        return false;
    const cJSON *string = NULL, *number = NULL;
    for (const cJSON *item = p->json->child; item; item = item->next) {
        if (!item->string || strcmp(item->string, name) != 0)
            continue;
        if (cJSON_IsString(item)) {
            if (string && strcmp(string->valuestring, item->valuestring) != 0)
                return true;
            string = item;
        } else if (cJSON_IsNumber(item)) {
            if (number && number->valuedouble != item->valuedouble)
                return true;
            number = item;
        }
    }
    return false;
}

/* What the gateway reads out of the parsed parameters, and with which parsers. */
static void check_params(struct httpparams *p)
{
    static const char *const names[] = { "userId", "activityId", "orderAmount", "orderRef", "token" };
    char values[5][HTTPPARAMS_VALUE_LEN];
    int found[5];
    for (size_t i = 0; i < 5; i++) {
        char err[160];
        found[i] = httpparams_get(p, names[i], values[i], sizeof(values[i]), err, sizeof(err));
        CHECK(found[i] >= -1 && found[i] <= 1);
        CHECK(found[i] == -1 || !given_twice(p, names[i]));
        if (found[i] != 1) {
            values[i][0] = '\0';
            continue;
        }
        CHECK(strlen(values[i]) < sizeof(values[i]));
        /* A short buffer gets the same value or "too long", never a cut-off value. */
        char small[8];
        int again = httpparams_get(p, names[i], small, sizeof(small), err, sizeof(err));
        if (strlen(values[i]) < sizeof(small))
            CHECK(again == 1 && strcmp(small, values[i]) == 0);
        else
            CHECK(again == -1);
        check_value(values[i]);
    }
    if (found[2] == 1)
        check_amount_as_json_number(values[2]);

    int64_t user_id, activity_id;
    if (found[0] != 1 || found[1] != 1 || parse_json_id(values[0], &user_id) != 0 ||
        parse_json_id(values[1], &activity_id) != 0)
        return;
    char nonce[PURCHASETOKEN_NONCE_LEN];
    if (found[4] == 1)
        (void)purchasetoken_check(SECRET, values[4], activity_id, user_id, NOW_S, nonce);

    /* A token issued for this request checks out exactly once in its window, for this
     * activity and user only. */
    uint64_t seed = (uint64_t)user_id * 0x9E3779B97F4A7C15u ^ (uint64_t)activity_id;
    char token[PURCHASETOKEN_LEN], hex[PURCHASETOKEN_NONCE_LEN];
    CHECK(purchasetoken_issue(SECRET, activity_id, user_id, NOW_S + 60, seed, token, sizeof(token)) > 0);
    snprintf(hex, sizeof(hex), "%016" PRIx64, seed);
    CHECK(purchasetoken_check(SECRET, token, activity_id, user_id, NOW_S, nonce) == 0);
    CHECK(strcmp(nonce, hex) == 0);
    CHECK(purchasetoken_check(SECRET, token, activity_id, user_id, NOW_S + 60, nonce) != 0);
    CHECK(purchasetoken_check(SECRET, token, activity_id + 1, user_id, NOW_S, nonce) != 0);
    CHECK(purchasetoken_check(SECRET, token, activity_id, user_id + 1, NOW_S, nonce) != 0);
    CHECK(purchasetoken_check("another-secret-0123456789abcdef-012", token, activity_id, user_id,
                              NOW_S, nonce) != 0);
}

/* Replaces the signature of "<header>.<payload>.<anything>" with the right one. */
static char *sign_token(const char *token)
{
    const char *dot1 = strchr(token, '.');
    const char *dot2 = dot1 ? strchr(dot1 + 1, '.') : NULL;
    if (!dot2)
        return NULL;
    size_t signed_len = (size_t)(dot2 - token);
    char *out = malloc(signed_len + 1 + 44);
    if (!out)
        abort();
    memcpy(out, token, signed_len);
    out[signed_len] = '.';
    unsigned char mac[32];
    jwt_hmac_sha256(SECRET, token, signed_len, mac);
    CHECK(jwt_base64url_encode(mac, sizeof(mac), out + signed_len + 1, 44) == 43);
    return out;
}

static void check_jwt(const char *token, bool sign)
{
    int64_t user_id = 0;
    enum jwt_result r = jwt_verify(token, SECRET, NOW_S, 30, &user_id);
    CHECK(r != JWT_OK || (user_id >= 1 && user_id <= PARSE_MAX_JSON_ID));
    CHECK(jwt_result_text(r) != NULL);

    /* base64url is canonical: what decodes encodes back to the same text. */
    const char *dot = strchr(token, '.');
    size_t n = dot ? (size_t)(dot - token) : strlen(token);
    if (n <= 4096) {
        unsigned char raw[3072];
        size_t written = 0;
        if (jwt_base64url_decode(token, n, raw, sizeof(raw), &written) == 0) {
            char back[4100];
            CHECK(jwt_base64url_encode(raw, written, back, sizeof(back)) == (int)n);
            CHECK(memcmp(back, token, n) == 0);
        }
    }

    /* What jwt_sign makes (tests and tools use it), jwt_verify takes: the bytes as the
     * payload may fail as JSON or on their claims, never on the signature or algorithm. */
    size_t len = strlen(token);
    size_t cap = len / 3 * 4 + 128;
    char *made = malloc(cap);
    if (!made)
        abort();
    if (jwt_sign(token, SECRET, made, cap) > 0) {
        r = jwt_verify(made, SECRET, NOW_S, 30, &user_id);
        CHECK(r != JWT_BAD_SIGNATURE && r != JWT_BAD_ALGORITHM);
    }
    free(made);

    if (!sign)
        return;
    char *signed_token = sign_token(token);
    if (!signed_token)
        return;
    user_id = 0;
    r = jwt_verify(signed_token, SECRET, NOW_S, 30, &user_id);
    /* Three dots are malformed before the signature counts; otherwise it is right. */
    CHECK(r != JWT_BAD_SIGNATURE);
    CHECK(r != JWT_OK || (user_id >= 1 && user_id <= PARSE_MAX_JSON_ID));
    /* The same token under another key must never pass. */
    CHECK(jwt_verify(signed_token, "another-secret-0123456789abcdef-012", NOW_S, 30, &user_id) != JWT_OK);
    free(signed_token);
}

/* evhttp parses the request line before any of our code runs; fuzz it the same way. */
static const char *uri_query(const char *line, struct evhttp_uri **keep)
{
    struct evhttp_uri *strict = evhttp_uri_parse_with_flags(line, 0);
    if (strict)
        evhttp_uri_free(strict);
    /* libevent 2.1 parses request URIs with EVHTTP_URI_NONCONFORMANT. */
    struct evhttp_uri *uri = evhttp_uri_parse_with_flags(line, EVHTTP_URI_NONCONFORMANT);
    *keep = uri;
    if (!uri)
        return NULL;
    char joined[4096];
    (void)evhttp_uri_join(uri, joined, sizeof(joined));
    const char *path = evhttp_uri_get_path(uri);
    if (path) {
        size_t n = 0;
        char *decoded = evhttp_uridecode(path, 0, &n);
        free(decoded);
    }
    const char *query = evhttp_uri_get_query(uri);
    if (query) {
        struct evkeyvalq q;
        if (evhttp_parse_query_str(query, &q) == 0) {
            /* keyvalq_struct.h declares the list but not its TAILQ_ macros. */
            for (struct evkeyval *kv = q.tqh_first; kv; kv = kv->next.tqe_next)
                CHECK(kv->key && kv->value);
        }
        evhttp_clear_headers(&q);
    }
    return query;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t flags = data[0];
    const uint8_t *p = data + 1;
    size_t left = size - 1;

    char *all = dup_bytes(p, left);
    check_jwt(all, (flags & 0x10) != 0);
    char nonce[PURCHASETOKEN_NONCE_LEN];
    (void)purchasetoken_check(SECRET, all, 1, 1, NOW_S, nonce);
    free(all);

    char *line1 = take_line(&p, &left);
    unsigned ct = flags & 7;
    char *ct_line = ct >= 6 ? take_line(&p, &left) : NULL;
    const char *content_type = ct >= 6 ? ct_line : content_types[ct];

    struct evhttp_uri *uri = NULL;
    const char *query = (flags & 0x08) ? uri_query(line1, &uri) : line1;

    /* The body is the tail of libFuzzer's exactly-sized buffer: ASan sees any read past it. */
    struct httpparams params;
    char err[160];
    if (httpparams_parse_parts(&params, query, content_type, (const char *)p, left, err, sizeof(err)) == 0)
        check_params(&params);
    else
        CHECK(err[0] != '\0');
    httpparams_free(&params);

    if (uri)
        evhttp_uri_free(uri);
    free(ct_line);
    free(line1);
    return 0;
}
