/*
 * The prober's schedule is one min-heap of targets keyed by a due time on
 * the loop's monotonic clock, served by one uv timer, so thousands of
 * targets cost one timer and O(log n) per change. A target's key is the
 * start of its next round while it is idle, and its round's deadline while a
 * round is in flight; so one heap both starts rounds and ends overdue ones.
 *
 * Requests wait for one of max_in_flight slots in one FIFO queue. A target
 * has at most one round at a time and a round at most four requests, so
 * first come, first served is also fair between targets: none can get ahead
 * of another by more than one round.
 *
 * Reentrancy: the result callback may call any prober function. A round's
 * callback is the last thing done for it; the target it names is kept alive
 * until the callback returns even if the callback removes it (its key is
 * the callback's argument), and every caller of a function that may run
 * the callback re-checks p->closing afterwards.
 */
#include "activity/prober.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>
#include <time.h>

#include "activity/code_server.h"
#include "activity/jupyter.h"
#include "activity/prometheus.h"
#include "net/curl_loop.h"
#include "net/http_get.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/secret.h"
#include "util/strmap.h"
#include "util/text.h"

#define DEFAULT_MAX_IN_FLIGHT 64
/* A new or changed target's first round comes within this. */
#define FIRST_ROUND_WITHIN_MS 1000
/* URLs are built from the class's template and a query; far above need. */
#define URL_MAX (64 * 1024)

enum endpoint {
    EP_STATUS,
    EP_KERNELS,
    EP_HEALTHZ,
    EP_GPU,
    EP_COUNT,
};

/* Named as the parsers name them, so every error about one endpoint reads
 * the same. */
static const char *const endpoint_name[EP_COUNT] = {
    [EP_STATUS] = "GET /api/status",
    [EP_KERNELS] = "GET /api/kernels",
    [EP_HEALTHZ] = "GET /healthz",
    [EP_GPU] = "GET /api/v1/query",
};

static const char *const endpoint_source[EP_COUNT] = {
    [EP_STATUS] = JUPYTER_SOURCE,
    [EP_KERNELS] = JUPYTER_SOURCE,
    [EP_HEALTHZ] = CODE_SERVER_SOURCE,
    [EP_GPU] = PROMETHEUS_SOURCE,
};

enum request_state {
    REQ_UNUSED, /* not part of this target's rounds */
    REQ_QUEUED,
    REQ_RUNNING,
    REQ_DONE,
};

struct target;

struct probe_request {
    struct target *t;
    enum endpoint ep;
    enum request_state state;
    TAILQ_ENTRY(probe_request) link; /* in p->queue while QUEUED */
    struct http_get *get;            /* while RUNNING */
    struct probe_result result;      /* once DONE */
};

struct target {
    struct prober *p;
    char *key;
    unsigned kinds;
    char *token; /* a secret: wiped when freed */
    char *url, *prometheus_url, *gpu_query;
    char *urls[EP_COUNT]; /* NULL for endpoints this target does not use */
    int64_t interval_ms, timeout_ms;

    size_t heap_index;
    uint64_t due; /* loop ms: the next round, or the round's deadline */
    int in_round;
    int spread_pending; /* the next gap places the target at a random phase */
    int removed;        /* removed while its callback runs; freed after */

    uint64_t round_start; /* loop ms */
    int64_t probed_at_ms;
    unsigned pending;
    struct probe_request req[EP_COUNT];
};

struct prober {
    uv_loop_t *loop;
    struct curl_loop *curl;
    uv_timer_t timer;
    struct strmap targets;
    struct target **heap;
    size_t heap_len, heap_cap;
    TAILQ_HEAD(probe_queue, probe_request) queue; /* QUEUED requests, oldest first */
    unsigned in_flight;
    unsigned max_in_flight;
    int64_t (*now_ms)(void *data);
    void *now_data;
    prober_result_cb cb;
    void *data;
    struct target *in_callback;
    int closing;
    uint64_t rng;
    uint64_t rounds, rounds_failed, requests;
};

/* ---- small helpers ------------------------------------------------------- */

/* xorshift64*: spreading probes needs no more than this. */
static uint64_t rng_next(struct prober *p)
{
    p->rng ^= p->rng >> 12;
    p->rng ^= p->rng << 25;
    p->rng ^= p->rng >> 27;
    return p->rng * 0x2545F4914F6CDD1DULL;
}

