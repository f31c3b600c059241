/* http_get and the curl_loop under it, against a real HTTP server on
 * loopback (libmicrohttpd, one thread per connection so a slow answer does
 * not hold up the others). */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include <cmocka.h>

#include "net/curl_loop.h"
#include "net/http_get.h"

#define BIG_TOTAL (64u << 20)

struct server {
    struct MHD_Daemon *daemon;
    int port;
    atomic_int stop;        /* releases slow handlers */
    atomic_int slow_seen;   /* slow requests that reached the handler */
    atomic_int connections; /* TCP connections accepted */
    atomic_ullong big_sent; /* body bytes the server produced for /big */
};

static struct server srv;

static enum MHD_Result reply(struct MHD_Connection *c, unsigned code, const char *text)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    if (code == 302)
        MHD_add_response_header(r, "Location", "/ok");
    enum MHD_Result ret = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return ret;
}

static ssize_t big_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct server *s = cls;
    if (pos >= BIG_TOTAL)
        return MHD_CONTENT_READER_END_OF_STREAM;
    memset(buf, 'x', max);
    atomic_fetch_add(&s->big_sent, max);
    return (ssize_t)max;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **req_cls)
{
    (void)version;
    (void)upload;
    struct server *s = cls;
    if (!*req_cls) { /* headers only so far: answer on the second call */
        *req_cls = s;
        return MHD_YES;
    }
    if (*upload_size) { /* a body: none is expected; counted by its absence below */
        *upload_size = 0;
        return MHD_YES;
    }
    if (strcmp(url, "/method") == 0) {
        const char *len = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
        char text[64];
        snprintf(text, sizeof(text), "%s %s", method, len ? len : "-");
        return reply(c, 200, text);
    }
    if (strcmp(url, "/ok") == 0)
        return reply(c, 200, "hello");
    if (strcmp(url, "/secret") == 0) {
        const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Secret");
        return reply(c, 200, v ? v : "(none)");
    }
    if (strcmp(url, "/redirect") == 0)
        return reply(c, 302, "moved");
    if (strcmp(url, "/declared-big") == 0) {
        size_t n = 2u << 20;
        char *body = malloc(n);
        if (!body)
            return MHD_NO;
        memset(body, 'y', n);
        struct MHD_Response *r = MHD_create_response_from_buffer(n, body, MHD_RESPMEM_MUST_FREE);
        enum MHD_Result ret = MHD_queue_response(c, 200, r);
        MHD_destroy_response(r);
        return ret;
    }
    if (strcmp(url, "/big") == 0) {
        struct MHD_Response *r =
            MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, big_reader, s, NULL);
        enum MHD_Result ret = MHD_queue_response(c, 200, r);
        MHD_destroy_response(r);
        return ret;
    }
    if (strcmp(url, "/slow") == 0) {
        atomic_fetch_add(&s->slow_seen, 1);
        for (int i = 0; i < 1000 && !atomic_load(&s->stop); i++)
            usleep(5000);
        return reply(c, 200, "late");
    }
    return reply(c, 404, "not here");
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    (void)c;
    (void)socket_context;
    struct server *s = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED)
        atomic_fetch_add(&s->connections, 1);
}

static int server_start(void **state)
{
    (void)state;
    memset(&srv, 0, sizeof(srv));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    srv.daemon =
        MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL,
                         NULL, on_request, &srv, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&a,
                         MHD_OPTION_NOTIFY_CONNECTION, on_connection, &srv, MHD_OPTION_END);
    if (!srv.daemon)
        return -1;
    srv.port = MHD_get_daemon_info(srv.daemon, MHD_DAEMON_INFO_BIND_PORT)->port;
    return 0;
}

static int server_stop(void **state)
{
    (void)state;
    atomic_store(&srv.stop, 1);
    MHD_stop_daemon(srv.daemon);
    return 0;
}

/* ---- the loop side ------------------------------------------------------- */

struct got {
    int calls;
    int status;
    long http_code;
    char body[256];
    size_t body_len;
    char error[CURL_ERROR_SIZE + 64];
    int64_t latency_us;
};

static void on_got(void *data, const struct http_get_result *r)
{
    struct got *g = data;
    g->calls++;
    g->status = r->status;
    g->http_code = r->http_code;
    g->body_len = r->body_len;
    snprintf(g->body, sizeof(g->body), "%s", r->body);
    snprintf(g->error, sizeof(g->error), "%s", r->error);
    g->latency_us = r->latency_us;
}

