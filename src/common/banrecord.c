#include "common/banrecord.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "common/parse.h"

static const uint8_t banrecord_mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

static int banrecord_bits(int family) { return family == AF_INET ? 32 : 128; }

/* An IPv4-mapped IPv6 address is the IPv4 client behind a dual-stack socket: it must meet
 * the IPv4 bans. */
static void banrecord_unmap(int *family, uint8_t addr[16], int *prefix)
{
    if (*family != AF_INET6 || memcmp(addr, banrecord_mapped, sizeof(banrecord_mapped)) != 0 ||
        (prefix && *prefix < 96))
        return;
    memmove(addr, addr + 12, 4);
    memset(addr + 4, 0, 12);
    *family = AF_INET;
    if (prefix)
        *prefix -= 96;
}

/* An IPv4 or IPv6 address as it is written: 0, or -1 when text is neither. */
static int banrecord_pton(const char *text, int *family, uint8_t addr[16])
{
    memset(addr, 0, 16);
    if (inet_pton(AF_INET, text, addr) == 1)
        *family = AF_INET;
    else if (inet_pton(AF_INET6, text, addr) == 1)
        *family = AF_INET6;
    else
        return -1;
    return 0;
}

int banrecord_address(const char *text, int *family, uint8_t addr[16])
{
    if (banrecord_pton(text, family, addr) != 0)
        return -1;
    banrecord_unmap(family, addr, NULL);
    return 0;
}

/* Clears every bit of addr past prefix. */
static void banrecord_mask(uint8_t addr[16], int prefix)
{
    for (int i = 0; i < 16; i++) {
        int keep = prefix - 8 * i;
        if (keep <= 0)
            addr[i] = 0;
        else if (keep < 8)
            addr[i] &= (uint8_t)(0xFF << (8 - keep));
    }
}

/* The prefix after '/': 1-3 digits, no sign, no leading zero. */
static int banrecord_prefix(const char *s, int *out)
{
    size_t n = strlen(s);
    if (n == 0 || n > 3 || (n > 1 && s[0] == '0'))
        return -1;
    int v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

int banrecord_cidr_parse(const char *text, struct banrecord_cidr *out, char *err, size_t errlen)
{
    char addr_text[BANRECORD_CIDR_LEN];
    const char *slash = strchr(text, '/');
    size_t alen = slash ? (size_t)(slash - text) : strlen(text);
    struct banrecord_cidr c;
    memset(&c, 0, sizeof(c));
    if (alen == 0 || alen >= sizeof(addr_text)) {
        snprintf(err, errlen, "not an IPv4 or IPv6 address (ADDR or ADDR/PREFIX)");
        return -1;
    }
    memcpy(addr_text, text, alen);
    addr_text[alen] = '\0';
    if (banrecord_pton(addr_text, &c.family, c.addr) != 0) {
        snprintf(err, errlen, "not an IPv4 or IPv6 address (ADDR or ADDR/PREFIX)");
        return -1;
    }
    int bits = banrecord_bits(c.family);
    c.prefix = bits;
    if (slash && banrecord_prefix(slash + 1, &c.prefix) != 0) {
        snprintf(err, errlen, "the prefix after '/' must be a number from 0 to %d", bits);
        return -1;
    }
    if (c.prefix > bits) {
        snprintf(err, errlen, "prefix /%d is too long for an %s address (at most /%d)", c.prefix,
                 c.family == AF_INET ? "IPv4" : "IPv6", bits);
        return -1;
    }
    banrecord_unmap(&c.family, c.addr, &c.prefix);
    struct banrecord_cidr masked = c;
    banrecord_mask(masked.addr, masked.prefix);
    if (memcmp(masked.addr, c.addr, sizeof(c.addr)) != 0) {
        char net[BANRECORD_CIDR_LEN];
        banrecord_cidr_format(&masked, net, sizeof(net));
        snprintf(err, errlen, "bits are set past the prefix /%d (the network would be %s)", c.prefix, net);
        return -1;
    }
    *out = c;
    return 0;
}

int banrecord_cidr_format(const struct banrecord_cidr *c, char *buf, size_t len)
{
    char addr[INET6_ADDRSTRLEN];
    if (!inet_ntop(c->family, c->addr, addr, sizeof(addr)))
        return -1;
    int n = snprintf(buf, len, "%s/%d", addr, c->prefix);
    return n < 0 || (size_t)n >= len ? -1 : n;
}

bool banrecord_cidr_contains(const struct banrecord_cidr *c, int family, const uint8_t *addr)
{
    if (family != c->family)
        return false;
    int whole = c->prefix / 8, rest = c->prefix % 8;
    if (memcmp(addr, c->addr, (size_t)whole) != 0)
        return false;
    if (rest == 0)
        return true;
    uint8_t mask = (uint8_t)(0xFF << (8 - rest));
    return (addr[whole] & mask) == c->addr[whole];
}

int banrecord_encode(const struct banrecord *r, char *buf, size_t len)
{
    char subject[BANRECORD_CIDR_LEN];
    if (r->kind == BANRECORD_USER)
        snprintf(subject, sizeof(subject), "%" PRId64, r->user_id);
    else if (banrecord_cidr_format(&r->cidr, subject, sizeof(subject)) < 0)
        return -1;
    int n = snprintf(buf, len, "%s %s %" PRId64 " %" PRId64 " %" PRId64,
                     r->kind == BANRECORD_USER ? "user" : "ip", subject, r->activity_id, r->start_ms,
                     r->end_ms);
    return n < 0 || (size_t)n >= len ? -1 : n;
}

/* "0" or a positive id: the activity (0: every sale) and the times. */
static int banrecord_number(const char *s, int64_t *out)
{
    if (strcmp(s, "0") == 0) {
        *out = 0;
        return 0;
    }
    return parse_id(s, out);
}

int banrecord_decode(const char *text, struct banrecord *r)
{
    char copy[BANRECORD_LEN];
    size_t n = strlen(text);
    if (n == 0 || n >= sizeof(copy))
        return -1;
    memcpy(copy, text, n + 1);
    char *field[5];
    int nfields = 1;
    field[0] = copy;
    for (char *p = copy; *p; p++) {
        if (*p != ' ')
            continue;
        if (nfields == 5)
            return -1;
        *p = '\0';
        field[nfields++] = p + 1;
    }
    if (nfields != 5)
        return -1;
    memset(r, 0, sizeof(*r));
    char err[160];
    if (strcmp(field[0], "user") == 0) {
        r->kind = BANRECORD_USER;
        if (parse_id(field[1], &r->user_id) != 0)
            return -1;
    } else if (strcmp(field[0], "ip") == 0) {
        r->kind = BANRECORD_ADDRESS;
        if (!strchr(field[1], '/') || banrecord_cidr_parse(field[1], &r->cidr, err, sizeof(err)) != 0)
            return -1;
    } else {
        return -1;
    }
    if (banrecord_number(field[2], &r->activity_id) != 0 || banrecord_number(field[3], &r->start_ms) != 0 ||
        banrecord_number(field[4], &r->end_ms) != 0 || r->end_ms <= r->start_ms)
        return -1;
    return 0;
}

bool banrecord_applies(const struct banrecord *r, int64_t activity_id, int64_t now_ms)
{
    return (r->activity_id == 0 || r->activity_id == activity_id) && now_ms >= r->start_ms &&
           now_ms < r->end_ms;
}
