#include "consumer/writer.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "store/db.h"

enum writer_state {
    WRITER_IDLE,      /* holds no batch */
    WRITER_WRITING,   /* the thread is writing b */
    WRITER_FINISHED,  /* b is written (or failed), waiting for writer_take */
};

/* Ownership: the consumer's thread creates and frees it; the thread touches db, stats,
 * result, took_us and why only while WRITING, the consumer's thread only otherwise; the
 * state and quit change under lock. */
struct writer {
    const struct config *cfg;
    MYSQL *db;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    enum writer_state state;
    bool quit;
    struct batch *b;
    struct sqltx_stats stats;
    enum persist_result result;
    int64_t took_us;
    char why[512];
};

static enum persist_result attempt(struct writer *w, struct batch *b, struct sqltx_stats *stats,
                                   char *err, size_t errlen)
{
    if (!w->db) {
        w->db = db_connect(w->cfg, err, errlen);
        if (!w->db)
            return PERSIST_FAILED;
        LOG_INFO("connected to mysql %s:%" PRId64 " for the writes", w->cfg->mysql_host, w->cfg->mysql_port);
    }
    bool outcomes = w->cfg->kafka_outcome_topic[0] != '\0';
    enum persist_result r = persist_batch(w->db, b, outcomes, stats, err, errlen);
    if (r == PERSIST_DISCONNECTED) {
        mysql_close(w->db);
        w->db = NULL;
    }
    return r;
}

static void *run(void *arg)
{
    struct writer *w = arg;
    mysql_thread_init();
    pthread_mutex_lock(&w->lock);
    for (;;) {
        while (w->state != WRITER_WRITING && !w->quit)
            pthread_cond_wait(&w->changed, &w->lock);
        if (w->state != WRITER_WRITING)
            break;
        pthread_mutex_unlock(&w->lock);
        int64_t t0 = clock_mono_us();
        w->why[0] = '\0';
        w->result = attempt(w, w->b, &w->stats, w->why, sizeof(w->why));
        w->took_us = clock_mono_us() - t0;
        pthread_mutex_lock(&w->lock);
        w->state = WRITER_FINISHED;
        pthread_cond_broadcast(&w->changed);
    }
    pthread_mutex_unlock(&w->lock);
    mysql_thread_end();
    return NULL;
}

struct writer *writer_new(const struct config *cfg)
{
    /* Not thread-safe itself: done here, before any session opens on either thread. */
    if (mysql_library_init(0, NULL, NULL) != 0)
        return NULL;
    struct writer *w = calloc(1, sizeof(*w));
    if (!w)
        return NULL;
    w->cfg = cfg;
    if (pthread_mutex_init(&w->lock, NULL) != 0) {
        free(w);
        return NULL;
    }
    if (pthread_cond_init(&w->changed, NULL) != 0) {
        pthread_mutex_destroy(&w->lock);
        free(w);
        return NULL;
    }
    if (pthread_create(&w->thread, NULL, run, w) != 0) {
        pthread_cond_destroy(&w->changed);
        pthread_mutex_destroy(&w->lock);
        free(w);
        return NULL;
    }
    return w;
}

void writer_free(struct writer *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    w->quit = true;
    pthread_cond_broadcast(&w->changed);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    if (w->db)
        mysql_close(w->db);
    pthread_cond_destroy(&w->changed);
    pthread_mutex_destroy(&w->lock);
    free(w);
}

void writer_start(struct writer *w, struct batch *b)
{
    pthread_mutex_lock(&w->lock);
    w->b = b;
    memset(&w->stats, 0, sizeof(w->stats));
    w->state = WRITER_WRITING;
    pthread_cond_broadcast(&w->changed);
    pthread_mutex_unlock(&w->lock);
}

bool writer_holds(struct writer *w)
{
    pthread_mutex_lock(&w->lock);
    bool holds = w->state != WRITER_IDLE;
    pthread_mutex_unlock(&w->lock);
    return holds;
}

bool writer_finished(struct writer *w)
{
    pthread_mutex_lock(&w->lock);
    bool finished = w->state == WRITER_FINISHED;
    pthread_mutex_unlock(&w->lock);
    return finished;
}

enum persist_result writer_take(struct writer *w, struct sqltx_stats *stats, int64_t *took_us,
                                char *err, size_t errlen)
{
    pthread_mutex_lock(&w->lock);
    while (w->state == WRITER_WRITING)
        pthread_cond_wait(&w->changed, &w->lock);
    w->state = WRITER_IDLE;
    w->b = NULL;
    pthread_mutex_unlock(&w->lock);
    *stats = w->stats;
    *took_us = w->took_us;
    snprintf(err, errlen, "%s", w->why);
    return w->result;
}

enum persist_result writer_persist(struct writer *w, struct batch *b, struct sqltx_stats *stats,
                                   char *err, size_t errlen)
{
    return attempt(w, b, stats, err, errlen);
}
