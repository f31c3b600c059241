/* The HTTP server's routes on real sockets: health probes and metrics on
 * one address or two, methods, and errors naming the flag. */
#include <curl/curl.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "metrics/registry.h"
#include "server/http_server.h"
#include "util/buf.h"

struct reply {
    long code;
    char body[4096];
    char content_type[128];
};

static size_t collect(char *p, size_t size, size_t n, void *data)
{
    return buf_append(data, p, size * n) == 0 ? size * n : 0;
}

static long request(int port, const char *method, const char *path, struct reply *ret)
{
    char url[128];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
    CURL *c = curl_easy_init();
    struct buf b;
    buf_init(&b, 1 << 20);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
    if (strcmp(method, "HEAD") == 0)
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    else if (strcmp(method, "GET") != 0)
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    *ret = (struct reply){0};
    if (curl_easy_perform(c) == CURLE_OK) {
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &ret->code);
        char *ct = NULL;
        curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ct);
        snprintf(ret->content_type, sizeof(ret->content_type), "%s", ct ? ct : "");
    }
    snprintf(ret->body, sizeof(ret->body), "%s", buf_str(&b));
    buf_free(&b);
    curl_easy_cleanup(c);
    return ret->code;
}

static long get(int port, const char *path, struct reply *ret)
{
    return request(port, "GET", path, ret);
}

/* A port nobody listens on now (from a range outside the ephemeral one). */
static int free_port(int salt)
{
    return 21000 + (getpid() * 17 + salt * 211) % 10000;
}

struct fixture {
    struct health_state health;
    struct metrics_registry *metrics;
    struct metric_family *requests;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    atomic_store(&f->health.heartbeat_ms, health_now_ms());
    atomic_store(&f->health.synced, 1);
    assert_int_equal(metrics_registry_new(0, &f->metrics), 0);
    assert_int_equal(metrics_counter_new(f->metrics, "test_requests_total", "Requests.",
                                         (const char *[]){"code", NULL}, &f->requests),
                     0);
    metrics_counter_add(f->requests, (const char *[]){"200"}, 3);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    metrics_registry_free(f->metrics);
    free(f);
    return 0;
}

/* Starts the servers on free ports (one port when same). */
static void start(struct fixture *f, int same, struct http_server *servers[2], int *ret_health,
                  int *ret_metrics)
{
    for (int i = 0; i < 20; i++) {
        int hp = free_port(2 * i), mp = same ? hp : free_port(2 * i + 1);
        char hb[32], mb[32];
        snprintf(hb, sizeof(hb), "127.0.0.1:%d", hp);
        snprintf(mb, sizeof(mb), "127.0.0.1:%d", mp);
        char *err = NULL;
        if (http_servers_start(hb, &f->health, mb, f->metrics, servers, &err) == 0) {
            *ret_health = hp;
            *ret_metrics = mp;
            return;
        }
        free(err);
    }
    fail_msg("no free port");
}

static void test_one_address(void **state)
{
    struct fixture *f = *state;
    struct http_server *servers[2];
    int hp, mp;
    start(f, 1, servers, &hp, &mp);
    /* One server for both. */
    assert_non_null(servers[0]);
    assert_null(servers[1]);
    struct reply r;
    assert_int_equal(get(hp, "/healthz", &r), 200);
    assert_string_equal(r.body, "ok\n");
    assert_int_equal(get(hp, "/livez", &r), 200);
    assert_int_equal(get(hp, "/readyz", &r), 200);
    assert_string_equal(r.body, "ok: caches synced\n");
    assert_int_equal(get(hp, "/metrics", &r), 200);
    assert_string_equal(r.content_type, "text/plain; version=0.0.4; charset=utf-8");
    assert_non_null(strstr(r.body, "# TYPE test_requests_total counter\n"
                                   "test_requests_total{code=\"200\"} 3\n"));
    /* Each scrape sees the values as they are now. */
    metrics_counter_add(f->requests, (const char *[]){"200"}, 1);
    assert_int_equal(get(hp, "/metrics", &r), 200);
    assert_non_null(strstr(r.body, "test_requests_total{code=\"200\"} 4\n"));

    assert_int_equal(request(hp, "HEAD", "/metrics", &r), 200);
    assert_string_equal(r.body, "");
    assert_int_equal(request(hp, "POST", "/metrics", &r), 405);
    assert_int_equal(request(hp, "DELETE", "/healthz", &r), 405);
    assert_int_equal(get(hp, "/metrics/", &r), 404);
    assert_int_equal(get(hp, "/", &r), 404);
    http_server_stop(servers[0]);
}

