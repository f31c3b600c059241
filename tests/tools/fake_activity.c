/*
 * fake_activity: stands in for code-server and Prometheus in tests. Both are
 * data sources the controller reads, not the API server, so a small HTTP
 * server answering their documented JSON shapes is enough; Jupyter Server is
 * tested against the real thing.
 *
 *   fake_activity [--port N] [--threads N] [--jupyter-token TOKEN]
 *                 [--gpu-default VALUE]
 *
 * Listens on 127.0.0.1:N (0, the default, picks a free port), prints
 * "port=<n>" on stdout once it accepts connections, and runs until SIGTERM or
 * SIGINT. --gpu-default gives every pod without samples of its own one GPU
 * reading VALUE (the benchmark's pods then answer like real ones).
 *
 * Data endpoints (GET or HEAD):
 *   /<prefix>/healthz       code-server: {"status":"alive"|"expired",
 *                           "lastHeartbeat":<ms>} for that prefix; a prefix
 *                           never set answers expired, lastHeartbeat = the
 *                           server's start time.
 *   .../api/v1/query?query= Prometheus instant query. Reads the namespace="..."
 *                           and pod="..." matchers of the first selector and
 *                           answers a vector with the samples set for that pod
 *                           (none set: an empty vector, Prometheus's "no
 *                           data"). A query it cannot read gets Prometheus's
 *                           error shape with HTTP 400.
 *   /<prefix>/api/status    Jupyter Server, static and idle, for the
 *   /<prefix>/api/kernels   benchmark; "Authorization: token <TOKEN>" (or
 *                           ?token=) is checked only with --jupyter-token.
 *   /<prefix>/checkpoint    POST or PUT: an application asked to write its
 *                           checkpoint (a class's checkpoint.request);
 *                           answers 200 {"message":"checkpoint written"}.
 *
 * Control endpoints (JSON bodies of at most 4 KiB; bad input gets 400 with
 * {"error":"..."}):
 *   PUT    /control/code-server/<prefix>  {"status":"alive"|"expired",
 *                                         "lastHeartbeat":<ms, optional>}
 *                                         or {"heartbeatNow":true}
 *   DELETE /control/code-server/<prefix>  back to the default
 *   PUT    /control/gpu/<ns>/<pod>        {"value":"87.5"} or
 *                                         {"values":["87.5","3"]} (one sample
 *                                         per GPU, strings as Prometheus writes
 *                                         them, "NaN" included; not checked
 *                                         further, so tests can send bad ones)
 *   DELETE /control/gpu/<ns>/<pod>        no samples: "no data"
 *   PUT    /control/mode                  {"delayMs":N,"failStatus":S,
 *                                         "oversizeBody":bool}; replaces the
 *                                         mode (absent members: off). Applies
 *                                         to every data answer: delayed by N
 *                                         ms, answered with status S (300..599,
 *                                         0 off), or padded past the prober's
 *                                         body limit.
 *   GET/DELETE /control/mode              read / reset
 *   GET    /control/stats                 {"requests":N,"control":N,
 *                                         "byKind":{...},"byPath":{...},
 *                                         "pathsNotListed":N,"checkpoint":
 *                                         {"firstAt":ms,"lastAt":ms,
 *                                         "writtenAt":ms}}; data requests
 *                                         only in requests/byKind/byPath;
 *                                         checkpoint times in Unix ms, 0
 *                                         when none
 *   DELETE /control/stats                 zero the counters
 *   GET    /control/code-server/<prefix>, /control/gpu/<ns>/<pod>  read back
 *
 * Every map is bounded, so a runaway test cannot grow the process without
 * limit. Delayed answers park their connection (MHD suspend) and one thread
 * resumes them when due, so a delay costs no worker thread.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "activity/probe_result.h"
#include "util/buf.h"
#include "util/strmap.h"
#include "util/timefmt.h"

#define BODY_MAX 4096                  /* control request bodies */
#define RESPONSE_MAX (8 * 1024 * 1024) /* stats with many paths */
#define PREFIX_MAX 512
#define LABEL_MAX 253 /* a Kubernetes name */
#define GPU_SAMPLES_MAX 8
#define GPU_SAMPLE_LEN 32
#define ENTRIES_MAX 100000 /* code-server prefixes, GPU pods */
#define PATHS_MAX 20000    /* distinct paths counted one by one */
#define DELAY_MAX_MS 600000
#define JSON_WHOLE_MAX 9007199254740992.0 /* 2^53 */

enum kind {
    KIND_HEALTHZ,
    KIND_QUERY,
    KIND_STATUS,
    KIND_KERNELS,
    KIND_CHECKPOINT,
    KIND_OTHER,
    KIND_COUNT
};

static const char *const kind_names[KIND_COUNT] = {"healthz", "query",      "status",
                                                   "kernels", "checkpoint", "other"};

struct heartbeat {
    int alive;
    int64_t last_ms;
};

struct gpu_samples {
    unsigned n;
    char value[GPU_SAMPLES_MAX][GPU_SAMPLE_LEN + 1];
};

struct mode {
    int64_t delay_ms;
    int fail_status;
    int oversize;
};

struct request {
    struct buf body;
    int body_error; /* negative errno: the body did not fit */
    int delayed;    /* the mode's delay has been served (or skipped) */
    int arrived;    /* a checkpoint request's arrival is recorded */
    int64_t due_ms; /* monotonic */
    struct MHD_Connection *conn;
    struct request *next; /* in server.parked */
};

struct server {
    struct MHD_Daemon *daemon;
    const char *jupyter_token; /* borrowed from argv; a secret, never printed */
    const char *gpu_default;   /* borrowed from argv, or NULL */
    int64_t start_ms;
    char start_text[TIMEFMT_RFC3339_SIZE];

