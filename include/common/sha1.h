#ifndef SK_SHA1_H
#define SK_SHA1_H

#include <stddef.h>

/* SHA-1 as Redis names scripts by it: lets EVALSHA go out before any SCRIPT LOAD. */
void sha1_hex(const void *data, size_t len, char out[41]);

#endif
