#include "ctl/ctlrun.h"

#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl/ctlutf8.h"

void ctlrun_close(struct ctlrun *ctl)
{
    ctlrun_disconnect(ctl);
    config_free(&ctl->cfg);
}

void ctlrun_disconnect(struct ctlrun *ctl)
{
    redisroute_free(ctl->redis);
    if (ctl->db)
        mysql_close(ctl->db);
    if (ctl->scripts) {
        luascript_free_all(ctl->scripts);
        free(ctl->scripts);
    }
    ctl->redis = NULL;
    ctl->db = NULL;
    ctl->scripts = NULL;
}

void ctlrun_actor(struct ctlrun *ctl, char *buf, size_t len)
{
    if (ctl->actor) {
        snprintf(buf, len, "%s", ctl->actor);
    } else {
        char user[64], login[64], host[64], pwbuf[1024];
        struct passwd pw, *found = NULL;
        if (getpwuid_r(geteuid(), &pw, pwbuf, sizeof(pwbuf), &found) == 0 && found)
            snprintf(user, sizeof(user), "%s", pw.pw_name);
        else
            snprintf(user, sizeof(user), "uid %u", (unsigned)geteuid());
        if (gethostname(host, sizeof(host)) != 0)
            snprintf(host, sizeof(host), "?");
        host[sizeof(host) - 1] = '\0';
        /* Under sudo the effective user is root; the login names the operator. Without a
         * terminal (cron, a script) there is no login. */
        if (getlogin_r(login, sizeof(login)) == 0 && strcmp(login, user) != 0)
            snprintf(buf, len, "%s@%s (login %s)", user, host, login);
        else
            snprintf(buf, len, "%s@%s", user, host);
    }
    ctlutf8_truncate(buf, CTLRUN_ACTOR_CHARS);
}