/* Uniform in [lo, hi]. */
static uint64_t rng_between(struct prober *p, uint64_t lo, uint64_t hi)
{
    if (hi <= lo)
        return lo;
    return lo + rng_next(p) % (hi - lo + 1);
}

static int str_eq(const char *a, const char *b)
{
    if (!a || !b)
        return a == b;
    return strcmp(a, b) == 0;
}

static int is_http_url(const char *s)
{
    return s && (strncasecmp(s, "http://", 7) == 0 || strncasecmp(s, "https://", 8) == 0);
}

/* base without trailing slashes, then path. */
static char *join_url(const char *base, const char *path)
{
    size_t n = strlen(base);
    while (n > 0 && base[n - 1] == '/')
        n--;
    struct buf b;
    buf_init(&b, URL_MAX);
    if (buf_append(&b, base, n) < 0 || buf_append_str(&b, path) < 0) {
        buf_free(&b);
        return NULL;
    }
    char *s = buf_steal(&b);
    buf_free(&b);
    return s;
}

static char *gpu_url(const char *prometheus_url, const char *query)
{
    char *base = join_url(prometheus_url, "/api/v1/query?query=");
    if (!base)
        return NULL;
    struct buf b;
    buf_init(&b, URL_MAX);
    char *s = NULL;
    if (buf_append_str(&b, base) == 0 && buf_append_escaped(&b, query) == 0)
        s = buf_steal(&b);
    buf_free(&b);
    free(base);
    return s;
}

/* ---- the schedule -------------------------------------------------------- */

static void heap_swap(struct prober *p, size_t i, size_t j)
{
    struct target *a = p->heap[i];
    p->heap[i] = p->heap[j];
    p->heap[j] = a;
    p->heap[i]->heap_index = i;
    p->heap[j]->heap_index = j;
}

static void heap_up(struct prober *p, size_t i)
{
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (p->heap[parent]->due <= p->heap[i]->due)
            break;
        heap_swap(p, i, parent);
        i = parent;
    }
}

static void heap_down(struct prober *p, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < p->heap_len && p->heap[l]->due < p->heap[m]->due)
            m = l;
        if (r < p->heap_len && p->heap[r]->due < p->heap[m]->due)
            m = r;
        if (m == i)
            return;
        heap_swap(p, i, m);
        i = m;
    }
}

static int heap_reserve(struct prober *p, size_t n)
{
    if (n <= p->heap_cap)
        return 0;
    size_t cap = p->heap_cap ? p->heap_cap * 2 : 64;
    while (cap < n)
        cap *= 2;
    struct target **h = realloc(p->heap, cap * sizeof(*h));
    if (!h)
        return -ENOMEM;
    p->heap = h;
    p->heap_cap = cap;
    return 0;
}

/* Capacity is reserved beforehand, so this cannot fail. */
static void heap_push(struct prober *p, struct target *t)
{
    t->heap_index = p->heap_len++;
    p->heap[t->heap_index] = t;
    heap_up(p, t->heap_index);
}

static void heap_remove(struct prober *p, struct target *t)
{
    size_t i = t->heap_index;
    size_t last = --p->heap_len;
    if (i != last) {
        heap_swap(p, i, last);
        heap_down(p, i);
        heap_up(p, i);
    }
    t->heap_index = SIZE_MAX;
}

static void heap_fix(struct prober *p, struct target *t)
{
    heap_down(p, t->heap_index);
    heap_up(p, t->heap_index);
}

static void on_timer(uv_timer_t *timer);

/* Wakes at the earliest due time, or at once when a slot is free for a
 * queued request. */
static void arm_timer(struct prober *p)
{
    if (p->closing)
        return;
    uint64_t now = uv_now(p->loop);
    uint64_t delay = UINT64_MAX;
    if (p->heap_len > 0)
        delay = p->heap[0]->due > now ? p->heap[0]->due - now : 0;
    if (!TAILQ_EMPTY(&p->queue) && p->in_flight < p->max_in_flight)
        delay = 0;
    if (delay == UINT64_MAX)
        uv_timer_stop(&p->timer);
    else
        uv_timer_start(&p->timer, on_timer, delay, 0);
}

/* ---- targets ------------------------------------------------------------- */