    pthread_mutex_t mu;         /* guards the state below, up to the parking lot */
    struct strmap code_servers; /* prefix -> struct heartbeat * */
    struct strmap gpus;         /* "ns/pod" -> struct gpu_samples * */
    struct mode mode;
    uint64_t requests, control, kinds[KIND_COUNT], paths_not_listed;
    /* Checkpoint requests (Unix ms, 0: none): the first and last arrival,
     * and the last answer that said the checkpoint is written. */
    int64_t checkpoint_first_ms, checkpoint_last_ms, checkpoint_written_ms;
    struct strmap paths; /* path -> uint64_t * */

    pthread_mutex_t park_mu; /* guards parked and stopping */
    pthread_cond_t park_cond;
    struct request *parked; /* suspended connections, unordered */
    int stopping;
};

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t unix_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int has_suffix(const char *s, size_t len, const char *suffix)
{
    size_t n = strlen(suffix);
    return len >= n && memcmp(s + len - n, suffix, n) == 0;
}

/* --- responses ------------------------------------------------------------ */

/* Appends s as a JSON string. Bytes outside printable ASCII become '?' so the
 * answer stays valid JSON whatever a path contained. */
static int json_quote(struct buf *b, const char *s)
{
    int r = buf_append(b, "\"", 1);
    for (; r == 0 && *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            r = buf_printf(b, "\\%c", ch);
        else if (ch < 0x20 || ch >= 0x7f)
            r = buf_append(b, "?", 1);
        else
            r = buf_append(b, s, 1);
    }
    return r < 0 ? r : buf_append(b, "\"", 1);
}

static enum MHD_Result send_static(struct MHD_Connection *c, unsigned code, const char *text)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, "Content-Type", "application/json");
    enum MHD_Result ret = MHD_queue_response(c, code, resp);
    MHD_destroy_response(resp);
    return ret;
}

/* Sends b's contents (JSON) and frees b. A failed build (err < 0) becomes a
 * 500 so a test sees the fault instead of a truncated document. */
static enum MHD_Result send_buf(struct MHD_Connection *c, unsigned code, struct buf *b, int err)
{
    char *text = err < 0 ? NULL : buf_steal(b);
    buf_free(b);
    if (!text)
        return send_static(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
                           "{\"error\":\"fake_activity: out of memory building the answer\"}");
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(resp, "Content-Type", "application/json");
    enum MHD_Result ret = MHD_queue_response(c, code, resp);
    MHD_destroy_response(resp);
    return ret;
}

