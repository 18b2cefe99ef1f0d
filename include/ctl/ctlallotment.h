#ifndef SK_CTLALLOTMENT_H
#define SK_CTLALLOTMENT_H

#include <stdbool.h>
#include <stdint.h>

#include "ctl/ctlrun.h"
#include "ctl/ctlactivity.h"
#include "ctl/ctlcoupon.h"

/* The allotment: how much of a coupon's total_count is issued and how much its sales
 * hold back, and the check that keeps grants and new sales within the total.
 *
 * issued_count counts every user coupon issued, granted outside a sale or sold through
 * one (the consumer raises it with each order it records). A sale holds back what may
 * still become orders. A live or future sale holds its unsold stock (stock - sold_count).
 * An ended or cancelled one holds only stock Redis handed out that MySQL has not recorded
 * yet (reservations, orders queued in Kafka or claimed), i.e. stock - sold_count - stock
 * key - returned. The rest is back with the coupon:
 *   - the stock key of an ended sale (nobody can reserve after the end);
 *   - 'returned' in the activity hash: what cancel.lua took off a cancelled sale;
 *   - the stock key of a cancelled sale: units the reaper released after the cancel
 *     (release.lua INCRs the key, now closed to buyers; a later cancel or warmup moves
 *     them into 'returned').
 * An archived sale (archive.h) holds nothing: it was quiet, every order final, when archived.
 * So I3 reads, at quiescence: stock key + live reservations + SUCCESS + returned = stock.
 * A coupon can give total_count - issued_count - what its sales hold. */

/* A sale still counts as live this long after its end: the gateways check the end against
 * their own clocks, and an execute sent just before the end may reach Redis up to a
 * redis.timeout-ms later. Holding the stock a little longer only delays its return. */
#define CTLALLOTMENT_END_GRACE_MS 5000

/* ---- the rule (pure) ----------------------------------------------------------------- */

/* How much of its coupon's count one activity holds back at now_ms (see above). A cancel
 * that MySQL records but the Redis hash does not show (Redis restored from before it) may
 * still be selling: the sale then holds its unsold stock like a live one. */
int64_t ctlallotment_holds(const struct ctlactivity_row *row, int64_t now_ms,
                           const struct ctlactivity_redis *rd);

/* One coupon's count: total_count, issued_count, and the sum of what its sales hold. */
struct ctlallotment_count {
    int64_t total, issued, held;
};

/* What the coupon can still give, outside its sales or to a new sale:
 * total - issued - held, never below 0. */
int64_t ctlallotment_remaining(const struct ctlallotment_count *c);
/* The verdict on a request for n more (a grant asks 1, a new sale its stock): true when
 * they fit within the total beside what is issued and held. */
bool ctlallotment_fits(const struct ctlallotment_count *c, int64_t n);

/* ---- reading it ---------------------------------------------------------------------- */

/* The sum of ctlallotment_holds over the coupon's activities. With lock, their rows are
 * locked FOR UPDATE first: the consumer raises sold_count and then issued_count in one
 * transaction, so locking activities before the coupon row keeps one lock order. */
int ctlallotment_held(struct ctlrun *ctl, int64_t coupon_id, int64_t now_ms, bool lock, int64_t *held);

/* A coupon's row and count as of now_ms. */
struct ctlallotment {
    struct ctlcoupon_row coupon;
    struct ctlallotment_count count;
    int64_t remaining;      /* ctlallotment_remaining(&count) */
};

/* With lock (inside the caller's transaction) the coupon's activity rows and then the
 * coupon row are locked FOR UPDATE, in the consumer's order, so that the answer holds
 * until the caller commits: grants, activity creation and the consumer's
 * issued_count += n are serialised on the coupon row. CTLRUN_OK, or CTLRUN_FAIL after
 * printing (a missing coupon included). */
int ctlallotment_read(struct ctlrun *ctl, int64_t coupon_id, int64_t now_ms, bool lock,
                      struct ctlallotment *out);
/* A sale's window inside its coupon's validity (al read by ctlallotment_read): CTLRUN_OK,
 * or a failure naming both. */
int ctlallotment_within_validity(struct ctlrun *ctl, const struct ctlallotment *al, int64_t start_ms,
                                 int64_t end_ms);

#endif
