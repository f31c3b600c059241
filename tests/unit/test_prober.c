/* The prober against real HTTP on loopback: a libmicrohttpd server (one
 * thread per connection) shaped like Jupyter Server (/api/status,
 * /api/kernels, with a token), code-server (/healthz) and Prometheus
 * (/api/v1/query). A target's URL picks the server's behaviour:
 * http://127.0.0.1:<port>/w/<mode> and .../prom/<mode>. */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
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

#include "activity/prober.h"

#define TOKEN "tok-SECRET-4711"
#define LAST_ACTIVITY_MS 1767323046000LL /* the kernel's, later than the status' */
#define GPU_QUERY "max(DCGM_FI_DEV_GPU_UTIL{namespace=\"team a\", pod=~\"nb-0|x\"}) + 0 & 1"

struct server {
    struct MHD_Daemon *daemon;
    int port;
    atomic_int stop;
    atomic_int auth_code;       /* what a wrong token gets: 401 or 403 */
    atomic_int auth_elsewhere;  /* requests outside Jupyter's API carrying Authorization */
    atomic_int jupyter_no_auth; /* Jupyter requests without the right token */
    atomic_int current, max_current;
    atomic_int requests;
    atomic_int slow_seen;
    pthread_mutex_t mu;
    char last_query[512];
};

static struct server srv;

static enum MHD_Result reply(struct MHD_Connection *c, unsigned code, const char *text)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", "application/json");
    enum MHD_Result ret = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result reply_big(struct MHD_Connection *c)
{
    size_t n = 2u << 20; /* twice PROBE_BODY_MAX */
    char *body = malloc(n);
    if (!body)
        return MHD_NO;
    memset(body, ' ', n);
    struct MHD_Response *r = MHD_create_response_from_buffer(n, body, MHD_RESPMEM_MUST_FREE);
    enum MHD_Result ret = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return ret;
}

static void wait_slow(struct server *s)
{
    atomic_fetch_add(&s->slow_seen, 1);
    for (int i = 0; i < 1000 && !atomic_load(&s->stop); i++)
        usleep(5000);
}

/* mode and endpoint from "/w/<mode><endpoint>" or "/prom/<mode><endpoint>" */
static int split(const char *url, const char *prefix, char *mode, size_t size,
                 const char **endpoint)
{
    size_t pl = strlen(prefix);
    if (strncmp(url, prefix, pl) != 0)
        return 0;
    const char *m = url + pl;
    const char *slash = strchr(m, '/');
    if (!slash || (size_t)(slash - m) >= size)
        return 0;
    memcpy(mode, m, (size_t)(slash - m));
    mode[slash - m] = '\0';
    *endpoint = slash;
    return 1;
}

