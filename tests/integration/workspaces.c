/*
 * Workspace helpers for the integration tests: the controller as a process
 * running under the ServiceAccount and RBAC from deploy/, and reading
 * Workspaces back with kubectl. Tests set ns (their namespace) after
 * it_deploy().
 */
#include "workspaces.h"

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

#include <cjson/cJSON.h>
#include <cmocka.h>
#include <curl/curl.h>

#include "harness.h"
#include "kube/config.h"

char tmpdir[256];
char *kubeconfig;
char *ns;
static pid_t controller;
static int controller_runs;
static const char *const *controller_args;
static char controller_log[600];

/* ---- the controller process ---------------------------------------------- */

void controller_start(const char *failpoint)
{
    char *log = controller_log;
    snprintf(controller_log, sizeof(controller_log), "%s/controller-%d.log", tmpdir,
             controller_runs++);
    /* One controller at a time here (it_leader tests the election): without
     * it, a loaded machine cannot make a test's controller give up leading. */
    /* No listening sockets unless a test asks for them (extra args come
     * later and win). */
    const char *argv[32] = {HIBERNATOR_BIN,
                            "--kubeconfig",
                            kubeconfig,
                            "--leader-elect=false",
                            "--log-level=debug",
                            "--health-probe-bind-address=0",
                            "--metrics-bind-address=0"};
    size_t n = 7;
    for (size_t i = 0; controller_args && controller_args[i] && n < 31; i++)
        argv[n++] = controller_args[i];
    argv[n] = NULL;
    controller = fork();
    assert_true(controller >= 0);
    if (controller == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fd, 2);
        if (failpoint)
            setenv("HIBERNATOR_FAILPOINT", failpoint, 1);
        execv(HIBERNATOR_BIN, (char *const *)argv);
        _exit(127);
    }
}

const char *controller_log_path(void)
{
    return controller_log;
}

int controller_serving_port(const char *routes)
{
    int port = harness_serving_port(controller_log, controller, routes, 30000);
    if (port < 0)
        fail_msg("the controller did not say it serves %s (log %s)", routes, controller_log);
    return port;
}

/* Waits for the controller to exit by itself (a failpoint); returns its status. */
int controller_wait_exit(uint64_t timeout_ms)
{
    uint64_t end = harness_now_ms() + timeout_ms;
    while (harness_now_ms() < end) {
        int st;
        if (waitpid(controller, &st, WNOHANG) == controller) {
            controller = 0;
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        }
        usleep(50 * 1000);
    }
    return -1;
}

void controller_stop(void)
{
    if (controller > 0) {
        kill(controller, SIGKILL);
        waitpid(controller, NULL, 0);
        controller = 0;
    }
}

/* ---- reading the cluster --------------------------------------------------- */

/* The wait loops poll every 200 ms: a kubectl per poll costs a Go start
 * and a TLS handshake, which on two cores shared by two test tiers takes
 * a good part of a core. An object of a kind below is read instead with
 * one libcurl handle kept for the program (its connection reused), as the
 * test kubeconfig's user (its client certificate). */
static CURL *api;
static struct kube_config *api_config;

struct api_body {
    char *data;
    size_t len, cap;
};

static size_t on_api_body(char *p, size_t size, size_t n, void *data)
{
    struct api_body *b = data;
    size_t len = size * n;
    if (b->len + len + 1 > b->cap) {
        size_t cap = (b->len + len + 1) * 2;
        if (cap > (64u << 20))
            return 0; /* a limit: no object of a test is that large */
        char *d = realloc(b->data, cap);
        if (!d)
            return 0;
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, len);
    b->len += len;
    b->data[b->len] = '\0';
    return len;
}

/* GET path: 1 and *ret (NULL on 404), 0 when this way cannot say (the
 * caller asks kubectl). */