static void on_tick(uv_timer_t *t)
{
    (void)t;
}

/* Runs the loop until *flag is set or ms have passed (a tick keeps
 * UV_RUN_ONCE from blocking longer than 5 ms). */
static void run_until(uv_loop_t *loop, const int *flag, uint64_t ms)
{
    uv_timer_t tick;
    uv_timer_init(loop, &tick);
    uv_timer_start(&tick, on_tick, 5, 5);
    uv_update_time(loop);
    uint64_t end = uv_now(loop) + ms;
    while ((!flag || !*flag) && uv_now(loop) < end)
        uv_run(loop, UV_RUN_ONCE);
    uv_close((uv_handle_t *)&tick, NULL);
    uv_run(loop, UV_RUN_NOWAIT);
}

static void loop_finish(uv_loop_t *loop)
{
    uv_run(loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(loop), 0);
}

static char *url(const char *path)
{
    static char u[128];
    snprintf(u, sizeof(u), "http://127.0.0.1:%d%s", srv.port, path);
    return u;
}

static int get(struct curl_loop *cl, const char *u, struct got *g, struct http_get **ret)
{
    struct http_get_request req = {.url = u, .timeout_ms = 5000, .max_body = 4096};
    return http_get_start(cl, &req, on_got, g, ret);
}

/* ---- tests --------------------------------------------------------------- */

static void test_ok_and_headers(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct curl_loop *cl;
    assert_int_equal(curl_loop_new(&loop, &cl), 0);

    struct got g = {0};
    struct http_get *h;
    assert_int_equal(get(cl, url("/ok"), &g, &h), 0);
    assert_int_equal(g.calls, 0); /* never from inside the call */
    run_until(&loop, &g.calls, 5000);
    assert_int_equal(g.calls, 1);
    assert_int_equal(g.status, 0);
    assert_int_equal(g.http_code, 200);
    assert_string_equal(g.body, "hello");
    assert_int_equal(g.body_len, 5);
    assert_string_equal(g.error, "");
    assert_true(g.latency_us > 0);

    const char *headers[] = {"X-Secret: s3cr3t", NULL};
    struct http_get_request req = {
        .url = url("/secret"), .headers = headers, .timeout_ms = 5000, .max_body = 4096};
    struct got g2 = {0};
    assert_int_equal(http_get_start(cl, &req, on_got, &g2, &h), 0);
    run_until(&loop, &g2.calls, 5000);
    assert_int_equal(g2.status, 0);
    assert_string_equal(g2.body, "s3cr3t");

    struct got g3 = {0};
    assert_int_equal(get(cl, url("/missing"), &g3, &h), 0);
    run_until(&loop, &g3.calls, 5000);
    assert_int_equal(g3.status, 0); /* an answer, whatever its code */
    assert_int_equal(g3.http_code, 404);
    assert_string_equal(g3.body, "not here");

    curl_loop_close(cl);
    loop_finish(&loop);
}

static void test_rejects(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct curl_loop *cl;
    assert_int_equal(curl_loop_new(&loop, &cl), 0);
    struct got g = {0};
    struct http_get *h = NULL;
    assert_int_equal(get(cl, "file:///etc/passwd", &g, &h), -EINVAL);
    assert_int_equal(get(cl, "ftp://127.0.0.1/", &g, &h), -EINVAL);
    assert_int_equal(get(cl, "127.0.0.1/ok", &g, &h), -EINVAL);
    assert_int_equal(get(cl, NULL, &g, &h), -EINVAL);
    struct http_get_request req = {.url = url("/ok"), .timeout_ms = 0, .max_body = 1};
    assert_int_equal(http_get_start(cl, &req, on_got, &g, &h), -EINVAL);
    req.timeout_ms = 1000;
    req.max_body = 0;
    assert_int_equal(http_get_start(cl, &req, on_got, &g, &h), -EINVAL);
    assert_null(h);
    run_until(&loop, NULL, 20);
    assert_int_equal(g.calls, 0);
    curl_loop_close(cl);
    loop_finish(&loop);
}

/* A checkpoint request: POST or PUT with an empty body; GET by default;
 * any other method refused. */
