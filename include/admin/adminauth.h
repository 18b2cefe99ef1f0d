#ifndef SK_ADMINAUTH_H
#define SK_ADMINAUTH_H

#include <stdbool.h>

/* The admin API's one credential: `Authorization: Bearer <admin.token>`. Pure. */

/* Whether header (the Authorization value, NULL when absent) carries token. The scheme
 * is case-insensitive (RFC 9110); the comparison takes the same time wherever the first
 * difference lies, so a caller cannot find the token a byte at a time. */
bool adminauth_allows(const char *header, const char *token);

/* Compares two strings in time that depends only on the longer one's length. */
bool adminauth_same(const char *a, const char *b);

#endif
