#ifndef SK_PARSE_H
#define SK_PARSE_H

#include <stdbool.h>
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
/* A user or activity id a client sends: parse_json_id, or with long ids (http.long-ids:
 * Java's long, which the project's messages carry as strings above 2^53 - 1, json.h)
 * parse_id. PARSE_ID_BOUND names the bound in messages. */
int parse_client_id(const char *s, bool long_ids, int64_t *out);
#define PARSE_ID_BOUND(long_ids) ((long_ids) ? "2^63" : "2^53")
/* Money in yuan with at most two decimals ("100", "100.5", "100.50") into cents. */
int parse_cents(const char *s, int64_t *out);

#endif
