/* libFuzzer harness for operator-typed times (seckillctl's --start/--end): timeparse_parse,
 * then the round trip through timeparse_format, which is what `activity show` prints and
 * what an operator may paste back. The process runs in a zone with daylight saving so
 * that local times in the skipped hour take the refusal path. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/timeparse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* A property the code promises did not hold: a crash that libFuzzer saves as a reproducer. */
#define CHECK(cond) do { if (!(cond)) __builtin_trap(); } while (0)

static const int64_t NOW_MS = 1733011200000LL;
/* 9999-12-31T23:59:59.999Z, the last instant the parser accepts written in UTC. */
static const int64_t LAST_MS = 253402300799999LL;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    setenv("TZ", "Europe/Berlin", 1);
    tzset();
    return 0;
}

/* Any instant formats, in the 32 bytes the header promises, and reads back. */
static void check_format(int64_t ms)
{
    char iso[32], sql[32];
    int n = timeparse_format(ms, iso, sizeof(iso));
    CHECK(n > 0 && (size_t)n == strlen(iso));
    CHECK(timeparse_format_sql(ms, sql, sizeof(sql)) > 0);
    if (ms >= 0 && ms <= LAST_MS) {
        int64_t back = 0;
        CHECK(timeparse_parse(iso, 0, &back) == 0 && back == ms);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size >= sizeof(int64_t)) {
        int64_t raw;
        memcpy(&raw, data, sizeof(raw));
        check_format(raw);
    }
    if (size > 64)
        return 0;
    char s[65];
    memcpy(s, data, size);
    s[size] = '\0';

    int64_t ms = -1;
    if (timeparse_parse(s, NOW_MS, &ms) == 0)
        check_format(ms);
    else
        CHECK(ms == -1);  /* refused: *out_ms untouched */

    /* The relative forms at the ends of the clock take the overflow checks. */
    int64_t edge;
    if (timeparse_parse(s, INT64_MAX, &edge) == 0)
        check_format(edge);
    if (timeparse_parse(s, INT64_MIN, &edge) == 0)
        check_format(edge);
    return 0;
}