static void test_two_addresses(void **state)
{
    struct fixture *f = *state;
    struct http_server *servers[2];
    int hp, mp;
    start(f, 0, servers, &hp, &mp);
    assert_non_null(servers[0]);
    assert_non_null(servers[1]);
    struct reply r;
    assert_int_equal(get(hp, "/healthz", &r), 200);
    assert_int_equal(get(hp, "/readyz", &r), 200);
    assert_int_equal(get(hp, "/metrics", &r), 404);
    assert_int_equal(get(mp, "/metrics", &r), 200);
    assert_non_null(strstr(r.body, "test_requests_total{code=\"200\"} 3\n"));
    assert_int_equal(get(mp, "/healthz", &r), 404);
    assert_int_equal(get(mp, "/readyz", &r), 404);

    /* The metrics address taken: an error naming its flag, and the health
     * server that did start is stopped again. */
    char hb[32], mb[32], *err = NULL;
    int other = free_port(999);
    snprintf(hb, sizeof(hb), "127.0.0.1:%d", other);
    snprintf(mb, sizeof(mb), "127.0.0.1:%d", mp);
    struct http_server *again[2];
    assert_int_equal(http_servers_start(hb, &f->health, mb, f->metrics, again, &err), -EADDRINUSE);
    assert_non_null(strstr(err, "--metrics-bind-address"));
    free(err);
    assert_null(again[0]);
    assert_null(again[1]);
    assert_int_equal(get(other, "/healthz", &r), 0); /* nobody listens */
    http_server_stop(servers[0]);
    http_server_stop(servers[1]);
}

static void test_off_and_invalid(void **state)
{
    struct fixture *f = *state;
    struct http_server *servers[2] = {NULL, NULL};
    char *err = NULL;
    /* Metrics off: only the probes. */
    int hp = 0;
    for (int i = 0; i < 20 && !servers[0]; i++) {
        char hb[32];
        hp = free_port(40 + i);
        snprintf(hb, sizeof(hb), ":%d", hp);
        http_servers_start(hb, &f->health, "0", f->metrics, servers, NULL);
    }
    assert_non_null(servers[0]);
    assert_null(servers[1]);
    struct reply r;
    assert_int_equal(get(hp, "/metrics", &r), 404);
    assert_int_equal(get(hp, "/healthz", &r), 200);
    http_server_stop(servers[0]);

    /* ":port" and "0.0.0.0:port" are the same address: one server. */
    char a[32], b[32];
    snprintf(a, sizeof(a), ":%d", hp);
    snprintf(b, sizeof(b), "0.0.0.0:%d", hp);
    assert_int_equal(http_servers_start(a, &f->health, b, f->metrics, servers, NULL), 0);
    assert_non_null(servers[0]);
    assert_null(servers[1]);
    assert_int_equal(get(hp, "/metrics", &r), 200);
    assert_int_equal(get(hp, "/readyz", &r), 200);
    http_server_stop(servers[0]);

    /* Port 0 twice: two ports of the kernel's choosing, not one address. */
    assert_int_equal(
        http_servers_start("127.0.0.1:0", &f->health, "127.0.0.1:0", f->metrics, servers, NULL), 0);
    assert_non_null(servers[0]);
    assert_non_null(servers[1]);
    int p0 = http_server_port(servers[0]), p1 = http_server_port(servers[1]);
    assert_true(p0 > 0 && p1 > 0 && p0 != p1);
    assert_int_equal(get(p0, "/healthz", &r), 200);
    assert_int_equal(get(p0, "/metrics", &r), 404);
    assert_int_equal(get(p1, "/metrics", &r), 200);
    http_server_stop(servers[0]);
    http_server_stop(servers[1]);

    assert_int_equal(http_servers_start("0", &f->health, "8080", f->metrics, servers, &err),
                     -EINVAL);
    assert_string_equal(err, "--metrics-bind-address: \"8080\" is not host:port");
    free(err);
    assert_int_equal(http_servers_start("localhost:1", &f->health, "0", f->metrics, servers, &err),
                     -EINVAL);
    assert_non_null(strstr(err, "--health-probe-bind-address"));
    free(err);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_one_address, setup, teardown),
        cmocka_unit_test_setup_teardown(test_two_addresses, setup, teardown),
        cmocka_unit_test_setup_teardown(test_off_and_invalid, setup, teardown),
    };
    int r = cmocka_run_group_tests_name("http server routes", tests, NULL, NULL);
    curl_global_cleanup();
    return r;
}
