#include "common/holder.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/parse.h"

int holder_format(char *buf, size_t len, int64_t user_id, int slot)
{
    if (slot < 1 || slot > HOLDER_MAX_SLOT || user_id <= 0)
        return -1;
    int n = slot == 1 ? snprintf(buf, len, "%" PRId64, user_id)
                      : snprintf(buf, len, "%" PRId64 "#%d", user_id, slot);
    return (n < 0 || (size_t)n >= len) ? -1 : n;
}

int holder_parse_n(const char *s, size_t n, int64_t *user_id, int *slot)
{
    char text[HOLDER_LEN];
    if (n == 0 || n >= sizeof(text) || memchr(s, '\0', n))
        return -1;
    memcpy(text, s, n);
    text[n] = '\0';
    char *hash = strchr(text, '#');
    int parsed = 1;
    if (hash) {
        *hash = '\0';
        const char *digits = hash + 1;
        if (digits[0] < '1' || digits[0] > '9' || strlen(digits) > 3)
            return -1;
        parsed = 0;
        for (const char *p = digits; *p; p++) {
            if (*p < '0' || *p > '9')
                return -1;
            parsed = parsed * 10 + (*p - '0');
        }
        if (parsed < 2 || parsed > HOLDER_MAX_SLOT)
            return -1;
    }
    int64_t id;
    if (parse_id(text, &id) != 0)
        return -1;
    *user_id = id;
    *slot = parsed;
    return 0;
}

int holder_parse(const char *s, int64_t *user_id, int *slot)
{
    return holder_parse_n(s, strlen(s), user_id, slot);
}