static int api_get(const char *path, cJSON **ret)
{
    *ret = NULL;
    if (!api_config) {
        char *err = NULL;
        if (kube_config_load_file(harness_kubeconfig(), NULL, &api_config, &err) < 0 ||
            !api_config->cert_pem || !api_config->key_pem || !api_config->ca_pem) {
            free(err);
            return 0;
        }
    }
    if (!api && !(api = curl_easy_init()))
        return 0;
    char url[1024];
    snprintf(url, sizeof(url), "%s%s", api_config->server, path);
    struct curl_blob cert = {api_config->cert_pem, api_config->cert_pem_len, CURL_BLOB_NOCOPY};
    struct curl_blob key = {api_config->key_pem, api_config->key_pem_len, CURL_BLOB_NOCOPY};
    struct curl_blob ca = {api_config->ca_pem, api_config->ca_pem_len, CURL_BLOB_NOCOPY};
    struct api_body b = {0};
    curl_easy_setopt(api, CURLOPT_URL, url);
    curl_easy_setopt(api, CURLOPT_SSLCERT_BLOB, &cert);
    curl_easy_setopt(api, CURLOPT_SSLKEY_BLOB, &key);
    curl_easy_setopt(api, CURLOPT_CAINFO_BLOB, &ca);
    curl_easy_setopt(api, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(api, CURLOPT_TIMEOUT, 30L);
    curl_easy_setopt(api, CURLOPT_WRITEFUNCTION, on_api_body);
    curl_easy_setopt(api, CURLOPT_WRITEDATA, &b);
    CURLcode rc = curl_easy_perform(api);
    long code = 0;
    curl_easy_getinfo(api, CURLINFO_RESPONSE_CODE, &code);
    int answered = 0;
    if (rc == CURLE_OK && code == 404) {
        answered = 1;
    } else if (rc == CURLE_OK && code == 200 && b.data) {
        *ret = cJSON_Parse(b.data);
        answered = *ret != NULL;
    }
    free(b.data);
    return answered;
}

/* "workspace NAME", "pvc NAME", "pod NAME": its API path in ns. */
static int api_path(const char *what, char *out, size_t size)
{
    static const struct {
        const char *kind, *prefix;
    } kinds[] = {
        {"workspace ", "/apis/hibernator.dev/v1alpha1/namespaces/%s/workspaces/%s"},
        {"pvc ", "/api/v1/namespaces/%s/persistentvolumeclaims/%s"},
        {"pod ", "/api/v1/namespaces/%s/pods/%s"},
    };
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        size_t n = strlen(kinds[i].kind);
        const char *name = what + n;
        if (strncmp(what, kinds[i].kind, n) != 0 || !*name || strpbrk(name, " /?&%'\"") || !ns)
            continue;
        int w = snprintf(out, size, kinds[i].prefix, ns, name);
        return w > 0 && (size_t)w < size;
    }
    return 0;
}

cJSON *get_json(const char *what)
{
    char path[600];
    cJSON *j = NULL;
    if (api_path(what, path, sizeof(path)) && api_get(path, &j))
        return j;
    char *out = NULL;
    if (harness_kubectl(&out, "-n %s get %s -o json 2>/dev/null", ns, what) != 0) {
        free(out);
        return NULL;
    }
    j = cJSON_Parse(out);
    free(out);
    return j;
}

const char *str_at(const cJSON *o, const char *path)
{
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", path);
    const cJSON *cur = o;
    for (char *tok = strtok(buf, "."); tok && cur; tok = strtok(NULL, "."))
        cur = cJSON_GetObjectItemCaseSensitive(cur, tok);
    return cJSON_IsString(cur) ? cur->valuestring : NULL;
}

double num_at(const cJSON *o, const char *path)
{
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", path);
    const cJSON *cur = o;
    for (char *tok = strtok(buf, "."); tok && cur; tok = strtok(NULL, "."))
        cur = cJSON_GetObjectItemCaseSensitive(cur, tok);
    return cJSON_IsNumber(cur) ? cur->valuedouble : -1;
}

const cJSON *condition(const cJSON *ws, const char *type)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(
                              cJSON_GetObjectItemCaseSensitive(ws, "status"), "conditions"))
    {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(c, "type");
        if (cJSON_IsString(t) && strcmp(t->valuestring, type) == 0)
            return c;
    }
    return NULL;
}

/* Waits until the workspace is in state; returns its JSON (caller frees). */
cJSON *wait_state(const char *name, const char *state, uint64_t timeout_ms)
{
    char what[300];
    snprintf(what, sizeof(what), "workspace %s", name);
    uint64_t end = harness_now_ms() + timeout_ms;
    const char *last = NULL;
    char seen[64] = "";
    while (harness_now_ms() < end) {
        cJSON *ws = get_json(what);
        last = ws ? str_at(ws, "status.state") : NULL;
        if (last && strcmp(last, state) == 0)
            return ws;
        snprintf(seen, sizeof(seen), "%s", last ? last : "(none)");
        cJSON_Delete(ws);
        usleep(200 * 1000);
    }
    fail_msg("workspace %s: state %s, wanted %s", name, seen, state);
    return NULL;
}

/* The pods of a workspace that are not terminating. */
int live_pods(const char *name)
{
    char *out = NULL;
    harness_kubectl(&out,
                    "-n %s get pods -l hibernator.dev/workspace=%s -o "
                    "jsonpath='{range .items[*]}{.metadata.deletionTimestamp}|{end}'",
                    ns, name);
    int n = 0;
    for (char *p = out; p && *p; p++)
        if (*p == '|' && (p == out || p[-1] == '|'))
            n++;
    free(out);
    return n;
}

int all_pods(const char *name)
{
    char *out = NULL;
    harness_kubectl(&out, "-n %s get pods -l hibernator.dev/workspace=%s -o name", ns, name);
    int n = 0;
    for (char *p = out; p && *p; p++)
        n += *p == '\n';
    free(out);
    return n;
}

