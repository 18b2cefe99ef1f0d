#ifndef SK_SQLTIME_H
#define SK_SQLTIME_H

#include <inttypes.h>

/* DATETIME(3) <-> epoch ms in SQL, without UNIX_TIMESTAMP: that one depends on the session's
 * time zone and stops at 2038. Times are UTC in every table. */
#define SQLTIME_MS(col) "(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', " col ") DIV 1000)"
/* A printf format of an epoch ms (int64_t) as a DATETIME(3). */
#define SQLTIME_AT "TIMESTAMPADD(MICROSECOND, %" PRId64 " * 1000, '1970-01-01 00:00:00')"

#endif
