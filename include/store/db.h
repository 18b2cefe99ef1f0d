#ifndef SK_DB_H
#define SK_DB_H

#include <mysql.h>
#include <stddef.h>

#include "common/config.h"

/* MySQL connections of the consumer and seckillctl (the gateway never talks to MySQL).
 * Sessions run in UTC so DATETIME columns mean the same thing everywhere. */

MYSQL *db_connect(const struct config *cfg, char *err, size_t errlen);
/* The same with another read/write timeout: admin queries over a whole sale take longer
 * than the consumer's 5 s. */
MYSQL *db_connect_timeout(const struct config *cfg, unsigned int seconds, char *err, size_t errlen);
/* Runs one statement that returns no rows. Returns 0, or -1 with the server's message. */
int db_exec(MYSQL *db, const char *sql, char *err, size_t errlen);
/* Runs one statement that returns rows: all of them (caller frees), or NULL with "mysql: "
 * and the server's message. */
MYSQL_RES *db_select(MYSQL *db, const char *sql, char *err, size_t errlen);

#endif
