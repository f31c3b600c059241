#include "harness.h"

#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "util/buf.h"

void harness_require_cluster(void)
{
    if (getenv("HIBERNATOR_KUBECONFIG") && getenv("HIBERNATOR_CLUSTER_DIR"))
        return;
    if (getenv("HIBERNATOR_REQUIRE_CLUSTER")) {
        fprintf(stderr, "HIBERNATOR_KUBECONFIG/HIBERNATOR_CLUSTER_DIR not set; run hack/test\n");
        exit(1);
    }
    fprintf(stderr, "no local cluster (HIBERNATOR_KUBECONFIG unset): skipping\n");
    exit(77);
}

const char *harness_require_real_node(void)
{
    harness_require_cluster();
    const char *node = getenv("HIBERNATOR_REAL_NODE");
    if (node && node[0] && getenv("HIBERNATOR_CONTAINERD_SOCK"))
        return node;
    if (getenv("HIBERNATOR_REQUIRE_CLUSTER")) {
        fprintf(stderr, "HIBERNATOR_REAL_NODE unset: the cluster has no real node "
                        "(deploy/local/cluster.sh up --real-node)\n");
        exit(1);
    }
    fprintf(stderr, "no real node (HIBERNATOR_REAL_NODE unset): skipping\n");
    exit(77);
}

const char *harness_kubeconfig(void)
{
    return getenv("HIBERNATOR_KUBECONFIG");
}

const char *harness_cluster_dir(void)
{
    return getenv("HIBERNATOR_CLUSTER_DIR");
}

static int run_capture(const char *cmd, char **out)
{
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    struct buf b;
    buf_init(&b, 16u << 20);
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), p)) > 0)
        assert_int_equal(buf_append(&b, chunk, n), 0);
    int st = pclose(p);
    if (out)
        *out = buf_steal(&b);
    buf_free(&b);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int harness_sh(char **out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *cmd = NULL;
    if (vasprintf(&cmd, fmt, ap) < 0)
        cmd = NULL;
    va_end(ap);
    assert_non_null(cmd);
    int st = run_capture(cmd, out);
    free(cmd);
    return st;
}

int harness_kubectl(char **out, const char *fmt, ...)
{
    struct buf cmd;
    buf_init(&cmd, 1u << 20);
    assert_int_equal(buf_printf(&cmd, "kubectl --kubeconfig '%s' ", harness_kubeconfig()), 0);
    va_list ap;
    va_start(ap, fmt);
    char *args = NULL;
    if (vasprintf(&args, fmt, ap) < 0)
        args = NULL;
    va_end(ap);
    assert_non_null(args);
    assert_int_equal(buf_append_str(&cmd, args), 0);
    free(args);
    if (!out)
        assert_int_equal(buf_append_str(&cmd, " >/dev/null"), 0);
    int st = run_capture(buf_str(&cmd), out);
    buf_free(&cmd);
    return st;
}

