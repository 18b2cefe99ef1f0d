#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE  /* realpath */
#include "common/installpath.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int installpath_from_bin(const char *rel, char *out, size_t len)
{
    char dir[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", dir, sizeof(dir) - 1);
    if (n <= 0)
        return -1;
    dir[n] = '\0';
    char *slash = strrchr(dir, '/');
    if (!slash)
        return -1;
    *slash = '\0';
    char joined[PATH_MAX];
    if ((size_t)snprintf(joined, sizeof(joined), "%s/%s", dir, rel) >= sizeof(joined))
        return -1;
    /* "/usr/local/bin/../share/seckill/lua" names the same place, but the short form is
     * what an operator reads in `seckillctl config get` and in error messages. */
    char resolved[PATH_MAX];
    const char *path = realpath(joined, resolved) ? resolved : joined;
    if ((size_t)snprintf(out, len, "%s", path) >= len)
        return -1;
    return 0;
}
