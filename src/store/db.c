#include "store/db.h"

#include <stdio.h>

MYSQL *db_connect(const struct config *cfg, char *err, size_t errlen)
{
    return db_connect_timeout(cfg, 5, err, errlen);
}

MYSQL *db_connect_timeout(const struct config *cfg, unsigned int seconds, char *err, size_t errlen)
{
    MYSQL *db = mysql_init(NULL);
    if (!db) {
        snprintf(err, errlen, "mysql_init: out of memory");
        return NULL;
    }
    unsigned int connect_timeout = 5;
    mysql_options(db, MYSQL_OPT_CONNECT_TIMEOUT, &connect_timeout);
    mysql_options(db, MYSQL_OPT_READ_TIMEOUT, &seconds);
    mysql_options(db, MYSQL_OPT_WRITE_TIMEOUT, &seconds);
    mysql_options(db, MYSQL_SET_CHARSET_NAME, "utf8mb4");
    mysql_options(db, MYSQL_INIT_COMMAND, "SET time_zone = '+00:00'");
    /* No CLIENT_FOUND_ROWS: an idempotent insert then reports 0 affected rows for a
     * duplicate, which is how the consumer counts what it really added. */
    if (!mysql_real_connect(db, cfg->mysql_host, cfg->mysql_user, cfg->mysql_password,
                            cfg->mysql_database, (unsigned int)cfg->mysql_port, NULL, 0)) {
        snprintf(err, errlen, "mysql %s:%lld: %s", cfg->mysql_host, (long long)cfg->mysql_port,
                 mysql_error(db));
        mysql_close(db);
        return NULL;
    }
    return db;
}

int db_exec(MYSQL *db, const char *sql, char *err, size_t errlen)
{
    if (mysql_query(db, sql) != 0) {
        snprintf(err, errlen, "%s", mysql_error(db));
        return -1;
    }
    MYSQL_RES *res = mysql_store_result(db);
    if (res)
        mysql_free_result(res);
    return 0;
}

MYSQL_RES *db_select(MYSQL *db, const char *sql, char *err, size_t errlen)
{
    MYSQL_RES *res = mysql_query(db, sql) == 0 ? mysql_store_result(db) : NULL;
    if (!res)
        snprintf(err, errlen, "mysql: %s", mysql_error(db));
    return res;
}
