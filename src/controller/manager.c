#include "controller/manager.h"

#include <errno.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "controller/metrics.h"
#include "controller/reconciler.h"
#include "kube/client.h"
#include "kube/config.h"
#include "kube/leader_elector.h"
#include "metrics/registry.h"
#include "server/http_server.h"
#include "util/log.h"

struct manager {
    const struct controller_options *o;
    uv_loop_t loop;
    uv_signal_t sigterm, sigint;
    struct kube_config *config;
    struct kube_client *client;
    /* Kueue's visibility server asked directly (--kueue-visibility-server),
     * NULL: through the API server. */
    struct kube_config *visibility_config;
    struct kube_client *visibility_client;
    struct leader_elector *elector;
    struct reconciler *reconciler;
    struct health_state health;
    struct metrics_registry *registry;
    struct controller_metrics *metrics;
    struct http_server *servers[2]; /* health probes, metrics (or one for both) */
    uv_timer_t heartbeat;
    char identity[256];
    int exit_code;
    int stopping;
};

static void on_heartbeat(uv_timer_t *t)
{
    struct manager *m = t->data;
    atomic_store(&m->health.heartbeat_ms, health_now_ms());
    if (m->elector)
        atomic_store(&m->health.lease_read,
                     leader_elector_answered_within(m->elector, (uint64_t)m->o->lease_duration_ms));
    if (m->client)
        controller_metrics_client(m->metrics, kube_client_requests_dropped(m->client),
                                  kube_client_pokes(m->client));
    if (m->reconciler) {
        atomic_store(&m->health.synced, reconciler_synced(m->reconciler));
        reconciler_collect_metrics(m->reconciler);
    }
}

static void start_controllers(struct manager *m)
{
    /* HIBERNATOR_FAILPOINT is read by the crash tests only (docs/testing.md). */
    struct reconciler_options ro = {
        .ns = m->o->ns,
        .identity = m->identity,
        .failpoint = getenv("HIBERNATOR_FAILPOINT"),
        .probe_concurrency = (unsigned)m->o->activity_probe_concurrency,
        .metrics = m->metrics,
        .visibility_client = m->visibility_client,
    };
    int r = reconciler_new(&m->loop, m->client, &ro, &m->reconciler);
    if (r == 0)
        r = reconciler_start(m->reconciler);
    if (r < 0) {
        log_error("cannot start the workspace controller", "error", log_errno_str(r));
        m->exit_code = 1;
        uv_stop(&m->loop);
        return;
    }
    controller_metrics_set_leader(m->metrics, 1);
}

static void shutdown_all(struct manager *m)
{
    reconciler_close(m->reconciler);
    m->reconciler = NULL;
    leader_elector_close(m->elector);
    m->elector = NULL;
    kube_client_close(m->client);
    m->client = NULL;
    kube_client_close(m->visibility_client);
    m->visibility_client = NULL;
    atomic_store(&m->health.synced, 0);
    atomic_store(&m->health.leading, 0);
    if (!uv_is_closing((uv_handle_t *)&m->sigterm)) {
        uv_close((uv_handle_t *)&m->sigterm, NULL);
        uv_close((uv_handle_t *)&m->sigint, NULL);
        uv_close((uv_handle_t *)&m->heartbeat, NULL);
    }
}

static void on_started_leading(void *data)
{
    struct manager *m = data;
    log_info("starting controllers", "identity", m->identity);
    atomic_store(&m->health.leading, 1);
    start_controllers(m);
}

static void on_stopped_leading(void *data)
{
    struct manager *m = data;
    if (m->stopping)
        return;
    /* Another replica may already be acting on what we cached: start over. */
    log_error("leadership lost, exiting", "identity", m->identity);
    atomic_store(&m->health.leading, 0);
    controller_metrics_set_leader(m->metrics, 0);
    m->exit_code = 1;
    m->stopping = 1;
    shutdown_all(m);
}

static void on_new_leader(void *data, const char *identity)
{
    struct manager *m = data;
    if (strcmp(identity, m->identity) != 0)
        log_info("standing by", "leader", identity);
}

static void on_released(void *data, int status)
{
    struct manager *m = data;
    (void)status; /* the elector has logged the outcome */
    shutdown_all(m);
}

static void on_signal(uv_signal_t *s, int signum)
{
    struct manager *m = s->data;
    if (m->stopping)
        return;
    m->stopping = 1;
    log_info("shutting down", "signal", signum == SIGTERM ? "SIGTERM" : "SIGINT");
    reconciler_close(m->reconciler);
    m->reconciler = NULL;
    if (m->elector)
        leader_elector_release(m->elector, on_released, m);
    else
        shutdown_all(m);
}

static void make_identity(char *out, size_t size)
{
    char host[128] = "unknown";
    gethostname(host, sizeof(host) - 1);
    unsigned char rnd[6] = {0};
    RAND_bytes(rnd, sizeof(rnd));
    snprintf(out, size, "%s_%02x%02x%02x%02x%02x%02x", host, rnd[0], rnd[1], rnd[2], rnd[3], rnd[4],
             rnd[5]);
}

/* The same credentials and CA as the API server's (Kueue's visibility
 * server authenticates and authorizes through it), another server. */
