#include "common/exposure.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "common/log.h"

bool exposure_loopback(const char *host)
{
    struct in_addr v4;
    struct in6_addr v6;
    if (inet_pton(AF_INET, host, &v4) == 1)
        return (ntohl(v4.s_addr) >> 24) == 127;
    if (inet_pton(AF_INET6, host, &v6) != 1)
        return false;
    if (IN6_IS_ADDR_LOOPBACK(&v6))
        return true;
    return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
}

void exposure_warn_gateway(const struct config *cfg)
{
    if (strcmp(cfg->auth_mode, "none") == 0 && !exposure_loopback(cfg->http_host))
        LOG_WARN("SECURITY: auth.mode=none trusts any userId, and http.host=%s is not a loopback "
                 "address: anyone who reaches port %lld can buy and redeem as any user "
                 "(set auth.mode=jwt, or bind 127.0.0.1 behind a proxy that authenticates)",
                 cfg->http_host, (long long)cfg->http_port);
}

void exposure_warn_mysql(const struct config *cfg)
{
    if (strcmp(cfg->mysql_password, EXPOSURE_SHIPPED_MYSQL_PASSWORD) == 0)
        LOG_WARN("SECURITY: mysql.password is the one the project ships, known to anyone who "
                 "read conf/seckill.conf: change it in MySQL and here (mysql.password or "
                 "SECKILL_MYSQL_PASSWORD) before this database holds real orders");
}