static void target_free(struct target *t)
{
    if (!t)
        return;
    secret_free_str(t->token);
    free(t->key);
    free(t->url);
    free(t->prometheus_url);
    free(t->gpu_query);
    for (int i = 0; i < EP_COUNT; i++)
        free(t->urls[i]);
    free(t);
}

static int strdup_opt(const char *s, char **ret)
{
    *ret = NULL;
    if (!s)
        return 0;
    *ret = strdup(s);
    return *ret ? 0 : -ENOMEM;
}

static int target_valid(const struct probe_target *t)
{
    const unsigned all = PROBE_JUPYTER | PROBE_CODE_SERVER | PROBE_GPU;
    if ((t->kinds & ~all) || t->interval_ms <= 0 || t->timeout_ms <= 0)
        return 0;
    if ((t->kinds & (PROBE_JUPYTER | PROBE_CODE_SERVER)) && !is_http_url(t->url))
        return 0;
    if ((t->kinds & PROBE_GPU) &&
        (!is_http_url(t->prometheus_url) || !t->gpu_query || !t->gpu_query[0]))
        return 0;
    return 1;
}

static int target_same(const struct target *a, const struct probe_target *b)
{
    return a->kinds == b->kinds && a->interval_ms == b->interval_ms &&
           a->timeout_ms == b->timeout_ms && str_eq(a->url, b->url) && str_eq(a->token, b->token) &&
           str_eq(a->prometheus_url, b->prometheus_url) && str_eq(a->gpu_query, b->gpu_query);
}

static struct target *target_new(struct prober *p, const char *key, const struct probe_target *src)
{
    struct target *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    t->p = p;
    t->kinds = src->kinds;
    t->interval_ms = src->interval_ms;
    t->timeout_ms = src->timeout_ms;
    t->heap_index = SIZE_MAX;
    int e = strdup_opt(key, &t->key);
    if (e == 0)
        e = strdup_opt(src->url, &t->url);
    if (e == 0)
        e = strdup_opt(src->token, &t->token);
    if (e == 0)
        e = strdup_opt(src->prometheus_url, &t->prometheus_url);
    if (e == 0)
        e = strdup_opt(src->gpu_query, &t->gpu_query);
    if (e == 0 && (t->kinds & PROBE_JUPYTER)) {
        if (!(t->urls[EP_STATUS] = join_url(t->url, "/api/status")) ||
            /* Listing kernels counts as activity on Jupyter Server unless
             * asked not to; /api/status never does. */
            !(t->urls[EP_KERNELS] = join_url(t->url, "/api/kernels?no_track_activity=1")))
            e = -ENOMEM;
    }
    if (e == 0 && (t->kinds & PROBE_CODE_SERVER) &&
        !(t->urls[EP_HEALTHZ] = join_url(t->url, "/healthz")))
        e = -ENOMEM;
    if (e == 0 && (t->kinds & PROBE_GPU) &&
        !(t->urls[EP_GPU] = gpu_url(t->prometheus_url, t->gpu_query)))
        e = -ENOMEM;
    if (e < 0) {
        target_free(t);
        return NULL;
    }
    for (int i = 0; i < EP_COUNT; i++) {
        t->req[i].t = t;
        t->req[i].ep = (enum endpoint)i;
        t->req[i].state = t->urls[i] ? REQ_DONE : REQ_UNUSED;
    }
    return t;
}

/* ---- requests ------------------------------------------------------------ */

/* Stops whatever of t's round is queued or running; no result follows. */
static void round_cancel(struct target *t)
{
    struct prober *p = t->p;
    for (int i = 0; i < EP_COUNT; i++) {
        struct probe_request *r = &t->req[i];
        if (r->state == REQ_QUEUED) {
            TAILQ_REMOVE(&p->queue, r, link);
        } else if (r->state == REQ_RUNNING) {
            http_get_cancel(r->get);
            r->get = NULL;
            p->in_flight--;
        }
        if (r->state != REQ_UNUSED)
            r->state = REQ_DONE;
    }
    t->pending = 0;
    t->in_round = 0;
}

/* Gap from one round's start to the next. The first gap after a (re)start
 * is drawn from the whole interval, so targets created together (all of
 * them, when the controller starts) are spread evenly over it after their
 * first round; later gaps are the interval less up to 5%, so the phases
 * stay spread and never drift past the interval. */
