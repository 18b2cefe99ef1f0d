#ifndef SK_PARSE_H
#define SK_PARSE_H

#include <stddef.h>
#include <stdint.h>

/* Strict parsers for untrusted input: the whole string must match, no overflow. */

/* A positive 64-bit decimal id: digits only, no sign, no leading zero, no junk, <= INT64_MAX. */
int parse_id(const char *s, int64_t *out);
/* An id that travels as a JSON number (users, activities, coupons): parse_id, and at
 * most 2^53 - 1, the largest integer every JSON reader (JavaScript included) holds
 * exactly. Larger ids would be accepted here but mangled on their way through Kafka. */
#define PARSE_MAX_JSON_ID 9007199254740991LL
int parse_json_id(const char *s, int64_t *out);
/* Money in yuan with at most two decimals ("100", "100.5", "100.50") into cents. */
int parse_cents(const char *s, int64_t *out);

#endif