/* {"<member>":"<message>"} with status code. */
static enum MHD_Result send_message(struct MHD_Connection *c, unsigned code, const char *member,
                                    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static enum MHD_Result send_message(struct MHD_Connection *c, unsigned code, const char *member,
                                    const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    struct buf b;
    buf_init(&b, 4096);
    int r = buf_printf(&b, "{\"%s\":", member);
    if (r == 0)
        r = json_quote(&b, msg);
    if (r == 0)
        r = buf_append_str(&b, "}");
    return send_buf(c, code, &b, r);
}

#define send_error(c, code, ...) send_message(c, code, "error", __VA_ARGS__)

/* Prometheus's error shape; errorType follows the status as Prometheus does. */
static enum MHD_Result send_prometheus_error(struct MHD_Connection *c, unsigned code,
                                             const char *msg)
{
    const char *type = code == 400   ? "bad_data"
                       : code == 422 ? "execution"
                       : code == 503 ? "unavailable"
                       : code == 504 ? "timeout"
                                     : "internal";
    struct buf b;
    buf_init(&b, 4096);
    int r = buf_printf(&b, "{\"status\":\"error\",\"errorType\":\"%s\",\"error\":", type);
    if (r == 0)
        r = json_quote(&b, msg);
    if (r == 0)
        r = buf_append_str(&b, "}");
    return send_buf(c, code, &b, r);
}

/* Pads b with spaces past the prober's body limit; trailing whitespace keeps
 * the JSON valid, so only the size can make the probe fail. */
static int pad_oversize(struct buf *b)
{
    char spaces[1024];
    memset(spaces, ' ', sizeof(spaces));
    int r = 0;
    while (r == 0 && b->len <= PROBE_BODY_MAX)
        r = buf_append(b, spaces, sizeof(spaces));
    return r;
}

/* --- state and counters --------------------------------------------------- */

static int is_control(const char *url)
{
    return strncmp(url, "/control/", 9) == 0 || strcmp(url, "/control") == 0;
}

/* Which data endpoint a path names, by its last segments; for healthz,
 * *ret_prefix_len is the length of the prefix before it. */
static enum kind classify(const char *url, size_t len, size_t *ret_prefix_len)
{
    if (has_suffix(url, len, "/api/v1/query"))
        return KIND_QUERY;
    if (has_suffix(url, len, "/healthz")) {
        if (ret_prefix_len)
            *ret_prefix_len = len - strlen("/healthz");
        return KIND_HEALTHZ;
    }
    if (has_suffix(url, len, "/api/status"))
        return KIND_STATUS;
    if (has_suffix(url, len, "/api/kernels"))
        return KIND_KERNELS;
    if (has_suffix(url, len, "/checkpoint"))
        return KIND_CHECKPOINT;
    return KIND_OTHER;
}

static void count_request(struct server *s, const char *url)
{
    pthread_mutex_lock(&s->mu);
    if (is_control(url)) {
        s->control++;
        goto out;
    }
    size_t len = strlen(url);
    enum kind k = classify(url, len, NULL);
    s->requests++;
    s->kinds[k]++;
    uint64_t *n = strmap_get(&s->paths, url);
    if (!n && len <= PREFIX_MAX + 32 && strmap_len(&s->paths) < PATHS_MAX) {
        n = calloc(1, sizeof(*n));
        if (n && strmap_put(&s->paths, url, n, NULL) < 0) {
            free(n);
            n = NULL;
        }
    }
    if (n)
        (*n)++;
    else
        s->paths_not_listed++;
out:
    pthread_mutex_unlock(&s->mu);
}

static void free_values(struct strmap *m)
{
    const char *k;
    void *v;
    for (size_t i = 0; strmap_next(m, &i, &k, &v);)
        free(v);
    strmap_free(m);
    strmap_init(m);
}

/* Prefixes are compared without their outer slashes: "/ns/ws/" is "ns/ws". */
static char *normalise_prefix(const char *p, size_t len)
{
    while (len > 0 && p[0] == '/') {
        p++;
        len--;
    }
    while (len > 0 && p[len - 1] == '/')
        len--;
    return strndup(p, len);
}

static int printable(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
            return 0;
    return 1;
}

/* --- parking delayed answers ------------------------------------------------ */

/* Suspends the connection until the delay has passed. Returns 1 when parked
 * (the handler runs again when it is resumed), 0 when shutting down. */
static int park(struct server *s, struct request *req, int64_t delay_ms)
{
    req->delayed = 1;
    pthread_mutex_lock(&s->park_mu);
    if (s->stopping) {
        pthread_mutex_unlock(&s->park_mu);
        return 0;
    }
    /* Suspend and list under park_mu, so the resumer can never resume a
     * connection before it is suspended. */
    req->due_ms = mono_ms() + delay_ms;
    MHD_suspend_connection(req->conn);
    req->next = s->parked;
    s->parked = req;
    pthread_cond_signal(&s->park_cond);
    pthread_mutex_unlock(&s->park_mu);
    return 1;
}

static void *resumer_main(void *arg)
{
    struct server *s = arg;
    pthread_mutex_lock(&s->park_mu);
    for (;;) {
        int64_t now = mono_ms(), next = INT64_MAX;
        for (struct request **pp = &s->parked; *pp;) {
            struct request *r = *pp;
            if (s->stopping || r->due_ms <= now) {
                *pp = r->next;
                r->next = NULL;
                /* r may be freed by MHD from here on. */
                MHD_resume_connection(r->conn);
            } else {
                if (r->due_ms < next)
                    next = r->due_ms;
                pp = &r->next;
            }
        }
        if (s->stopping)
            break;
        if (next == INT64_MAX) {
            pthread_cond_wait(&s->park_cond, &s->park_mu);
        } else {
            struct timespec ts = {.tv_sec = next / 1000, .tv_nsec = (next % 1000) * 1000000};
            pthread_cond_timedwait(&s->park_cond, &s->park_mu, &ts);
        }
    }
    pthread_mutex_unlock(&s->park_mu);
    return NULL;
}

/* --- data endpoints --------------------------------------------------------- */

static enum MHD_Result answer_healthz(struct server *s, struct MHD_Connection *c, const char *url,
                                      size_t prefix_len, int oversize)
{
    char *prefix = normalise_prefix(url, prefix_len);
    if (!prefix)
        return MHD_NO;
    struct heartbeat hb = {0, s->start_ms};
    pthread_mutex_lock(&s->mu);
    struct heartbeat *set = strmap_get(&s->code_servers, prefix);
    if (set)
        hb = *set;
    pthread_mutex_unlock(&s->mu);
    free(prefix);
    struct buf b;
    buf_init(&b, RESPONSE_MAX);
    int r = buf_printf(&b, "{\"status\":\"%s\",\"lastHeartbeat\":%" PRId64 "}",
                       hb.alive ? "alive" : "expired", hb.last_ms);
    if (r == 0 && oversize)
        r = pad_oversize(&b);
    return send_buf(c, MHD_HTTP_OK, &b, r);
}

static void skip_space(const char **p)
{
    while (**p == ' ' || **p == '\t' || **p == '\n' || **p == '\r')
        (*p)++;
}

/* Reads a PromQL string literal ("...", '...' or `...`) at *p into out
 * (at most LABEL_MAX bytes). Returns NULL or what was wrong. */
static const char *read_label_value(const char **p, char *out)
{
    char quote = **p;
    if (quote != '"' && quote != '\'' && quote != '`')
        return "fake Prometheus: a label value must be a quoted string";
    size_t n = 0;
    for (const char *q = *p + 1;; q++) {
        char ch = *q;
        if (!ch)
            return "fake Prometheus: unterminated label value";
        if (ch == quote) {
            out[n] = '\0';
            *p = q + 1;
            return NULL;
        }
        if (ch == '\\' && quote != '`') {
            ch = *++q;
            if (ch != '\\' && ch != '"' && ch != '\'')
                return "fake Prometheus: unsupported escape in a label value";
        }
        if (n == LABEL_MAX)
            return "fake Prometheus: label value too long";
        out[n++] = ch;
    }
}

/* Finds the first selector ({...}) in q and copies its namespace="..." and
 * pod="..." values. Other matchers are skipped. Returns NULL or what was
 * wrong, in words for Prometheus's error message. */
static const char *read_selector(const char *q, char *ns, char *pod)
{
    const char *p = strchr(q, '{');
    int have_ns = 0, have_pod = 0;
    char value[LABEL_MAX + 1];
    if (!p)
        return "fake Prometheus: the query has no label matchers; it reads namespace=\"...\" and "
               "pod=\"...\"";
    p++;
    for (;;) {
        skip_space(&p);
        if (*p == '}')
            break;
        const char *name = p;
        while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_' ||
               (p > name && *p >= '0' && *p <= '9'))
            p++;
        size_t name_len = (size_t)(p - name);
        if (name_len == 0)
            return "fake Prometheus: expected a label name in the selector";
        skip_space(&p);
        int equal = 0;
        if (p[0] == '=' && p[1] == '~')
            p += 2;
        else if (p[0] == '!' && (p[1] == '=' || p[1] == '~'))
            p += 2;
        else if (p[0] == '=') {
            equal = 1;
            p++;
        } else
            return "fake Prometheus: expected =, !=, =~ or !~ after a label name";
        skip_space(&p);
        const char *err = read_label_value(&p, value);
        if (err)
            return err;
        int is_ns = name_len == 9 && memcmp(name, "namespace", 9) == 0;
        int is_pod = name_len == 3 && memcmp(name, "pod", 3) == 0;
        if ((is_ns || is_pod) && !equal)
            return "fake Prometheus: only reads namespace and pod with =";
        if (is_ns) {
            strcpy(ns, value);
            have_ns = 1;
        } else if (is_pod) {
            strcpy(pod, value);
            have_pod = 1;
        }
        skip_space(&p);
        if (*p == ',')
            p++;
        else if (*p != '}')
            return "fake Prometheus: expected , or } in the selector";
    }
    if (!have_ns || !have_pod)
        return "fake Prometheus: the selector needs both namespace=\"...\" and pod=\"...\"";
    return NULL;
}