/* Waits until the workspace no longer exists; returns whether it went. */
int wait_gone(const char *name, uint64_t timeout_ms)
{
    char what[300];
    snprintf(what, sizeof(what), "workspace %s", name);
    uint64_t end = harness_now_ms() + timeout_ms;
    while (harness_now_ms() < end) {
        cJSON *ws = get_json(what);
        if (!ws)
            return 1;
        cJSON_Delete(ws);
        usleep(200 * 1000);
    }
    return 0;
}

void apply_ws(const char *name, const char *cls, int paused, const char *extra)
{
    assert_int_equal(harness_apply("apiVersion: hibernator.dev/v1alpha1\nkind: Workspace\n"
                                   "metadata: {name: %s, namespace: %s}\n"
                                   "spec:\n  className: %s\n  paused: %s\n%s",
                                   name, ns, cls, paused ? "true" : "false", extra ? extra : ""),
                     0);
}

void set_paused(const char *name, int paused)
{
    assert_int_equal(harness_kubectl(NULL,
                                     "-n %s patch workspace %s --type=merge -p "
                                     "'{\"spec\":{\"paused\":%s}}'",
                                     ns, name, paused ? "true" : "false"),
                     0);
}

void delete_ws(const char *name)
{
    harness_kubectl(NULL, "-n %s delete workspace %s --wait=true --timeout=60s", ns, name);
}

void controller_extra_args(const char *const *args)
{
    controller_args = args;
}

void it_deploy(const char *prefix)
{
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/%s.XXXXXX", prefix);
    assert_non_null(mkdtemp(tmpdir));
    char cmd[1024];
    snprintf(cmd, sizeof(cmd),
             "kubectl --kubeconfig '%s' apply -k '%s/deploy' >/dev/null && "
             "kubectl --kubeconfig '%s' wait --for=condition=Established --timeout=60s "
             "crd/workspaces.hibernator.dev crd/workspaceclasses.hibernator.dev >/dev/null",
             harness_kubeconfig(), SOURCE_DIR, harness_kubeconfig());
    assert_int_equal(system(cmd), 0);

    /* The controller runs as the ServiceAccount deploy/ creates. */
    char *server = NULL, *ca = NULL, *token = NULL;
    harness_kubectl(&server,
                    "config view --raw --minify -o jsonpath={.clusters[0].cluster.server}");
    harness_kubectl(&ca, "config view --raw --minify -o "
                         "jsonpath={.clusters[0].cluster.certificate-authority-data}");
    assert_int_equal(
        harness_kubectl(&token, "-n hibernator-system create token hibernator --duration=2h"), 0);
    token[strcspn(token, "\n")] = '\0';
    assert_true(asprintf(&kubeconfig, "%s/controller.kubeconfig", tmpdir) > 0);
    FILE *f = fopen(kubeconfig, "w");
    assert_non_null(f);
    fprintf(f,
            "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
            "clusters: [{name: l, cluster: {server: \"%s\", certificate-authority-data: %s}}]\n"
            "contexts: [{name: c, context: {cluster: l, user: u, namespace: hibernator-system}}]\n"
            "users: [{name: u, user: {token: %s}}]\n",
            server, ca, token);
    fclose(f);
    free(server);
    free(ca);
    free(token);
}

void it_show_logs(void)
{
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "tail -n 30 %s/controller-*.log >&2", tmpdir);
    if (getenv("IT_SHOW_LOGS"))
        (void)system(cmd);
    free(kubeconfig);
    kubeconfig = NULL;
}

cJSON *ws_json(const char *name)
{
    char what[300];
    snprintf(what, sizeof(what), "workspace %s", name);
    return get_json(what);
}

const char *cond_field(const cJSON *ws, const char *type, const char *field)
{
    const cJSON *c = condition(ws, type);
    const cJSON *f = c ? cJSON_GetObjectItemCaseSensitive(c, field) : NULL;
    return cJSON_IsString(f) ? f->valuestring : "";
}

cJSON *wait_reason(const char *name, const char *type, const char *reason, uint64_t timeout_ms)
{
    uint64_t end = harness_now_ms() + timeout_ms;
    char seen[128] = "";
    while (harness_now_ms() < end) {
        cJSON *ws = ws_json(name);
        if (ws && strcmp(cond_field(ws, type, "reason"), reason) == 0)
            return ws;
        snprintf(seen, sizeof(seen), "%s", ws ? cond_field(ws, type, "reason") : "(none)");
        cJSON_Delete(ws);
        usleep(200 * 1000);
    }
    fail_msg("workspace %s: %s reason %s, wanted %s", name, type, seen, reason);
    return NULL;
}

