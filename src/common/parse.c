#include "common/parse.h"

#include <stdint.h>

int parse_id(const char *s, int64_t *out)
{
    if (!s || *s < '1' || *s > '9')
        return -1;
    uint64_t v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        unsigned digit = (unsigned)(*p - '0');
        if (v > ((uint64_t)INT64_MAX - digit) / 10)
            return -1;
        v = v * 10 + digit;
    }
    *out = (int64_t)v;
    return 0;
}

int parse_json_id(const char *s, int64_t *out)
{
    int64_t v;
    if (parse_id(s, &v) != 0 || v > PARSE_MAX_JSON_ID)
        return -1;
    *out = v;
    return 0;
}

int parse_client_id(const char *s, bool long_ids, int64_t *out)
{
    return long_ids ? parse_id(s, out) : parse_json_id(s, out);
}

int parse_cents(const char *s, int64_t *out)
{
    if (!s || *s < '0' || *s > '9')
        return -1;
    uint64_t whole = 0;
    const char *p = s;
    for (; *p >= '0' && *p <= '9'; p++) {
        unsigned digit = (unsigned)(*p - '0');
        /* whole * 100 must fit; the cents are checked at the end. */
        if (whole > ((uint64_t)INT64_MAX / 100 - digit) / 10)
            return -1;
        whole = whole * 10 + digit;
    }
    uint64_t cents = 0;
    if (*p == '.') {
        p++;
        int digits = 0;
        for (; *p >= '0' && *p <= '9'; p++) {
            if (++digits > 2)
                return -1;
            cents = cents * 10 + (unsigned)(*p - '0');
        }
        if (digits == 0)
            return -1;
        if (digits == 1)
            cents *= 10;
    }
    if (*p != '\0')
        return -1;
    /* whole <= INT64_MAX / 100, so this cannot wrap, but with the cents it can pass
     * INT64_MAX ("92233720368547758.08"). */
    uint64_t total = whole * 100 + cents;
    if (total > (uint64_t)INT64_MAX)
        return -1;
    *out = (int64_t)total;
    return 0;
}
