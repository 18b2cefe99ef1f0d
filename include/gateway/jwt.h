#ifndef SK_JWT_H
#define SK_JWT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* HS256 JSON Web Tokens (RFC 7519), verified with OpenSSL's HMAC-SHA256.
 * Only {"alg":"HS256"} is accepted (no "none", no algorithm from the token deciding the
 * key type); the signature is compared in constant time; exp and nbf are honoured with
 * a clock skew allowance, and a token without exp, which would never expire, is refused
 * unless the rules waive it; iss and aud are checked when the rules name them; the user
 * is the "sub" claim, a positive 64-bit decimal id (a JSON string or an integer). Pure
 * apart from the clock the caller passes. */

enum jwt_result {
    JWT_OK,
    JWT_MALFORMED,       /* not three base64url parts of JSON */
    JWT_BAD_ALGORITHM,   /* alg other than HS256 */
    JWT_BAD_SIGNATURE,
    JWT_EXPIRED,         /* now >= exp + skew */
    JWT_NOT_YET_VALID,   /* now < nbf - skew */
    JWT_NO_SUBJECT,      /* sub missing or not a user id */
    JWT_NO_EXPIRY,       /* no exp, and the rules require one */
    JWT_WRONG_ISSUER,    /* iss is not the string the rules name */
    JWT_WRONG_AUDIENCE,  /* aud is neither that string nor an array holding it */
};

struct jwt_rules {
    const char *secret;
    int64_t now_s;
    int64_t skew_s;
    bool require_exp;
    const char *issuer;    /* NULL or "": iss is not checked */
    const char *audience;  /* NULL or "": aud is not checked */
};

enum jwt_result jwt_check(const char *token, const struct jwt_rules *rules, int64_t *user_id);
/* jwt_check with exp required and neither iss nor aud checked. */
enum jwt_result jwt_verify(const char *token, const char *secret, int64_t now_s, int64_t skew_s,
                           int64_t *user_id);
const char *jwt_result_text(enum jwt_result result);

/* Signs {"alg":"HS256","typ":"JWT"}.<payload JSON>; for tests and tools. Returns the
 * length written or -1 when out is too small. */
int jwt_sign(const char *payload_json, const char *secret, char *out, size_t outlen);

/* base64url without padding (RFC 4648 section 5); shared with the purchase tokens. */
int jwt_base64url_encode(const unsigned char *in, size_t len, char *out, size_t outlen);
int jwt_base64url_decode(const char *in, size_t len, unsigned char *out, size_t outlen, size_t *written);
/* HMAC-SHA256 into out[32]. */
void jwt_hmac_sha256(const char *secret, const void *data, size_t len, unsigned char out[32]);

#endif
