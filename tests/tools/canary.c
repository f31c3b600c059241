/*
 * canary: stands in for a workspace application that can say whether its
 * process survived a pause, for the drill of kubectl-workspace.
 *
 *   canary --kubeconfig PATH [--kubectl PATH] [--port N]
 *
 * Listens on 127.0.0.1:N (0, the default, picks a free port), prints
 * "port=<n>" on stdout once it accepts connections, and runs until SIGTERM
 * or SIGINT.
 *
 *   GET /canary/<key>   a value (32 hex digits and a newline) that stands
 *                       for the memory of one process. When <key> is the UID
 *                       of a pod, the pod is looked up (kubectl): a pod the
 *                       snapshot simulator restored carries the annotation
 *                       simulator.hibernator.dev/restored-from-uid naming
 *                       the pod whose process it continues, and answers that
 *                       pod's value — the "memory" came back; any other pod
 *                       (a cold start, a fresh start) gets a new random
 *                       value. A key that is no pod's UID is an opaque key
 *                       with a value of its own. Values are kept for the
 *                       life of the process. Keys are 1-64 characters of
 *                       [A-Za-z0-9-]; anything else gets 400.
 *   GET /healthz        "ok"
 *
 * kwok's pods have no network, so the drill reaches this server through
 * --canary-url instead of the API server's pod proxy. It shares no code
 * with the plugin it is used to test.
 */
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <microhttpd.h>

#define MAX_KEYS 4096
#define KEY_MAX 64
#define VALUE_LEN 32

struct entry {
    char key[KEY_MAX + 1];
    char value[VALUE_LEN + 1];
};

struct server {
    const char *kubeconfig;
    const char *kubectl;
    pthread_mutex_t mu;
    struct entry *entries;
    size_t n;
};

static int key_ok(const char *k)
{
    size_t n = strlen(k);
    if (n == 0 || n > KEY_MAX)
        return 0;
    for (const char *p = k; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '-'))
            return 0;
    return 1;
}

/* Called with mu held. */
static const char *lookup(struct server *s, const char *key)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->entries[i].key, key) == 0)
            return s->entries[i].value;
    return NULL;
}

/* Called with mu held; value NULL draws a new one. Returns the stored value or NULL when full. */
static const char *store(struct server *s, const char *key, const char *value)
{
    if (s->n == MAX_KEYS)
        return NULL;
    struct entry *e = &s->entries[s->n++];
    snprintf(e->key, sizeof(e->key), "%s", key);
    if (value) {
        snprintf(e->value, sizeof(e->value), "%s", value);
        return e->value;
    }
    unsigned char rnd[VALUE_LEN / 2];
    FILE *f = fopen("/dev/urandom", "rb");
    if (!f || fread(rnd, 1, sizeof(rnd), f) != sizeof(rnd)) {
        if (f)
            fclose(f);
        s->n--;
        return NULL;
    }
    fclose(f);
    for (size_t i = 0; i < sizeof(rnd); i++)
        snprintf(e->value + 2 * i, 3, "%02x", rnd[i]);
    return e->value;
}

/* The pod with this UID: *found, and the restored-from-uid annotation into
 * source ("" when absent). Returns 0, or -1 when kubectl could not run. */
