/* The health server on a real socket: what each probe answers for each state
 * the loop can publish. */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "server/health.h"
#include "server/http_server.h"
#include "util/buf.h"

static size_t collect(char *p, size_t size, size_t n, void *data)
{
    return buf_append(data, p, size * n) == 0 ? size * n : 0;
}

static long get(int port, const char *path, char *body, size_t size)
{
    char url[128];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
    CURL *c = curl_easy_init();
    struct buf b;
    buf_init(&b, 4096);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
    long code = 0;
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    snprintf(body, size, "%s", buf_str(&b));
    buf_free(&b);
    curl_easy_cleanup(c);
    return code;
}

static void test_parse_bind(void **state)
{
    (void)state;
    struct sockaddr_storage a;
    assert_int_equal(http_parse_bind(":8081", &a), 0);
    assert_int_equal(a.ss_family, AF_INET);
    assert_int_equal(ntohs(((struct sockaddr_in *)&a)->sin_port), 8081);
    assert_int_equal(http_parse_bind("127.0.0.1:9", &a), 0);
    assert_int_equal(http_parse_bind("[::1]:8081", &a), 0);
    assert_int_equal(a.ss_family, AF_INET6);
    assert_int_equal(http_parse_bind("8081", &a), -EINVAL);
    /* Port 0: the kernel chooses, and the server says which. */
    assert_int_equal(http_parse_bind(":0", &a), 0);
    assert_int_equal(ntohs(((struct sockaddr_in *)&a)->sin_port), 0);
    assert_int_equal(http_parse_bind(":-1", &a), -EINVAL);
    assert_int_equal(http_parse_bind("127.0.0.1:", &a), -EINVAL);
    assert_int_equal(http_parse_bind(":70000", &a), -EINVAL);
    assert_int_equal(http_parse_bind("localhost:80", &a), -EINVAL);
    assert_int_equal(http_parse_bind(":80x", &a), -EINVAL);
}

static void test_probes(void **state)
{
    (void)state;
    struct health_state st = {0};
    atomic_store(&st.heartbeat_ms, health_now_ms());
    atomic_store(&st.electing, 1);
    struct http_server *s = NULL;
    char *err = NULL;
    struct http_server_options any = {"127.0.0.1:0", "--health-probe-bind-address", &st, NULL};
    assert_int_equal(http_server_start(&any, &s, &err), 0);
    int port = http_server_port(s);
    assert_true(port > 0);
    char bind[32], body[256];
    snprintf(bind, sizeof(bind), "127.0.0.1:%d", port);

    assert_int_equal(get(port, "/healthz", body, sizeof(body)), 200);
    /* A standby that has no answer on the Lease could not take over. */
    assert_int_equal(get(port, "/readyz", body, sizeof(body)), 503);
    assert_non_null(strstr(body, "standby, the Lease cannot be read"));
    atomic_store(&st.lease_read, 1);
    assert_int_equal(get(port, "/readyz", body, sizeof(body)), 200);
    assert_non_null(strstr(body, "standby"));

    atomic_store(&st.leading, 1);
    assert_int_equal(get(port, "/readyz", body, sizeof(body)), 503);
    assert_non_null(strstr(body, "not synced"));
    atomic_store(&st.synced, 1);
    assert_int_equal(get(port, "/readyz", body, sizeof(body)), 200);
    assert_non_null(strstr(body, "leader, caches synced"));
    /* The leader's readiness is its caches (it stops leading when it
     * cannot renew). */
    atomic_store(&st.lease_read, 0);
    assert_int_equal(get(port, "/readyz", body, sizeof(body)), 200);

    /* A loop that stopped beating is reported, however ready it was. */
    atomic_store(&st.heartbeat_ms, health_now_ms() - 30000);
    assert_int_equal(get(port, "/healthz", body, sizeof(body)), 500);
    assert_non_null(strstr(body, "event loop stuck"));

    assert_int_equal(get(port, "/nope", body, sizeof(body)), 404);

    /* The same port twice: a clear error naming the flag. */
    struct http_server *again = NULL;
    struct http_server_options o = {bind, "--health-probe-bind-address", &st, NULL};
    assert_int_equal(http_server_start(&o, &again, &err), -EADDRINUSE);
    assert_non_null(strstr(err, "--health-probe-bind-address"));
    free(err);
    /* Without a registry there is no /metrics. */
    assert_int_equal(get(port, "/metrics", body, sizeof(body)), 404);
    http_server_stop(s);

    struct http_server *servers[2];
    assert_int_equal(http_servers_start("0", &st, "0", NULL, servers, NULL), 0);
    assert_null(servers[0]);
    assert_null(servers[1]);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_bind),
        cmocka_unit_test(test_probes),
    };
    int r = cmocka_run_group_tests_name("health probes", tests, NULL, NULL);
    curl_global_cleanup();
    return r;
}
