#include "gateway/jwt.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/parse.h"

#define JWT_MAX_PART 4096

static const char b64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

int jwt_base64url_encode(const unsigned char *in, size_t len, char *out, size_t outlen)
{
    size_t need = (len / 3) * 4 + (len % 3 ? len % 3 + 1 : 0);
    if (need + 1 > outlen)
        return -1;
    size_t o = 0;
    for (size_t i = 0; i < len; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16;
        if (i + 1 < len)
            v |= (uint32_t)in[i + 1] << 8;
        if (i + 2 < len)
            v |= in[i + 2];
        out[o++] = b64url[(v >> 18) & 63];
        out[o++] = b64url[(v >> 12) & 63];
        if (i + 1 < len)
            out[o++] = b64url[(v >> 6) & 63];
        if (i + 2 < len)
            out[o++] = b64url[v & 63];
    }
    out[o] = '\0';
    return (int)o;
}

static int b64url_value(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '-')
        return 62;
    if (c == '_')
        return 63;
    return -1;
}

int jwt_base64url_decode(const char *in, size_t len, unsigned char *out, size_t outlen, size_t *written)
{
    if (len % 4 == 1)
        return -1;
    size_t o = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        int v = b64url_value(in[i]);
        if (v < 0)
            return -1;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (o >= outlen)
                return -1;
            out[o++] = (unsigned char)(acc >> bits);
        }
    }
    /* Leftover bits must be zero, or two encodings would decode to one value. */
    if (bits > 0 && (acc & ((1u << bits) - 1)) != 0)
        return -1;
    *written = o;
    return 0;
}

void jwt_hmac_sha256(const char *secret, const void *data, size_t len, unsigned char out[32])
{
    unsigned int outlen = 32;
    HMAC(EVP_sha256(), secret, (int)strlen(secret), data, len, out, &outlen);
}

static cJSON *decode_part(const char *start, size_t len)
{
    unsigned char raw[JWT_MAX_PART];
    size_t n;
    if (len == 0 || jwt_base64url_decode(start, len, raw, sizeof(raw), &n) != 0)
        return NULL;
    char err[64];
    return json_parse_object((const char *)raw, n, err, sizeof(err));
}

static int claim_time(const cJSON *payload, const char *name, int64_t *out)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(payload, name);
    if (!item)
        return 0;
    if (!cJSON_IsNumber(item) || !isfinite(item->valuedouble) || fabs(item->valuedouble) > JSON_MAX_EXACT_INT)
        return -1;
    *out = (int64_t)floor(item->valuedouble);
    return 1;
}

static int subject(const cJSON *payload, int64_t *user_id)
{
    const cJSON *sub = cJSON_GetObjectItemCaseSensitive(payload, "sub");
    if (cJSON_IsString(sub))
        return parse_json_id(sub->valuestring, user_id);
    if (cJSON_IsNumber(sub) && sub->valuedouble >= 1 && sub->valuedouble <= JSON_MAX_EXACT_INT &&
        sub->valuedouble == floor(sub->valuedouble)) {
        *user_id = (int64_t)sub->valuedouble;
        return 0;
    }
    return -1;
}

static bool is_configured(const char *want)
{
    return want && *want;
}

static bool issuer_ok(const cJSON *payload, const char *want)
{
    const cJSON *iss = cJSON_GetObjectItemCaseSensitive(payload, "iss");
    return cJSON_IsString(iss) && strcmp(iss->valuestring, want) == 0;
}

/* RFC 7519 4.1.3: aud is one string or an array of strings. */
static bool audience_ok(const cJSON *payload, const char *want)
{
    const cJSON *aud = cJSON_GetObjectItemCaseSensitive(payload, "aud");
    if (cJSON_IsString(aud))
        return strcmp(aud->valuestring, want) == 0;
    if (!cJSON_IsArray(aud))
        return false;
    for (const cJSON *item = aud->child; item; item = item->next)
        if (cJSON_IsString(item) && strcmp(item->valuestring, want) == 0)
            return true;
    return false;
}

