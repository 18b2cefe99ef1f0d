/* The client-IP rule of the API: the socket peer, or the last X-Forwarded-For hop when
 * that is an address (and the header is trusted, which the caller decides). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <sys/queue.h>
#include <arpa/inet.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <string.h>

#include "gateway/clientip.h"

static const char *pick(const char *xff, const char *peer)
{
    static char out[INET6_ADDRSTRLEN];
    memset(out, 'x', sizeof(out));
    clientip_pick(xff, peer, out, sizeof(out));
    return out;
}

static void test_peer_without_header(void **state)
{
    (void)state;
    assert_string_equal(pick(NULL, "10.0.0.7"), "10.0.0.7");
    assert_string_equal(pick(NULL, NULL), "unknown");
}

static void test_last_hop_wins(void **state)
{
    (void)state;
    assert_string_equal(pick("203.0.113.9", "10.0.0.7"), "203.0.113.9");
    /* earlier hops came from the client and are ignored */
    assert_string_equal(pick("1.1.1.1, 203.0.113.9", "10.0.0.7"), "203.0.113.9");
    assert_string_equal(pick("1.1.1.1,2.2.2.2,203.0.113.9", "10.0.0.7"), "203.0.113.9");
    assert_string_equal(pick("1.1.1.1, \t 203.0.113.9  ", "10.0.0.7"), "203.0.113.9");
}

static void test_ipv6(void **state)
{
    (void)state;
    assert_string_equal(pick("2001:db8::1", "10.0.0.7"), "2001:db8::1");
    assert_string_equal(pick("1.1.1.1, ::1", "10.0.0.7"), "::1");
    assert_string_equal(pick("::ffff:192.0.2.1", NULL), "::ffff:192.0.2.1");
}

static void test_bad_last_hop_falls_back_to_peer(void **state)
{
    (void)state;
    assert_string_equal(pick("1.1.1.1, evil", "10.0.0.7"), "10.0.0.7");
    assert_string_equal(pick("203.0.113.9,", "10.0.0.7"), "10.0.0.7");  /* empty last hop */
    assert_string_equal(pick("", "10.0.0.7"), "10.0.0.7");
    assert_string_equal(pick("   ", NULL), "unknown");
    assert_string_equal(pick("256.1.1.1", "10.0.0.7"), "10.0.0.7");
    assert_string_equal(pick("1.2.3.4/24", "10.0.0.7"), "10.0.0.7");
    /* longer than any address text */
    assert_string_equal(pick("1111:2222:3333:4444:5555:6666:7777:8888:9999:aaaa", "10.0.0.7"), "10.0.0.7");
}

static void test_short_output_buffer(void **state)
{
    (void)state;
    char out[8];
    clientip_pick("203.0.113.9", NULL, out, sizeof(out));
    assert_string_equal(out, "203.0.1");  /* truncated, still terminated */
}

/* The client address from header lines as a request holds them (NULL ends the list). */
static const char *from_lines(const char *const *lines, const char *peer)
{
    static char out[INET6_ADDRSTRLEN];
    struct evkeyvalq headers;
    TAILQ_INIT(&headers);
    evhttp_add_header(&headers, "Host", "example.test");
    for (size_t i = 0; lines[i]; i++)
        evhttp_add_header(&headers, i % 2 ? "x-forwarded-for" : "X-Forwarded-For", lines[i]);
    evhttp_add_header(&headers, "Accept", "*/*");
    memset(out, 'x', sizeof(out));
    clientip_pick_headers(&headers, peer, out, sizeof(out));
    evhttp_clear_headers(&headers);
    return out;
}

/* A proxy that adds its own header line leaves the client's (forged) line first: the
 * lines count as if joined in order with ",", so the last hop of the last line wins. */
static void test_several_header_lines(void **state)
{
    (void)state;
    assert_string_equal(from_lines((const char *[]){ "198.51.100.1", "10.9.8.7", NULL }, "10.0.0.7"),
                        "10.9.8.7");
    assert_string_equal(from_lines((const char *[]){ "1.1.1.1", "2.2.2.2, 203.0.113.5", "203.0.113.9", NULL },
                                   "10.0.0.7"), "203.0.113.9");
    assert_string_equal(from_lines((const char *[]){ "1.1.1.1, 2.2.2.2", " 2001:db8::7 ", NULL }, NULL),
                        "2001:db8::7");
    /* A bad or empty last hop is the peer, never an earlier line. */
    assert_string_equal(from_lines((const char *[]){ "203.0.113.9", "garbage", NULL }, "10.0.0.7"),
                        "10.0.0.7");
    assert_string_equal(from_lines((const char *[]){ "203.0.113.9", "", NULL }, "10.0.0.7"), "10.0.0.7");
    assert_string_equal(from_lines((const char *[]){ "203.0.113.9", "1.2.3.4, ", NULL }, "10.0.0.7"),
                        "10.0.0.7");
    /* One line and none behave as before. */
    assert_string_equal(from_lines((const char *[]){ "1.1.1.1, 203.0.113.9", NULL }, "10.0.0.7"),
                        "203.0.113.9");
    assert_string_equal(from_lines((const char *[]){ NULL }, "10.0.0.7"), "10.0.0.7");
    assert_string_equal(from_lines((const char *[]){ NULL }, NULL), "unknown");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_peer_without_header),
        cmocka_unit_test(test_last_hop_wins),
        cmocka_unit_test(test_ipv6),
        cmocka_unit_test(test_bad_last_hop_falls_back_to_peer),
        cmocka_unit_test(test_short_output_buffer),
        cmocka_unit_test(test_several_header_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