static uint64_t next_gap(struct target *t)
{
    uint64_t interval = (uint64_t)t->interval_ms;
    if (t->spread_pending) {
        t->spread_pending = 0;
        return rng_between(t->p, interval / 10, interval);
    }
    return interval - rng_between(t->p, 0, interval / 20);
}

/* Merges the round, schedules the next one and reports. The caller must
 * not touch t afterwards, and must re-check p->closing. */
static void round_finish(struct target *t)
{
    struct prober *p = t->p;
    struct probe_result merged = {0};
    for (int i = 0; i < EP_COUNT; i++)
        if (t->req[i].state != REQ_UNUSED)
            probe_result_merge(&merged, &t->req[i].result);
    t->in_round = 0;
    p->rounds++;
    if (!merged.ok)
        p->rounds_failed++;
    uint64_t now = uv_now(p->loop);
    uint64_t next = t->round_start + next_gap(t);
    t->due = next > now ? next : now;
    heap_fix(p, t);

    p->in_callback = t;
    p->cb(p->data, t->key, &merged, t->probed_at_ms);
    p->in_callback = NULL;
    if (t->removed)
        target_free(t);
}

/* One request of t's round has its result. */
static void request_done(struct probe_request *r)
{
    struct target *t = r->t;
    r->state = REQ_DONE;
    if (--t->pending == 0)
        round_finish(t);
}

/* What a non-2xx answer says; quotes the body only when it cannot be
 * echoing the token back. */
static void fail_http(struct probe_request *r, const struct http_get_result *res)
{
    struct target *t = r->t;
    const char *src = endpoint_source[r->ep];
    const char *ep = endpoint_name[r->ep];
    if (r->ep == EP_STATUS || r->ep == EP_KERNELS) {
        if (res->http_code == 401 || res->http_code == 403) {
            probe_result_fail(&r->result, src, "%s: unauthorized (check the token)", ep);
            return;
        }
    }
    char excerpt[TEXT_EXCERPT_SIZE(PROBE_EXCERPT_MAX)];
    excerpt[0] = '\0';
    if (!t->token || !t->token[0] || !memmem(res->body, res->body_len, t->token, strlen(t->token)))
        text_excerpt(res->body, res->body_len, PROBE_EXCERPT_MAX, excerpt, sizeof(excerpt));
    if (excerpt[0])
        probe_result_fail(&r->result, src, "%s: HTTP %ld: \"%s\"", ep, res->http_code, excerpt);
    else
        probe_result_fail(&r->result, src, "%s: HTTP %ld", ep, res->http_code);
}

static void read_answer(struct probe_request *r, const struct http_get_result *res)
{
    const char *src = endpoint_source[r->ep];
    const char *ep = endpoint_name[r->ep];
    if (res->status < 0) {
        probe_result_fail(&r->result, src, "%s: %s", ep, res->error);
        return;
    }
    if (res->http_code < 200 || res->http_code > 299) {
        fail_http(r, res);
        return;
    }
    switch (r->ep) {
    case EP_STATUS:
        jupyter_parse_status(res->body, res->body_len, &r->result);
        break;
    case EP_KERNELS:
        jupyter_parse_kernels(res->body, res->body_len, &r->result);
        break;
    case EP_HEALTHZ:
        code_server_parse_healthz(res->body, res->body_len, &r->result);
        break;
    case EP_GPU:
        prometheus_parse_gpu_util(res->body, res->body_len, &r->result);
        break;
    case EP_COUNT:
        break;
    }
}

static void pump(struct prober *p);

static void on_answer(void *data, const struct http_get_result *res)
{
    struct probe_request *r = data;
    struct prober *p = r->t->p;
    r->get = NULL; /* http_get frees it after this call */
    p->in_flight--;
    p->requests++;
    read_answer(r, res);
    request_done(r);
    if (p->closing)
        return;
    pump(p);
    arm_timer(p);
}