static int visibility_client_new(struct manager *m)
{
    char *err = NULL;
    int r = kube_config_load_default(m->o->kubeconfig, &m->visibility_config, &err);
    char *server = r == 0 ? strdup(m->o->kueue_visibility_server) : NULL;
    if (r == 0 && !server)
        r = -ENOMEM;
    if (r == 0) {
        size_t n = strlen(server);
        while (n && server[n - 1] == '/')
            server[--n] = '\0';
        free(m->visibility_config->server);
        m->visibility_config->server = server;
        struct kube_client_options co = {.qps = 5, .burst = 10};
        r = kube_client_new(&m->loop, m->visibility_config, &co, &m->visibility_client, &err);
    }
    if (r < 0) {
        log_error("cannot make the client of Kueue's visibility server", "server",
                  m->o->kueue_visibility_server, "error", err ? err : log_errno_str(r));
        free(err);
        return r;
    }
    log_info("Kueue's visibility API asked directly", "server", m->o->kueue_visibility_server);
    return 0;
}

/* Long: the wiring of the whole process, each step undoing the ones before it when it fails,
 * which reads best in one place. */
int manager_run(const struct controller_options *o)
{
    struct manager m = {.o = o};
    char *err = NULL;
    int r = kube_config_load_default(o->kubeconfig, &m.config, &err);
    if (r < 0) {
        log_error("cannot load the Kubernetes configuration", "error", err);
        free(err);
        return 1;
    }
    uv_loop_init(&m.loop);
    struct kube_client_options co = {.qps = o->kube_api_qps, .burst = o->kube_api_burst};
    r = kube_client_new(&m.loop, m.config, &co, &m.client, &err);
    if (r < 0) {
        log_error("cannot create the API client", "error", err);
        free(err);
        kube_config_free(m.config);
        uv_loop_close(&m.loop);
        return 1;
    }
    log_info("hibernator starting", "version", HIBERNATOR_VERSION, "server", m.config->server,
             "config", m.config->source);
    if (o->kueue_visibility_server && visibility_client_new(&m) < 0) {
        kube_client_close(m.client);
        uv_run(&m.loop, UV_RUN_DEFAULT);
        uv_loop_close(&m.loop);
        kube_config_free(m.config);
        return 1;
    }

    uv_signal_init(&m.loop, &m.sigterm);
    uv_signal_init(&m.loop, &m.sigint);
    m.sigterm.data = m.sigint.data = &m;
    uv_signal_start(&m.sigterm, on_signal, SIGTERM);
    uv_signal_start(&m.sigint, on_signal, SIGINT);

    uv_timer_init(&m.loop, &m.heartbeat);
    m.heartbeat.data = &m;
    atomic_store(&m.health.heartbeat_ms, health_now_ms());
    atomic_store(&m.health.electing, o->leader_elect);
    uv_timer_start(&m.heartbeat, on_heartbeat, 1000, 1000);
    r = metrics_registry_new(0, &m.registry);
    if (r == 0)
        r = controller_metrics_new(m.registry, HIBERNATOR_VERSION, &m.metrics);
    if (r == 0) {
        controller_metrics_set_leader(m.metrics, 0);
        r = http_servers_start(o->health_probe_bind_address, &m.health, o->metrics_bind_address,
                               m.registry, m.servers, &err);
    }
    if (r < 0) {
        log_error("cannot serve health probes and metrics", "error", err ? err : log_errno_str(r));
        free(err);
        m.exit_code = 1;
        shutdown_all(&m);
        uv_run(&m.loop, UV_RUN_DEFAULT);
        uv_loop_close(&m.loop);
        controller_metrics_free(m.metrics);
        metrics_registry_free(m.registry);
        kube_config_free(m.config);
        return 1;
    }

    make_identity(m.identity, sizeof(m.identity));
    if (o->leader_elect) {
        const char *lease_ns = o->leader_election_namespace;
        if (!lease_ns)
            lease_ns = getenv("POD_NAMESPACE");
        if (!lease_ns || !lease_ns[0])
            lease_ns = kube_client_namespace(m.client);
        struct leader_elector_config lc = {
            .lease_namespace = lease_ns,
            .lease_name = o->leader_election_id,
            .identity = m.identity,
            .lease_duration_ms = (uint64_t)o->lease_duration_ms,
            .renew_deadline_ms = (uint64_t)o->renew_deadline_ms,
            .retry_period_ms = (uint64_t)o->retry_period_ms,
            .on_started_leading = on_started_leading,
            .on_stopped_leading = on_stopped_leading,
            .on_new_leader = on_new_leader,
            .data = &m,
        };
        r = leader_elector_new(&m.loop, m.client, &lc, &m.elector);
        if (r == 0)
            r = leader_elector_start(m.elector);
        if (r < 0) {
            log_error("cannot start leader election", "error", log_errno_str(r));
            m.exit_code = 1;
            shutdown_all(&m);
        } else {
            log_info("waiting for leadership", "lease", o->leader_election_id, "namespace",
                     lease_ns, "identity", m.identity);
        }
    } else {
        start_controllers(&m);
    }

    uv_run(&m.loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&m.loop) != 0) {
        /* uv_stop() after an error: close whatever is left. */
        shutdown_all(&m);
        uv_run(&m.loop, UV_RUN_DEFAULT);
        uv_loop_close(&m.loop);
    }
    http_server_stop(m.servers[0]);
    http_server_stop(m.servers[1]);
    controller_metrics_free(m.metrics);
    metrics_registry_free(m.registry);
    kube_config_free(m.config);
    kube_config_free(m.visibility_config);
    log_info("stopped", "exit_code", LOG_INT(m.exit_code));
    return m.exit_code;
}