static enum MHD_Result answer_query(struct server *s, struct MHD_Connection *c, int oversize)
{
    const char *q = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "query");
    if (!q || !*q)
        return send_prometheus_error(
            c, MHD_HTTP_BAD_REQUEST,
            "invalid parameter \"query\": 1:1: parse error: no expression found in input");
    char ns[LABEL_MAX + 1], pod[LABEL_MAX + 1];
    const char *err = read_selector(q, ns, pod);
    if (err)
        return send_prometheus_error(c, MHD_HTTP_BAD_REQUEST, err);

    struct gpu_samples samples = {0};
    char key[2 * LABEL_MAX + 2];
    snprintf(key, sizeof(key), "%s/%s", ns, pod);
    pthread_mutex_lock(&s->mu);
    struct gpu_samples *set = strmap_get(&s->gpus, key);
    if (set)
        samples = *set;
    pthread_mutex_unlock(&s->mu);
    if (!set && s->gpu_default) {
        samples.n = 1;
        strcpy(samples.value[0], s->gpu_default);
    }

    int64_t now = unix_ms();
    struct buf b;
    buf_init(&b, RESPONSE_MAX);
    int r = buf_append_str(&b, "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\","
                               "\"result\":[");
    for (unsigned i = 0; r == 0 && i < samples.n; i++) {
        r = buf_printf(&b,
                       "%s{\"metric\":{\"__name__\":\"DCGM_FI_DEV_GPU_UTIL\",\"gpu\":\"%u\","
                       "\"namespace\":",
                       i ? "," : "", i);
        if (r == 0)
            r = json_quote(&b, ns);
        if (r == 0)
            r = buf_append_str(&b, ",\"pod\":");
        if (r == 0)
            r = json_quote(&b, pod);
        if (r == 0)
            r = buf_printf(&b, "},\"value\":[%" PRId64 ".%03d,", now / 1000, (int)(now % 1000));
        if (r == 0)
            r = json_quote(&b, samples.value[i]);
        if (r == 0)
            r = buf_append_str(&b, "]}");
    }
    if (r == 0)
        r = buf_append_str(&b, "]}}");
    if (r == 0 && oversize)
        r = pad_oversize(&b);
    return send_buf(c, MHD_HTTP_OK, &b, r);
}

static int jupyter_authorised(const struct server *s, struct MHD_Connection *c)
{
    if (!s->jupyter_token)
        return 1;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (h) {
        if (strncasecmp(h, "token ", 6) == 0)
            h += 6;
        else if (strncasecmp(h, "bearer ", 7) == 0)
            h += 7;
        else
            h = NULL;
    }
    if (h) {
        while (*h == ' ')
            h++;
        if (strcmp(h, s->jupyter_token) == 0)
            return 1;
    }
    const char *q = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "token");
    return q && strcmp(q, s->jupyter_token) == 0;
}

static enum MHD_Result answer_jupyter(struct server *s, struct MHD_Connection *c, enum kind k,
                                      int oversize)
{
    if (!jupyter_authorised(s, c))
        return send_static(c, MHD_HTTP_FORBIDDEN, "{\"message\":\"Forbidden\",\"reason\":null}");
    struct buf b;
    buf_init(&b, RESPONSE_MAX);
    int r;
    if (k == KIND_STATUS)
        r = buf_printf(&b,
                       "{\"started\":\"%s\",\"last_activity\":\"%s\",\"kernels\":1,"
                       "\"connections\":0}",
                       s->start_text, s->start_text);
    else
        r = buf_printf(&b,
                       "[{\"id\":\"6f1c2a4e-0d7b-4c1e-9a53-2f0b8e7d4c11\",\"name\":\"python3\","
                       "\"last_activity\":\"%s\",\"execution_state\":\"idle\",\"connections\":0}]",
                       s->start_text);
    if (r == 0 && oversize)
        r = pad_oversize(&b);
    return send_buf(c, MHD_HTTP_OK, &b, r);
}

