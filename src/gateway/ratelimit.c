#include "gateway/ratelimit.h"

#include <arpa/inet.h>

#include "common/clock.h"
#include "gateway/clientip.h"
#include "gateway/iplimit.h"
#include "gateway/metrics.h"

bool ratelimit_refused(struct gateway *gw, struct evhttp_request *req, const char **message,
                       int64_t *retry_after)
{
    int64_t now = clock_mono_us();
    if (gw->iplimit) {
        char ip[INET6_ADDRSTRLEN];
        *retry_after = 1;
        clientip_of(gw->cfg, req, ip, sizeof(ip));
        if (!iplimit_take(gw->iplimit, ip, now, retry_after)) {
            metrics_inc(METRIC_RATE_LIMITED_LOCAL_IP);
            *message = "too many requests from your address";
            return true;
        }
    }
    if (!tokenbucket_take(&gw->bucket, now)) {
        metrics_inc(METRIC_RATE_LIMITED_GLOBAL);
        *message = "too many requests";
        *retry_after = tokenbucket_retry_after(&gw->bucket);
        return true;
    }
    return false;
}
