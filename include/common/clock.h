#ifndef SK_CLOCK_H
#define SK_CLOCK_H

#include <stdint.h>
#include <sys/time.h>

/* The two clocks of the system: wall time in milliseconds (sale windows, order times,
 * shared with Redis and MySQL) and monotonic microseconds (deadlines, latencies,
 * the token bucket: immune to clock steps). */

int64_t clock_wall_ms(void);
int64_t clock_mono_us(void);
int64_t clock_mono_ms(void);
/* A libevent timer interval of `ms` milliseconds. */
struct timeval clock_timeval_ms(int64_t ms);

#endif
