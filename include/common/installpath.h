#ifndef SK_INSTALLPATH_H
#define SK_INSTALLPATH_H

#include <stddef.h>

/* Files of an installed tree (make install) found from the running binary's own
 * directory, so that the tree works wherever it was put: under PREFIX, or staged under
 * DESTDIR before packaging. */

/* out = <directory of /proc/self/exe>/rel, with "." and ".." resolved when the path
 * exists. 0, or -1 when the binary's path is unknown or out is too short. */
int installpath_from_bin(const char *rel, char *out, size_t len);

#endif
