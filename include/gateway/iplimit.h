#ifndef SK_IPLIMIT_H
#define SK_IPLIMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"

/* The local per-client-IP limit: a token bucket per client address, checked before the
 * global bucket so that one client over its share is refused without emptying the
 * bucket everybody shares. Pure arithmetic on the caller's clock, no I/O.
 *
 * Memory is fixed: a table of `entries` buckets in sets of IPLIMIT_WAYS, the set chosen
 * by SipHash-2-4 of the address under a key drawn at random at start, so nobody outside
 * can aim addresses at one set. A bucket holds its full address: two addresses never
 * share one. IPv6 addresses count per /64 (what one subscriber is given), IPv4 per
 * address; text that is no address ("unknown") is one client.
 *
 * When a new address finds its set full, it takes the place of the entry with the most
 * tokens: a full bucket is no different from no entry at all, so idle clients go first,
 * and a client in debt is the last to be forgotten. Being forgotten only ever gives an
 * address a fresh bucket, so evicting someone never refuses them anything; a newcomer
 * always gets a bucket (full), so a crowd cannot lock new clients out. Making the table
 * forget a client in debt takes more addresses in its set than it has ways, all of them
 * in debt too, from a crowd that cannot see the hash key. */

#define IPLIMIT_WAYS 4

struct iplimit;

/* rate permits a second per client, up to burst saved; entries rounded down to a power
 * of two of sets (at least one set). NULL when out of memory. */
struct iplimit *iplimit_new(int64_t rate, int64_t burst, size_t entries, const uint8_t key[16]);
/* From seckill.rate-limit.per-ip-local-*, with a random key. NULL when the limit is off
 * (permits 0) or out of memory. */
struct iplimit *iplimit_from_config(const struct config *cfg);
void iplimit_free(struct iplimit *t);

/* One permit for the client at `ip` (clientip's text form). false: over its share, and
 * *retry_after gets whole seconds until its next permit (at least 1). */
bool iplimit_take(struct iplimit *t, const char *ip, int64_t now_us, int64_t *retry_after);

/* The 16 bytes a client counts as (clientip's text form in): IPv4 as mapped IPv6, IPv6 cut
 * to its /64, anything else "::". The other per-client bounds count by it too. */
void iplimit_client(const char *ip, uint8_t out[16]);

/* SipHash-2-4 of data under key (exposed for its test vector). */
uint64_t iplimit_siphash(const uint8_t key[16], const uint8_t *data, size_t len);

#endif