int harness_apply(const char *fmt, ...)
{
    char cmd[4096];
    snprintf(cmd, sizeof(cmd), "kubectl --kubeconfig '%s' apply -f - >/dev/null",
             harness_kubeconfig());
    FILE *p = popen(cmd, "w");
    assert_non_null(p);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(p, fmt, ap);
    va_end(ap);
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int harness_cluster(const char *subcommand)
{
    char cmd[4096];
    snprintf(cmd, sizeof(cmd), "'%s/deploy/local/cluster.sh' %s --dir '%s' >&2", SOURCE_DIR,
             subcommand, harness_cluster_dir());
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

char *harness_namespace(const char *prefix)
{
    char *ns = NULL;
    static unsigned seq;
    assert_true(asprintf(&ns, "%s-%ld-%u", prefix, (long)getpid(), seq++) > 0);
    assert_int_equal(harness_kubectl(NULL, "create namespace %s", ns), 0);
    return ns;
}

void harness_namespace_delete(const char *ns)
{
    if (ns)
        harness_kubectl(NULL, "delete namespace %s --wait=false", ns);
}

struct kube_config *harness_config(const char *path)
{
    struct kube_config *config = NULL;
    char *err = NULL;
    int r = kube_config_load_file(path ? path : harness_kubeconfig(), NULL, &config, &err);
    if (r < 0)
        fail_msg("kubeconfig: %s", err ? err : "?");
    free(err);
    return config;
}

struct kube_client *harness_client(uv_loop_t *loop, const struct kube_config *config)
{
    struct kube_client_options o = {.qps = 200, .burst = 400};
    struct kube_client *c = NULL;
    char *err = NULL;
    if (kube_client_new(loop, config, &o, &c, &err) < 0)
        fail_msg("client: %s", err ? err : "?");
    free(err);
    return c;
}

int64_t harness_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

uint64_t harness_owner_time(int min_ahead_s, char hhmm[6])
{
    time_t t = time(NULL) + min_ahead_s;
    t = (t + 59) / 60 * 60;
    struct tm tm;
    gmtime_r(&t, &tm);
    snprintf(hhmm, 6, "%02d:%02d", tm.tm_hour, tm.tm_min);
    return (uint64_t)t * 1000;
}

uint64_t harness_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void on_deadline(uv_timer_t *t)
{
    (void)t;
}

int harness_run_until(uv_loop_t *loop, int (*done)(void *data), void *data, uint64_t timeout_ms)
{
    uint64_t end = harness_now_ms() + timeout_ms;
    /* A repeating timer keeps uv_run(ONCE) from sleeping past the deadline. */
    uv_timer_t tick;
    uv_timer_init(loop, &tick);
    uv_timer_start(&tick, on_deadline, 50, 50);
    while (!done(data) && harness_now_ms() < end)
        uv_run(loop, UV_RUN_ONCE);
    uv_close((uv_handle_t *)&tick, NULL);
    uv_run(loop, UV_RUN_NOWAIT);
    return done(data);
}

static int never(void *data)
{
    (void)data;
    return 0;
}

void harness_run_for(uv_loop_t *loop, uint64_t ms)
{
    harness_run_until(loop, never, NULL, ms);
}

static void close_walk(uv_handle_t *h, void *arg)
{
    (void)arg;
    if (!uv_is_closing(h))
        uv_close(h, NULL);
}

void harness_loop_close(uv_loop_t *loop)
{
    uv_run(loop, UV_RUN_NOWAIT);
    uv_walk(loop, close_walk, NULL);
    uv_run(loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(loop), 0);
}

void harness_call_cb(void *data, struct kube_response *resp)
{
    struct harness_call *call = data;
    call->done = 1;
    call->status = resp->status;
    call->http_code = resp->http_code;
    snprintf(call->reason, sizeof(call->reason), "%s",
             resp->error.reason ? resp->error.reason : "");
    snprintf(call->message, sizeof(call->message), "%s",
             resp->error.message ? resp->error.message : "");
    snprintf(call->transport_error, sizeof(call->transport_error), "%s",
             resp->transport_error ? resp->transport_error : "");
    call->body = resp->body;
    resp->body = NULL;
}

static int call_done(void *data)
{
    return ((struct harness_call *)data)->done;
}

void harness_call_wait(uv_loop_t *loop, struct harness_call *call)
{
    if (!harness_run_until(loop, call_done, call, 30000))
        fail_msg("request did not complete in 30 s");
}

void harness_call_clear(struct harness_call *call)
{
    cJSON_Delete(call->body);
    memset(call, 0, sizeof(*call));
}

/* The value of key in a log line (quoted or not) into out; 0 when absent. */
static int log_value(const char *line, const char *key, char *out, size_t size)
{
    char want[64];
    snprintf(want, sizeof(want), " %s=", key);
    const char *at = strstr(line, want);
    if (!at)
        return 0;
    at += strlen(want);
    size_t n = *at == '"' ? strcspn(++at, "\"") : strcspn(at, " \n");
    snprintf(out, size, "%.*s", (int)n, at);
    return 1;
}

static int serving_port_in(const char *path, const char *routes)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[4096], value[128], address[128];
    int port = -1;
    while (port < 0 && fgets(line, sizeof(line), f)) {
        if (!strstr(line, " msg=\"serving\" ") ||
            !log_value(line, "routes", value, sizeof(value)) || strcmp(value, routes) != 0 ||
            !log_value(line, "address", address, sizeof(address)))
            continue;
        const char *colon = strrchr(address, ':');
        if (colon)
            port = atoi(colon + 1);
    }
    fclose(f);
    return port > 0 ? port : -1;
}

int harness_serving_port(const char *path, pid_t pid, const char *routes, uint64_t timeout_ms)
{
    uint64_t end = harness_now_ms() + timeout_ms;
    for (;;) {
        int port = serving_port_in(path, routes);
        if (port > 0)
            return port;
        /* Exited (looked at without reaping: the caller waits for it). */
        siginfo_t info = {0};
        if (pid > 0 && waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
            info.si_pid == pid)
            return -1;
        if (harness_now_ms() >= end)
            return -1;
        usleep(20 * 1000);
    }
}

int harness_start_server(const char *bin, pid_t *ret_pid)
{
    int out[2];
    assert_int_equal(pipe(out), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(out[1], 1);
        close(out[0]);
        execl(bin, bin, "--port", "0", (char *)NULL);
        _exit(127);
    }
    close(out[1]);
    *ret_pid = pid;
    char line[64] = "";
    size_t n = 0;
    while (n < sizeof(line) - 1 && read(out[0], line + n, 1) == 1 && line[n] != '\n')
        n++;
    line[n] = '\0';
    close(out[0]);
    int port = 0;
    assert_int_equal(sscanf(line, "port=%d", &port), 1);
    return port;
}