static enum MHD_Result answer(struct server *s, struct MHD_Connection *c, const char *url)
{
    char mode[32];
    const char *ep;
    const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    if (split(url, "/w/", mode, sizeof(mode), &ep)) {
        if (strcmp(ep, "/healthz") == 0) {
            if (auth)
                atomic_fetch_add(&s->auth_elsewhere, 1);
            if (strcmp(mode, "slow") == 0)
                wait_slow(s);
            return reply(c, 200, "{\"status\":\"alive\",\"lastHeartbeat\":1767323047000}");
        }
        if (strcmp(ep, "/api/status") != 0 && strcmp(ep, "/api/kernels") != 0)
            return reply(c, 404, "{\"message\":\"not found\"}");
        if (strcmp(mode, "echo") == 0) /* an error page that repeats the request */
            return reply(c, 500, auth ? auth : "no header");
        if (!auth || strcmp(auth, "token " TOKEN) != 0) {
            atomic_fetch_add(&s->jupyter_no_auth, 1);
            return reply(c, (unsigned)atomic_load(&s->auth_code), "{\"message\":\"Forbidden\"}");
        }
        if (strcmp(mode, "slow") == 0)
            wait_slow(s);
        if (strcmp(mode, "delay") == 0) {
            /* Counted while it is handled, and no longer before its answer
             * is queued: a client that saw the answer cannot find its
             * request still counted here, however the threads are run. */
            int now = atomic_fetch_add(&s->current, 1) + 1;
            int max = atomic_load(&s->max_current);
            while (now > max && !atomic_compare_exchange_weak(&s->max_current, &max, now))
                ;
            usleep(40000);
            atomic_fetch_sub(&s->current, 1);
        }
        if (strcmp(mode, "big") == 0)
            return reply_big(c);
        if (strcmp(ep, "/api/status") == 0)
            return reply(c, 200,
                         "{\"started\":\"2026-01-01T00:00:00.000000Z\","
                         "\"last_activity\":\"2026-01-02T03:04:05.000000Z\","
                         "\"kernels\":1,\"connections\":1}");
        return reply(c, 200,
                     strcmp(mode, "busy") == 0
                         ? "[{\"id\":\"k1\",\"name\":\"python3\",\"last_activity\":"
                           "\"2026-01-02T03:04:06Z\",\"execution_state\":\"busy\","
                           "\"connections\":2}]"
                         : "[{\"id\":\"k1\",\"name\":\"python3\",\"last_activity\":"
                           "\"2026-01-02T03:04:06Z\",\"execution_state\":\"idle\","
                           "\"connections\":2}]");
    }
    if (split(url, "/prom/", mode, sizeof(mode), &ep) && strcmp(ep, "/api/v1/query") == 0) {
        if (auth)
            atomic_fetch_add(&s->auth_elsewhere, 1);
        const char *q = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "query");
        pthread_mutex_lock(&s->mu);
        snprintf(s->last_query, sizeof(s->last_query), "%s", q ? q : "");
        pthread_mutex_unlock(&s->mu);
        if (strcmp(mode, "nodata") == 0)
            return reply(c, 200,
                         "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\","
                         "\"result\":[]}}");
        return reply(c, 200,
                     "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":"
                     "[{\"metric\":{\"gpu\":\"0\"},\"value\":[1767323045.1,\"37.5\"]},"
                     "{\"metric\":{\"gpu\":\"1\"},\"value\":[1767323045.1,\"NaN\"]}]}}");
    }
    return reply(c, 404, "{\"message\":\"not found\"}");
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **req_cls)
{
    (void)method;
    (void)version;
    (void)upload;
    (void)upload_size;
    struct server *s = cls;
    if (!*req_cls) {
        *req_cls = s;
        return MHD_YES;
    }
    atomic_fetch_add(&s->requests, 1);
    return answer(s, c, url);
}

static int server_start(void **state)
{
    (void)state;
    memset(&srv, 0, sizeof(srv));
    pthread_mutex_init(&srv.mu, NULL);
    atomic_store(&srv.auth_code, 401);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    srv.daemon = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD,
                                  0, NULL, NULL, on_request, &srv, MHD_OPTION_SOCK_ADDR,
                                  (struct sockaddr *)&a, MHD_OPTION_END);
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
    pthread_mutex_destroy(&srv.mu);
    return 0;
}

/* ---- the loop side ------------------------------------------------------- */

#define MAX_RESULTS 64

struct result {
    char key[64];
    struct probe_result r;
    int64_t probed_at;
    uint64_t round_ns; /* real time the round started (the clock was read) */
    uint64_t at_ns;    /* real time the callback ran */
};

struct ctx {
    uv_loop_t loop;
    struct prober *p;
    struct result results[MAX_RESULTS];
    int n;
    int64_t fake_ms;
    uint64_t last_clock_ns;
    unsigned max_in_flight_seen;
    /* what the callback does besides recording */
    int close_in_callback;
    int remove_in_callback;
    int set_in_callback;
};

static int64_t fake_now(void *data)
{
    struct ctx *c = data;
    c->last_clock_ns = uv_hrtime();
    return c->fake_ms;
}

