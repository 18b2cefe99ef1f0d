#ifndef SK_OPENAPIDOC_H
#define SK_OPENAPIDOC_H

#include <stddef.h>

/* docs/openapi.yaml as it was when the gateway was built: the Makefile generates the
 * definitions (scripts/embed.sh), so a binary installed anywhere serves the contract of
 * its own code. openapidoc_text is NUL-terminated; openapidoc_len excludes the NUL. */
extern const unsigned char openapidoc_text[];
extern const size_t openapidoc_len;

#endif
