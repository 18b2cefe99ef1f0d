#include "consumer/sqlerror.h"

#include <mysqld_error.h>

/* MySQL 8.0.16+ reports a failed CHECK with its own code; MariaDB's header lacks it
 * (MariaDB says ER_CONSTRAINT_FAILED, 4025). */
#define SQLERROR_MYSQL_CHECK_CONSTRAINT_VIOLATED 3819

int sqlerror_deterministic(unsigned int code)
{
    switch (code) {
    case ER_CONSTRAINT_FAILED:                /* CHECK (MariaDB) */
    case SQLERROR_MYSQL_CHECK_CONSTRAINT_VIOLATED:
    case ER_WARN_DATA_OUT_OF_RANGE:           /* a number beyond its column */
    case ER_DATA_OUT_OF_RANGE:                /* an arithmetic result beyond its type */
    case ER_DATA_TOO_LONG:
    case WARN_DATA_TRUNCATED:
    case ER_TRUNCATED_WRONG_VALUE:            /* a DATETIME or number that does not parse */
    case ER_TRUNCATED_WRONG_VALUE_FOR_FIELD:  /* a string not valid for its column */
    case ER_INVALID_CHARACTER_STRING:
    case ER_CANNOT_CONVERT_CHARACTER:
    case ER_WRONG_VALUE_FOR_TYPE:
    case ER_ILLEGAL_VALUE_FOR_TYPE:
    case ER_DATETIME_FUNCTION_OVERFLOW:
    case ER_DIVISION_BY_ZERO:
    case ER_BAD_NULL_ERROR:
    case ER_WARN_NULL_TO_NOTNULL:
    case ER_NO_DEFAULT_FOR_FIELD:
    case ER_NO_REFERENCED_ROW:                /* foreign keys */
    case ER_NO_REFERENCED_ROW_2:
    case ER_ROW_IS_REFERENCED:
    case ER_ROW_IS_REFERENCED_2:
    case ER_DUP_ENTRY:                        /* a unique key the upserts do not cover */
    case ER_DUP_ENTRY_WITH_KEY_NAME:
    case ER_NO_PARTITION_FOR_GIVEN_VALUE:
    case ER_SIGNAL_EXCEPTION:                 /* a trigger's SIGNAL refusing the row */
        return 1;
    default:
        return 0;
    }
}
