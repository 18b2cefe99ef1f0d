#ifndef SK_SQLERROR_H
#define SK_SQLERROR_H

/* What a MySQL error says about the statement's data. Deterministic: the same rows would
 * be refused again however often they are sent (a CHECK or foreign key constraint, a
 * value out of range or too long, a NULL where none may be): retrying cannot help, the
 * offending rows must be set aside. Everything else is taken as transient and retried:
 * a lost connection, a lock wait timeout or deadlock, a server shutting down, read-only
 * or out of disk, but also errors that no row causes (a missing table, a syntax error),
 * which every row would hit and which an operator mends: setting rows aside for them
 * would throw the whole sale away. Error 0 (no MySQL error: out of memory) is transient. */

/* True for MySQL and MariaDB server error codes that refuse the data itself. */
int sqlerror_deterministic(unsigned int code);

#endif
