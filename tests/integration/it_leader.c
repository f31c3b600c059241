/*
 * Two controller processes against the real API server: exactly one leads;
 * when the leader is killed (SIGKILL, no release), the other takes over
 * within the lease duration plus one retry period; a leader stopped with
 * SIGTERM releases the Lease so the standby takes over at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"

struct proc {
    pid_t pid;
    char log[512];
    int port; /* of its health server */
};

static char *lease_ns;
static char tmpdir[256];
/* Every process started, so a failed assertion does not leave one running. */
static pid_t started[8];
static int n_started;

/* The kubeconfig of the next start(): the admin's unless a test names one. */
static const char *next_kubeconfig;

static void dump(const struct proc *p)
{
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "tail -n 20 '%.511s' >&2", p->log);
    (void)system(cmd);
}

static void start(struct proc *p, const char *name)
{
    const char *kubeconfig = next_kubeconfig ? next_kubeconfig : harness_kubeconfig();
    next_kubeconfig = NULL;
    snprintf(p->log, sizeof(p->log), "%s/%s.log", tmpdir, name);
    assert_true(n_started < 8);
    p->pid = fork();
    assert_true(p->pid >= 0);
    if (p->pid > 0)
        started[n_started++] = p->pid;
    if (p->pid == 0) {
        int fd = open(p->log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fd, 2);
        char nsflag[256];
        snprintf(nsflag, sizeof(nsflag), "--leader-election-namespace=%s", lease_ns);
        /* Port 0: the kernel picks a free port, read back from the log. */
        execl(HIBERNATOR_BIN, HIBERNATOR_BIN, "--kubeconfig", kubeconfig, "--leader-elect", nsflag,
              "--namespace", lease_ns, "--health-probe-bind-address=127.0.0.1:0",
              "--metrics-bind-address=0", (char *)NULL);
        _exit(127);
    }
    p->port = harness_serving_port(p->log, p->pid, "health probes", 30000);
    if (p->port < 0)
        dump(p);
    assert_true(p->port > 0);
}

static int log_has(const struct proc *p, const char *needle)
{
    FILE *f = fopen(p->log, "r");
    if (!f)
        return 0;
    char line[4096];
    int found = 0;
    while (!found && fgets(line, sizeof(line), f))
        found = strstr(line, needle) != NULL;
    fclose(f);
    return found;
}

/* Waits until one of the processes logs needle; returns its index or -1. */
static int wait_for(struct proc *procs, int n, const char *needle, uint64_t timeout_ms)
{
    uint64_t end = harness_now_ms() + timeout_ms;
    while (harness_now_ms() < end) {
        for (int i = 0; i < n; i++)
            if (procs[i].pid > 0 && log_has(&procs[i], needle))
                return i;
        usleep(50 * 1000);
    }
    for (int i = 0; i < n; i++)
        if (procs[i].pid > 0) {
            fprintf(stderr, "no \"%s\" within %llu ms; the log of %s:\n", needle,
                    (unsigned long long)timeout_ms, procs[i].log);
            dump(&procs[i]);
        }
    return -1;
}

static void stop_pid(pid_t pid, int sig)
{
    for (int i = 0; i < n_started; i++)
        if (started[i] == pid)
            started[i] = started[--n_started];
    kill(pid, sig);
    int st;
    waitpid(pid, &st, 0);
}

static void stop(struct proc *p, int sig)
{
    if (p->pid <= 0)
        return;
    stop_pid(p->pid, sig);
    p->pid = 0;
}

/* GET http://127.0.0.1:port/path; returns the body (malloc'd) and the code. */
static char *probe(const struct proc *p, const char *path, int *ret_code)
{
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "curl -s -w '\\n%%{http_code}' http://127.0.0.1:%d%s", p->port,
             path);
    FILE *f = popen(cmd, "r");
    char *body = calloc(1, 1024);
    size_t n = f ? fread(body, 1, 1023, f) : 0;
    if (f)
        pclose(f);
    body[n] = '\0';
    char *nl = strrchr(body, '\n');
    *ret_code = nl ? atoi(nl + 1) : 0;
    if (nl)
        *nl = '\0';
    return body;
}

/* Kills whatever a test left running (after a failed assertion). */
static int kill_leftovers(void **state)
{
    (void)state;
    while (n_started > 0)
        stop_pid(started[0], SIGKILL);
    return 0;
}