static int request_start(struct probe_request *r, uint64_t remaining_ms)
{
    struct target *t = r->t;
    struct prober *p = t->p;
    const char *headers[3] = {"Accept: application/json", NULL, NULL};
    struct buf auth;
    buf_init(&auth, 64 * 1024);
    int e = 0;
    /* The token goes to the Jupyter endpoints and nowhere else. */
    if ((r->ep == EP_STATUS || r->ep == EP_KERNELS) && t->token && t->token[0]) {
        e = buf_printf(&auth, "Authorization: token %s", t->token);
        headers[1] = buf_str(&auth);
    }
    if (e == 0) {
        struct http_get_request req = {
            .url = t->urls[r->ep],
            .headers = headers,
            .timeout_ms = (int64_t)remaining_ms,
            .max_body = PROBE_BODY_MAX,
        };
        e = http_get_start(p->curl, &req, on_answer, r, &r->get);
    }
    secret_buf_free(&auth);
    return e;
}

/* Starts queued requests while slots are free. */
static void pump(struct prober *p)
{
    while (!p->closing && !TAILQ_EMPTY(&p->queue) && p->in_flight < p->max_in_flight) {
        struct probe_request *r = TAILQ_FIRST(&p->queue);
        struct target *t = r->t;
        TAILQ_REMOVE(&p->queue, r, link);
        uint64_t now = uv_now(p->loop);
        uint64_t deadline = t->round_start + (uint64_t)t->timeout_ms;
        const char *src = endpoint_source[r->ep];
        const char *ep = endpoint_name[r->ep];
        if (deadline <= now) {
            probe_result_fail(&r->result, src,
                              "%s: timed out after %lld ms waiting for a free request slot", ep,
                              (long long)t->timeout_ms);
            request_done(r);
            continue;
        }
        int e = request_start(r, deadline - now);
        if (e < 0) {
            probe_result_fail(&r->result, src, "%s: could not start the request: %s", ep,
                              strerror(-e));
            request_done(r);
            continue;
        }
        r->state = REQ_RUNNING;
        p->in_flight++;
    }
}

static void round_start(struct target *t)
{
    struct prober *p = t->p;
    uint64_t now = uv_now(p->loop);
    t->in_round = 1;
    t->round_start = now;
    t->probed_at_ms = p->now_ms(p->now_data);
    t->pending = 0;
    for (int i = 0; i < EP_COUNT; i++) {
        struct probe_request *r = &t->req[i];
        if (r->state == REQ_UNUSED)
            continue;
        probe_result_init(&r->result, endpoint_source[i]);
        r->state = REQ_QUEUED;
        TAILQ_INSERT_TAIL(&p->queue, r, link);
        t->pending++;
    }
    t->due = now + (uint64_t)t->timeout_ms;
    heap_fix(p, t);
}

/* The round's deadline passed: whatever has not answered has failed. */
static void round_expire(struct target *t)
{
    struct prober *p = t->p;
    for (int i = 0; i < EP_COUNT; i++) {
        struct probe_request *r = &t->req[i];
        const char *src = endpoint_source[i];
        const char *ep = endpoint_name[i];
        if (r->state == REQ_QUEUED) {
            TAILQ_REMOVE(&p->queue, r, link);
            probe_result_fail(&r->result, src,
                              "%s: timed out after %lld ms waiting for a free request slot", ep,
                              (long long)t->timeout_ms);
        } else if (r->state == REQ_RUNNING) {
            http_get_cancel(r->get);
            r->get = NULL;
            p->in_flight--;
            probe_result_fail(&r->result, src, "%s: timed out after %lld ms", ep,
                              (long long)t->timeout_ms);
        } else {
            continue;
        }
        r->state = REQ_DONE;
        t->pending--;
    }
    round_finish(t);
}

static void on_timer(uv_timer_t *timer)
{
    struct prober *p = timer->data;
    uint64_t now = uv_now(p->loop);
    while (!p->closing && p->heap_len > 0 && p->heap[0]->due <= now) {
        struct target *t = p->heap[0];
        if (t->in_round)
            round_expire(t);
        else
            round_start(t);
    }
    pump(p);
    arm_timer(p);
}

/* ---- public -------------------------------------------------------------- */

