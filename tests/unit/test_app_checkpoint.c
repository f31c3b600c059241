/* app_checkpoint: asking an application to write its checkpoint, against a
 * real HTTP server on loopback (libmicrohttpd, one thread per connection).
 * What decide() is given: in flight, written, refused with the answer's
 * first line, no answer in time; one request per attempt. */
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

#include "controller/app_checkpoint.h"

static struct {
    struct MHD_Daemon *daemon;
    int port;
    atomic_int stop;
    atomic_int requests; /* POSTs and PUTs seen */
} srv;

static enum MHD_Result reply(struct MHD_Connection *c, unsigned code, const char *text)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    enum MHD_Result ret = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **req_cls)
{
    (void)cls;
    (void)version;
    (void)upload;
    if (!*req_cls) {
        *req_cls = &srv;
        return MHD_YES;
    }
    if (*upload_size) {
        *upload_size = 0;
        return MHD_YES;
    }
    if (strcmp(method, "POST") != 0 && strcmp(method, "PUT") != 0)
        return reply(c, 405, "POST or PUT");
    atomic_fetch_add(&srv.requests, 1);
    if (strcmp(url, "/ok") == 0)
        return reply(c, 200, "written");
    if (strcmp(url, "/full") == 0)
        return reply(c, 507, "disk full\x01\nstack trace line");
    if (strcmp(url, "/hang") == 0) {
        for (int i = 0; i < 1000 && !atomic_load(&srv.stop); i++)
            usleep(5000);
        return reply(c, 200, "late");
    }
    return reply(c, 404, "no such checkpoint endpoint");
}

static int server_start(void **state)
{
    (void)state;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    srv.daemon = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD,
                                  0, NULL, NULL, on_request, NULL, MHD_OPTION_SOCK_ADDR,
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
    return 0;
}

/* ---- the loop side ------------------------------------------------------- */

static int changed; /* the callback's calls */
static char changed_key[64];

static void on_changed(void *data, const char *key)
{
    (void)data;
    changed++;
    snprintf(changed_key, sizeof(changed_key), "%s", key);
}

static int64_t fixed_now(void *data)
{
    (void)data;
    return 1800000000000LL;
}

static void on_tick(uv_timer_t *t)
{
    (void)t;
}

static void run_until(uv_loop_t *loop, int want, uint64_t ms)
{
    uv_timer_t tick;
    uv_timer_init(loop, &tick);
    uv_timer_start(&tick, on_tick, 5, 5);
    uv_update_time(loop);
    uint64_t end = uv_now(loop) + ms;
    while (changed < want && uv_now(loop) < end)
        uv_run(loop, UV_RUN_ONCE);
    uv_close((uv_handle_t *)&tick, NULL);
    uv_run(loop, UV_RUN_NOWAIT);
}

static char *url(const char *path)
{
    static char u[128];
    snprintf(u, sizeof(u), "http://127.0.0.1:%d%s", srv.port, path);
    return u;
}

static void ask(struct app_checkpoints *c, const char *key, const char *attempt, const char *path,
                int64_t timeout_ms)
{
    struct app_checkpoint_call call = {key, attempt, "POST", url(path), timeout_ms};
    assert_int_equal(app_checkpoints_ask(c, &call), 0);
}

static void test_answers(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct app_checkpoints *c;
    assert_int_equal(app_checkpoints_new(&loop, fixed_now, NULL, on_changed, NULL, &c), 0);
    changed = 0;
    atomic_store(&srv.requests, 0);

    ask(c, "ns/a", "a-p1-1", "/ok", 5000);
    const struct app_checkpoint_seen *s = app_checkpoints_seen(c, "ns/a");
    assert_non_null(s);
    assert_string_equal(s->attempt, "a-p1-1");
    assert_false(s->answered);             /* in flight */
    ask(c, "ns/a", "a-p1-1", "/ok", 5000); /* the same attempt: no second request */
    ask(c, "ns/b", "b-p2-1", "/full", 5000);
    run_until(&loop, 2, 5000);
    assert_int_equal(changed, 2);
    assert_int_equal(atomic_load(&srv.requests), 2);

    s = app_checkpoints_seen(c, "ns/a");
    assert_true(s->answered);
    assert_true(s->written);
    assert_int_equal(s->answered_ms, 1800000000000LL);
    s = app_checkpoints_seen(c, "ns/b");
    assert_true(s->answered);
    assert_false(s->written);
    /* the first line only, printable */
    assert_string_equal(s->message, "the application answered HTTP 507: disk full ");

    /* answered: asking again for the same attempt changes nothing; a new
     * attempt is a new request */
    ask(c, "ns/a", "a-p1-1", "/ok", 5000);
    assert_true(app_checkpoints_seen(c, "ns/a")->answered);
    ask(c, "ns/a", "a-p1-2", "/ok", 5000);
    assert_false(app_checkpoints_seen(c, "ns/a")->answered);
    run_until(&loop, 3, 5000);
    assert_true(app_checkpoints_seen(c, "ns/a")->written);
    assert_string_equal(app_checkpoints_seen(c, "ns/a")->attempt, "a-p1-2");

    /* could not be asked at all */
    assert_int_equal(app_checkpoints_refuse(c, "ns/d", "d-p1-1", "the pod has no IP yet"), 0);
    s = app_checkpoints_seen(c, "ns/d");
    assert_true(s->answered);
    assert_false(s->written);
    assert_non_null(strstr(s->message, "no IP yet"));

    app_checkpoints_forget(c, "ns/a");
    assert_null(app_checkpoints_seen(c, "ns/a"));
    assert_null(app_checkpoints_seen(c, "ns/nothing"));
    app_checkpoints_close(c);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* An application that never answers is cut at the timeout; closing with a
 * request in flight calls nothing back. */
static void test_timeout_and_close(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct app_checkpoints *c;
    assert_int_equal(app_checkpoints_new(&loop, fixed_now, NULL, on_changed, NULL, &c), 0);
    changed = 0;
    ask(c, "ns/h", "h-p1-1", "/hang", 300);
    run_until(&loop, 1, 5000);
    assert_int_equal(changed, 1);
    assert_string_equal(changed_key, "ns/h");
    const struct app_checkpoint_seen *s = app_checkpoints_seen(c, "ns/h");
    assert_true(s->answered);
    assert_false(s->written);
    assert_string_equal(s->message, "no answer in time");

    ask(c, "ns/h", "h-p1-2", "/hang", 5000);
    app_checkpoints_close(c);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(changed, 1);
    assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_answers),
        cmocka_unit_test(test_timeout_and_close),
    };
    return cmocka_run_group_tests(tests, server_start, server_stop);
}
