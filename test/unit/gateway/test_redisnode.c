/* redisnode across a partition: a connect whose SYN is dropped (nothing refuses it, nothing
 * answers) is given up after redis.timeout-ms and tried again, so the node is reached within
 * about a timeout of the path coming back, not at the kernel's next SYN retransmission
 * (1, 3, 7, 15 ... s after the first). The drop is a listener whose accept queue is full:
 * Linux drops a SYN it has no room for, as a partition does. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "gateway/redisnode.h"
#include "../unitloop.h"

#define FILLERS 4

static bool is_ready(void *n) { return redisnode_ready(n); }

static int nonblocking_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int rc = connect(fd, (struct sockaddr *)&a, sizeof(a));
    assert_true(rc == 0 || errno == EINPROGRESS);
    return fd;
}

static void test_a_connect_nobody_answers_is_tried_again_after_the_timeout(void **state)
{
    (void)state;
    struct event_base *base = event_base_new();
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(getsockname(lfd, (struct sockaddr *)&a, &len), 0);
    assert_int_equal(listen(lfd, 0), 0);
    int port = ntohs(a.sin_port);
    /* The accept queue full: every SYN from now on is dropped. */
    int fillers[FILLERS];
    for (int i = 0; i < FILLERS; i++)
        fillers[i] = nonblocking_connect(port);
    nanosleep(&(struct timespec){ .tv_nsec = 50 * 1000 * 1000 }, NULL);

    struct config cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.redis_timeout_ms = 200;
    cfg.redis_reconnect_min_ms = 50;
    cfg.redis_reconnect_max_ms = 100;
    struct luascript_set scripts;
    memset(&scripts, 0, sizeof(scripts));
    for (int i = 0; i < LUASCRIPT_COUNT; i++) {
        scripts.scripts[i].name = "fake";
        scripts.scripts[i].body = "return 1";
        scripts.scripts[i].body_len = 8;
        memset(scripts.scripts[i].sha, '0', 40);
    }
    struct redisnode *n = redisnode_new(base, &cfg, &scripts, "127.0.0.1", port, NULL, NULL);
    assert_non_null(n);
    /* Past the first SYN's retransmission (1 s): that one was dropped too. */
    unitloop_run_for(base, 1300);
    assert_false(redisnode_ready(n));

    /* The path is back: room in the queue. The next SYN retransmission of a connect left
     * to the kernel is due at 3 s; one tried again after the timeout gets through within
     * a timeout and a backoff. */
    fcntl(lfd, F_SETFL, fcntl(lfd, F_GETFL) | O_NONBLOCK);
    for (int fd; (fd = accept(lfd, NULL, NULL)) >= 0;)
        close(fd);
    int64_t t0 = clock_mono_us();
    unitloop_run_until(base, is_ready, n, 3);
    int64_t took_ms = (clock_mono_us() - t0) / 1000;
    assert_true(redisnode_ready(n));
    if (took_ms > 600)
        fail_msg("connected %lld ms after the path came back", (long long)took_ms);

    redisnode_free(n);
    for (int i = 0; i < FILLERS; i++)
        close(fillers[i]);
    close(lfd);
    event_base_free(base);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_connect_nobody_answers_is_tried_again_after_the_timeout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