static enum MHD_Result answer_data(struct server *s, struct MHD_Connection *c, struct request *req,
                                   const char *url, const char *method)
{
    size_t prefix_len = 0;
    enum kind k = classify(url, strlen(url), &prefix_len);
    if (k == KIND_OTHER)
        return send_message(c, MHD_HTTP_NOT_FOUND, "message", "fake_activity: no such endpoint");
    if (k == KIND_CHECKPOINT && strcmp(method, "POST") != 0 && strcmp(method, "PUT") != 0)
        return send_message(c, MHD_HTTP_METHOD_NOT_ALLOWED, "message",
                            "fake_activity: a checkpoint is asked for with POST or PUT");
    if (k != KIND_CHECKPOINT && strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return send_message(c, MHD_HTTP_METHOD_NOT_ALLOWED, "message",
                            "fake_activity: data endpoints answer GET only");
    if (k == KIND_CHECKPOINT && !req->arrived) {
        req->arrived = 1;
        int64_t now = unix_ms();
        pthread_mutex_lock(&s->mu);
        if (!s->checkpoint_first_ms)
            s->checkpoint_first_ms = now;
        s->checkpoint_last_ms = now;
        pthread_mutex_unlock(&s->mu);
    }

    pthread_mutex_lock(&s->mu);
    struct mode m = s->mode;
    pthread_mutex_unlock(&s->mu);
    if (m.delay_ms > 0 && !req->delayed && park(s, req, m.delay_ms))
        return MHD_YES;
    if (m.fail_status) {
        char msg[64];
        snprintf(msg, sizeof(msg), "fake_activity: failing on purpose with %d", m.fail_status);
        if (k == KIND_QUERY)
            return send_prometheus_error(c, (unsigned)m.fail_status, msg);
        return send_message(c, (unsigned)m.fail_status, "message", "%s", msg);
    }
    switch (k) {
    case KIND_CHECKPOINT: {
        int64_t now = unix_ms();
        pthread_mutex_lock(&s->mu);
        s->checkpoint_written_ms = now;
        pthread_mutex_unlock(&s->mu);
        return send_message(c, MHD_HTTP_OK, "message", "checkpoint written");
    }
    case KIND_QUERY:
        return answer_query(s, c, m.oversize);
    case KIND_HEALTHZ:
        return answer_healthz(s, c, url, prefix_len, m.oversize);
    default:
        return answer_jupyter(s, c, k, m.oversize);
    }
}

/* --- control endpoints ------------------------------------------------------ */

/* Parses the request body as a JSON object whose members are all in
 * allowed (NULL-terminated). Returns the tree or NULL with *ret_err set (to a
 * literal or to errbuf). */
static cJSON *parse_body(const struct request *req, const char *const *allowed, char *errbuf,
                         size_t size, const char **ret_err)
{
    if (req->body_error) {
        *ret_err = "request body larger than 4096 bytes";
        return NULL;
    }
    cJSON *root = cJSON_ParseWithLength(buf_str(&req->body), req->body.len);
    if (!root) {
        *ret_err = "request body is not JSON";
        return NULL;
    }
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        *ret_err = "request body must be a JSON object";
        return NULL;
    }
    for (const cJSON *m = root->child; m; m = m->next) {
        const char *const *a = allowed;
        while (*a && strcmp(*a, m->string) != 0)
            a++;
        if (!*a) {
            snprintf(errbuf, size, "unknown member \"%.64s\"",
                     printable(m->string) ? m->string : "?");
            cJSON_Delete(root);
            *ret_err = errbuf;
            return NULL;
        }
    }
    return root;
}

/* A JSON number that is a whole number in 0..max. */
static int json_whole(const cJSON *v, double max, int64_t *ret)
{
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0 ||
        v->valuedouble > max || v->valuedouble != floor(v->valuedouble))
        return -EINVAL;
    *ret = (int64_t)v->valuedouble;
    return 0;
}