static void test_methods(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct curl_loop *cl;
    assert_int_equal(curl_loop_new(&loop, &cl), 0);
    static const struct {
        const char *method, *want;
    } rows[] = {{NULL, "GET -"}, {"GET", "GET -"}, {"POST", "POST 0"}, {"PUT", "PUT 0"}};
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        struct got g = {0};
        struct http_get *h;
        struct http_get_request req = {
            .url = url("/method"), .timeout_ms = 5000, .max_body = 4096, .method = rows[i].method};
        assert_int_equal(http_get_start(cl, &req, on_got, &g, &h), 0);
        run_until(&loop, &g.calls, 5000);
        assert_int_equal(g.status, 0);
        assert_string_equal(g.body, rows[i].want);
    }
    struct got g = {0};
    struct http_get *h = NULL;
    struct http_get_request req = {
        .url = url("/method"), .timeout_ms = 5000, .max_body = 4096, .method = "DELETE"};
    assert_int_equal(http_get_start(cl, &req, on_got, &g, &h), -EINVAL);
    assert_null(h);
    curl_loop_close(cl);
    loop_finish(&loop);
}

static void test_redirect_not_followed(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct curl_loop *cl;
    assert_int_equal(curl_loop_new(&loop, &cl), 0);
    struct got g = {0};
    struct http_get *h;
    assert_int_equal(get(cl, url("/redirect"), &g, &h), 0);
    run_until(&loop, &g.calls, 5000);
    assert_int_equal(g.status, 0);
    assert_int_equal(g.http_code, 302);
    assert_string_equal(g.body, "moved");
    curl_loop_close(cl);
    loop_finish(&loop);
}

static void test_body_limit(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct curl_loop *cl;
    assert_int_equal(curl_loop_new(&loop, &cl), 0);

    /* Streamed without a length: cut as the limit is crossed. */
    struct got g = {0};
    struct http_get *h;
    struct http_get_request req = {.url = url("/big"), .timeout_ms = 10000, .max_body = 1 << 20};
    assert_int_equal(http_get_start(cl, &req, on_got, &g, &h), 0);
    run_until(&loop, &g.calls, 10000);
    assert_int_equal(g.calls, 1);
    assert_int_equal(g.status, -EFBIG);
    assert_int_equal(g.http_code, 200);
    assert_int_equal(g.body_len, 0);
    assert_non_null(strstr(g.error, "larger than 1048576 bytes"));
    /* The server wrote what the socket buffers took, not the 64 MiB it had. */
    unsigned long long sent = atomic_load(&srv.big_sent);
    print_message("streamed body: server produced %llu bytes before the client hung up\n", sent);
    assert_true(sent < BIG_TOTAL / 4);

    /* Declared too long up front: refused before the body. */
    struct got g2 = {0};
    req.url = url("/declared-big");
    assert_int_equal(http_get_start(cl, &req, on_got, &g2, &h), 0);
    run_until(&loop, &g2.calls, 10000);
    assert_int_equal(g2.status, -EFBIG);

    curl_loop_close(cl);
    loop_finish(&loop);
}

static void test_timeout(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct curl_loop *cl;
    assert_int_equal(curl_loop_new(&loop, &cl), 0);
    struct got g = {0};
    struct http_get *h;
    struct http_get_request req = {.url = url("/slow"), .timeout_ms = 200, .max_body = 4096};
    uint64_t t0 = uv_hrtime();
    assert_int_equal(http_get_start(cl, &req, on_got, &g, &h), 0);
    run_until(&loop, &g.calls, 5000);
    uint64_t ms = (uv_hrtime() - t0) / 1000000;
    assert_int_equal(g.status, -ETIMEDOUT);
    assert_int_equal(g.http_code, 0);
    assert_true(ms >= 190 && ms < 1000);
    assert_true(g.latency_us >= 190000);
    assert_true(strlen(g.error) > 0);
    curl_loop_close(cl);
    loop_finish(&loop);
}

static int closed_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    bind(fd, (struct sockaddr *)&a, sizeof(a));
    getsockname(fd, (struct sockaddr *)&a, &len);
    close(fd);
    return ntohs(a.sin_port);
}