static enum jwt_result claims(const cJSON *payload, const struct jwt_rules *rules, int64_t *user_id)
{
    int64_t exp = 0, nbf = 0;
    int has_exp = claim_time(payload, "exp", &exp);
    int has_nbf = claim_time(payload, "nbf", &nbf);
    if (has_exp < 0 || has_nbf < 0)
        return JWT_MALFORMED;
    if (!has_exp && rules->require_exp)
        return JWT_NO_EXPIRY;
    if (has_exp && rules->now_s >= exp + rules->skew_s)
        return JWT_EXPIRED;
    if (has_nbf && rules->now_s < nbf - rules->skew_s)
        return JWT_NOT_YET_VALID;
    if (is_configured(rules->issuer) && !issuer_ok(payload, rules->issuer))
        return JWT_WRONG_ISSUER;
    if (is_configured(rules->audience) && !audience_ok(payload, rules->audience))
        return JWT_WRONG_AUDIENCE;
    if (subject(payload, user_id) != 0)
        return JWT_NO_SUBJECT;
    return JWT_OK;
}

enum jwt_result jwt_check(const char *token, const struct jwt_rules *rules, int64_t *user_id)
{
    const char *dot1 = strchr(token, '.');
    const char *dot2 = dot1 ? strchr(dot1 + 1, '.') : NULL;
    if (!dot1 || !dot2 || strchr(dot2 + 1, '.'))
        return JWT_MALFORMED;
    cJSON *header = decode_part(token, (size_t)(dot1 - token));
    if (!header)
        return JWT_MALFORMED;
    const cJSON *alg = cJSON_GetObjectItemCaseSensitive(header, "alg");
    bool hs256 = cJSON_IsString(alg) && strcmp(alg->valuestring, "HS256") == 0;
    cJSON_Delete(header);
    if (!hs256)
        return JWT_BAD_ALGORITHM;

    unsigned char expected[32], given[64];
    size_t given_len;
    jwt_hmac_sha256(rules->secret, token, (size_t)(dot2 - token), expected);
    const char *sig = dot2 + 1;
    if (jwt_base64url_decode(sig, strlen(sig), given, sizeof(given), &given_len) != 0 || given_len != 32 ||
        CRYPTO_memcmp(expected, given, 32) != 0)
        return JWT_BAD_SIGNATURE;

    cJSON *payload = decode_part(dot1 + 1, (size_t)(dot2 - dot1 - 1));
    if (!payload)
        return JWT_MALFORMED;
    enum jwt_result result = claims(payload, rules, user_id);
    cJSON_Delete(payload);
    return result;
}

enum jwt_result jwt_verify(const char *token, const char *secret, int64_t now_s, int64_t skew_s,
                           int64_t *user_id)
{
    const struct jwt_rules rules = { .secret = secret, .now_s = now_s, .skew_s = skew_s,
                                     .require_exp = true };
    return jwt_check(token, &rules, user_id);
}

const char *jwt_result_text(enum jwt_result result)
{
    switch (result) {
    case JWT_OK: return "ok";
    case JWT_MALFORMED: return "malformed token";
    case JWT_BAD_ALGORITHM: return "token algorithm must be HS256";
    case JWT_BAD_SIGNATURE: return "bad token signature";
    case JWT_EXPIRED: return "token expired";
    case JWT_NOT_YET_VALID: return "token not yet valid";
    case JWT_NO_SUBJECT: return "token has no user (sub)";
    case JWT_NO_EXPIRY: return "token has no expiry (exp)";
    case JWT_WRONG_ISSUER: return "token issuer (iss) is not accepted";
    case JWT_WRONG_AUDIENCE: return "token audience (aud) is not this service";
    }
    return "invalid token";
}

int jwt_sign(const char *payload_json, const char *secret, char *out, size_t outlen)
{
    static const char header[] = "{\"alg\":\"HS256\",\"typ\":\"JWT\"}";
    int h = jwt_base64url_encode((const unsigned char *)header, sizeof(header) - 1, out, outlen);
    if (h < 0 || (size_t)h + 2 > outlen)
        return -1;
    out[h] = '.';
    int p = jwt_base64url_encode((const unsigned char *)payload_json, strlen(payload_json), out + h + 1,
                                 outlen - (size_t)h - 1);
    if (p < 0)
        return -1;
    size_t signed_len = (size_t)h + 1 + (size_t)p;
    if (signed_len + 2 > outlen)
        return -1;
    unsigned char mac[32];
    jwt_hmac_sha256(secret, out, signed_len, mac);
    out[signed_len] = '.';
    int s = jwt_base64url_encode(mac, sizeof(mac), out + signed_len + 1, outlen - signed_len - 1);
    return s < 0 ? -1 : (int)(signed_len + 1 + (size_t)s);
}
