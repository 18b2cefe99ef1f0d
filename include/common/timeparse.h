#ifndef SK_TIMEPARSE_H
#define SK_TIMEPARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Times as an operator types them, into milliseconds since the Unix epoch. Pure apart
 * from the process's time zone (used only for ISO times written without an offset).
 *
 * Accepted, the whole string and nothing else:
 *   now
 *   +N{s,m,h,d} / -N{s,m,h,d}     relative to now_ms, e.g. +10m, +2h, +1d, -30s
 *   YYYY-MM-DDTHH:MM[:SS[.fff]]   'T' or one space between date and time; the fraction
 *                                 has 1-9 digits (milliseconds kept, the rest dropped);
 *                                 followed by nothing (local time, via mktime), 'Z', or
 *                                 an offset +HH:MM, +HHMM or +HH (same with '-')
 * Years 1970-9999. Out-of-range fields are refused, not normalised: month 13, Feb 30
 * (Feb 29 only in leap years), hour 24, minute or second 60, and a local time that does
 * not exist (skipped by a daylight-saving change).
 * Returns 0, or -1 with *out_ms untouched. */
int timeparse_parse(const char *s, int64_t now_ms, int64_t *out_ms);

/* Whether s names an instant of its own (an ISO time) rather than one counted from now
 * ("now", +N, -N). For a window whose end counts from an absolute start. */
bool timeparse_is_absolute(const char *s);

/* UTC ISO-8601 for output: "2026-12-01T12:00:00Z", or "2026-12-01T12:00:00.250Z" when
 * the milliseconds are not zero. Returns the length written, or -1 when buf is too small
 * (a 32-byte buffer always suffices). */
int timeparse_format(int64_t ms, char *buf, size_t len);

/* The same instant as a MySQL DATETIME(3) literal in UTC: "2026-12-01 12:00:00.000".
 * (FROM_UNIXTIME stops at 2038 on MariaDB 10.11; a literal does not.) */
int timeparse_format_sql(int64_t ms, char *buf, size_t len);

#endif
