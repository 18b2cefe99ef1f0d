#include "admin/adminpool.h"

#include <errno.h>
#include <fcntl.h>
#include <mysql.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl/ctlaudit.h"

/* Ownership: a job is the caller's; between adminpool_submit and `done` it sits on `queue`
 * (under lock), with one worker, or on `finished` (under lock). A worker wakes the loop
 * through the pipe; the loop's on_wake takes `finished` and hands each job back.
 *
 * Thread safety of the commands: each worker has its own struct ctlrun, so its MySQL and
 * Redis connections and its Lua scripts are its own; the config is only read; src/ctl,
 * src/store and src/common keep no mutable static state but the log's level (set before
 * the workers start) and grant's reference counter (atomic). */
struct adminpool {
    const struct config *cfg;
    adminpool_done done;
    pthread_mutex_t lock;
    pthread_cond_t wake;                /* a job was queued, or stopping */
    struct adminpool_job *queue, *queue_last;  /* FIFO, under lock */
    struct adminpool_job *finished;     /* under lock */
    bool stopping;                      /* under lock */
    size_t pending;                     /* the loop's thread only */
    int pipe[2];                        /* workers write a byte, the loop reads */
    struct event *wake_event;
    pthread_t *threads;
    int started;
};

static void *worker(void *arg)
{
    struct adminpool *p = arg;
    mysql_thread_init();
    struct ctlrun ctl;
    memset(&ctl, 0, sizeof(ctl));
    ctl.cfg = *p->cfg;  /* a shallow copy: read only, never freed here */
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->queue && !p->stopping)
            pthread_cond_wait(&p->wake, &p->lock);
        struct adminpool_job *job = p->queue;
        if (!job)
            break;  /* stopping, and nothing left to run */
        p->queue = job->next;
        if (!p->queue)
            p->queue_last = NULL;
        pthread_mutex_unlock(&p->lock);
        ctl.actor = job->actor;
        job->outcome = ctlcall_run(&ctl, job->command, job->handler, job->argc, job->argv, &job->call);
        /* Recorded as the CLI records its runs: 0 done, 2 a bad request, 1 anything else. */
        ctlaudit_record(&ctl, job->command, job->argc, job->argv,
                        job->outcome == CTLCALL_DONE ? CTLRUN_OK
                        : job->outcome == CTLCALL_INVALID ? CTLRUN_USAGE : CTLRUN_FAIL);
        ctlrun_disconnect(&ctl);
        ctl.actor = NULL;
        pthread_mutex_lock(&p->lock);
        job->next = p->finished;
        p->finished = job;
        /* Full pipe: the loop has a wake-up waiting already and takes every finished job. */
        ssize_t n = write(p->pipe[1], "", 1);
        (void)n;
    }
    pthread_mutex_unlock(&p->lock);
    mysql_thread_end();
    return NULL;
}

static void hand_back(struct adminpool *p)
{
    pthread_mutex_lock(&p->lock);
    struct adminpool_job *list = p->finished;
    p->finished = NULL;
    pthread_mutex_unlock(&p->lock);
    /* Oldest first: finished is kept newest first. */
    struct adminpool_job *ordered = NULL;
    while (list) {
        struct adminpool_job *next = list->next;
        list->next = ordered;
        ordered = list;
        list = next;
    }
    while (ordered) {
        struct adminpool_job *job = ordered;
        ordered = job->next;
        job->next = NULL;
        p->pending--;
        p->done(job);
    }
}

static void on_wake(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    char buf[256];
    while (read(fd, buf, sizeof(buf)) > 0) {
    }
    hand_back(arg);
}

static bool nonblocking(int fd)
{
    return fcntl(fd, F_SETFL, O_NONBLOCK) == 0 && fcntl(fd, F_SETFD, FD_CLOEXEC) == 0;
}

struct adminpool *adminpool_new(struct event_base *base, const struct config *cfg, int workers,
                                adminpool_done done, char *err, size_t errlen)
{
    struct adminpool *p = calloc(1, sizeof(*p));
    if (!p) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    p->cfg = cfg;
    p->done = done;
    p->pipe[0] = p->pipe[1] = -1;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->wake, NULL);
    if (pipe(p->pipe) != 0 || !nonblocking(p->pipe[0]) || !nonblocking(p->pipe[1]) ||
        !(p->wake_event = event_new(base, p->pipe[0], EV_READ | EV_PERSIST, on_wake, p)) ||
        event_add(p->wake_event, NULL) != 0 || !(p->threads = calloc((size_t)workers, sizeof(*p->threads)))) {
        snprintf(err, errlen, "admin.workers: %s", errno ? strerror(errno) : "out of memory");
        adminpool_free(p);
        return NULL;
    }
    for (; p->started < workers; p->started++) {
        int rc = pthread_create(&p->threads[p->started], NULL, worker, p);
        if (rc != 0) {
            snprintf(err, errlen, "admin.workers: cannot start worker %d: %s", p->started + 1, strerror(rc));
            adminpool_free(p);
            return NULL;
        }
    }
    return p;
}

void adminpool_submit(struct adminpool *p, struct adminpool_job *job)
{
    job->next = NULL;
    p->pending++;
    pthread_mutex_lock(&p->lock);
    if (p->queue_last)
        p->queue_last->next = job;
    else
        p->queue = job;
    p->queue_last = job;
    pthread_cond_signal(&p->wake);
    pthread_mutex_unlock(&p->lock);
}

size_t adminpool_pending(const struct adminpool *p) { return p->pending; }

void adminpool_free(struct adminpool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stopping = true;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < p->started; i++)
        pthread_join(p->threads[i], NULL);
    hand_back(p);
    if (p->wake_event)
        event_free(p->wake_event);
    for (int i = 0; i < 2; i++)
        if (p->pipe[i] >= 0)
            close(p->pipe[i]);
    free(p->threads);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->lock);
    free(p);
}