static void test_failover_after_kill(void **state)
{
    (void)state;
    struct proc procs[2] = {0};
    start(&procs[0], "kill-a");
    start(&procs[1], "kill-b");
    int leader = wait_for(procs, 2, "became leader", 30000);
    if (leader < 0) {
        dump(&procs[0]);
        dump(&procs[1]);
        fail_msg("no leader within 30 s");
    }
    int standby = 1 - leader;
    assert_true(wait_for(&procs[leader], 1, "msg=\"watching\"", 30000) == 0);
    assert_true(wait_for(&procs[standby], 1, "standing by", 10000) == 0);
    /* Two seconds later, still exactly one leader. */
    usleep(2000 * 1000);
    assert_false(log_has(&procs[standby], "became leader"));
    /* The health probes say who is who. */
    int code;
    char *body = probe(&procs[leader], "/readyz", &code);
    print_message("leader /readyz: %d %s", code, body);
    assert_int_equal(code, 200);
    assert_non_null(strstr(body, "leader, caches synced"));
    free(body);
    body = probe(&procs[standby], "/readyz", &code);
    assert_int_equal(code, 200);
    assert_non_null(strstr(body, "standby"));
    free(body);
    body = probe(&procs[standby], "/healthz", &code);
    assert_int_equal(code, 200);
    free(body);
    body = probe(&procs[standby], "/metrics-nope", &code);
    assert_int_equal(code, 404);
    free(body);

    uint64_t killed = harness_now_ms();
    stop(&procs[leader], SIGKILL);
    int took = wait_for(&procs[standby], 1, "became leader", 30000);
    uint64_t failover = harness_now_ms() - killed;
    print_message("failover after SIGKILL of the leader: %.1f s (lease 15 s, retry 2 s)\n",
                  (double)failover / 1000.0);
    if (took != 0)
        dump(&procs[standby]);
    assert_int_equal(took, 0);
    /* client-go semantics: expiry counts from when the standby last saw the
     * record change, at most one retry period after the leader's last renew. */
    assert_true(failover <= 15000 + 2000 + 1500);
    assert_true(wait_for(&procs[standby], 1, "msg=\"watching\"", 30000) == 0);
    stop(&procs[standby], SIGTERM);
}

static void test_release_on_sigterm(void **state)
{
    (void)state;
    struct proc procs[2] = {0};
    start(&procs[0], "term-a");
    int leader = wait_for(procs, 1, "became leader", 30000);
    assert_int_equal(leader, 0);
    start(&procs[1], "term-b");
    assert_true(wait_for(&procs[1], 1, "standing by", 10000) == 0);

    uint64_t t0 = harness_now_ms();
    kill(procs[0].pid, SIGTERM);
    int st = 0;
    waitpid(procs[0].pid, &st, 0);
    for (int i = 0; i < n_started; i++)
        if (started[i] == procs[0].pid)
            started[i] = started[--n_started];
    procs[0].pid = 0;
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    assert_true(log_has(&procs[0], "lease released"));
    int took = wait_for(&procs[1], 1, "became leader", 10000);
    uint64_t handover = harness_now_ms() - t0;
    print_message("handover after SIGTERM: %.1f s\n", (double)handover / 1000.0);
    assert_int_equal(took, 0);
    /* A released Lease is free at once: the standby's next retry takes it. */
    assert_true(handover < 5000);
    stop(&procs[1], SIGTERM);
}

/* A standby that cannot read the Lease is not ready, so that a rollout
 * does not count a replica that cannot reach its API server as available
 * (found in-cluster: without a route to the API server both replicas were
 * Ready and nothing led). Here the API server's address is closed. */
static void test_standby_without_api_not_ready(void **state)
{
    (void)state;
    char kc[600], cmd[1400];
    snprintf(kc, sizeof(kc), "%s/unreachable.kubeconfig", tmpdir);
    snprintf(cmd, sizeof(cmd), "sed 's#server: .*#server: https://127.0.0.1:1#' '%s' >'%s'",
             harness_kubeconfig(), kc);
    assert_int_equal(system(cmd), 0);
    struct proc p = {0};
    next_kubeconfig = kc;
    start(&p, "noapi");
    assert_true(wait_for(&p, 1, "lease read failed", 15000) == 0);
    int code;
    char *body = probe(&p, "/readyz", &code);
    print_message("standby without its API server /readyz: %d %s", code, body);
    assert_int_equal(code, 503);
    assert_non_null(strstr(body, "Lease"));
    free(body);
    /* Alive all the same: the loop is not stuck. */
    body = probe(&p, "/healthz", &code);
    assert_int_equal(code, 200);
    free(body);
    stop(&p, SIGTERM);
}

int main(void)
{
    harness_require_cluster();
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/it-leader.XXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    lease_ns = harness_namespace("it-leader");
    /* The controller says it is watching once its caches synced, which needs the API. */
    char cmd[1024];
    snprintf(cmd, sizeof(cmd),
             "kubectl --kubeconfig '%s' apply -f '%s/deploy/crds' >/dev/null && "
             "kubectl --kubeconfig '%s' wait --for=condition=Established --timeout=60s "
             "crd/workspaces.hibernator.dev crd/workspaceclasses.hibernator.dev >/dev/null",
             harness_kubeconfig(), SOURCE_DIR, harness_kubeconfig());
    if (system(cmd) != 0) {
        fprintf(stderr, "cannot install the CRDs\n");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_failover_after_kill, kill_leftovers),
        cmocka_unit_test_teardown(test_release_on_sigterm, kill_leftovers),
        cmocka_unit_test_teardown(test_standby_without_api_not_ready, kill_leftovers),
    };
    int r = cmocka_run_group_tests_name("leader election", tests, NULL, NULL);
    harness_namespace_delete(lease_ns);
    free(lease_ns);
    return r;
}
