/*
 * kubectl-workspace's requests (cli/api, and the canary's read through the
 * pod proxy): a request whose answer is read in the loop's last turn of an
 * interrupted wait. The API server is a plain
 * HTTP/1.1 listener on loopback in the same loop, so the test decides in
 * which turn the answer can be read:
 *
 *   1. the server reads the GET and lets a few milliseconds pass, so that
 *      libcurl has nothing left to do but wait for the answer;
 *   2. in the check phase of a turn (after that turn's poll, so nobody reads
 *      it in that turn) it writes the whole answer, waits until the kernel
 *      has handed it to libcurl's socket (SIOCOUTQ 0), and counts a signal
 *      as the SIGINT handler does: the wait's loop ends with -EINTR;
 *   3. cli_api_run_until() runs the loop once more to close its timer: that
 *      turn reads the answer (in its poll, or in libcurl's timer when one is
 *      due first on a busy machine), the callback runs and the client frees
 *      the request. Step 2 notes that the request was still in flight when
 *      the signal was counted.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/sockios.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <uv.h>

#include <cmocka.h>

#include "cli/api.h"
#include "cli/canary.h"
#include "kube/client.h"
#include "kube/config.h"
#include "util/json.h"

#define SETTLE_MS 20

struct fake {
    struct cli_api api;
    uv_tcp_t listener;
    uv_tcp_t conn;
    int accepted;
    char in[16 * 1024];
    size_t in_len;
    uv_timer_t settle; /* after the request: libcurl only waits */
    uv_check_t check;
    int answer_now;
    int answered;
    int flushed;             /* the kernel took the whole answer */
    int in_flight_at_signal; /* -1 until the signal is counted */
};

static const char BODY[] = "{\"apiVersion\":\"hibernator.dev/v1alpha1\",\"kind\":\"Workspace\","
                           "\"metadata\":{\"name\":\"w1\",\"namespace\":\"team\"}}";

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
    (void)suggested;
    struct fake *f = h->data;
    b->base = f->in + f->in_len;
    b->len = sizeof(f->in) - 1 - f->in_len;
}

static void on_settled(uv_timer_t *t)
{
    struct fake *f = t->data;
    f->answer_now = 1; /* written by on_check, after this turn's poll */
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    (void)b;
    struct fake *f = s->data;
    if (n <= 0)
        return;
    f->in_len += (size_t)n;
    f->in[f->in_len] = '\0';
    if (strstr(f->in, "\r\n\r\n") && !uv_is_active((uv_handle_t *)&f->settle) && !f->answer_now)
        uv_timer_start(&f->settle, on_settled, SETTLE_MS, 0);
}

static void on_connection(uv_stream_t *server, int status)
{
    struct fake *f = server->data;
    assert_int_equal(status, 0);
    assert_false(f->accepted); /* one connection is all a single GET needs */
    assert_int_equal(uv_tcp_init(&f->api.loop, &f->conn), 0);
    f->conn.data = f;
    f->accepted = 1;
    assert_int_equal(uv_accept(server, (uv_stream_t *)&f->conn), 0);
    assert_int_equal(uv_read_start((uv_stream_t *)&f->conn, on_alloc, on_read), 0);
}

/* The answer and the signal, in the same turn, after its poll. */
static void on_check(uv_check_t *c)
{
    struct fake *f = c->data;
    if (!f->answer_now || f->answered)
        return;
    f->answered = 1;
    char answer[1024];
    int len = snprintf(answer, sizeof(answer),
                       "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                       "Content-Length: %zu\r\n\r\n%s",
                       strlen(BODY), BODY);
    assert_true(len > 0 && (size_t)len < sizeof(answer));
    uv_buf_t b = uv_buf_init(answer, (unsigned)len);
    assert_int_equal(uv_try_write((uv_stream_t *)&f->conn, &b, 1), len);
    uv_os_fd_t fd;
    assert_int_equal(uv_fileno((uv_handle_t *)&f->conn, &fd), 0);
    for (int i = 0; i < 5000; i++) { /* loopback: at once, unless the machine is busy */
        int unacked = -1;
        if (ioctl(fd, SIOCOUTQ, &unacked) == 0 && unacked == 0) {
            f->flushed = 1;
            break;
        }
        usleep(1000);
    }
    f->in_flight_at_signal = (int)kube_client_requests_in_flight(f->api.client);
    f->api.interrupted++; /* as the SIGINT handler does */
}

