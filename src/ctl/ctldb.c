#include "ctl/ctldb.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctlout.h"
#include "store/db.h"
#include "store/outbox.h"

MYSQL *ctldb_conn(struct ctlrun *ctl)
{
    if (ctl->db)
        return ctl->db;
    char err[512];
    ctl->db = db_connect_timeout(&ctl->cfg, 300, err, sizeof(err));
    if (!ctl->db)
        ctlout_unavailable(ctl, "%s", err);
    return ctl->db;
}

/* Client-side errors (CR_*, from 2000 on: the server gone, lost, unreachable) are the
 * backend's, not the statement's. */
static int ctldb_failed(struct ctlrun *ctl, MYSQL *db, const char *message)
{
    if (mysql_errno(db) >= 2000)
        return ctlout_unavailable(ctl, "mysql: %s", message);
    return ctlout_fail(ctl, "mysql: %s", message);
}

int ctldb_outcomes(struct ctlrun *ctl, const struct outbox_event *events, size_t count)
{
    if (ctl->cfg.kafka_outcome_topic[0] == '\0' || count == 0)
        return CTLRUN_OK;
    MYSQL *db = ctldb_conn(ctl);
    if (!db)
        return CTLRUN_FAIL;
    struct outbox o = { 0 };
    int rc = CTLRUN_OK;
    char err[512];
    for (size_t i = 0; i < count && rc == CTLRUN_OK; i++)
        if (outbox_add(&o, &events[i]) != 0)
            rc = ctlout_fail(ctl, "out of memory");
    if (rc == CTLRUN_OK && outbox_write(db, &o, err, sizeof(err)) != 0)
        rc = ctldb_failed(ctl, db, err);
    outbox_free(&o);
    return rc;
}

int ctldb_exec(struct ctlrun *ctl, const char *sql)
{
    MYSQL *db = ctldb_conn(ctl);
    if (!db)
        return CTLRUN_FAIL;
    char err[512];
    if (db_exec(db, sql, err, sizeof(err)) != 0)
        return ctldb_failed(ctl, db, err);
    return CTLRUN_OK;
}

static MYSQL_RES *ctldb_result(struct ctlrun *ctl, const char *sql, bool stream)
{
    MYSQL *db = ctldb_conn(ctl);
    if (!db)
        return NULL;
    if (mysql_query(db, sql) != 0) {
        ctldb_failed(ctl, db, mysql_error(db));
        return NULL;
    }
    MYSQL_RES *res = stream ? mysql_use_result(db) : mysql_store_result(db);
    if (!res)
        ctldb_failed(ctl, db, mysql_errno(db) ? mysql_error(db) : "query returned no result");
    return res;
}

MYSQL_RES *ctldb_query(struct ctlrun *ctl, const char *sql)
{
    return ctldb_result(ctl, sql, false);
}

MYSQL_RES *ctldb_stream(struct ctlrun *ctl, const char *sql)
{
    return ctldb_result(ctl, sql, true);
}

int64_t ctldb_int(const char *s)
{
    if (!s)
        return 0;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || end == s)
        return 0;
    return (int64_t)v;
}

int ctldb_ints(struct ctlrun *ctl, const char *sql, int64_t *out, size_t n)
{
    MYSQL_RES *res = ctldb_query(ctl, sql);
    if (!res)
        return CTLRUN_FAIL;
    MYSQL_ROW row = mysql_fetch_row(res);
    if (!row || mysql_num_fields(res) < n) {
        mysql_free_result(res);
        return ctlout_fail(ctl, "mysql: query returned no row");
    }
    for (size_t i = 0; i < n; i++)
        out[i] = ctldb_int(row[i]);
    mysql_free_result(res);
    return CTLRUN_OK;
}

char *ctldb_quote(struct ctlrun *ctl, const char *s)
{
    MYSQL *db = ctldb_conn(ctl);
    if (!db)
        return NULL;
    size_t len = strlen(s);
    char *out = malloc(2 * len + 3);
    if (!out) {
        ctlout_fail(ctl, "out of memory");
        return NULL;
    }
    out[0] = '\'';
    unsigned long n = mysql_real_escape_string(db, out + 1, s, (unsigned long)len);
    out[n + 1] = '\'';
    out[n + 2] = '\0';
    return out;
}
