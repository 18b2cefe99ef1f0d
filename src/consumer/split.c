#include "consumer/split.h"

struct split_job {
    split_write_fn write;
    split_offender_fn offender;
    void *ctx;
    struct split_stats *stats;
};

/* Recursion depth is log2 of the batch size: about 13 for the largest batches. */
static int run(const struct split_job *j, size_t lo, size_t hi)
{
    j->stats->transactions++;
    switch (j->write(j->ctx, lo, hi)) {
    case SPLIT_WRITTEN:
        return 0;
    case SPLIT_FAILED:
        return -1;
    case SPLIT_REFUSED:
        break;
    }
    if (hi - lo == 1) {
        j->stats->offenders++;
        return j->offender(j->ctx, lo);
    }
    size_t mid = lo + (hi - lo) / 2;
    if (run(j, lo, mid) != 0)
        return -1;
    return run(j, mid, hi);
}

int split_run(size_t count, split_write_fn write, split_offender_fn offender, void *ctx,
              struct split_stats *stats)
{
    stats->transactions = 0;
    stats->offenders = 0;
    if (count == 0)
        return 0;
    struct split_job j = { write, offender, ctx, stats };
    return run(&j, 0, count);
}
