#include "gateway/tokenbucket.h"

#define MICRO 1000000LL

void tokenbucket_init(struct tokenbucket *tb, int64_t rate, int64_t burst, int64_t now_us)
{
    tb->rate = rate;
    tb->burst = burst;
    tb->micro_tokens = burst * MICRO;
    tb->last_us = now_us;
}

static void tokenbucket_refill(struct tokenbucket *tb, int64_t now_us)
{
    int64_t elapsed = now_us - tb->last_us;
    if (elapsed <= 0)
        return;  /* a clock that did not advance adds nothing */
    int64_t capacity = tb->burst * MICRO;
    /* Past the time to fill the bucket completely, more elapsed time changes nothing;
     * capping it first keeps elapsed * rate far from overflow. */
    int64_t fill_us = (capacity - tb->micro_tokens) / tb->rate + 1;
    if (elapsed > fill_us)
        elapsed = fill_us;
    tb->micro_tokens += elapsed * tb->rate;
    if (tb->micro_tokens > capacity)
        tb->micro_tokens = capacity;
    tb->last_us = now_us;
}

bool tokenbucket_take(struct tokenbucket *tb, int64_t now_us)
{
    tokenbucket_refill(tb, now_us);
    if (tb->micro_tokens < MICRO)
        return false;
    tb->micro_tokens -= MICRO;
    return true;
}

int64_t tokenbucket_level(struct tokenbucket *tb, int64_t now_us)
{
    tokenbucket_refill(tb, now_us);
    return tb->micro_tokens;
}

int64_t tokenbucket_retry_after(const struct tokenbucket *tb)
{
    int64_t missing = MICRO - tb->micro_tokens;
    if (missing <= 0)
        return 1;
    /* missing micro-tokens arrive at `rate` per microsecond */
    int64_t wait_us = (missing + tb->rate - 1) / tb->rate;
    int64_t secs = (wait_us + MICRO - 1) / MICRO;
    return secs < 1 ? 1 : secs;
}
