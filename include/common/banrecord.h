#ifndef SK_BANRECORD_H
#define SK_BANRECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A manual ban (seckillctl ban, docs/protection.md) as Redis carries it to the gateways:
 * one field of the hash KEYS_BANS (keys.h), named by the ban's id, whose value is
 *
 *   user <userId> <activityId> <startMs> <endMs>
 *   ip <network>/<prefix> <activityId> <startMs> <endMs>
 *
 * activityId 0 for every sale; in force from startMs until (not at) endMs. The field
 * BANRECORD_VERSION changes with every write of the hash, so that a gateway reads the
 * whole hash only when it changed. MySQL's seckill_ban is the record of every ban, with who
 * set it and why; Redis carries only what the gateways enforce. Pure. */

#define BANRECORD_VERSION "version"
/* The longest value above, and its NUL. */
#define BANRECORD_LEN 128
/* The longest network text: an IPv6 address (45), "/128" and the NUL. */
#define BANRECORD_CIDR_LEN 50

enum banrecord_kind { BANRECORD_USER, BANRECORD_ADDRESS };

/* An address range: `prefix` leading bits of `addr`, every bit after them zero. */
struct banrecord_cidr {
    int family;         /* AF_INET or AF_INET6 */
    uint8_t addr[16];   /* network order; the first 4 bytes for AF_INET */
    int prefix;         /* 0-32 or 0-128 */
};

struct banrecord {
    enum banrecord_kind kind;
    int64_t user_id;            /* BANRECORD_USER */
    struct banrecord_cidr cidr; /* BANRECORD_ADDRESS */
    int64_t activity_id;        /* 0: every sale */
    int64_t start_ms, end_ms;
};

/* ADDR or ADDR/PREFIX, IPv4 or IPv6 ("203.0.113.0/24", "2001:db8::/32"; no prefix: the
 * one address). An IPv4-mapped IPv6 range (::ffff:a.b.c.d/96 and longer) is taken as the
 * IPv4 one, as clients are (banrecord_address). Returns 0, or -1 with err saying what is
 * wrong: not an address, a prefix that is not 0-32 (0-128), bits set past the prefix
 * (err names the network that was perhaps meant: a typo must not ban a wider range). */
int banrecord_cidr_parse(const char *text, struct banrecord_cidr *out, char *err, size_t errlen);
/* "network/prefix" with the address in its shortest form; the length, or -1 when buf is
 * too small (BANRECORD_CIDR_LEN always suffices). */
int banrecord_cidr_format(const struct banrecord_cidr *c, char *buf, size_t len);
/* A client address (clientip.h's text) as a family and bytes, an IPv4-mapped IPv6 one as
 * IPv4. Returns 0, or -1 when text is no address ("unknown"). */
int banrecord_address(const char *text, int *family, uint8_t addr[16]);
/* Whether the address (of banrecord_address) lies in c. */
bool banrecord_cidr_contains(const struct banrecord_cidr *c, int family, const uint8_t *addr);

/* The value text of r; its length, or -1 when buf is too small (BANRECORD_LEN suffices). */
int banrecord_encode(const struct banrecord *r, char *buf, size_t len);
/* Reads a value text strictly (exactly the form above, a network without host bits, an
 * end after the start); 0, or -1 with *r unspecified. */
int banrecord_decode(const char *text, struct banrecord *r);
/* Whether r keeps a request for activity_id out at now_ms. */
bool banrecord_applies(const struct banrecord *r, int64_t activity_id, int64_t now_ms);

#endif