static int find_pod(struct server *s, const char *uid, int *found, char *source, size_t size)
{
    char cmd[2048];
    /* uid passed key_ok(): no quote or shell character can reach the command. */
    snprintf(
        cmd, sizeof(cmd),
        "'%s' --kubeconfig '%s' get pods -A -o jsonpath='{range .items[?(@.metadata.uid==\"%s\")]}"
        "{.metadata.annotations.simulator\\.hibernator\\.dev/restored-from-uid}{\"|\"}{end}'"
        " 2>/dev/null",
        s->kubectl, s->kubeconfig, uid);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    char out[512] = "";
    size_t n = fread(out, 1, sizeof(out) - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return -1;
    char *bar = strchr(out, '|');
    *found = bar != NULL;
    if (bar)
        *bar = '\0';
    snprintf(source, size, "%s", bar ? out : "");
    return 0;
}

static enum MHD_Result answer(struct MHD_Connection *c, unsigned code, const char *text)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", "text/plain");
    enum MHD_Result ret = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result canary(struct server *s, struct MHD_Connection *c, const char *key)
{
    char value[VALUE_LEN + 2];
    pthread_mutex_lock(&s->mu);
    const char *v = lookup(s, key);
    if (v)
        snprintf(value, sizeof(value), "%s\n", v);
    pthread_mutex_unlock(&s->mu);
    if (v)
        return answer(c, MHD_HTTP_OK, value);

    int found = 0;
    char source[128];
    if (find_pod(s, key, &found, source, sizeof(source)) < 0)
        return answer(c, MHD_HTTP_BAD_GATEWAY, "cannot look the pod up\n");
    pthread_mutex_lock(&s->mu);
    v = lookup(s, key); /* another request may have decided meanwhile */
    const char *from = found && source[0] ? lookup(s, source) : NULL;
    if (!v)
        v = store(s, key, from);
    if (v)
        snprintf(value, sizeof(value), "%s\n", v);
    pthread_mutex_unlock(&s->mu);
    if (!v)
        return answer(c, MHD_HTTP_SERVICE_UNAVAILABLE, "full\n");
    fprintf(stderr, "canary: %s %s: %s\n", found ? "pod" : "key", key,
            from ? "restored, the same process" : "a new process");
    return answer(c, MHD_HTTP_OK, value);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    (void)version;
    (void)upload;
    (void)upload_size;
    (void)con_cls;
    struct server *s = cls;
    if (strcmp(method, "GET") != 0)
        return answer(c, MHD_HTTP_METHOD_NOT_ALLOWED, "GET only\n");
    if (strcmp(url, "/healthz") == 0)
        return answer(c, MHD_HTTP_OK, "ok\n");
    if (strncmp(url, "/canary/", 8) == 0) {
        if (!key_ok(url + 8))
            return answer(c, MHD_HTTP_BAD_REQUEST, "bad key\n");
        return canary(s, c, url + 8);
    }
    return answer(c, MHD_HTTP_NOT_FOUND, "not found\n");
}

static void usage(FILE *f)
{
    fprintf(f, "usage: canary --kubeconfig PATH [--kubectl PATH] [--port N]\n");
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"kubeconfig", required_argument, NULL, 'k'},
        {"kubectl", required_argument, NULL, 'c'},
        {"port", required_argument, NULL, 'p'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct server s = {.kubectl = "kubectl"};
    long port = 0;
    int opt;
    while ((opt = getopt_long(argc, argv, "k:c:p:h", opts, NULL)) != -1) {
        switch (opt) {
        case 'k':
            s.kubeconfig = optarg;
            break;
        case 'c':
            s.kubectl = optarg;
            break;
        case 'p': {
            char *end = NULL;
            port = strtol(optarg, &end, 10);
            if (!end || *end || port < 0 || port > 65535) {
                fprintf(stderr, "canary: --port must be 0..65535\n");
                return 2;
            }
            break;
        }
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (!s.kubeconfig || optind != argc || strchr(s.kubeconfig, '\'') || strchr(s.kubectl, '\'')) {
        usage(stderr);
        return 2;
    }
    s.entries = calloc(MAX_KEYS, sizeof(*s.entries));
    if (!s.entries)
        return 1;
    pthread_mutex_init(&s.mu, NULL);

    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);

    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG,
        (uint16_t)port, NULL, NULL, on_request, &s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30, MHD_OPTION_END);
    int rc = 0;
    if (!d) {
        fprintf(stderr, "canary: cannot listen on 127.0.0.1:%ld\n", port);
        rc = 1;
    } else {
        const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
        printf("port=%u\n", info ? (unsigned)info->port : (unsigned)port);
        fflush(stdout);
        int sig;
        sigwait(&stop, &sig);
        MHD_stop_daemon(d);
    }
    pthread_mutex_destroy(&s.mu);
    free(s.entries);
    return rc;
}
