#ifndef SK_ADMINPOOL_H
#define SK_ADMINPOOL_H

#include <event2/event.h>
#include <stddef.h>

#include "common/config.h"
#include "ctl/ctlcall.h"

/* seckill-admin's workers: admin.workers threads that run the requests' seckillctl
 * commands, so that a long one (verify of a big sale) holds back only itself. Each worker
 * has its own struct ctlrun, hence its own MySQL and Redis connections, opened and closed
 * per command as one seckillctl run does; the config is shared and only read. Commands
 * wait in arrival order for a free worker. The loop's thread submits jobs and gets each
 * back, done, through `done` on the same loop: nothing else crosses threads. */

/* One command to run. The caller allocates it and fills the first part; the worker fills
 * the outcome and call; `done` hands it back to the caller, who frees it (ctlcall_free). */
struct adminpool_job {
    const char *command;
    ctlrun_handler handler;
    int argc;
    char **argv;
    void *arg;                      /* the caller's */
    const char *actor;              /* who asks, for the records that keep it (ctlrun.h) */
    enum ctlcall_outcome outcome;
    struct ctlcall call;
    struct adminpool_job *next;     /* the pool's, while queued or done */
};

typedef void (*adminpool_done)(struct adminpool_job *job);

struct adminpool;

/* cfg must outlive the pool; mysql_library_init must have run (it is not thread-safe). */
struct adminpool *adminpool_new(struct event_base *base, const struct config *cfg, int workers,
                                adminpool_done done, char *err, size_t errlen);
void adminpool_submit(struct adminpool *p, struct adminpool_job *job);
/* Jobs submitted and not handed back yet. */
size_t adminpool_pending(const struct adminpool *p);
/* The workers run every job still queued, then stop; each job comes back through done
 * before this returns (so before the caller frees what done answers on). */
void adminpool_free(struct adminpool *p);

#endif
