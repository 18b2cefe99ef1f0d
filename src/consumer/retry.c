#include "consumer/retry.h"

#include <inttypes.h>

#include "common/clock.h"
#include "common/log.h"
#include "consumer/consumer.h"
#include "consumer/kafkacons.h"

static int until_done(struct consumer *c, const char *what, retry_step_fn step,
                      enum consumermetrics_id metric)
{
    int64_t delay = c->cfg.consumer_retry_min_ms;
    int failed = 0;
    for (;;) {
        char err[512] = "";
        if (step(c, err, sizeof(err)) == 0) {
            if (failed)
                consumermetrics_set(CONSUMERMETRICS_READY, 1);
            return 0;
        }
        if (!failed)
            consumermetrics_set(CONSUMERMETRICS_READY, 0);
        failed = 1;
        if (c->stop) {
            LOG_WARN("%s failed: %s; stopping with the batch uncommitted (it replays)", what,
                     err);
            return -1;
        }
        LOG_WARN("%s failed: %s; retrying in %" PRId64 " ms", what, err, delay);
        consumermetrics_add(metric, 1);
        kafkacons_set_paused(c, 1);
        kafkacons_wait(c, delay);
        delay = delay * 2 > c->cfg.consumer_retry_max_ms ? c->cfg.consumer_retry_max_ms
                                                         : delay * 2;
    }
}

int retry_step(struct consumer *c, const char *what, retry_step_fn step,
               enum consumermetrics_id metric, int64_t *ms)
{
    int64_t t0 = clock_mono_ms();
    int rc = until_done(c, what, step, metric);
    *ms += clock_mono_ms() - t0;
    return rc;
}
