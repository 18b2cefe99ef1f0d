#include "ctl/ctlactivitycancel.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>

#include "ctl/ctlactivity.h"
#include "ctl/ctlallotment.h"
#include "ctl/ctlargs.h"
#include "ctl/ctldb.h"
#include "ctl/ctlout.h"
#include "common/clock.h"
#include "common/timeparse.h"

static int ctlactivitycancel_print(struct ctlrun *ctl, const struct ctlactivity_row *row,
                                   const struct ctlactivity_cancelled *cc, bool already,
                                   int64_t in_flight)
{
    if (ctl->json) {
        cJSON *obj = cJSON_CreateObject();
        cJSON_AddNumberToObject(obj, "id", (double)row->id);
        cJSON_AddNumberToObject(obj, "couponId", (double)row->coupon_id);
        cJSON_AddStringToObject(obj, "status", "CANCELLED");
        cJSON_AddBoolToObject(obj, "alreadyCancelled", already);
        cJSON_AddBoolToObject(obj, "warmed", cc->warmed);
        cJSON_AddNumberToObject(obj, "returned", (double)cc->returned);
        cJSON_AddNumberToObject(obj, "returnedNow", (double)cc->moved);
        cJSON_AddNumberToObject(obj, "inFlight", (double)in_flight);
        return ctlout_json(ctl, obj);
    }
    if (already)
        printf("activity %" PRId64 " is already cancelled: %" PRId64 " unsold returned to coupon %" PRId64
               "%s\n", row->id, cc->returned, row->coupon_id,
               cc->moved > 0 ? " (including units released since)" : "");
    else
        printf("activity %" PRId64 " cancelled: %" PRId64 " unsold returned to coupon %" PRId64 "\n",
               row->id, cc->returned, row->coupon_id);
    if (in_flight > 0)
        printf("%" PRId64 " order(s) still in flight end as sold or return to the coupon\n", in_flight);
    return CTLRUN_OK;
}

/* Redis first: execute.lua refuses the activity from the next call on, on every gateway,
 * whatever their caches say. Then MySQL. Until MySQL says CANCELLED the allotment goes on
 * counting the sale as live (it holds its unsold stock), so an interruption between the
 * two errs on the safe side; running cancel again finishes it. */
int ctlactivitycancel_run(struct ctlrun *ctl, int argc, char **argv)
{
    struct ctlactivity_row row;
    int rc = ctlactivity_load_arg(ctl, argc, argv, &row);
    if (rc != CTLRUN_OK)
        return rc;
    int64_t id = row.id;
    if (row.archived)
        return ctlout_fail(ctl, "activity %" PRId64 " is archived: it is over, nothing to cancel", id);
    bool already = ctlactivity_is_cancelled(&row);
    int64_t now = clock_wall_ms();
    if (!already && now >= row.end_ms) {
        /* Nothing to stop, unless an earlier cancel got only as far as Redis. */
        struct ctlactivity_redis rd;
        if ((rc = ctlactivity_read_redis(ctl, &row, &rd)) != CTLRUN_OK)
            return rc;
        if (!rd.cancelled) {
            char end[40];
            timeparse_format(row.end_ms, end, sizeof(end));
            return ctlout_fail(ctl, "activity %" PRId64 " ended at %s: nothing to stop (its unsold stock "
                               "goes back to coupon %" PRId64 " by itself)", id, end, row.coupon_id);
        }
    }

    struct ctlactivity_cancelled cc;
    if ((rc = ctlactivity_cancel_redis(ctl, &row, &cc)) != CTLRUN_OK)
        return rc;
    if (!already) {
        char sql[160];
        snprintf(sql, sizeof(sql),
                 "UPDATE seckill_activity SET status = 'CANCELLED' WHERE id = %" PRId64, id);
        if ((rc = ctldb_exec(ctl, sql)) != CTLRUN_OK) {
            ctlout_note(ctl, "activity %" PRId64 " is stopped in Redis but MySQL was not updated: run "
                        "'seckillctl activity cancel %" PRId64 "' again", id, id);
            return rc;
        }
        /* sold_count as of the cancel, for the in-flight count below. */
        if ((rc = ctlactivity_load(ctl, id, &row)) != CTLRUN_OK)
            return rc;
    }
    if (!cc.warmed) {
        /* Never warmed (or Redis lost it): nothing was on sale, nothing is in flight, and a
         * later warmup builds it cancelled. The allotment gives its unsold stock back. */
        cc.returned = row.stock - row.sold_count > 0 ? row.stock - row.sold_count : 0;
        ctlout_note(ctl, "activity %" PRId64 " is not warmed in Redis: nothing was on sale", id);
        return ctlactivitycancel_print(ctl, &row, &cc, already, 0);
    }
    struct ctlactivity_redis rd;
    if ((rc = ctlactivity_read_redis(ctl, &row, &rd)) != CTLRUN_OK)
        return rc;
    return ctlactivitycancel_print(ctl, &row, &cc, already, ctlallotment_holds(&row, now, &rd));
}