static void test_refused_and_no_proxy(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct curl_loop *cl;
    assert_int_equal(curl_loop_new(&loop, &cl), 0);
    char u[64];
    snprintf(u, sizeof(u), "http://127.0.0.1:%d/ok", closed_port());
    struct got g = {0};
    struct http_get *h;
    assert_int_equal(get(cl, u, &g, &h), 0);
    run_until(&loop, &g.calls, 5000);
    assert_int_equal(g.status, -ECONNREFUSED);
    assert_true(strlen(g.error) > 0);

    /* A proxy in the environment that would fail every request is ignored. */
    char proxy[64];
    snprintf(proxy, sizeof(proxy), "http://127.0.0.1:%d", closed_port());
    setenv("http_proxy", proxy, 1);
    setenv("HTTPS_PROXY", proxy, 1);
    struct got g2 = {0};
    assert_int_equal(get(cl, url("/ok"), &g2, &h), 0);
    run_until(&loop, &g2.calls, 5000);
    unsetenv("http_proxy");
    unsetenv("HTTPS_PROXY");
    assert_int_equal(g2.status, 0);
    assert_string_equal(g2.body, "hello");

    curl_loop_close(cl);
    loop_finish(&loop);
}

static void test_connection_reuse(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct curl_loop *cl;
    assert_int_equal(curl_loop_new(&loop, &cl), 0);
    int before = atomic_load(&srv.connections);
    for (int i = 0; i < 5; i++) {
        struct got g = {0};
        struct http_get *h;
        assert_int_equal(get(cl, url("/ok"), &g, &h), 0);
        run_until(&loop, &g.calls, 5000);
        assert_int_equal(g.status, 0);
    }
    assert_int_equal(atomic_load(&srv.connections) - before, 1);
    curl_loop_close(cl);
    loop_finish(&loop);
}

static void wait_slow_seen(uv_loop_t *loop, int n)
{
    for (int i = 0; i < 500 && atomic_load(&srv.slow_seen) < n; i++)
        run_until(loop, NULL, 10);
    assert_true(atomic_load(&srv.slow_seen) >= n);
}

static void test_cancel(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct curl_loop *cl;
    assert_int_equal(curl_loop_new(&loop, &cl), 0);
    atomic_store(&srv.slow_seen, 0);
    struct got g = {0}, g2 = {0};
    struct http_get *h, *h2;
    assert_int_equal(get(cl, url("/slow"), &g, &h), 0);
    /* Cancelled before it ever reached the server. */
    assert_int_equal(get(cl, url("/ok"), &g2, &h2), 0);
    http_get_cancel(h2);
    wait_slow_seen(&loop, 1);
    assert_int_equal(curl_loop_running(cl), 1);
    http_get_cancel(h);
    assert_int_equal(curl_loop_running(cl), 0);
    run_until(&loop, NULL, 100);
    assert_int_equal(g.calls, 0);
    assert_int_equal(g2.calls, 0);
    http_get_cancel(NULL);
    curl_loop_close(cl);
    loop_finish(&loop);
}

static void count_done(void *data, CURL *easy, CURLcode code, const char *error)
{
    (void)easy;
    (void)code;
    (void)error;
    (*(int *)data)++;
}

static CURL *raw_easy(const char *u);