static enum MHD_Result control_code_server(struct server *s, struct MHD_Connection *c,
                                           const struct request *req, const char *rest,
                                           const char *method)
{
    if (strlen(rest) > PREFIX_MAX || !printable(rest))
        return send_error(c, MHD_HTTP_BAD_REQUEST,
                          "prefix must be printable ASCII of at most %d bytes", PREFIX_MAX);
    char *prefix = normalise_prefix(rest, strlen(rest));
    if (!prefix)
        return MHD_NO;
    enum MHD_Result ret;
    struct heartbeat hb = {0, s->start_ms};

    if (strcmp(method, "DELETE") == 0) {
        pthread_mutex_lock(&s->mu);
        free(strmap_remove(&s->code_servers, prefix));
        pthread_mutex_unlock(&s->mu);
        ret = send_static(c, MHD_HTTP_OK, "{}");
        goto out;
    }
    if (strcmp(method, "PUT") == 0) {
        static const char *const allowed[] = {"status", "lastHeartbeat", "heartbeatNow", NULL};
        const char *err = NULL;
        char errbuf[128];
        cJSON *body = parse_body(req, allowed, errbuf, sizeof(errbuf), &err);
        if (!body) {
            ret = send_error(c, MHD_HTTP_BAD_REQUEST, "%s", err);
            goto out;
        }
        const cJSON *now = cJSON_GetObjectItemCaseSensitive(body, "heartbeatNow");
        const cJSON *status = cJSON_GetObjectItemCaseSensitive(body, "status");
        const cJSON *last = cJSON_GetObjectItemCaseSensitive(body, "lastHeartbeat");
        int64_t last_ms = -1;
        if (now && (!cJSON_IsTrue(now) || status || last))
            err = "heartbeatNow must be true and comes alone";
        else if (!now && !cJSON_IsString(status))
            err = "status (\"alive\" or \"expired\") or heartbeatNow is required";
        else if (!now && strcmp(status->valuestring, "alive") != 0 &&
                 strcmp(status->valuestring, "expired") != 0)
            err = "status must be \"alive\" or \"expired\"";
        else if (last && json_whole(last, JSON_WHOLE_MAX, &last_ms) < 0)
            err = "lastHeartbeat must be a whole number of ms in 0..2^53";
        if (err) {
            cJSON_Delete(body);
            ret = send_error(c, MHD_HTTP_BAD_REQUEST, "%s", err);
            goto out;
        }
        pthread_mutex_lock(&s->mu);
        struct heartbeat *set = strmap_get(&s->code_servers, prefix);
        if (!set && strmap_len(&s->code_servers) >= ENTRIES_MAX) {
            pthread_mutex_unlock(&s->mu);
            cJSON_Delete(body);
            ret = send_error(c, MHD_HTTP_BAD_REQUEST, "too many code-server prefixes (%d)",
                             ENTRIES_MAX);
            goto out;
        }
        if (set)
            hb = *set;
        if (now) {
            hb.alive = 1;
            hb.last_ms = unix_ms();
        } else {
            hb.alive = strcmp(status->valuestring, "alive") == 0;
            if (last_ms >= 0)
                hb.last_ms = last_ms;
        }
        cJSON_Delete(body);
        int r = 0;
        if (set) {
            *set = hb;
        } else {
            set = malloc(sizeof(*set));
            if (set)
                *set = hb;
            r = set ? strmap_put(&s->code_servers, prefix, set, NULL) : -ENOMEM;
            if (r < 0)
                free(set);
        }
        pthread_mutex_unlock(&s->mu);
        if (r < 0) {
            ret = send_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
            goto out;
        }
    } else if (strcmp(method, "GET") == 0) {
        pthread_mutex_lock(&s->mu);
        struct heartbeat *set = strmap_get(&s->code_servers, prefix);
        if (set)
            hb = *set;
        pthread_mutex_unlock(&s->mu);
    } else {
        ret = send_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "use GET, PUT or DELETE");
        goto out;
    }
    struct buf b;
    buf_init(&b, 4096);
    int r = buf_append_str(&b, "{\"prefix\":");
    if (r == 0)
        r = json_quote(&b, prefix);
    if (r == 0)
        r = buf_printf(&b, ",\"status\":\"%s\",\"lastHeartbeat\":%" PRId64 "}",
                       hb.alive ? "alive" : "expired", hb.last_ms);
    ret = send_buf(c, MHD_HTTP_OK, &b, r);
out:
    free(prefix);
    return ret;
}

static int valid_label(const char *s, size_t len)
{
    if (len == 0 || len > LABEL_MAX)
        return 0;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f || s[i] == '/' ||
            s[i] == '"' || s[i] == '\\')
            return 0;
    return 1;
}

static const char *read_samples(const cJSON *body, struct gpu_samples *ret)
{
    const cJSON *value = cJSON_GetObjectItemCaseSensitive(body, "value");
    const cJSON *values = cJSON_GetObjectItemCaseSensitive(body, "values");
    struct gpu_samples g = {0};
    if ((value != NULL) == (values != NULL))
        return "give value (a string) or values (an array of strings), not both";
    if (values && (!cJSON_IsArray(values) || cJSON_GetArraySize(values) < 1 ||
                   cJSON_GetArraySize(values) > GPU_SAMPLES_MAX))
        return "values must be an array of 1 to 8 strings";
    for (const cJSON *v = value ? value : values->child; v; v = value ? NULL : v->next) {
        if (!cJSON_IsString(v))
            return "samples are strings, as Prometheus writes them (\"87.5\", \"NaN\")";
        size_t n = strlen(v->valuestring);
        if (n == 0 || n > GPU_SAMPLE_LEN || !printable(v->valuestring))
            return "a sample must be 1 to 32 printable ASCII characters";
        memcpy(g.value[g.n++], v->valuestring, n + 1);
    }
    *ret = g;
    return NULL;
}

static enum MHD_Result control_gpu(struct server *s, struct MHD_Connection *c,
                                   const struct request *req, const char *rest, const char *method)
{
    const char *slash = strchr(rest, '/');
    if (!slash || !valid_label(rest, (size_t)(slash - rest)) ||
        !valid_label(slash + 1, strlen(slash + 1)))
        return send_error(c, MHD_HTTP_BAD_REQUEST,
                          "expected /control/gpu/<namespace>/<pod>, each a name of 1 to %d "
                          "printable characters without /, quotes or spaces",
                          LABEL_MAX);
    const char *key = rest;
    struct gpu_samples g = {0};

    if (strcmp(method, "DELETE") == 0) {
        pthread_mutex_lock(&s->mu);
        free(strmap_remove(&s->gpus, key));
        pthread_mutex_unlock(&s->mu);
        return send_static(c, MHD_HTTP_OK, "{}");
    }
    if (strcmp(method, "PUT") == 0) {
        static const char *const allowed[] = {"value", "values", NULL};
        const char *err = NULL;
        char errbuf[128];
        cJSON *body = parse_body(req, allowed, errbuf, sizeof(errbuf), &err);
        if (body) {
            err = read_samples(body, &g);
            cJSON_Delete(body);
        }
        if (err)
            return send_error(c, MHD_HTTP_BAD_REQUEST, "%s", err);
        pthread_mutex_lock(&s->mu);
        struct gpu_samples *set = strmap_get(&s->gpus, key);
        int r = 0;
        if (set) {
            *set = g;
        } else if (strmap_len(&s->gpus) >= ENTRIES_MAX) {
            r = -ENOSPC;
        } else {
            set = malloc(sizeof(*set));
            if (set)
                *set = g;
            r = set ? strmap_put(&s->gpus, key, set, NULL) : -ENOMEM;
            if (r < 0)
                free(set);
        }
        pthread_mutex_unlock(&s->mu);
        if (r == -ENOSPC)
            return send_error(c, MHD_HTTP_BAD_REQUEST, "too many pods (%d)", ENTRIES_MAX);
        if (r < 0)
            return send_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
    } else if (strcmp(method, "GET") == 0) {
        pthread_mutex_lock(&s->mu);
        struct gpu_samples *set = strmap_get(&s->gpus, key);
        if (set)
            g = *set;
        pthread_mutex_unlock(&s->mu);
    } else {
        return send_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "use GET, PUT or DELETE");
    }
    struct buf b;
    buf_init(&b, 4096);
    int r = buf_append_str(&b, "{\"values\":[");
    for (unsigned i = 0; r == 0 && i < g.n; i++) {
        if (i)
            r = buf_append_str(&b, ",");
        if (r == 0)
            r = json_quote(&b, g.value[i]);
    }
    if (r == 0)
        r = buf_append_str(&b, "]}");
    return send_buf(c, MHD_HTTP_OK, &b, r);
}

