#ifndef SK_PURCHASETOKEN_H
#define SK_PURCHASETOKEN_H

#include <stddef.h>
#include <stdint.h>

/* One-time purchase tokens (the "hidden URL" of a flash sale): GET /seckill/token hands
 * one out only inside the sale's window, and with seckill.require-token execute needs it.
 * A token is "<expiry s>.<nonce hex>.<HMAC-SHA256 base64url>" over activity, user, expiry
 * and nonce, so the gateway checks it without any I/O; the execute script spends the nonce
 * (SET NX in the activity's slot) in the round trip it makes anyway, so a token buys one
 * attempt and costs no extra round trip. Pure. */

#define PURCHASETOKEN_LEN 96
#define PURCHASETOKEN_NONCE_LEN 17

int purchasetoken_issue(const char *secret, int64_t activity_id, int64_t user_id, int64_t expires_s,
                        uint64_t nonce, char *out, size_t outlen);
/* 0 when the token is authentic for this activity and user and not expired at now_s;
 * writes the nonce (hex) for the one-time check. */
int purchasetoken_check(const char *secret, const char *token, int64_t activity_id, int64_t user_id,
                        int64_t now_s, char nonce[PURCHASETOKEN_NONCE_LEN]);

#endif
