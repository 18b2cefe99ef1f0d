#ifndef SK_COUPONTERMS_H
#define SK_COUPONTERMS_H

#include <stddef.h>
#include <stdint.h>

/* Coupon terms and the one function that turns them into money. Money is integer cents
 * throughout (DECIMAL(15,2) yuan in MySQL); rates are basis points of the price paid.
 *
 * Rounding rule (documented in docs/coupons.md): for DISCOUNT the payable amount is
 * order x rate rounded half up to the cent, the discount is what remains, then capped by
 * max-discount. CASH takes its amount off but never more than the order. GIFT takes
 * nothing off. An order below the minimum is refused; exactly the minimum is accepted. */

enum coupon_type { COUPON_CASH, COUPON_DISCOUNT, COUPON_GIFT };

#define COUPON_RATE_ONE 10000  /* basis points: 8500 = pay 85 % */

struct coupon_terms {
    enum coupon_type type;
    int64_t amount;        /* CASH: cents off */
    int64_t rate;          /* DISCOUNT: basis points paid, 1..10000 */
    int64_t min_order;     /* cents; 0 = none */
    int64_t max_discount;  /* DISCOUNT: cap in cents; 0 = none */
};

enum coupon_verdict { COUPON_APPLIED, COUPON_BELOW_MIN_ORDER, COUPON_BAD_INPUT };

/* Pure. order >= 0 cents; writes the discount and the payable amount (order - discount). */
enum coupon_verdict couponterms_apply(const struct coupon_terms *terms, int64_t order,
                                 int64_t *discount, int64_t *payable);

const char *couponterms_type_name(enum coupon_type type);
int couponterms_type_parse(const char *name, enum coupon_type *out);
/* Cents as yuan with two decimals: 1234 -> "12.34". */
int couponterms_format_cents(int64_t cents, char *buf, size_t len);

#endif