static enum MHD_Result control_mode(struct server *s, struct MHD_Connection *c,
                                    const struct request *req, const char *method)
{
    struct mode m = {0};
    if (strcmp(method, "PUT") == 0) {
        static const char *const allowed[] = {"delayMs", "failStatus", "oversizeBody", NULL};
        const char *err = NULL;
        char errbuf[128];
        cJSON *body = parse_body(req, allowed, errbuf, sizeof(errbuf), &err);
        if (body) {
            const cJSON *delay = cJSON_GetObjectItemCaseSensitive(body, "delayMs");
            const cJSON *fail = cJSON_GetObjectItemCaseSensitive(body, "failStatus");
            const cJSON *oversize = cJSON_GetObjectItemCaseSensitive(body, "oversizeBody");
            int64_t status = 0;
            if (delay && json_whole(delay, DELAY_MAX_MS, &m.delay_ms) < 0)
                err = "delayMs must be a whole number in 0..600000";
            else if (fail && (json_whole(fail, 599, &status) < 0 || (status != 0 && status < 300)))
                err = "failStatus must be 0 (off) or an HTTP status in 300..599";
            else if (oversize && !cJSON_IsBool(oversize))
                err = "oversizeBody must be true or false";
            m.fail_status = (int)status;
            m.oversize = cJSON_IsTrue(oversize);
            cJSON_Delete(body);
        }
        if (err)
            return send_error(c, MHD_HTTP_BAD_REQUEST, "%s", err);
        pthread_mutex_lock(&s->mu);
        s->mode = m;
        pthread_mutex_unlock(&s->mu);
    } else if (strcmp(method, "DELETE") == 0) {
        pthread_mutex_lock(&s->mu);
        s->mode = m;
        pthread_mutex_unlock(&s->mu);
    } else if (strcmp(method, "GET") == 0) {
        pthread_mutex_lock(&s->mu);
        m = s->mode;
        pthread_mutex_unlock(&s->mu);
    } else {
        return send_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "use GET, PUT or DELETE");
    }
    struct buf b;
    buf_init(&b, 4096);
    int r = buf_printf(&b, "{\"delayMs\":%" PRId64 ",\"failStatus\":%d,\"oversizeBody\":%s}",
                       m.delay_ms, m.fail_status, m.oversize ? "true" : "false");
    return send_buf(c, MHD_HTTP_OK, &b, r);
}

static enum MHD_Result control_stats(struct server *s, struct MHD_Connection *c, const char *method)
{
    if (strcmp(method, "DELETE") == 0) {
        pthread_mutex_lock(&s->mu);
        s->requests = s->control = s->paths_not_listed = 0;
        s->checkpoint_first_ms = s->checkpoint_last_ms = s->checkpoint_written_ms = 0;
        memset(s->kinds, 0, sizeof(s->kinds));
        free_values(&s->paths);
        pthread_mutex_unlock(&s->mu);
        return send_static(c, MHD_HTTP_OK, "{}");
    }
    if (strcmp(method, "GET") != 0)
        return send_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "use GET or DELETE");
    struct buf b;
    buf_init(&b, RESPONSE_MAX);
    pthread_mutex_lock(&s->mu);
    int r = buf_printf(&b, "{\"requests\":%" PRIu64 ",\"control\":%" PRIu64 ",\"byKind\":{",
                       s->requests, s->control);
    for (int k = 0; r == 0 && k < KIND_COUNT; k++)
        r = buf_printf(&b, "%s\"%s\":%" PRIu64, k ? "," : "", kind_names[k], s->kinds[k]);
    if (r == 0)
        r = buf_append_str(&b, "},\"byPath\":{");
    const char *path;
    void *v;
    int first = 1;
    for (size_t i = 0; r == 0 && strmap_next(&s->paths, &i, &path, &v); first = 0) {
        r = first ? 0 : buf_append_str(&b, ",");
        if (r == 0)
            r = json_quote(&b, path);
        if (r == 0)
            r = buf_printf(&b, ":%" PRIu64, *(uint64_t *)v);
    }
    if (r == 0)
        r = buf_printf(&b,
                       "},\"pathsNotListed\":%" PRIu64 ",\"checkpoint\":{\"firstAt\":%" PRId64
                       ",\"lastAt\":%" PRId64 ",\"writtenAt\":%" PRId64 "}}",
                       s->paths_not_listed, s->checkpoint_first_ms, s->checkpoint_last_ms,
                       s->checkpoint_written_ms);
    pthread_mutex_unlock(&s->mu);
    return send_buf(c, MHD_HTTP_OK, &b, r);
}

