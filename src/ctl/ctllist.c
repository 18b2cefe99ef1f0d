#include "ctl/ctllist.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ctl/ctlargs.h"
#include "ctl/ctllisting.h"
#include "ctl/ctlout.h"
#include "store/sqltime.h"

#define CTLLIST_NCOLS(cols) (sizeof(cols) / sizeof(cols[0]))

/* The options every listing takes; opts[0..2] are the cursor (--after, the audit's
 * --before), --limit and --format. */
enum { CTLLIST_AFTER, CTLLIST_LIMIT, CTLLIST_FORMAT, CTLLIST_COMMON };

struct ctllist_page {
    enum ctllisting_form form;
    int64_t rows, after;
};

static int ctllist_page(struct ctlrun *ctl, const struct ctlargs_opt *opts, struct ctllist_page *p)
{
    p->after = 0;
    int rc = ctllisting_options(ctl, opts[CTLLIST_FORMAT].value, opts[CTLLIST_LIMIT].value, &p->form,
                                &p->rows);
    if (rc == CTLRUN_OK && opts[CTLLIST_AFTER].value)
        rc = ctlargs_id(ctl, opts[CTLLIST_AFTER].name, opts[CTLLIST_AFTER].value, &p->after);
    return rc;
}

/* value must be one of the names (a column's ENUM): its index, or a usage error. */
static int ctllist_choice(struct ctlrun *ctl, const char *option, const char *value,
                          const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(value, names[i]) == 0)
            return CTLRUN_OK;
    return ctlout_usage_error(ctl, "%s '%s': not one of the statuses", option, value);
}

static const struct ctllisting_col ctllist_success_cols[] = {
    { "id", "id", 'r', CTLLISTING_INT },
    { "orderNo", "order", 'l', CTLLISTING_TEXT },
    { "userId", "user", 'r', CTLLISTING_INT },
    { "status", "status", 'l', CTLLISTING_TEXT },
    { "reason", "reason", 'l', CTLLISTING_TEXT },
    { "acceptedAt", "accepted", 'l', CTLLISTING_TIME },
    { "at", "final", 'l', CTLLISTING_TIME },
};

int ctllist_orders_run(struct ctlrun *ctl, int argc, char **argv)
{
    enum { ACTIVITY = CTLLIST_COMMON, STATUS, USER, NOPTS };
    struct ctlargs_opt opts[NOPTS] = {
        [CTLLIST_AFTER] = { "--after", false, NULL },
        [CTLLIST_LIMIT] = { "--limit", false, NULL },
        [CTLLIST_FORMAT] = { "--format", false, NULL },
        [ACTIVITY] = { "--activity", true, NULL },
        [STATUS] = { "--status", false, NULL },
        [USER] = { "--user", false, NULL },
    };
    int rc = ctlargs_parse(ctl, argc, argv, opts, NOPTS, NULL, 0, 0, NULL);
    if (rc != CTLRUN_OK)
        return rc;
    static const char *const statuses[] = { "SUCCESS", "CANCELLED", "FAILED" };
    struct ctllist_page p;
    int64_t activity_id, user_id = 0;
    const char *status = opts[STATUS].value ? opts[STATUS].value : "SUCCESS";
    if ((rc = ctllist_page(ctl, opts, &p)) != CTLRUN_OK ||
        (rc = ctlargs_id(ctl, "--activity", opts[ACTIVITY].value, &activity_id)) != CTLRUN_OK ||
        (opts[USER].value && (rc = ctlargs_id(ctl, "--user", opts[USER].value, &user_id)) != CTLRUN_OK) ||
        (rc = ctllist_choice(ctl, "--status", status, statuses, 3)) != CTLRUN_OK)
        return rc;
    bool failed = strcmp(status, "FAILED") == 0, cancelled = strcmp(status, "CANCELLED") == 0;
    char user[48] = "", which[48] = "", sql[768];
    if (user_id)
        snprintf(user, sizeof(user), " AND user_id = %" PRId64, user_id);
    if (!failed)
        snprintf(which, sizeof(which), " AND status = '%s'", status);
    /* Both tables have an index on activity_id, whose entries are in id order. A cancelled
     * order's reason is the shop's, its time the cancel's. */
    snprintf(sql, sizeof(sql),
             "SELECT id, order_no, user_id, '%s', %s, " SQLTIME_MS("accepted_at") ", %s FROM %s "
             "WHERE activity_id = %" PRId64 "%s%s AND id > %" PRId64 " ORDER BY id LIMIT %" PRId64,
             status, failed ? "reason" : cancelled ? "cancel_reason" : "NULL",
             failed      ? SQLTIME_MS("failed_at")
             : cancelled ? SQLTIME_MS("cancelled_at")
                         : SQLTIME_MS("created_at"),
             failed ? "seckill_order_failed" : "seckill_order", activity_id, which, user, p.after,
             p.rows + 1);
    return ctllisting_query(ctl, ctllist_success_cols, CTLLIST_NCOLS(ctllist_success_cols), p.form, p.rows,
                            sql, "--after");
}