int prober_new(uv_loop_t *loop, const struct prober_options *opts, prober_result_cb cb, void *data,
               struct prober **ret_prober)
{
    if (!loop || !cb || !ret_prober)
        return -EINVAL;
    struct prober *p = calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    p->loop = loop;
    TAILQ_INIT(&p->queue);
    p->cb = cb;
    p->data = data;
    p->max_in_flight = opts && opts->max_in_flight ? opts->max_in_flight : DEFAULT_MAX_IN_FLIGHT;
    p->now_ms = opts && opts->now_ms ? opts->now_ms : clock_unix_ms_cb;
    p->now_data = opts ? opts->now_data : NULL;
    p->rng = uv_hrtime() ^ (uint64_t)(uintptr_t)p;
    if (p->rng == 0)
        p->rng = 0x9E3779B97F4A7C15ULL;
    strmap_init(&p->targets);
    int e = curl_loop_new(loop, &p->curl);
    if (e < 0) {
        free(p);
        return e;
    }
    /* Idle connections kept for reuse (Prometheus above all): enough for
     * every slot twice over, and never one per target, which for thousands
     * of targets would be thousands of idle descriptors. */
    unsigned keep = p->max_in_flight > UINT_MAX / 2 ? UINT_MAX : p->max_in_flight * 2;
    curl_multi_setopt(curl_loop_multi(p->curl), CURLMOPT_MAXCONNECTS, (long)keep);
    uv_timer_init(loop, &p->timer);
    p->timer.data = p;
    *ret_prober = p;
    return 0;
}

static void timer_closed(uv_handle_t *h)
{
    free(h->data);
}

void prober_close(struct prober *p)
{
    if (!p || p->closing)
        return;
    p->closing = 1;
    const char *key;
    void *value;
    for (size_t i = 0; strmap_next(&p->targets, &i, &key, &value);) {
        struct target *t = value;
        round_cancel(t);
        if (t == p->in_callback)
            t->removed = 1; /* freed once its callback returns */
        else
            target_free(t);
    }
    strmap_free(&p->targets);
    free(p->heap);
    p->heap = NULL;
    p->heap_len = p->heap_cap = 0;
    TAILQ_INIT(&p->queue);
    curl_loop_close(p->curl);
    p->curl = NULL;
    uv_close((uv_handle_t *)&p->timer, timer_closed);
}

int prober_set(struct prober *p, const char *key, const struct probe_target *t)
{
    if (!p || !key || !t || p->closing)
        return -EINVAL;
    if (t->kinds == 0) {
        prober_remove(p, key);
        return 0;
    }
    if (!target_valid(t))
        return -EINVAL;
    struct target *old = strmap_get(&p->targets, key);
    if (old && target_same(old, t))
        return 0;
    struct target *n = target_new(p, key, t);
    if (!n)
        return -ENOMEM;
    if (heap_reserve(p, p->heap_len + 1) < 0 || strmap_put(&p->targets, key, n, NULL) < 0) {
        target_free(n);
        return -ENOMEM;
    }
    if (old) {
        round_cancel(old);
        heap_remove(p, old);
        if (old == p->in_callback)
            old->removed = 1;
        else
            target_free(old);
    }
    uint64_t within = (uint64_t)t->interval_ms < FIRST_ROUND_WITHIN_MS ? (uint64_t)t->interval_ms
                                                                       : FIRST_ROUND_WITHIN_MS;
    n->due = uv_now(p->loop) + rng_between(p, 0, within - 1);
    n->spread_pending = 1;
    heap_push(p, n);
    arm_timer(p);
    return 0;
}

void prober_remove(struct prober *p, const char *key)
{
    if (!p || !key || p->closing)
        return;
    struct target *t = strmap_remove(&p->targets, key);
    if (!t)
        return;
    round_cancel(t);
    heap_remove(p, t);
    if (t == p->in_callback)
        t->removed = 1;
    else
        target_free(t);
    arm_timer(p); /* slots may have come free */
}

int prober_probe_now(struct prober *p, const char *key)
{
    if (!p || !key || p->closing)
        return -ENOENT;
    struct target *t = strmap_get(&p->targets, key);
    if (!t)
        return -ENOENT;
    if (t->in_round)
        return 0;
    t->due = uv_now(p->loop);
    heap_fix(p, t);
    arm_timer(p);
    return 0;
}

void prober_get_stats(const struct prober *p, struct prober_stats *ret_stats)
{
    struct prober_stats s = {0};
    if (p) {
        s.rounds = p->rounds;
        s.rounds_failed = p->rounds_failed;
        s.requests = p->requests;
        s.targets = (unsigned)strmap_len(&p->targets);
        s.in_flight = p->in_flight;
    }
    *ret_stats = s;
}
