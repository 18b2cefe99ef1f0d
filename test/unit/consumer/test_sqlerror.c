/* Which MySQL errors set rows aside for good (deterministic) and which are retried. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errmsg.h>
#include <mysqld_error.h>

#include "consumer/sqlerror.h"

static void test_data_errors_are_deterministic(void **state)
{
    (void)state;
    static const unsigned int codes[] = {
        4025,  /* MariaDB CONSTRAINT `activity_sold_within_stock` failed */
        3819,  /* MySQL Check constraint ... is violated */
        1264,  /* Out of range value for column */
        1690,  /* BIGINT UNSIGNED value is out of range */
        1406,  /* Data too long for column */
        1265,  /* Data truncated for column */
        1292,  /* Incorrect datetime value */
        1366,  /* Incorrect integer value */
        1452,  /* Cannot add or update a child row: a foreign key constraint fails */
        1216, 1217, 1451,
        1048,  /* Column cannot be null */
        1364,  /* Field doesn't have a default value */
        1062,  /* Duplicate entry */
        1644,  /* a trigger's SIGNAL */
    };
    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
        if (!sqlerror_deterministic(codes[i]))
            fail_msg("MySQL error %u should be deterministic", codes[i]);
    }
}

static void test_transient_and_unknown_errors_are_retried(void **state)
{
    (void)state;
    static const unsigned int codes[] = {
        0,                        /* not a MySQL error: out of memory */
        CR_SERVER_GONE_ERROR,     /* 2006 */
        CR_SERVER_LOST,           /* 2013 */
        CR_CONNECTION_ERROR, CR_CONN_HOST_ERROR, CR_COMMANDS_OUT_OF_SYNC,
        ER_LOCK_WAIT_TIMEOUT,     /* 1205 */
        ER_LOCK_DEADLOCK,         /* 1213 */
        ER_SERVER_SHUTDOWN,       /* 1053 */
        ER_CONNECTION_KILLED,     /* 1927 */
        ER_OPTION_PREVENTS_STATEMENT,  /* 1290: --read-only */
        ER_DISK_FULL,             /* 1021 */
        ER_RECORD_FILE_FULL,      /* 1114 */
        ER_CON_COUNT_ERROR,       /* 1040: too many connections */
        ER_QUERY_INTERRUPTED,     /* 1317 */
        ER_STATEMENT_TIMEOUT,     /* 1969 */
        ER_NO_SUCH_TABLE,         /* 1146: every row would hit it */
        ER_BAD_FIELD_ERROR,       /* 1054 */
        ER_PARSE_ERROR,           /* 1064 */
        ER_TABLEACCESS_DENIED_ERROR,
        99999,                    /* unknown */
    };
    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
        if (sqlerror_deterministic(codes[i]))
            fail_msg("MySQL error %u should be retried", codes[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_data_errors_are_deterministic),
        cmocka_unit_test(test_transient_and_unknown_errors_are_retried),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