static void fake_start(struct fake *f)
{
    memset(f, 0, sizeof(*f));
    f->in_flight_at_signal = -1;
    uv_loop_t *loop = &f->api.loop;
    assert_int_equal(uv_loop_init(loop), 0);
    assert_int_equal(uv_tcp_init(loop, &f->listener), 0);
    struct sockaddr_in a;
    assert_int_equal(uv_ip4_addr("127.0.0.1", 0, &a), 0);
    assert_int_equal(uv_tcp_bind(&f->listener, (const struct sockaddr *)&a, 0), 0);
    assert_int_equal(uv_listen((uv_stream_t *)&f->listener, 4, on_connection), 0);
    struct sockaddr_in bound;
    int bound_len = sizeof(bound);
    assert_int_equal(uv_tcp_getsockname(&f->listener, (struct sockaddr *)&bound, &bound_len), 0);
    uv_timer_init(loop, &f->settle);
    uv_check_init(loop, &f->check);
    f->listener.data = f->settle.data = f->check.data = f;
    assert_int_equal(uv_check_start(&f->check, on_check), 0);
    uv_unref((uv_handle_t *)&f->check);

    char server[64];
    snprintf(server, sizeof(server), "http://127.0.0.1:%d", ntohs(bound.sin_port));
    struct kube_config cfg = {.server = server, .token = "t", .namespace = "team"};
    assert_int_equal(kube_client_new(loop, &cfg, NULL, &f->api.client, NULL), 0);
    f->api.ns = "team";
}

static void fake_stop(struct fake *f)
{
    kube_client_close(f->api.client);
    if (f->accepted)
        uv_close((uv_handle_t *)&f->conn, NULL);
    uv_close((uv_handle_t *)&f->listener, NULL);
    uv_close((uv_handle_t *)&f->settle, NULL);
    uv_close((uv_handle_t *)&f->check, NULL);
    uv_run(&f->api.loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&f->api.loop), 0);
}

/* The answer came in the turn that closed the interrupted wait, and the
 * client freed the request with its callback: the call's result is that
 * answer (nothing is cancelled), and the signal still stops the next wait. */
static void test_get_answered_in_the_interrupted_turn(void **state)
{
    (void)state;
    struct fake f;
    fake_start(&f);

    struct cli_reply reply;
    int r = cli_api_get(&f.api, &CLI_RESOURCE_WORKSPACES, "team", "w1", &reply);

    assert_true(f.answered);
    assert_true(f.flushed);
    /* The window: the signal was counted while the answer was unread and
     * the request in flight; the wait's last turn then read it. */
    assert_int_equal(f.in_flight_at_signal, 1);
    assert_int_equal(kube_client_requests_in_flight(f.api.client), 0);

    assert_int_equal(r, 0);
    assert_int_equal(reply.status, 0);
    assert_int_equal(reply.http_code, 200);
    assert_null(reply.error);
    assert_string_equal(json_string(json_member(reply.body, "metadata"), "name"), "w1");
    cli_reply_clear(&reply);

    assert_true(f.api.interrupted > f.api.acknowledged);
    assert_int_equal(cli_api_sleep(&f.api, 10), -EINTR);
    fake_stop(&f);
}

/* The same window for the canary's read through the API server's pod
 * proxy (kubectl workspace canary, the drill): the answer read in the
 * interrupted wait's last turn is the read's value, and nothing freed is
 * cancelled. */
static void test_canary_answered_in_the_interrupted_turn(void **state)
{
    (void)state;
    struct fake f;
    fake_start(&f);
    struct canary *c = NULL;
    assert_int_equal(canary_new(&f.api, NULL, &c), 0);
    const struct canary_target t = {
        .ns = "team", .workspace = "w1", .pod = "w1-1", .uid = "u1", .port = 8888};
    char *value = NULL, *err = NULL;
    int r = canary_read(c, &t, &value, &err);

    assert_true(f.answered);
    assert_true(f.flushed);
    assert_int_equal(f.in_flight_at_signal, 1);
    assert_int_equal(kube_client_requests_in_flight(f.api.client), 0);
    assert_non_null(strstr(f.in, "GET /api/v1/namespaces/team/pods/w1-1:8888/proxy/canary "));
    if (r != 0)
        fail_msg("canary_read: %d (%s)", r, err ? err : "");
    assert_null(err);
    assert_non_null(strstr(value, "\"name\":\"w1\""));
    free(value);
    canary_free(c);
    assert_int_equal(cli_api_sleep(&f.api, 10), -EINTR);
    fake_stop(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get_answered_in_the_interrupted_turn),
        cmocka_unit_test(test_canary_answered_in_the_interrupted_turn),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
