#ifndef SK_ARCHIVE_H
#define SK_ARCHIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "gateway/redisconn.h"

/* Archived sales, as the read endpoints need them. Archiving (seckillctl activity archive)
 * keeps a sale's activity hash, sets its field `archived` before it deletes any other key
 * of the sale, and takes the sale out of seckill:activities; MySQL keeps every order.
 * A read that finds nothing in Redis asks here whether the sale is archived (one HGETALL
 * of the hash): if it is, the answer comes from the hash or, for per-order data, from
 * MySQL through seckill-admin (adminfwd.h). Since `archived` is set first, a key found
 * missing while the hash has no `archived` was never there: the read's answer stands.
 *
 * Known archived sales are kept, at most ARCHIVE_CACHE_MAX of them, the least recently
 * read dropped first, so that reading any number of old sales holds bounded memory; a
 * sale listed again in seckill:activities (warmed anew) is forgotten at once. A sale found
 * not archived is not kept: it may be archived a moment later. */

#define ARCHIVE_CACHE_MAX 256

struct archive_sale {
    int64_t id;
    int64_t archived_ms;    /* the hash's `archived` */
    int64_t stock_left;     /* its `stockLeft` (the stock unsold when archived), else 0 */
    bool cancelled;         /* status CANCELLED */
};

struct archive;

struct archive *archive_new(struct redisconn *redis, const struct config *cfg);
/* After redisconn_free, which runs the last lookups' callbacks. */
void archive_free(struct archive *ar);

/* The cached record of sale id, NULL when it is not known archived; no I/O. */
const struct archive_sale *archive_find(struct archive *ar, int64_t id);

/* sale: the record (valid during the call) or NULL when the sale is not archived (no hash,
 * or no `archived` in it); ok false when Redis gave no answer (sale NULL). */
typedef void (*archive_cb)(void *arg, const struct archive_sale *sale, bool ok);
/* Reads sale id's activity hash, caches the record when archived, and calls cb once.
 * Returns -1 when it could not be sent: cb is not called. */
int archive_lookup(struct archive *ar, int64_t id, archive_cb cb, void *arg);
/* Keeps sale's record (what archive_lookup does with one it found), dropping the least
 * recently read one when ARCHIVE_CACHE_MAX are kept. */
void archive_remember(struct archive *ar, const struct archive_sale *sale);
/* Sale id is listed as warmed again: its record goes. */
void archive_forget(struct archive *ar, int64_t id);
size_t archive_count(const struct archive *ar);

/* Fills sale from an HGETALL reply of its activity hash: 1 archived, 0 not, -1 when the
 * reply is no field list. Pure. */
int archive_parse(struct archive_sale *sale, int64_t id, const redisReply *reply);

#endif
