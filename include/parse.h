#ifndef SK_PARSE_H
#define SK_PARSE_H

#include <stddef.h>
#include <stdint.h>

/* Strict parsers for untrusted input: the whole string must match, no overflow. */

/* A positive 64-bit decimal id: digits only, no sign, no leading zero, no junk, <= INT64_MAX. */
int parse_id(const char *s, int64_t *out);
/* Money in yuan with at most two decimals ("100", "100.5", "100.50") into cents. */
int parse_cents(const char *s, int64_t *out);

#endif
