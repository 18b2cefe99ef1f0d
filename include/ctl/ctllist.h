#ifndef SK_CTLLIST_H
#define SK_CTLLIST_H

#include "ctl/ctlrun.h"

/* The paged listings of the records (ctllisting.h for the forms and the cursor):
 *   order list --activity ID [--status SUCCESS|FAILED] [--user UID]   a sale's orders
 *   coupon list [--status ACTIVE|INACTIVE|EXPIRED]                    the coupons
 *   activity list [--coupon ID] [--status PENDING|ACTIVE|ENDED|CANCELLED]   the sales
 * each with [--after ID] [--limit N] [--format table|json|csv], in id order; and
 *   audit list [--before ID] [--limit N] [--format ...]   admin_audit, newest first. */
int ctllist_orders_run(struct ctlrun *ctl, int argc, char **argv);
int ctllist_coupons_run(struct ctlrun *ctl, int argc, char **argv);
int ctllist_activities_run(struct ctlrun *ctl, int argc, char **argv);
int ctllist_audit_run(struct ctlrun *ctl, int argc, char **argv);

#endif
