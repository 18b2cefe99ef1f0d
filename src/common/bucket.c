#include "common/bucket.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUCKET_HASH_MOD 65521

int bucket_of_user_str(const char *user, int count)
{
    if (count <= 1)
        return 0;
    int h = 0;
    for (const char *p = user; *p >= '0' && *p <= '9'; p++)
        h = (h * 31 + (*p - '0')) % BUCKET_HASH_MOD;
    return h % count;
}

int bucket_of_user(int64_t user_id, int count)
{
    char digits[24];
    snprintf(digits, sizeof(digits), "%" PRId64, user_id);
    return bucket_of_user_str(digits, count);
}

int bucket_tag(char *buf, size_t len, int64_t activity_id, int bucket, int salt)
{
    int n = bucket == 0 ? snprintf(buf, len, "%" PRId64, activity_id)
                        : snprintf(buf, len, "%" PRId64 ".%d.%d", activity_id, bucket, salt);
    return (n < 0 || (size_t)n >= len) ? -1 : 0;
}

/* A decimal number without sign or leading zero, ending at *end. */
static int bucket_number(const char *s, const char **end, long long *out)
{
    if (*s < '0' || *s > '9' || (*s == '0' && s[1] >= '0' && s[1] <= '9'))
        return -1;
    char *e;
    long long v = strtoll(s, &e, 10);
    *end = e;
    *out = v;
    return 0;
}

int bucket_tag_valid(const char *tag, int64_t activity_id)
{
    const char *p;
    long long id, b, s;
    if (bucket_number(tag, &p, &id) != 0 || id != activity_id)
        return 0;
    if (*p == '\0')
        return 1;
    if (*p != '.' || bucket_number(p + 1, &p, &b) != 0 || b < 1 || b >= BUCKET_MAX)
        return 0;
    if (*p != '.' || bucket_number(p + 1, &p, &s) != 0 || s >= BUCKET_SALT_TRIES)
        return 0;
    return *p == '\0';
}

void bucket_list_single(struct bucket_list *list, int64_t activity_id)
{
    memset(list, 0, sizeof(*list));
    list->count = 1;
    bucket_tag(list->tag[0], sizeof(list->tag[0]), activity_id, 0, 0);
}

int bucket_choose(int64_t activity_id, int count, int masters, bucket_master_fn master_of, void *ctx,
                  struct bucket_list *out)
{
    if (count < 1 || count > BUCKET_MAX)
        return -1;
    bucket_list_single(out, activity_id);
    int used[BUCKET_MAX];
    int nused = 0;
    if (count > 1) {
        if ((used[0] = master_of(out->tag[0], ctx)) < 0)
            return -1;
        nused = 1;
    }
    for (int b = 1; b < count; b++) {
        int chosen = 0;
        /* Once every master serves a bucket, any salt spreads no further: salt 0. */
        for (int s = 0; nused < masters && s < BUCKET_SALT_TRIES; s++) {
            char tag[BUCKET_TAG_LEN];
            if (bucket_tag(tag, sizeof(tag), activity_id, b, s) != 0)
                return -1;
            int m = master_of(tag, ctx);
            if (m < 0)
                return -1;
            bool taken = false;
            for (int i = 0; i < nused; i++)
                taken = taken || used[i] == m;
            if (!taken) {
                used[nused++] = m;
                chosen = s;
                break;
            }
        }
        if (bucket_tag(out->tag[b], sizeof(out->tag[b]), activity_id, b, chosen) != 0)
            return -1;
    }
    out->count = count;
    return 0;
}

int bucket_list_parse(const char *s, int64_t activity_id, struct bucket_list *out)
{
    bucket_list_single(out, activity_id);
    if (*s == '\0')
        return 0;
    int n = 0;
    const char *p = s;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (n == BUCKET_MAX || len == 0 || len >= BUCKET_TAG_LEN)
            return -1;
        memcpy(out->tag[n], p, len);
        out->tag[n][len] = '\0';
        if (!bucket_tag_valid(out->tag[n], activity_id))
            return -1;
        /* Bucket b's tag names b: "A" first, then "A.1.s", "A.2.s", ... */
        long long b = 0;
        const char *dot = strchr(out->tag[n], '.');
        if (dot)
            b = strtoll(dot + 1, NULL, 10);
        if (b != n)
            return -1;
        n++;
        if (!comma)
            break;
        p = comma + 1;
    }
    out->count = n;
    return 0;
}

int bucket_list_format(const struct bucket_list *list, char *buf, size_t len)
{
    size_t used = 0;
    if (len == 0)
        return -1;
    buf[0] = '\0';
    if (list->count <= 1)
        return 0;
    for (int b = 0; b < list->count; b++) {
        int n = snprintf(buf + used, len - used, "%s%s", b ? "," : "", list->tag[b]);
        if (n < 0 || (size_t)n >= len - used)
            return -1;
        used += (size_t)n;
    }
    return 0;
}
