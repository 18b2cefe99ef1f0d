#ifndef SK_EXPOSURE_H
#define SK_EXPOSURE_H

#include <stdbool.h>

#include "common/config.h"

/* Start-up warnings about settings that leave a deployment open: fine on a developer's
 * machine, dangerous anywhere else. Each is one WARN line, said once at start-up. */

/* The MySQL password conf/seckill.conf ships with (and config.c's default). */
#define EXPOSURE_SHIPPED_MYSQL_PASSWORD "seckill"

/* Pure: true for a numeric address only this machine can reach, 127.0.0.0/8 or ::1 (also
 * as ::ffff:127.x.y.z). Anything else, 0.0.0.0 and :: included, is reachable from outside. */
bool exposure_loopback(const char *host);

/* The gateway: auth.mode=none on a non-loopback http.host lets anyone who reaches the port
 * act as any user. */
void exposure_warn_gateway(const struct config *cfg);
/* A process that logs into MySQL with mysql.password: warns when it is the shipped one. */
void exposure_warn_mysql(const struct config *cfg);

#endif
