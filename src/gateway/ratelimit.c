#include "gateway/ratelimit.h"

#include <arpa/inet.h>

#include "common/clock.h"
#include "gateway/clientip.h"
#include "gateway/iplimit.h"
#include "gateway/metrics.h"
#include "gateway/reply.h"

bool ratelimit_refused(struct gateway *gw, struct evhttp_request *req)
{
    int64_t now = clock_mono_us();
    if (gw->iplimit) {
        char ip[INET6_ADDRSTRLEN];
        int64_t retry_after = 1;
        clientip_of(gw->cfg, req, ip, sizeof(ip));
        if (!iplimit_take(gw->iplimit, ip, now, &retry_after)) {
            metrics_inc(METRIC_RATE_LIMITED_LOCAL_IP);
            reply_error(req, REPLY_RATE_LIMITED, "too many requests from your address", retry_after, NULL, NULL);
            return true;
        }
    }
    if (!tokenbucket_take(&gw->bucket, now)) {
        metrics_inc(METRIC_RATE_LIMITED_GLOBAL);
        reply_error(req, REPLY_RATE_LIMITED, "too many requests", tokenbucket_retry_after(&gw->bucket), NULL, NULL);
        return true;
    }
    return false;
}