static const struct ctllisting_col ctllist_coupon_cols[] = {
    { "id", "id", 'r', CTLLISTING_INT },
    { "name", "name", 'l', CTLLISTING_TEXT },
    { "type", "type", 'l', CTLLISTING_TEXT },
    { "status", "status", 'l', CTLLISTING_TEXT },
    { "total", "total", 'r', CTLLISTING_INT },
    { "issued", "issued", 'r', CTLLISTING_INT },
    { "used", "used", 'r', CTLLISTING_INT },
    { "validFrom", "from", 'l', CTLLISTING_TIME },
    { "validUntil", "until", 'l', CTLLISTING_TIME },
};

int ctllist_coupons_run(struct ctlrun *ctl, int argc, char **argv)
{
    enum { STATUS = CTLLIST_COMMON, NOPTS };
    struct ctlargs_opt opts[NOPTS] = {
        [CTLLIST_AFTER] = { "--after", false, NULL },
        [CTLLIST_LIMIT] = { "--limit", false, NULL },
        [CTLLIST_FORMAT] = { "--format", false, NULL },
        [STATUS] = { "--status", false, NULL },
    };
    int rc = ctlargs_parse(ctl, argc, argv, opts, NOPTS, NULL, 0, 0, NULL);
    if (rc != CTLRUN_OK)
        return rc;
    static const char *const statuses[] = { "ACTIVE", "INACTIVE", "EXPIRED" };
    struct ctllist_page p;
    if ((rc = ctllist_page(ctl, opts, &p)) != CTLRUN_OK ||
        (opts[STATUS].value &&
         (rc = ctllist_choice(ctl, "--status", opts[STATUS].value, statuses, 3)) != CTLRUN_OK))
        return rc;
    char status[48] = "", sql[768];
    if (opts[STATUS].value)
        snprintf(status, sizeof(status), " AND status = '%s'", opts[STATUS].value);
    snprintf(sql, sizeof(sql),
             "SELECT id, name, type, status, total_count, issued_count, used_count, " SQLTIME_MS("start_time")
             ", " SQLTIME_MS("end_time") " FROM coupon WHERE id > %" PRId64 "%s ORDER BY id LIMIT %" PRId64,
             p.after, status, p.rows + 1);
    return ctllisting_query(ctl, ctllist_coupon_cols, CTLLIST_NCOLS(ctllist_coupon_cols), p.form, p.rows, sql,
                            "--after");
}

static const struct ctllisting_col ctllist_activity_cols[] = {
    { "id", "id", 'r', CTLLISTING_INT },
    { "name", "name", 'l', CTLLISTING_TEXT },
    { "couponId", "coupon", 'r', CTLLISTING_INT },
    { "status", "status", 'l', CTLLISTING_TEXT },
    { "stock", "stock", 'r', CTLLISTING_INT },
    { "sold", "sold", 'r', CTLLISTING_INT },
    { "perUser", "per user", 'r', CTLLISTING_INT },
    { "start", "start", 'l', CTLLISTING_TIME },
    { "end", "end", 'l', CTLLISTING_TIME },
    { "archivedAt", "archived", 'l', CTLLISTING_TIME },
};