static void on_result(void *data, const char *key, const struct probe_result *r,
                      int64_t probed_at_ms)
{
    struct ctx *c = data;
    if (c->n < MAX_RESULTS) {
        struct result *x = &c->results[c->n];
        snprintf(x->key, sizeof(x->key), "%s", key);
        x->r = *r;
        x->probed_at = probed_at_ms;
        x->round_ns = c->last_clock_ns;
        x->at_ns = uv_hrtime();
    }
    c->n++;
    struct prober_stats st;
    prober_get_stats(c->p, &st);
    if (st.in_flight > c->max_in_flight_seen)
        c->max_in_flight_seen = st.in_flight;
    if (c->remove_in_callback) {
        prober_remove(c->p, key);
        /* the key stays readable until we return */
        assert_true(strlen(key) > 0);
    }
    if (c->set_in_callback) {
        char u[128];
        snprintf(u, sizeof(u), "http://127.0.0.1:%d/w/idle", srv.port);
        struct probe_target t = {
            .kinds = PROBE_CODE_SERVER, .url = u, .interval_ms = 3600000, .timeout_ms = 5000};
        assert_int_equal(prober_set(c->p, key, &t), 0);
    }
    if (c->close_in_callback) {
        prober_close(c->p);
        c->p = NULL;
    }
}

static void ctx_init(struct ctx *c, unsigned max_in_flight)
{
    memset(c, 0, sizeof(*c));
    uv_loop_init(&c->loop);
    c->fake_ms = 1700000000000LL;
    struct prober_options o = {.max_in_flight = max_in_flight, .now_ms = fake_now, .now_data = c};
    assert_int_equal(prober_new(&c->loop, &o, on_result, c, &c->p), 0);
}

static void ctx_finish(struct ctx *c)
{
    prober_close(c->p);
    c->p = NULL;
    uv_run(&c->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&c->loop), 0);
}

static void on_tick(uv_timer_t *t)
{
    (void)t;
}

/* Runs the loop until n results have arrived or ms have passed. */
static void run_until(struct ctx *c, int n, uint64_t ms)
{
    uv_timer_t tick;
    uv_timer_init(&c->loop, &tick);
    uv_timer_start(&tick, on_tick, 5, 5);
    uv_update_time(&c->loop);
    uint64_t end = uv_now(&c->loop) + ms;
    while (c->n < n && uv_now(&c->loop) < end)
        uv_run(&c->loop, UV_RUN_ONCE);
    uv_close((uv_handle_t *)&tick, NULL);
    uv_run(&c->loop, UV_RUN_NOWAIT);
}

static void run_until_slow_seen(struct ctx *c, int n)
{
    for (int i = 0; i < 300 && atomic_load(&srv.slow_seen) < n; i++)
        run_until(c, INT32_MAX, 10);
    assert_true(atomic_load(&srv.slow_seen) >= n);
}