char *event_reasons(const char *name)
{
    char *out = NULL;
    harness_kubectl(&out,
                    "-n %s get events --field-selector involvedObject.name=%s,"
                    "involvedObject.kind=Workspace --sort-by=.eventTime "
                    "-o jsonpath='{range .items[*]}{.reason},{end}'",
                    ns, name);
    return out ? out : strdup("");
}

void apply_class(const char *name, const char *extra)
{
    assert_int_equal(
        harness_apply("apiVersion: hibernator.dev/v1alpha1\nkind: WorkspaceClass\n"
                      "metadata: {name: %s}\n"
                      "spec:\n"
                      "  images: {allowed: [\"registry.local/notebook:*\"], default: "
                      "\"registry.local/notebook:v1\"}\n"
                      "  tolerations: [{key: kwok.x-k8s.io/node, operator: Exists, effect: "
                      "NoSchedule}]\n"
                      "  home: {size: 1Gi}\n"
                      "  pause: {gracePeriodSeconds: 1}\n"
                      "%s",
                      name, extra),
        0);
}

void install_crd(const char *file, const char *crd)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd),
             "kubectl --kubeconfig '%s' apply -f '%s/%s' >/dev/null && kubectl --kubeconfig '%s' "
             "wait --for=condition=Established --timeout=60s crd/%s >/dev/null",
             harness_kubeconfig(), SOURCE_DIR, file, harness_kubeconfig(), crd);
    assert_int_equal(system(cmd), 0);
}

void install_snapshot_crds(const char *storage_config)
{
    install_crd("deploy/local/podsnapshot-crds.yaml", "podsnapshots.podsnapshot.gke.io");
    assert_int_equal(harness_apply("apiVersion: podsnapshot.gke.io/v1\n"
                                   "kind: PodSnapshotStorageConfig\n"
                                   "metadata: {name: %s}\n"
                                   "spec: {snapshotStorageConfig: {gcs: {bucket: local}}}\n",
                                   storage_config),
                     0);
}

static pid_t simulator;

void simulator_start(const char *checkpoint_delay, const char *delete_delay)
{
    char log[600];
    snprintf(log, sizeof(log), "%s/simulator.log", tmpdir);
    const char *argv[] = {SNAPSHOT_SIMULATOR_BIN,
                          "--kubeconfig",
                          harness_kubeconfig(),
                          "--namespace",
                          ns,
                          "--log-level",
                          "debug",
                          "--checkpoint-delay",
                          checkpoint_delay,
                          delete_delay ? "--delete-delay" : NULL,
                          delete_delay,
                          NULL};
    simulator = fork();
    assert_true(simulator >= 0);
    if (simulator == 0) {
        /* Appended: a test that restarts it keeps the earlier lines. */
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
        dup2(fd, 2);
        execv(SNAPSHOT_SIMULATOR_BIN, (char *const *)argv);
        _exit(127);
    }
}

void simulator_stop(void)
{
    if (simulator > 0) {
        kill(simulator, SIGTERM);
        waitpid(simulator, NULL, 0);
    }
    simulator = 0;
}

void simulator_set_mode(const char *key, const char *mode)
{
    assert_int_equal(harness_kubectl(NULL,
                                     "-n %s patch configmap snapshot-simulator --type=merge "
                                     "-p '{\"data\":{\"%s\":\"%s\"}}'",
                                     ns, key, mode),
                     0);
}

void delete_all_workspaces(int timeout_s)
{
    harness_kubectl(NULL, "-n %s delete workspaces --all --wait=true --timeout=%ds", ns, timeout_s);
}

/* ---- the real node's registry -------------------------------------------- */

const struct it_registry *it_registry(void)
{
    static struct it_registry r;
    if (r.host)
        return &r;
    const char *host = getenv("HIBERNATOR_REGISTRY");
    const char *pw = getenv("HIBERNATOR_REGISTRY_PASSWORD_FILE");
    FILE *f = pw ? fopen(pw, "r") : NULL;
    if (!host || !f || !fgets(r.password, sizeof(r.password), f)) {
        fprintf(stderr, "the cluster has no registry (HIBERNATOR_REGISTRY, its password file)\n");
        exit(1);
    }
    fclose(f);
    r.password[strcspn(r.password, "\n")] = '\0';
    r.host = host;
    return &r;
}

int it_registry_head(const char *repository_path, const char *reference)
{
    const struct it_registry *r = it_registry();
    char *out = NULL;
    harness_sh(&out,
               "curl -s -o /dev/null -w '%%{http_code}' --cacert '%s/pki/ca.crt' -u "
               "'hibernator:%s' -H 'Accept: application/vnd.oci.image.index.v1+json' "
               "'https://%s/v2/%s/manifests/%s'",
               harness_cluster_dir(), r->password, r->host, repository_path, reference);
    int code = out ? atoi(out) : -1;
    free(out);
    return code;
}