int ctllist_activities_run(struct ctlrun *ctl, int argc, char **argv)
{
    enum { COUPON = CTLLIST_COMMON, STATUS, NOPTS };
    struct ctlargs_opt opts[NOPTS] = {
        [CTLLIST_AFTER] = { "--after", false, NULL },
        [CTLLIST_LIMIT] = { "--limit", false, NULL },
        [CTLLIST_FORMAT] = { "--format", false, NULL },
        [COUPON] = { "--coupon", false, NULL },
        [STATUS] = { "--status", false, NULL },
    };
    int rc = ctlargs_parse(ctl, argc, argv, opts, NOPTS, NULL, 0, 0, NULL);
    if (rc != CTLRUN_OK)
        return rc;
    static const char *const statuses[] = { "PENDING", "ACTIVE", "ENDED", "CANCELLED" };
    struct ctllist_page p;
    int64_t coupon_id = 0;
    if ((rc = ctllist_page(ctl, opts, &p)) != CTLRUN_OK ||
        (opts[COUPON].value &&
         (rc = ctlargs_id(ctl, "--coupon", opts[COUPON].value, &coupon_id)) != CTLRUN_OK) ||
        (opts[STATUS].value &&
         (rc = ctllist_choice(ctl, "--status", opts[STATUS].value, statuses, 4)) != CTLRUN_OK))
        return rc;
    char filter[96] = "", sql[1024];
    size_t used = 0;
    if (coupon_id)
        used += (size_t)snprintf(filter, sizeof(filter), " AND coupon_id = %" PRId64, coupon_id);
    if (opts[STATUS].value)
        snprintf(filter + used, sizeof(filter) - used, " AND status = '%s'", opts[STATUS].value);
    snprintf(sql, sizeof(sql),
             "SELECT id, name, coupon_id, status, stock, sold_count, per_user, " SQLTIME_MS("start_time") ", "
             SQLTIME_MS("end_time") ", " SQLTIME_MS("archived_at") " FROM seckill_activity "
             "WHERE id > %" PRId64
             "%s ORDER BY id LIMIT %" PRId64, p.after, filter, p.rows + 1);
    return ctllisting_query(ctl, ctllist_activity_cols, CTLLIST_NCOLS(ctllist_activity_cols), p.form,
                            p.rows, sql, "--after");
}

static const struct ctllisting_col ctllist_audit_cols[] = {
    { "id", "id", 'r', CTLLISTING_INT },
    { "at", "at", 'l', CTLLISTING_TIME },
    { "command", "command", 'l', CTLLISTING_TEXT },
    { "args", "arguments", 'l', CTLLISTING_ARRAY },
    { "origin", "from", 'l', CTLLISTING_TEXT },
    { "exitStatus", "exit", 'r', CTLLISTING_INT },
};

int ctllist_audit_run(struct ctlrun *ctl, int argc, char **argv)
{
    struct ctlargs_opt opts[CTLLIST_COMMON] = {
        [CTLLIST_AFTER] = { "--before", false, NULL },
        [CTLLIST_LIMIT] = { "--limit", false, NULL },
        [CTLLIST_FORMAT] = { "--format", false, NULL },
    };
    int rc = ctlargs_parse(ctl, argc, argv, opts, CTLLIST_COMMON, NULL, 0, 0, NULL);
    struct ctllist_page p;
    if (rc != CTLRUN_OK || (rc = ctllist_page(ctl, opts, &p)) != CTLRUN_OK)
        return rc;
    char where[64] = "";
    if (p.after)
        snprintf(where, sizeof(where), " WHERE id < %" PRId64, p.after);
    char sql[512];
    snprintf(sql, sizeof(sql), "SELECT id, " SQLTIME_MS("at") ", command, args, origin, exit_status "
             "FROM admin_audit%s ORDER BY id DESC LIMIT %" PRId64, where, p.rows + 1);
    return ctllisting_query(ctl, ctllist_audit_cols, CTLLIST_NCOLS(ctllist_audit_cols), p.form, p.rows, sql,
                            "--before");
}