static char *url_of(char *buf, size_t size, const char *path)
{
    snprintf(buf, size, "http://127.0.0.1:%d%s", srv.port, path);
    return buf;
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

static const struct result *result_for(const struct ctx *c, const char *key)
{
    for (int i = 0; i < c->n && i < MAX_RESULTS; i++)
        if (strcmp(c->results[i].key, key) == 0)
            return &c->results[i];
    fail_msg("no result for %s", key);
    return NULL;
}

/* ---- tests --------------------------------------------------------------- */

static void test_merged_results(void **state)
{
    (void)state;
    struct ctx c;
    ctx_init(&c, 0);
    atomic_store(&srv.auth_elsewhere, 0);
    atomic_store(&srv.jupyter_no_auth, 0);
    char u1[128], p1[128], u2[128], p3[128];
    struct probe_target jg = {.kinds = PROBE_JUPYTER | PROBE_GPU,
                              .url = url_of(u1, sizeof(u1), "/w/busy/"),
                              .token = TOKEN,
                              .prometheus_url = url_of(p1, sizeof(p1), "/prom/data"),
                              .gpu_query = GPU_QUERY,
                              .interval_ms = 3600000,
                              .timeout_ms = 5000};
    struct probe_target cs = {.kinds = PROBE_CODE_SERVER | PROBE_GPU,
                              .url = url_of(u2, sizeof(u2), "/w/idle"),
                              .token = TOKEN, /* set, but code-server must not see it */
                              .prometheus_url = url_of(p3, sizeof(p3), "/prom/nodata/"),
                              .gpu_query = "up",
                              .interval_ms = 3600000,
                              .timeout_ms = 5000};
    assert_int_equal(prober_set(c.p, "ns/jupyter", &jg), 0);
    assert_int_equal(prober_set(c.p, "ns/code", &cs), 0);
    run_until(&c, 2, 5000);
    assert_int_equal(c.n, 2);

    const struct result *j = result_for(&c, "ns/jupyter");
    assert_true(j->r.ok);
    assert_string_equal(j->r.error, "");
    assert_string_equal(j->r.source, "jupyter+gpu");
    assert_true(j->r.busy);
    assert_int_equal(j->r.last_activity_ms, LAST_ACTIVITY_MS);
    assert_int_equal(j->r.connections, 3);
    assert_true(j->r.gpu_utilisation > 37.4 && j->r.gpu_utilisation < 37.6);
    assert_false(j->r.no_data);
    assert_int_equal(j->probed_at, c.fake_ms);

    /* No GPU samples is an answer, neither activity nor a failure. */
    const struct result *k = result_for(&c, "ns/code");
    assert_true(k->r.ok);
    assert_string_equal(k->r.source, "code-server+gpu");
    assert_false(k->r.busy);
    assert_int_equal(k->r.connections, 1);
    assert_int_equal(k->r.last_activity_ms, 1767323047000LL);
    assert_true(k->r.gpu_utilisation == 0);
    assert_true(k->r.no_data);

    /* The token went to Jupyter's endpoints and nowhere else; the query
     * arrived as written. */
    assert_int_equal(atomic_load(&srv.jupyter_no_auth), 0);
    assert_int_equal(atomic_load(&srv.auth_elsewhere), 0);
    pthread_mutex_lock(&srv.mu);
    char q[512];
    snprintf(q, sizeof(q), "%s", srv.last_query);
    pthread_mutex_unlock(&srv.mu);
    assert_true(strcmp(q, GPU_QUERY) == 0 || strcmp(q, "up") == 0);

    struct prober_stats st;
    prober_get_stats(c.p, &st);
    assert_int_equal(st.rounds, 2);
    assert_int_equal(st.rounds_failed, 0);
    assert_int_equal(st.requests, 5);
    assert_int_equal(st.targets, 2);
    assert_int_equal(st.in_flight, 0);

    /* The query, alone, to be sure of what the server saw. */
    prober_remove(c.p, "ns/code");
    assert_int_equal(prober_probe_now(c.p, "ns/jupyter"), 0);
    run_until(&c, 3, 5000);
    assert_int_equal(c.n, 3);
    pthread_mutex_lock(&srv.mu);
    assert_string_equal(srv.last_query, GPU_QUERY);
    pthread_mutex_unlock(&srv.mu);
    ctx_finish(&c);
}

static void test_unauthorized(void **state)
{
    (void)state;
    struct ctx c;
    ctx_init(&c, 0);
    char u[128];
    struct probe_target t = {.kinds = PROBE_JUPYTER,
                             .url = url_of(u, sizeof(u), "/w/idle"),
                             .token = "wrong-token-XYZ",
                             .interval_ms = 3600000,
                             .timeout_ms = 5000};
    assert_int_equal(prober_set(c.p, "ns/a", &t), 0);
    run_until(&c, 1, 5000);
    assert_int_equal(c.n, 1);
    assert_false(c.results[0].r.ok);
    print_message("401: %s\n", c.results[0].r.error);
    assert_non_null(strstr(c.results[0].r.error, "unauthorized (check the token)"));
    assert_non_null(strstr(c.results[0].r.error, "jupyter: GET /api/status"));
    assert_null(strstr(c.results[0].r.error, "wrong-token-XYZ"));

    atomic_store(&srv.auth_code, 403);
    assert_int_equal(prober_probe_now(c.p, "ns/a"), 0);
    run_until(&c, 2, 5000);
    atomic_store(&srv.auth_code, 401);
    assert_false(c.results[1].r.ok);
    assert_non_null(strstr(c.results[1].r.error, "unauthorized (check the token)"));

    /* No token at all. */
    t.token = NULL;
    assert_int_equal(prober_set(c.p, "ns/a", &t), 0);
    run_until(&c, 3, 5000);
    assert_false(c.results[2].r.ok);
    assert_non_null(strstr(c.results[2].r.error, "unauthorized"));

    /* An error page that repeats the request is never quoted. */
    t.token = TOKEN;
    t.url = url_of(u, sizeof(u), "/w/echo");
    assert_int_equal(prober_set(c.p, "ns/a", &t), 0);
    run_until(&c, 4, 5000);
    assert_false(c.results[3].r.ok);
    print_message("500: %s\n", c.results[3].r.error);
    assert_non_null(strstr(c.results[3].r.error, "HTTP 500"));
    assert_null(strstr(c.results[3].r.error, TOKEN));

    struct prober_stats st;
    prober_get_stats(c.p, &st);
    assert_int_equal(st.rounds_failed, 4);
    ctx_finish(&c);
}

static void test_slow_server_times_out(void **state)
{
    (void)state;
    struct ctx c;
    ctx_init(&c, 0);
    char u[128];
    struct probe_target t = {.kinds = PROBE_JUPYTER,
                             .url = url_of(u, sizeof(u), "/w/slow"),
                             .token = TOKEN,
                             .interval_ms = 3600000,
                             .timeout_ms = 300};
    assert_int_equal(prober_set(c.p, "ns/slow", &t), 0);
    run_until(&c, 1, 5000);
    assert_int_equal(c.n, 1);
    const struct result *r = &c.results[0];
    assert_false(r->r.ok);
    print_message("timeout: %s\n", r->r.error);
    assert_non_null(strstr(r->r.error, "timed out"));
    uint64_t ms = (r->at_ns - r->round_ns) / 1000000;
    print_message("round of a 300 ms timeout ended after %llu ms\n", (unsigned long long)ms);
    assert_true(ms >= 290 && ms < 700);
    ctx_finish(&c);
}

static void test_oversized_and_refused(void **state)
{
    (void)state;
    struct ctx c;
    ctx_init(&c, 0);
    char u1[128], u2[128], p[128];
    struct probe_target big = {.kinds = PROBE_JUPYTER,
                               .url = url_of(u1, sizeof(u1), "/w/big"),
                               .token = TOKEN,
                               .interval_ms = 3600000,
                               .timeout_ms = 5000};
    snprintf(u2, sizeof(u2), "http://127.0.0.1:%d", closed_port());
    struct probe_target refused = {
        .kinds = PROBE_CODE_SERVER, .url = u2, .interval_ms = 3600000, .timeout_ms = 5000};
    snprintf(p, sizeof(p), "http://127.0.0.1:%d/", closed_port());
    struct probe_target noprom = {.kinds = PROBE_GPU,
                                  .prometheus_url = p,
                                  .gpu_query = "up",
                                  .interval_ms = 3600000,
                                  .timeout_ms = 5000};
    assert_int_equal(prober_set(c.p, "ns/big", &big), 0);
    assert_int_equal(prober_set(c.p, "ns/refused", &refused), 0);
    assert_int_equal(prober_set(c.p, "ns/noprom", &noprom), 0);
    run_until(&c, 3, 5000);
    assert_int_equal(c.n, 3);
    const struct result *b = result_for(&c, "ns/big");
    assert_false(b->r.ok);
    print_message("big: %s\n", b->r.error);
    assert_non_null(strstr(b->r.error, "larger than 1048576 bytes"));
    const struct result *r = result_for(&c, "ns/refused");
    assert_false(r->r.ok);
    print_message("refused: %s\n", r->r.error);
    assert_non_null(strstr(r->r.error, "code-server: GET /healthz: "));
    const struct result *g = result_for(&c, "ns/noprom");
    assert_false(g->r.ok); /* a broken GPU source is a failure, never "no data" */
    assert_false(g->r.no_data);
    assert_non_null(strstr(g->r.error, "gpu: GET /api/v1/query: "));
    ctx_finish(&c);
}

static void test_remove_during_round(void **state)
{
    (void)state;
    struct ctx c;
    ctx_init(&c, 0);
    atomic_store(&srv.slow_seen, 0);
    char u[128];
    struct probe_target t = {.kinds = PROBE_JUPYTER,
                             .url = url_of(u, sizeof(u), "/w/slow"),
                             .token = TOKEN,
                             .interval_ms = 3600000,
                             .timeout_ms = 1000};
    assert_int_equal(prober_set(c.p, "ns/gone", &t), 0);
    run_until_slow_seen(&c, 2);
    struct prober_stats st;
    prober_get_stats(c.p, &st);
    assert_int_equal(st.in_flight, 2);
    prober_remove(c.p, "ns/gone");
    prober_remove(c.p, "ns/never-was");
    prober_get_stats(c.p, &st);
    assert_int_equal(st.in_flight, 0);
    assert_int_equal(st.targets, 0);
    run_until(&c, 1, 1300); /* past the round's timeout */
    assert_int_equal(c.n, 0);
    assert_int_equal(prober_probe_now(c.p, "ns/gone"), -ENOENT);
    ctx_finish(&c);
}

static void test_probe_now(void **state)
{
    (void)state;
    struct ctx c;
    ctx_init(&c, 0);
    char u[128];
    struct probe_target t = {.kinds = PROBE_JUPYTER,
                             .url = url_of(u, sizeof(u), "/w/delay"),
                             .token = TOKEN,
                             .interval_ms = 3600000,
                             .timeout_ms = 5000};
    assert_int_equal(prober_set(c.p, "ns/a", &t), 0);
    uint64_t t0 = uv_hrtime();
    run_until(&c, 1, 3000);
    assert_int_equal(c.n, 1);
    assert_true((c.results[0].round_ns - t0) / 1000000 < 1100); /* first round within a second */

    assert_int_equal(prober_probe_now(c.p, "ns/a"), 0);
    uint64_t t1 = uv_hrtime();
    /* Once its requests are out, asking again joins the round in flight. */
    struct prober_stats st;
    for (int i = 0; i < 100; i++) {
        prober_get_stats(c.p, &st);
        if (st.in_flight > 0)
            break;
        run_until(&c, 2, 2);
    }
    assert_true(st.in_flight > 0);
    assert_int_equal(prober_probe_now(c.p, "ns/a"), 0);
    run_until(&c, 3, 500);
    assert_int_equal(c.n, 2);
    assert_true((c.results[1].at_ns - t1) / 1000000 < 500);
    assert_true(c.results[1].r.ok);
    assert_int_equal(prober_probe_now(c.p, "ns/b"), -ENOENT);
    ctx_finish(&c);
}

static void test_unchanged_set_keeps_schedule(void **state)
{
    (void)state;
    struct ctx c;
    ctx_init(&c, 0);
    char u[128];
    struct probe_target t = {.kinds = PROBE_JUPYTER,
                             .url = url_of(u, sizeof(u), "/w/idle"),
                             .token = TOKEN,
                             .interval_ms = 3600000,
                             .timeout_ms = 5000};
    assert_int_equal(prober_set(c.p, "ns/a", &t), 0);
    run_until(&c, 1, 3000);
    assert_int_equal(c.n, 1);
    /* Same settings from fresh copies of the strings: nothing happens. */
    char u_again[128], tok_again[64];
    snprintf(u_again, sizeof(u_again), "%s", u);
    snprintf(tok_again, sizeof(tok_again), "%s", TOKEN);
    struct probe_target same = t;
    same.url = u_again;
    same.token = tok_again;
    assert_int_equal(prober_set(c.p, "ns/a", &same), 0);
    run_until(&c, 2, 1500);
    assert_int_equal(c.n, 1);
    /* A new token is a change: a round comes within a second. */
    same.token = "another";
    assert_int_equal(prober_set(c.p, "ns/a", &same), 0);
    run_until(&c, 2, 1500);
    assert_int_equal(c.n, 2);
    assert_false(c.results[1].r.ok);
    ctx_finish(&c);
}

static void test_interval(void **state)
{
    (void)state;
    struct ctx c;
    ctx_init(&c, 0);
    char u[128];
    const int64_t interval = 300;
    struct probe_target t = {.kinds = PROBE_CODE_SERVER,
                             .url = url_of(u, sizeof(u), "/w/idle"),
                             .interval_ms = interval,
                             .timeout_ms = 200};
    assert_int_equal(prober_set(c.p, "ns/a", &t), 0);
    run_until(&c, 6, 4000);
    assert_int_equal(c.n, 6);
    for (int i = 1; i < 6; i++) {
        int64_t gap = (int64_t)(c.results[i].round_ns - c.results[i - 1].round_ns) / 1000000;
        print_message("gap %d: %lld ms\n", i, (long long)gap);
        /* The first gap places the target at a random phase; after that,
         * the interval less at most 5%. */
        int64_t lo = i == 1 ? interval / 10 - 5 : interval - interval / 20 - 5;
        assert_true(gap >= lo);
        assert_true(gap <= interval + 100);
        assert_true(c.results[i].r.ok);
    }
    ctx_finish(&c);
}

static void test_max_in_flight(void **state)
{
    (void)state;
    struct ctx c;
    ctx_init(&c, 3);
    /* An earlier test's delayed request may still be in the server: it
     * would count with this test's. */
    for (int i = 0; i < 200 && atomic_load(&srv.current) > 0; i++)
        usleep(10000);
    assert_int_equal(atomic_load(&srv.current), 0);
    atomic_store(&srv.max_current, 0);
    char u[128];
    struct probe_target t = {.kinds = PROBE_JUPYTER,
                             .url = url_of(u, sizeof(u), "/w/delay"),
                             .token = TOKEN,
                             .interval_ms = 3600000,
                             .timeout_ms = 10000};
    for (int i = 0; i < 12; i++) {
        char key[16];
        snprintf(key, sizeof(key), "ns/w%d", i);
        assert_int_equal(prober_set(c.p, key, &t), 0);
    }
    run_until(&c, 12, 10000);
    assert_int_equal(c.n, 12);
    for (int i = 0; i < 12; i++)
        assert_true(c.results[i].r.ok);
    int max = atomic_load(&srv.max_current);
    print_message("24 requests of 40 ms with max_in_flight 3: at most %d at the server at once\n",
                  max);
    assert_true(max <= 3);
    assert_true(max >= 2);
    assert_true(c.max_in_flight_seen <= 3);
    ctx_finish(&c);
}

static void test_close_in_flight(void **state)
{
    (void)state;
    struct ctx c;
    ctx_init(&c, 4);
    atomic_store(&srv.slow_seen, 0);
    char u[128], p[128];
    struct probe_target t = {.kinds = PROBE_JUPYTER | PROBE_CODE_SERVER,
                             .url = url_of(u, sizeof(u), "/w/slow"),
                             .token = TOKEN,
                             .prometheus_url = url_of(p, sizeof(p), "/prom/data"),
                             .gpu_query = "up",
                             .interval_ms = 3600000,
                             .timeout_ms = 5000};
    for (int i = 0; i < 6; i++) {
        char key[16];
        snprintf(key, sizeof(key), "ns/w%d", i);
        assert_int_equal(prober_set(c.p, key, &t), 0);
    }
    run_until_slow_seen(&c, 4);
    struct prober_stats st;
    prober_get_stats(c.p, &st);
    assert_int_equal(st.in_flight, 4);
    ctx_finish(&c); /* runs the loop dry and closes it */
    assert_int_equal(c.n, 0);
}

static void test_callback_reentrancy(void **state)
{
    (void)state;
    char u[128];
    struct probe_target t = {.kinds = PROBE_JUPYTER,
                             .url = url_of(u, sizeof(u), "/w/idle"),
                             .token = TOKEN,
                             .interval_ms = 3600000,
                             .timeout_ms = 5000};

    /* Removing its own target from the callback. */
    struct ctx c;
    ctx_init(&c, 0);
    c.remove_in_callback = 1;
    assert_int_equal(prober_set(c.p, "ns/a", &t), 0);
    assert_int_equal(prober_set(c.p, "ns/b", &t), 0);
    run_until(&c, 2, 3000);
    assert_int_equal(c.n, 2);
    struct prober_stats st;
    prober_get_stats(c.p, &st);
    assert_int_equal(st.targets, 0);
    ctx_finish(&c);

    /* Replacing its own target from the callback. */
    ctx_init(&c, 0);
    c.set_in_callback = 1;
    assert_int_equal(prober_set(c.p, "ns/a", &t), 0);
    run_until(&c, 2, 3000);
    assert_int_equal(c.n, 2);
    assert_string_equal(c.results[1].r.source, "code-server");
    ctx_finish(&c);

    /* Closing the prober from the callback, with other rounds in flight. */
    ctx_init(&c, 0);
    c.close_in_callback = 1;
    for (int i = 0; i < 5; i++) {
        char key[16];
        snprintf(key, sizeof(key), "ns/w%d", i);
        assert_int_equal(prober_set(c.p, key, &t), 0);
    }
    run_until(&c, 5, 1500); /* all five rounds would have come by now */
    assert_int_equal(c.n, 1);
    uv_run(&c.loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&c.loop), 0);
}

