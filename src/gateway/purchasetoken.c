#include "gateway/purchasetoken.h"

#include <inttypes.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <string.h>

#include "gateway/jwt.h"

static int mac_text(const char *secret, int64_t activity_id, int64_t user_id, int64_t expires_s,
                    const char *nonce, char *out, size_t outlen)
{
    char signed_text[160];
    int n = snprintf(signed_text, sizeof(signed_text), "seckill-token|%" PRId64 "|%" PRId64 "|%" PRId64 "|%s",
                     activity_id, user_id, expires_s, nonce);
    if (n < 0 || (size_t)n >= sizeof(signed_text))
        return -1;
    unsigned char mac[32];
    jwt_hmac_sha256(secret, signed_text, (size_t)n, mac);
    return jwt_base64url_encode(mac, sizeof(mac), out, outlen);
}

int purchasetoken_issue(const char *secret, int64_t activity_id, int64_t user_id, int64_t expires_s,
                        uint64_t nonce, char *out, size_t outlen)
{
    char nonce_hex[PURCHASETOKEN_NONCE_LEN];
    snprintf(nonce_hex, sizeof(nonce_hex), "%016" PRIx64, nonce);
    char mac[64];
    if (mac_text(secret, activity_id, user_id, expires_s, nonce_hex, mac, sizeof(mac)) < 0)
        return -1;
    int n = snprintf(out, outlen, "%" PRId64 ".%s.%s", expires_s, nonce_hex, mac);
    return (n < 0 || (size_t)n >= outlen) ? -1 : n;
}

int purchasetoken_check(const char *secret, const char *token, int64_t activity_id, int64_t user_id,
                        int64_t now_s, char nonce[PURCHASETOKEN_NONCE_LEN])
{
    if (strlen(token) >= PURCHASETOKEN_LEN)
        return -1;
    long long expires;
    char nonce_hex[PURCHASETOKEN_NONCE_LEN + 1], given[64];
    int consumed = 0;
    if (sscanf(token, "%lld.%16[0-9a-f].%63[A-Za-z0-9_-]%n", &expires, nonce_hex, given, &consumed) != 3 ||
        token[consumed] != '\0' || strlen(nonce_hex) != 16 || expires <= 0)
        return -1;
    char expected[64];
    int len = mac_text(secret, activity_id, user_id, expires, nonce_hex, expected, sizeof(expected));
    if (len < 0 || strlen(given) != (size_t)len || CRYPTO_memcmp(expected, given, (size_t)len) != 0)
        return -1;
    if (now_s >= expires)
        return -1;
    memcpy(nonce, nonce_hex, PURCHASETOKEN_NONCE_LEN);
    return 0;
}