static void test_close_in_flight(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct curl_loop *cl;
    assert_int_equal(curl_loop_new(&loop, &cl), 0);
    atomic_store(&srv.slow_seen, 0);
    /* http_get handles are cancelled first (the rule), raw transfers are
     * left running: the curl_loop owns their easy handles and headers. */
    struct got g[2] = {{0}};
    struct http_get *h[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(get(cl, url("/slow"), &g[i], &h[i]), 0);
    int done = 0;
    for (int i = 0; i < 3; i++) {
        struct curl_slist *hs = curl_slist_append(NULL, "Authorization: token in-flight");
        assert_int_equal(curl_loop_add(cl, raw_easy(url("/slow")), hs, NULL, count_done, &done), 0);
    }
    wait_slow_seen(&loop, 5);
    assert_int_equal(curl_loop_running(cl), 5);
    for (int i = 0; i < 2; i++)
        http_get_cancel(h[i]);
    curl_loop_close(cl);
    curl_loop_close(NULL);
    loop_finish(&loop);
    assert_int_equal(g[0].calls + g[1].calls, 0);
    assert_int_equal(done, 0);
}

/* ---- curl_loop from inside libcurl's callbacks --------------------------- */

struct raw {
    struct curl_loop *cl;
    CURL *easy;
    CURL *other; /* removed from this one's write callback */
    int writes;
    int done;
    CURLcode code;
    int action; /* 1: remove itself, 2: close the loop, 3: remove other, 4: add another */
    struct raw *added;
};

static void raw_done(void *data, CURL *easy, CURLcode code, const char *error)
{
    (void)easy;
    (void)error;
    struct raw *r = data;
    r->done++;
    r->code = code;
}

static CURL *raw_easy(const char *u)
{
    CURL *e = curl_easy_init();
    curl_easy_setopt(e, CURLOPT_URL, u);
    return e;
}

static int raw_write(void *data, const char *bytes, size_t len)
{
    (void)bytes;
    (void)len;
    struct raw *r = data;
    if (r->writes++ > 0)
        return -1;
    switch (r->action) {
    case 1:
        curl_loop_remove(r->cl, r->easy);
        break;
    case 2:
        curl_loop_close(r->cl);
        break;
    case 3:
        curl_loop_remove(r->cl, r->other);
        break;
    case 4:
        assert_int_equal(curl_loop_add(r->cl, raw_easy(url("/ok")), NULL, NULL, raw_done, r->added),
                         0);
        break;
    }
    return -1;
}

static void test_loop_reentrancy(void **state)
{
    (void)state;
    for (int action = 1; action <= 4; action++) {
        uv_loop_t loop;
        uv_loop_init(&loop);
        struct curl_loop *cl;
        assert_int_equal(curl_loop_new(&loop, &cl), 0);
        struct raw added = {.cl = cl};
        struct raw other = {.cl = cl};
        struct raw r = {.cl = cl, .action = action, .added = &added};
        r.easy = raw_easy(url("/big"));
        other.easy = raw_easy(url("/slow"));
        r.other = other.easy;
        struct curl_slist *h = curl_slist_append(NULL, "Authorization: token wiped-later");
        assert_int_equal(curl_loop_add(cl, other.easy, NULL, NULL, raw_done, &other), 0);
        assert_int_equal(curl_loop_add(cl, r.easy, h, raw_write, raw_done, &r), 0);
        run_until(&loop, action == 4 ? &added.done : NULL, 500);
        /* The writer gets no more data once it asked to stop, and no done
         * callback when it removed itself or closed the loop. */
        assert_int_equal(r.writes, 1);
        if (action == 1 || action == 2)
            assert_int_equal(r.done, 0);
        if (action == 3) {
            assert_int_equal(other.done, 0);
            assert_int_equal(r.done, 1);
            assert_int_equal(r.code, CURLE_WRITE_ERROR);
        }
        if (action == 4) {
            assert_int_equal(added.done, 1);
            assert_int_equal(added.code, CURLE_OK);
        }
        if (action != 2) /* else closed already, and freed by the loop */
            curl_loop_close(cl);
        loop_finish(&loop);
        assert_true(other.done == 0);
    }
}

struct closer {
    struct curl_loop *cl;
    int calls;
};

static void close_from_done(void *data, CURL *easy, CURLcode code, const char *error)
{
    (void)easy;
    (void)code;
    (void)error;
    struct closer *c = data;
    c->calls++;
    curl_loop_close(c->cl);
}

static void test_close_from_done(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct curl_loop *cl;
    assert_int_equal(curl_loop_new(&loop, &cl), 0);
    struct closer a = {.cl = cl}, b = {.cl = cl};
    assert_int_equal(curl_loop_add(cl, raw_easy(url("/ok")), NULL, NULL, close_from_done, &a), 0);
    assert_int_equal(curl_loop_add(cl, raw_easy(url("/ok")), NULL, NULL, close_from_done, &b), 0);
    loop_finish(&loop);
    assert_int_equal(a.calls + b.calls, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ok_and_headers),
        cmocka_unit_test(test_rejects),
        cmocka_unit_test(test_methods),
        cmocka_unit_test(test_redirect_not_followed),
        cmocka_unit_test(test_body_limit),
        cmocka_unit_test(test_timeout),
        cmocka_unit_test(test_refused_and_no_proxy),
        cmocka_unit_test(test_connection_reuse),
        cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_close_in_flight),
        cmocka_unit_test(test_loop_reentrancy),
        cmocka_unit_test(test_close_from_done),
    };
    return cmocka_run_group_tests(tests, server_start, server_stop);
}