static void test_invalid(void **state)
{
    (void)state;
    struct ctx c;
    ctx_init(&c, 0);
    char u[128];
    url_of(u, sizeof(u), "/w/idle");
    struct probe_target ok = {
        .kinds = PROBE_JUPYTER, .url = u, .interval_ms = 1000, .timeout_ms = 500};
    struct probe_target t = ok;
    t.url = NULL;
    assert_int_equal(prober_set(c.p, "k", &t), -EINVAL);
    t.url = "file:///etc/passwd";
    assert_int_equal(prober_set(c.p, "k", &t), -EINVAL);
    t = ok;
    t.interval_ms = 0;
    assert_int_equal(prober_set(c.p, "k", &t), -EINVAL);
    t = ok;
    t.timeout_ms = -1;
    assert_int_equal(prober_set(c.p, "k", &t), -EINVAL);
    t = ok;
    t.kinds = PROBE_GPU;
    assert_int_equal(prober_set(c.p, "k", &t), -EINVAL);
    t.prometheus_url = u;
    assert_int_equal(prober_set(c.p, "k", &t), -EINVAL); /* no query */
    t = ok;
    t.kinds = 1u << 7;
    assert_int_equal(prober_set(c.p, "k", &t), -EINVAL);
    assert_int_equal(prober_set(c.p, NULL, &ok), -EINVAL);
    assert_int_equal(prober_set(c.p, "k", NULL), -EINVAL);

    /* kinds 0 removes. */
    assert_int_equal(prober_set(c.p, "k", &ok), 0);
    struct prober_stats st;
    prober_get_stats(c.p, &st);
    assert_int_equal(st.targets, 1);
    t = ok;
    t.kinds = 0;
    assert_int_equal(prober_set(c.p, "k", &t), 0);
    prober_get_stats(c.p, &st);
    assert_int_equal(st.targets, 0);

    struct prober *p = NULL;
    assert_int_equal(prober_new(&c.loop, NULL, NULL, NULL, &p), -EINVAL);
    assert_null(p);
    prober_close(NULL);
    ctx_finish(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merged_results),
        cmocka_unit_test(test_unauthorized),
        cmocka_unit_test(test_slow_server_times_out),
        cmocka_unit_test(test_oversized_and_refused),
        cmocka_unit_test(test_remove_during_round),
        cmocka_unit_test(test_probe_now),
        cmocka_unit_test(test_unchanged_set_keeps_schedule),
        cmocka_unit_test(test_interval),
        cmocka_unit_test(test_max_in_flight),
        cmocka_unit_test(test_close_in_flight),
        cmocka_unit_test(test_callback_reentrancy),
        cmocka_unit_test(test_invalid),
    };
    return cmocka_run_group_tests(tests, server_start, server_stop);
}
