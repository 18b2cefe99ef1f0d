#include "gateway/iplimit.h"

#include <arpa/inet.h>
#include <event2/util.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/tokenbucket.h"

#define MICRO 1000000LL

/* One client's bucket; `used` false is a free way. */
struct iplimit_entry {
    uint8_t addr[16];
    bool used;
    int64_t micro_tokens;
    int64_t last_us;
};

struct iplimit {
    int64_t rate;
    int64_t burst;
    size_t sets;   /* power of two */
    uint8_t key[16];
    struct iplimit_entry *entries;   /* sets * IPLIMIT_WAYS, set s at s * IPLIMIT_WAYS */
};

static uint64_t rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

static uint64_t load_le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

#define SIPROUND                                                                              \
    do {                                                                                      \
        v0 += v1; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32);                             \
        v2 += v3; v3 = rotl(v3, 16); v3 ^= v2;                                                \
        v0 += v3; v3 = rotl(v3, 21); v3 ^= v0;                                                \
        v2 += v1; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32);                             \
    } while (0)

/* From the SipHash paper (Aumasson, Bernstein 2012): c = 2 rounds per word, d = 4 at the end. */
uint64_t iplimit_siphash(const uint8_t key[16], const uint8_t *data, size_t len)
{
    uint64_t k0 = load_le64(key), k1 = load_le64(key + 8);
    uint64_t v0 = k0 ^ 0x736f6d6570736575ULL, v1 = k1 ^ 0x646f72616e646f6dULL;
    uint64_t v2 = k0 ^ 0x6c7967656e657261ULL, v3 = k1 ^ 0x7465646279746573ULL;
    size_t whole = len - len % 8;
    for (size_t i = 0; i < whole; i += 8) {
        uint64_t m = load_le64(data + i);
        v3 ^= m;
        SIPROUND;
        SIPROUND;
        v0 ^= m;
    }
    uint64_t last = (uint64_t)len << 56;
    for (size_t i = 0; i < len % 8; i++)
        last |= (uint64_t)data[whole + i] << (8 * i);
    v3 ^= last;
    SIPROUND;
    SIPROUND;
    v0 ^= last;
    v2 ^= 0xff;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

void iplimit_client(const char *ip, uint8_t out[16])
{
    struct in_addr v4;
    memset(out, 0, 16);
    if (inet_pton(AF_INET, ip, &v4) == 1) {
        out[10] = out[11] = 0xff;
        memcpy(out + 12, &v4, 4);
        return;
    }
    if (inet_pton(AF_INET6, ip, out) == 1) {
        static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
        if (memcmp(out, mapped, sizeof(mapped)) != 0)
            memset(out + 8, 0, 8);
        return;
    }
    /* Not an address: all such clients are one, "::" (which no peer has). */
}

struct iplimit *iplimit_new(int64_t rate, int64_t burst, size_t entries, const uint8_t key[16])
{
    struct iplimit *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    t->rate = rate;
    t->burst = burst;
    t->sets = 1;
    while (t->sets * 2 * IPLIMIT_WAYS <= entries)
        t->sets *= 2;
    memcpy(t->key, key, sizeof(t->key));
    t->entries = calloc(t->sets * IPLIMIT_WAYS, sizeof(*t->entries));
    if (!t->entries) {
        free(t);
        return NULL;
    }
    return t;
}

struct iplimit *iplimit_from_config(const struct config *cfg)
{
    if (cfg->per_ip_local_permits_per_second <= 0)
        return NULL;
    uint8_t key[16];
    evutil_secure_rng_get_bytes(key, sizeof(key));
    return iplimit_new(cfg->per_ip_local_permits_per_second, cfg->per_ip_local_burst,
                       (size_t)cfg->per_ip_local_table_size, key);
}

void iplimit_free(struct iplimit *t)
{
    if (!t)
        return;
    free(t->entries);
    free(t);
}

/* The entry's bucket as a tokenbucket, to share its arithmetic. */
static struct tokenbucket as_bucket(const struct iplimit *t, const struct iplimit_entry *e)
{
    struct tokenbucket tb = { t->rate, t->burst, e->micro_tokens, e->last_us };
    return tb;
}

static struct iplimit_entry *find_or_claim(struct iplimit *t, const uint8_t addr[16], int64_t now_us)
{
    size_t set = (size_t)(iplimit_siphash(t->key, addr, 16) & (t->sets - 1));
    struct iplimit_entry *ways = t->entries + set * IPLIMIT_WAYS;
    struct iplimit_entry *victim = NULL;
    int64_t richest = -1;
    for (size_t i = 0; i < IPLIMIT_WAYS; i++) {
        struct iplimit_entry *e = &ways[i];
        if (e->used && memcmp(e->addr, addr, 16) == 0)
            return e;
        int64_t level = INT64_MAX;
        if (e->used) {
            struct tokenbucket tb = as_bucket(t, e);
            level = tokenbucket_level(&tb, now_us);
        }
        if (level > richest) {
            richest = level;
            victim = e;
        }
    }
    memcpy(victim->addr, addr, 16);
    victim->used = true;
    victim->micro_tokens = t->burst * MICRO;
    victim->last_us = now_us;
    return victim;
}

bool iplimit_take(struct iplimit *t, const char *ip, int64_t now_us, int64_t *retry_after)
{
    uint8_t addr[16];
    iplimit_client(ip, addr);
    struct iplimit_entry *e = find_or_claim(t, addr, now_us);
    struct tokenbucket tb = as_bucket(t, e);
    bool ok = tokenbucket_take(&tb, now_us);
    e->micro_tokens = tb.micro_tokens;
    e->last_us = tb.last_us;
    if (!ok && retry_after)
        *retry_after = tokenbucket_retry_after(&tb);
    return ok;
}