static enum MHD_Result answer_control(struct server *s, struct MHD_Connection *c,
                                      const struct request *req, const char *url,
                                      const char *method)
{
    const char *p = url + strlen("/control");
    if (strcmp(p, "/code-server") == 0)
        return control_code_server(s, c, req, "", method);
    if (strncmp(p, "/code-server/", 13) == 0)
        return control_code_server(s, c, req, p + 13, method);
    if (strncmp(p, "/gpu/", 5) == 0)
        return control_gpu(s, c, req, p + 5, method);
    if (strcmp(p, "/mode") == 0)
        return control_mode(s, c, req, method);
    if (strcmp(p, "/stats") == 0)
        return control_stats(s, c, method);
    return send_error(c, MHD_HTTP_NOT_FOUND,
                      "no such control endpoint (code-server/<prefix>, gpu/<ns>/<pod>, mode, "
                      "stats)");
}

/* --- wiring ----------------------------------------------------------------- */

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **req_cls)
{
    (void)version;
    struct server *s = cls;
    struct request *req = *req_cls;
    if (!req) {
        req = calloc(1, sizeof(*req));
        if (!req)
            return MHD_NO;
        buf_init(&req->body, BODY_MAX);
        req->conn = c;
        *req_cls = req;
        count_request(s, url);
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        /* Past the limit the rest is read and dropped; the answer says why. */
        if (!req->body_error) {
            int r = buf_append(&req->body, upload_data, *upload_data_size);
            if (r < 0)
                req->body_error = r;
        }
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (is_control(url))
        return answer_control(s, c, req, url, method);
    return answer_data(s, c, req, url, method);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)c;
    (void)toe;
    struct request *req = *req_cls;
    if (!req)
        return;
    buf_free(&req->body);
    free(req);
    *req_cls = NULL;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: fake_activity [--port N] [--threads N] [--jupyter-token TOKEN]\n"
               "                     [--gpu-default VALUE]\n"
               "Stands in for code-server and Prometheus; see the top of "
               "tests/tools/fake_activity.c.\n");
}

static int parse_uint(const char *s, long min, long max, long *ret)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < min || v > max)
        return -EINVAL;
    *ret = v;
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"port", required_argument, NULL, 'p'},
        {"threads", required_argument, NULL, 't'},
        {"jupyter-token", required_argument, NULL, 'j'},
        {"gpu-default", required_argument, NULL, 'g'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    long port = 0, threads = 2;
    struct server s = {0};
    int opt;
    while ((opt = getopt_long(argc, argv, "p:t:j:g:h", opts, NULL)) != -1) {
        switch (opt) {
        case 'p':
            if (parse_uint(optarg, 0, 65535, &port) < 0) {
                fprintf(stderr, "fake_activity: --port must be 0..65535\n");
                return 2;
            }
            break;
        case 't':
            if (parse_uint(optarg, 1, 64, &threads) < 0) {
                fprintf(stderr, "fake_activity: --threads must be 1..64\n");
                return 2;
            }
            break;
        case 'j':
            if (!*optarg) {
                fprintf(stderr, "fake_activity: --jupyter-token must not be empty\n");
                return 2;
            }
            s.jupyter_token = optarg;
            break;
        case 'g':
            if (!*optarg || strlen(optarg) > GPU_SAMPLE_LEN || !printable(optarg)) {
                fprintf(stderr,
                        "fake_activity: --gpu-default must be 1 to %d printable "
                        "characters\n",
                        GPU_SAMPLE_LEN);
                return 2;
            }
            s.gpu_default = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind != argc) {
        usage(stderr);
        return 2;
    }

    s.start_ms = unix_ms();
    if (timefmt_format_rfc3339(s.start_ms, s.start_text, sizeof(s.start_text)) < 0)
        return 1;
    strmap_init(&s.code_servers);
    strmap_init(&s.gpus);
    strmap_init(&s.paths);
    pthread_mutex_init(&s.mu, NULL);
    pthread_mutex_init(&s.park_mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s.park_cond, &ca);
    pthread_condattr_destroy(&ca);

    /* Every thread started from here on inherits the blocked signals, so
     * only sigwait() below sees them. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);

    pthread_t resumer;
    if (pthread_create(&resumer, NULL, resumer_main, &s) != 0) {
        fprintf(stderr, "fake_activity: cannot start a thread\n");
        return 1;
    }
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    s.daemon = MHD_start_daemon(
        flags, (uint16_t)port, NULL, NULL, on_request, &s, MHD_OPTION_SOCK_ADDR,
        (struct sockaddr *)&addr, MHD_OPTION_THREAD_POOL_SIZE, (unsigned)threads,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)4000, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, &s, MHD_OPTION_END);
    int rc = 0;
    if (!s.daemon) {
        fprintf(stderr, "fake_activity: cannot listen on 127.0.0.1:%ld\n", port);
        rc = 1;
    } else {
        const union MHD_DaemonInfo *info = MHD_get_daemon_info(s.daemon, MHD_DAEMON_INFO_BIND_PORT);
        printf("port=%u\n", info ? (unsigned)info->port : (unsigned)port);
        fflush(stdout);
        int sig;
        sigwait(&stop, &sig);
    }

    /* Parked connections must be resumed before the daemon stops; after
     * stopping is set nothing parks again. */
    pthread_mutex_lock(&s.park_mu);
    s.stopping = 1;
    pthread_cond_signal(&s.park_cond);
    pthread_mutex_unlock(&s.park_mu);
    pthread_join(resumer, NULL);
    if (s.daemon)
        MHD_stop_daemon(s.daemon);
    free_values(&s.code_servers);
    free_values(&s.gpus);
    free_values(&s.paths);
    pthread_cond_destroy(&s.park_cond);
    pthread_mutex_destroy(&s.park_mu);
    pthread_mutex_destroy(&s.mu);
    return rc;
}
