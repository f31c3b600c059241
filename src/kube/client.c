/*
 * The API client: requests on a curl_loop (libcurl's multi interface driven
 * by the libuv loop).
 *
 * A request moves through these states:
 *   QUEUED   waiting for the client-side token bucket (a FIFO per priority,
 *            one timer)
 *   AUTH     waiting for a credential (token file read, exec plugin)
 *   RUNNING  an easy handle on the curl_loop, which owns it
 *   DONE     its callback is running
 * and is freed after its callback has run, or when it is cancelled.
 */
#include "kube/client.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "kube/credentials.h"
#include "net/curl_loop.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/ratelimit.h"
#include "util/secret.h"

#define ERROR_BODY_MAX (64 * 1024)

enum request_state {
    REQUEST_QUEUED,
    REQUEST_AUTH,
    REQUEST_RUNNING,
    REQUEST_FAILED, /* failed before reaching curl; the callback runs from the loop */
    REQUEST_DONE,   /* its callback is running */
};

struct kube_request {
    struct kube_client *client;
    TAILQ_ENTRY(kube_request) link; /* in client->queued, ->active or ->failed */
    enum request_state state;
    int cancelled;
    int in_write; /* a watch's on_bytes is on the stack */
    int auth_retried;
    const char *method;
    char *url;
    char *body;
    size_t body_len;
    const char *content_type;
    int is_watch;
    int holds_slot; /* counted in client->busy (not a watch; started, not yet freed) */
    int raw;        /* kube_get_path(): the answer is passed as bytes */
    int is_list;    /* kube_list(): a large answer, see LIST_RECEIVE_BUFFER */

    /* "The poke" */
    int is_poke;                /* the client's own GET /version */
    uint64_t received;          /* body bytes so far */
    uint64_t received_at_check; /* ... at the last stall check */
    int filled;                 /* a watch received bytes since its last poke */

    long timeout_ms;
    enum kube_priority priority;
    uint64_t queued_at_ms;
    CURL *easy;                 /* owned by the curl_loop while RUNNING */
    struct curl_slist *headers; /* until handed to the curl_loop */
    struct buf response;
    int too_big;
    int stream_error;
    kube_response_cb cb;
    kube_stream_cb on_bytes;
    void *data;
    int fail_status;
    char errbuf[CURL_ERROR_SIZE]; /* curl's words, or why the request failed early */
};

TAILQ_HEAD(request_list, kube_request);

struct kube_client {
    uv_loop_t *loop;
    struct curl_loop *curl;
    uv_timer_t rate_timer;
    uv_timer_t reap_timer;
    uv_timer_t stall_timer;
    unsigned open_handles;
    int closing;
    struct kube_credentials *creds;
    char *server;
    char *ns;
    char *user_agent;
    struct buf ca, cert, key;
    int insecure;
    struct priority_bucket bucket;
    struct kube_client_options opts;
    struct request_list queued[KUBE_PRIORITIES];
    unsigned n_queued[KUBE_PRIORITIES];
    struct request_list active;
    struct request_list failed;
    uint64_t sent;
    uint64_t dropped;
    unsigned in_flight;
    unsigned busy; /* requests other than watches started and not yet ended: at most
                      opts.max_in_flight, so that they share one HTTP/2 connection */

    struct kube_request *poke; /* in flight, or NULL ("The poke") */
    uint64_t pokes;
};

static void on_rate_timer(uv_timer_t *t);

/* A request that held one of the max_in_flight slots gives it back: the
 * next queued request may start. */
static void release_slot(struct kube_request *r)
{
    struct kube_client *c = r->client;
    if (!r->holds_slot)
        return;
    r->holds_slot = 0;
    c->busy--;
    if (!c->closing)
        uv_timer_start(&c->rate_timer, on_rate_timer, 0, 0);
}

/* A RUNNING request's easy handle and headers belong to the curl_loop. */
static void request_free(struct kube_request *r)
{
    if (!r)
        return;
    release_slot(r);
    if (r->easy && r->state != REQUEST_RUNNING && r->state != REQUEST_DONE)
        curl_easy_cleanup(r->easy);
    curl_loop_free_headers(r->headers); /* may hold the bearer token */
    free(r->url);
    free(r->body);
    buf_free(&r->response);
    free(r);
}

/* Frees the client once the last of its uv handles has closed. */
static void client_free(struct kube_client *c)
{
    kube_credentials_free(c->creds);
    free(c->server);
    free(c->ns);
    free(c->user_agent);
    buf_free(&c->ca);
    buf_free(&c->cert);
    secret_buf_free(&c->key);
    free(c);
}

static void handle_closed(uv_handle_t *h)
{
    struct kube_client *c = h->data;
    if (--c->open_handles == 0)
        client_free(c);
}

/* ---- responses ----------------------------------------------------------- */

static void stall_watch(struct kube_client *c);

static int on_write(void *data, const char *ptr, size_t n)
{
    struct kube_request *r = data;
    r->received += n;
    if (r->is_watch && n > 0)
        r->filled = 1;
    stall_watch(r->client);
    if (r->is_watch) {
        long code = 0;
        curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &code);
        if (code >= 200 && code < 300) {
            r->in_write = 1;
            int e = r->on_bytes(r->data, ptr, n);
            r->in_write = 0;
            if (r->cancelled) {
                /* Cancelled from on_bytes (or the client closed): it was left
                 * for us to free, the curl_loop has let go already. */
                request_free(r);
                return -1;
            }
            if (e < 0) {
                r->stream_error = e;
                return -1;
            }
            return 0;
        }
    }
    int e = buf_append(&r->response, ptr, n);
    if (e == -ENOBUFS) {
        r->too_big = 1;
        return -1;
    }
    return e < 0 ? -1 : 0;
}

static void request_submit(struct kube_request *r);

/* Builds the response, calls back, frees. The request is already off every
 * list; its easy handle is the curl_loop's and valid during this call. */
static void request_finish(struct kube_request *r, CURLcode code, const char *error)
{
    struct kube_client *c = r->client;
    struct kube_response resp = {0};
    char transport[CURL_ERROR_SIZE + 64];

    if (r->easy)
        curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &resp.http_code);

    if (r->stream_error) {
        resp.status = r->stream_error;
    } else if (r->too_big) {
        resp.status = -EFBIG;
        snprintf(transport, sizeof(transport), "response larger than %zu bytes", r->response.max);
        resp.transport_error = transport;
    } else if (code != CURLE_OK) {
        resp.status = curl_loop_errno(code);
        snprintf(transport, sizeof(transport), "%s%s",
                 resp.status == -EPROTO ? "TLS handshake failed: " : "", error);
        resp.transport_error = transport;
        resp.http_code = 0;
    } else if (resp.http_code >= 200 && resp.http_code < 300) {
        if (r->raw) {
            resp.raw = buf_str(&r->response);
            resp.raw_len = r->response.len;
        } else if (r->response.len > 0) {
            resp.body = cJSON_ParseWithLength(r->response.data, r->response.len);
            if (!resp.body) {
                resp.status = -EBADMSG;
                resp.transport_error = "response is not valid JSON";
            }
        }
    } else {
        resp.status = -EIO;
        if (kube_api_error_parse(resp.http_code, r->response.data, r->response.len, &resp.error) <
            0)
            resp.status = -ENOMEM;
        if (resp.http_code == 401 && !r->auth_retried && !c->closing) {
            /* A rotated token or an expired plugin credential: refresh once. */
            kube_credentials_invalidate(c->creds);
            kube_api_error_clear(&resp.error);
            r->auth_retried = 1;
            release_slot(r);
            r->easy = NULL; /* the curl_loop cleans it up after this call */
            buf_reset(&r->response);
            r->errbuf[0] = '\0';
            request_submit(r);
            return;
        }
    }

    r->state = REQUEST_DONE;
    if (r->cb)
        r->cb(r->data, &resp);
    cJSON_Delete(resp.body);
    kube_api_error_clear(&resp.error);
    request_free(r);
}

static void on_done(void *data, CURL *easy, CURLcode code, const char *error)
{
    (void)easy;
    struct kube_request *r = data;
    struct kube_client *c = r->client;
    TAILQ_REMOVE(&c->active, r, link);
    if (!r->is_poke)
        c->in_flight--;
    request_finish(r, code, error);
}

/* ---- starting requests --------------------------------------------------- */

static void on_reap_timer(uv_timer_t *t);

/* A failure before curl ran may be found while the caller is still inside
 * kube_get() and friends; the callback is delivered from the loop instead, so
 * a caller never sees its callback before the call has returned. */
static void request_fail(struct kube_request *r, int status, const char *why)
{
    struct kube_client *c = r->client;
    r->state = REQUEST_FAILED;
    r->fail_status = status;
    if (snprintf(r->errbuf, sizeof(r->errbuf), "%s", why) >= (int)sizeof(r->errbuf))
        memcpy(r->errbuf + sizeof(r->errbuf) - 4, "...", 4); /* a cut message says so */
    TAILQ_INSERT_TAIL(&c->failed, r, link);
    uv_timer_start(&c->reap_timer, on_reap_timer, 0, 0);
}

static int add_header(struct kube_request *r, const char *h)
{
    struct curl_slist *l = curl_slist_append(r->headers, h);
    if (!l)
        return -ENOMEM;
    r->headers = l;
    return 0;
}

/* Receive buffers of lists and watches. All calls share one HTTP/2
 * connection, and in libcurl 7.88 a stream's DATA goes into its transfer's
 * receive buffer (16 KiB by default) as the connection is read, 32 KiB at a
 * time; a frame that does not fit pauses the connection, which can leave the
 * end of an answer unread until the connection brings new bytes ("The poke"
 * below). At a restart of 10,000 workspaces, list pages of Workspaces (1 MB
 * and more before compression) stalled so until their 30 s timeout
 * (docs/benchmarks.md). A buffer of two reads cannot overflow while its
 * transfer reads; a list's, several reads deep, holds what arrives while
 * others read, so the pause is rare and the poke seldom needed. A list's
 * buffer lives only while the list runs. */
#define LIST_RECEIVE_BUFFER (256L * 1024)
#define WATCH_RECEIVE_BUFFER (64L * 1024)

/* A receive buffer asked for in the options: the default when not set,
 * at most what libcurl takes. */
static long receive_buffer(long asked, long dflt)
{
    if (asked <= 0)
        return dflt;
    return asked < CURL_MAX_READ_SIZE ? asked : CURL_MAX_READ_SIZE;
}

static int request_setup_easy(struct kube_request *r, const struct kube_credential *cred)
{
    struct kube_client *c = r->client;
    CURL *e = curl_easy_init();
    if (!e)
        return -ENOMEM;
    r->easy = e;
    int err = add_header(r, r->raw ? "Accept: */*" : "Accept: application/json");
    if (err == 0 && r->content_type) {
        char h[128];
        snprintf(h, sizeof(h), "Content-Type: %s", r->content_type);
        err = add_header(r, h);
    }
    if (err == 0 && cred && cred->token) {
        struct buf h;
        buf_init(&h, 64 * 1024);
        err = buf_printf(&h, "Authorization: Bearer %s", cred->token);
        if (err == 0)
            err = add_header(r, buf_str(&h));
        secret_buf_free(&h);
    }
    if (err < 0)
        return err;

    curl_easy_setopt(e, CURLOPT_URL, r->url);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, r->headers);
    curl_easy_setopt(e, CURLOPT_USERAGENT, c->user_agent);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "https,http");
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, c->opts.connect_timeout_ms);
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, ""); /* gzip for big lists */
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L); /* share one HTTP/2 connection */
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, r->timeout_ms);
    if (r->is_list || r->is_watch)
        curl_easy_setopt(e, CURLOPT_BUFFERSIZE,
                         r->is_list ? c->opts.list_buffer_bytes : c->opts.watch_buffer_bytes);
    if (strcmp(r->method, "GET") != 0)
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r->method);
    if (r->body) {
        /* Copied: a request cancelled from inside libcurl is freed before
         * the curl_loop lets go of its handle. */
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)r->body_len);
        curl_easy_setopt(e, CURLOPT_COPYPOSTFIELDS, r->body);
    }

    if (c->ca.len) {
        struct curl_blob ca = {c->ca.data, c->ca.len, CURL_BLOB_NOCOPY};
        curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &ca);
    }
    const char *cert = c->cert.len ? c->cert.data : NULL;
    size_t cert_len = c->cert.len;
    const char *key = c->key.len ? c->key.data : NULL;
    size_t key_len = c->key.len;
    if (cred && cred->cert_pem && cred->key_pem) {
        cert = cred->cert_pem;
        cert_len = cred->cert_pem_len;
        key = cred->key_pem;
        key_len = cred->key_pem_len;
    }
    if (cert && key) {
        /* COPY: an exec credential may be replaced before the handshake. */
        struct curl_blob cb = {(void *)cert, cert_len, CURL_BLOB_COPY};
        struct curl_blob kb = {(void *)key, key_len, CURL_BLOB_COPY};
        curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
        curl_easy_setopt(e, CURLOPT_SSLCERT_BLOB, &cb);
        curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
        curl_easy_setopt(e, CURLOPT_SSLKEY_BLOB, &kb);
    }
    if (c->insecure) {
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    return 0;
}

static void on_credential(void *data, int status, const struct kube_credential *cred,
                          const char *err)
{
    struct kube_request *r = data;
    struct kube_client *c = r->client;
    if (r->cancelled || c->closing) {
        request_free(r);
        return;
    }
    if (status < 0) {
        char why[sizeof(r->errbuf)]; /* request_fail() keeps no more */
        snprintf(why, sizeof(why), "credentials: %s", err ? err : log_errno_str(status));
        request_fail(r, status, why);
        return;
    }
    int e = request_setup_easy(r, cred);
    if (e == 0)
        e = curl_loop_add(c->curl, r->easy, r->headers, on_write, on_done, r);
    if (e < 0) {
        request_fail(r, e, "could not set up the request");
        return;
    }
    r->headers = NULL; /* the curl_loop's now, with the easy handle */
    r->state = REQUEST_RUNNING;
    TAILQ_INSERT_TAIL(&c->active, r, link);
    if (r->is_poke) {
        c->pokes++;
        return;
    }
    c->in_flight++;
    c->sent++;
}

static void request_start(struct kube_request *r)
{
    if (!r->is_watch && !r->is_poke) {
        r->holds_slot = 1;
        r->client->busy++;
    }
    r->state = REQUEST_AUTH;
    kube_credentials_get(r->client->creds, on_credential, r);
}

static void queue_remove(struct kube_client *c, struct kube_request *r)
{
    TAILQ_REMOVE(&c->queued[r->priority], r, link);
    c->n_queued[r->priority]--;
}

static void queue_push(struct kube_client *c, struct kube_request *r)
{
    TAILQ_INSERT_TAIL(&c->queued[r->priority], r, link);
    c->n_queued[r->priority]++;
}

/* Low-priority requests only inform: under sustained pressure the oldest
 * give way, so the queue cannot grow without bound. */
static void shed_low(struct kube_client *c, uint64_t now)
{
    struct kube_request *r;
    while ((r = TAILQ_FIRST(&c->queued[KUBE_PRIORITY_LOW])) &&
           (c->n_queued[KUBE_PRIORITY_LOW] > c->opts.low_max_queued ||
            now - r->queued_at_ms >= c->opts.low_max_wait_ms)) {
        queue_remove(c, r);
        c->dropped++;
        request_fail(r, -EAGAIN, "dropped: waited too long for the client's rate limit");
    }
}

/* Sends what the bucket and the max_in_flight slots allow, the most urgent
 * first, and sets the timer for the rest (a slot given back starts it
 * again). */
static void on_rate_timer(uv_timer_t *t)
{
    struct kube_client *c = t->data;
    uint64_t now = uv_now(c->loop);
    shed_low(c, now);
    for (;;) {
        if (c->busy >= c->opts.max_in_flight) {
            uv_timer_stop(&c->rate_timer);
            return;
        }
        unsigned waiting = 0;
        for (int p = 0; p < KUBE_PRIORITIES; p++)
            if (!TAILQ_EMPTY(&c->queued[p]))
                waiting |= 1u << p;
        uint64_t wait_ms;
        int p = priority_bucket_next(&c->bucket, waiting, now, &wait_ms);
        if (p < 0) {
            if (wait_ms == UINT64_MAX)
                uv_timer_stop(&c->rate_timer);
            else
                uv_timer_start(&c->rate_timer, on_rate_timer, wait_ms, 0);
            return;
        }
        struct kube_request *r = TAILQ_FIRST(&c->queued[p]);
        queue_remove(c, r);
        request_start(r);
        if (c->closing)
            return;
    }
}

/* Every request waits in its queue at least until the loop comes round, so
 * a priority set right after the call applies, and requests made together
 * go in priority order. */
static void request_submit(struct kube_request *r)
{
    struct kube_client *c = r->client;
    r->state = REQUEST_QUEUED;
    r->queued_at_ms = uv_now(c->loop);
    queue_push(c, r);
    uv_timer_start(&c->rate_timer, on_rate_timer, 0, 0);
}

/* ---- the poke ------------------------------------------------------------ */

/* libcurl 7.88 (Debian 12's) can stop feeding the shared HTTP/2 connection's
 * input to nghttp2 before it has fed all of it. Its HTTP/2 layer copies each
 * DATA frame into its stream's receive buffer, and when one does not fit it
 * pauses nghttp2 (NGHTTP2_ERR_PAUSE) until that transfer runs again. After
 * that it feeds nghttp2 only when the socket brings new bytes:
 *   - what follows the paused frame in its buffer waits there, as its
 *     "data pending" check (`nread_inbuf > inbuflen` in lib/http2.c of
 *     curl-7_88_1) never says there is any;
 *   - a frame paused on its last byte is finished only by nghttp2's next
 *     call with input (its READ_DATA state); when that frame ends the
 *     stream, the answer ends there.
 * When the server has sent all it had, a list whose end is held there waits
 * for its timeout with its whole body received (it_client: "Operation timed
 * out after 30000 milliseconds with 886216 bytes received" of an 886 KB gzip
 * body). curl 8.1 reworked that code.
 *
 * So the client makes the server send something on that connection: when a
 * call other than a watch has received bytes and gets none for a whole
 * check (STALL_CHECK_MS), a GET /version goes out on the same connection,
 * one at a time, past the rate limit, and its answer makes libcurl read the
 * socket and feed nghttp2 what it held. Watches are quiet between events,
 * so quiet alone says nothing of them: a watch that received bytes is
 * checked the same way, and poked once when it goes quiet for a whole check
 * after them (at most one poke in flight, so at most about one a second
 * while watches receive). Poking only a watch whose write filled its whole
 * buffer was not enough: a frame that does not fit in what is left of the
 * buffer pauses too (it_client's test_watch_burst, under a loaded machine:
 * 17 of 40 events, none after, no poke). Checks run only while some call
 * receives, so an idle client costs nothing. Pokes are counted apart
 * (kube_client_pokes()), not in the requests sent or in flight. */
#define STALL_CHECK_MS 1000
#define POKE_TIMEOUT_MS 5000

static int prepare(struct kube_client *c, const char *method, struct buf *p, int e,
                   const char *body, const char *content_type, kube_response_cb cb, void *data,
                   struct kube_request **ret);

static void on_poke_answer(void *data, struct kube_response *resp)
{
    struct kube_client *c = data;
    (void)resp; /* any answer, even an error, has done its work */
    c->poke = NULL;
}

static void poke(struct kube_client *c)
{
    struct buf p;
    buf_init(&p, 64);
    struct kube_request *r;
    if (prepare(c, "GET", &p, buf_append_str(&p, "/version"), NULL, NULL, on_poke_answer, c, &r) <
        0)
        return; /* the next check tries again */
    r->is_poke = 1;
    r->timeout_ms = POKE_TIMEOUT_MS;
    c->poke = r;
    request_start(r);
}

static void on_stall_check(uv_timer_t *t)
{
    struct kube_client *c = t->data;
    int stalled = 0, receiving = 0;
    struct kube_request *r;
    TAILQ_FOREACH(r, &c->active, link)
    {
        if (r->is_poke || (r->is_watch && !r->filled) || r->received == 0)
            continue;
        receiving = 1;
        if (r->received == r->received_at_check) {
            stalled = 1;
            r->filled = 0; /* a watch is poked once for what filled it */
        }
        r->received_at_check = r->received;
    }
    if (stalled && !c->poke)
        poke(c);
    if (receiving && !c->closing)
        uv_timer_start(t, on_stall_check, STALL_CHECK_MS, 0);
}

/* A call other than a watch received bytes: make sure a check follows. */
static void stall_watch(struct kube_client *c)
{
    if (!c->closing && !uv_is_active((uv_handle_t *)&c->stall_timer))
        uv_timer_start(&c->stall_timer, on_stall_check, STALL_CHECK_MS, 0);
}

void kube_request_set_priority(struct kube_request *r, enum kube_priority priority)
{
    if (!r || r->cancelled || priority < 0 || priority >= KUBE_PRIORITIES ||
        r->priority == priority)
        return;
    if (r->state != REQUEST_QUEUED) {
        r->priority = priority; /* for a retry after a 401 */
        return;
    }
    struct kube_client *c = r->client;
    queue_remove(c, r);
    r->priority = priority;
    queue_push(c, r);
    if (priority == KUBE_PRIORITY_LOW)
        shed_low(c, uv_now(c->loop));
}

uint64_t kube_client_requests_dropped(const struct kube_client *c)
{
    return c->dropped;
}

/* Delivers early failures. */
static void on_reap_timer(uv_timer_t *t)
{
    struct kube_client *c = t->data;
    struct kube_request *f;
    while (!c->closing && (f = TAILQ_FIRST(&c->failed))) {
        TAILQ_REMOVE(&c->failed, f, link);
        struct kube_response resp = {.status = f->fail_status, .transport_error = f->errbuf};
        f->state = REQUEST_DONE;
        if (f->cb)
            f->cb(f->data, &resp);
        if (f->easy) /* set up, then refused by the curl_loop: still ours */
            curl_easy_cleanup(f->easy);
        f->easy = NULL;
        request_free(f);
    }
}

void kube_request_cancel(struct kube_request *r)
{
    if (!r || r->cancelled)
        return;
    struct kube_client *c = r->client;
    r->cancelled = 1;
    r->cb = NULL;
    switch (r->state) {
    case REQUEST_QUEUED:
        queue_remove(c, r);
        request_free(r);
        break;
    case REQUEST_AUTH:
        break; /* freed by on_credential */
    case REQUEST_RUNNING:
        TAILQ_REMOVE(&c->active, r, link);
        if (!r->is_poke)
            c->in_flight--;
        curl_loop_remove(c->curl, r->easy);
        if (!r->in_write) /* else on_write frees it once on_bytes returns */
            request_free(r);
        break;
    case REQUEST_FAILED:
        TAILQ_REMOVE(&c->failed, r, link);
        request_free(r);
        break;
    case REQUEST_DONE:
        break; /* freed when its callback returns */
    }
}

/* ---- the client ---------------------------------------------------------- */

int kube_client_new(uv_loop_t *loop, const struct kube_config *config,
                    const struct kube_client_options *options, struct kube_client **ret_client,
                    char **ret_err)
{
    struct kube_client *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->loop = loop;
    for (int p = 0; p < KUBE_PRIORITIES; p++)
        TAILQ_INIT(&c->queued[p]);
    TAILQ_INIT(&c->active);
    TAILQ_INIT(&c->failed);
    if (options)
        c->opts = *options;
    if (c->opts.qps == 0 && c->opts.burst == 0) {
        c->opts.qps = 20;
        c->opts.burst = 30;
    }
    if (!c->opts.max_response_bytes)
        c->opts.max_response_bytes = 16u << 20;
    if (!c->opts.timeout_ms)
        c->opts.timeout_ms = 30000;
    if (!c->opts.connect_timeout_ms)
        c->opts.connect_timeout_ms = 10000;
    if (!c->opts.low_max_wait_ms)
        c->opts.low_max_wait_ms = 60000;
    if (!c->opts.low_max_queued)
        c->opts.low_max_queued = 1000;
    if (!c->opts.max_in_flight)
        c->opts.max_in_flight = 64;
    c->opts.list_buffer_bytes = receive_buffer(c->opts.list_buffer_bytes, LIST_RECEIVE_BUFFER);
    c->opts.watch_buffer_bytes = receive_buffer(c->opts.watch_buffer_bytes, WATCH_RECEIVE_BUFFER);
    priority_bucket_init(&c->bucket, c->opts.qps, c->opts.burst, uv_now(loop));
    buf_init(&c->ca, 4u << 20);
    buf_init(&c->cert, 4u << 20);
    buf_init(&c->key, 4u << 20);
    c->server = strdup(config->server);
    c->ns = strdup(config->namespace ? config->namespace : "default");
    c->user_agent =
        strdup(c->opts.user_agent ? c->opts.user_agent : "hibernator/" HIBERNATOR_VERSION);
    c->insecure = config->insecure_skip_tls_verify;
    int err = 0;
    if (!c->server || !c->ns || !c->user_agent)
        err = -ENOMEM;
    if (err == 0 && config->ca_pem)
        err = buf_append(&c->ca, config->ca_pem, config->ca_pem_len);
    if (err == 0 && config->cert_pem)
        err = buf_append(&c->cert, config->cert_pem, config->cert_pem_len);
    if (err == 0 && config->key_pem)
        err = buf_append(&c->key, config->key_pem, config->key_pem_len);
    if (err == 0)
        err = kube_credentials_new(loop, config, &c->creds);
    if (err == 0)
        err = curl_loop_new(loop, &c->curl);
    if (err < 0) {
        client_free(c);
        if (ret_err)
            *ret_err = strdup("could not create the API client: out of memory");
        return err;
    }
    uv_timer_init(loop, &c->rate_timer);
    uv_timer_init(loop, &c->reap_timer);
    uv_timer_init(loop, &c->stall_timer);
    c->rate_timer.data = c->reap_timer.data = c->stall_timer.data = c;
    c->open_handles = 3;
    if (c->insecure)
        log_warn("TLS verification is OFF for the API server (insecure-skip-tls-verify): "
                 "anyone on the path can read and change every request",
                 "server", c->server);
    *ret_client = c;
    return 0;
}

void kube_client_close(struct kube_client *c)
{
    if (!c || c->closing)
        return;
    c->closing = 1;
    struct kube_request *r;
    for (int p = 0; p < KUBE_PRIORITIES; p++)
        while ((r = TAILQ_FIRST(&c->queued[p]))) {
            queue_remove(c, r);
            request_free(r);
        }
    /* No curl_loop callback follows this; it lets go of the easy handles
     * (at once, or once libcurl has returned if we are inside it). */
    curl_loop_close(c->curl);
    c->curl = NULL;
    while ((r = TAILQ_FIRST(&c->active))) {
        TAILQ_REMOVE(&c->active, r, link);
        r->cancelled = 1;
        if (!r->in_write) /* else on_write frees it once on_bytes returns */
            request_free(r);
    }
    while ((r = TAILQ_FIRST(&c->failed))) {
        TAILQ_REMOVE(&c->failed, r, link);
        request_free(r);
    }
    c->in_flight = 0;
    /* Requests waiting for a credential are freed by on_credential once
     * kube_credentials_free() cancels them. */
    c->poke = NULL;
    uv_close((uv_handle_t *)&c->rate_timer, handle_closed);
    uv_close((uv_handle_t *)&c->reap_timer, handle_closed);
    uv_close((uv_handle_t *)&c->stall_timer, handle_closed);
}

const char *kube_client_namespace(const struct kube_client *c)
{
    return c->ns;
}

uint64_t kube_client_requests_sent(const struct kube_client *c)
{
    return c->sent;
}

unsigned kube_client_requests_in_flight(const struct kube_client *c)
{
    return c->in_flight;
}

uint64_t kube_client_pokes(const struct kube_client *c)
{
    return c->pokes;
}

/* ---- calls --------------------------------------------------------------- */

/* Creates a request for METHOD on path+query; body is copied. Returns 0
 * and *ret_req, -ESHUTDOWN once the client is closing, or -ENOMEM. */
static int request_new(struct kube_client *c, const char *method, struct buf *path_and_query,
                       const char *body, const char *content_type, kube_response_cb cb, void *data,
                       struct kube_request **ret_req)
{
    if (c->closing)
        return -ESHUTDOWN;
    struct kube_request *r = calloc(1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    r->client = c;
    r->method = method;
    r->cb = cb;
    r->data = data;
    r->content_type = content_type;
    r->timeout_ms = c->opts.timeout_ms;
    r->priority = KUBE_PRIORITY_NORMAL;
    buf_init(&r->response, c->opts.max_response_bytes);
    struct buf url;
    buf_init(&url, 64 * 1024);
    int e = buf_append_str(&url, c->server);
    if (e == 0)
        e = buf_append(&url, path_and_query->data, path_and_query->len);
    if (e == 0 && !(r->url = buf_steal(&url)))
        e = -ENOMEM;
    if (e < 0) {
        buf_free(&url);
        free(r);
        return e;
    }
    if (body) {
        r->body_len = strlen(body);
        r->body = strdup(body);
        if (!r->body) {
            request_free(r);
            return -ENOMEM;
        }
    }
    *ret_req = r;
    return 0;
}

/* Path for res plus the query; returns 0 or a negative errno. */
static int build_path(struct buf *b, const struct kube_resource *res, const char *ns,
                      const char *name, const char *subresource)
{
    char *p = kube_resource_path(res, ns, name, subresource);
    if (!p)
        return -ENOMEM;
    int r = buf_append_str(b, p);
    free(p);
    return r;
}

/* Queues a request that request_new() made and hands it to the caller. */
static int submit(int e, struct kube_request *r, struct kube_request **ret_req)
{
    if (e < 0)
        return e;
    request_submit(r);
    if (ret_req)
        *ret_req = r;
    return 0;
}

/* Builds the request for path p (freed here) unless e already says the
 * path could not be built; *ret the request, for the caller to mark and
 * submit(). Returns e or request_new()'s error. */
static int prepare(struct kube_client *c, const char *method, struct buf *p, int e,
                   const char *body, const char *content_type, kube_response_cb cb, void *data,
                   struct kube_request **ret)
{
    *ret = NULL;
    if (e == 0)
        e = request_new(c, method, p, body, content_type, cb, data, ret);
    buf_free(p);
    return e;
}

/* Builds the request for path p (freed here) and queues it. */
static int start(struct kube_client *c, const char *method, struct buf *p, int e, const char *body,
                 const char *content_type, kube_response_cb cb, void *data,
                 struct kube_request **ret_req)
{
    struct kube_request *r;
    e = prepare(c, method, p, e, body, content_type, cb, data, &r);
    return submit(e, r, ret_req);
}

int kube_get(struct kube_client *c, const struct kube_resource *res, const char *ns,
             const char *name, kube_response_cb cb, void *data, struct kube_request **ret_req)
{
    if (!c || !res)
        return -EINVAL;
    struct buf p;
    buf_init(&p, 16 * 1024);
    int e = build_path(&p, res, ns, name, NULL);
    return start(c, "GET", &p, e, NULL, NULL, cb, data, ret_req);
}

int kube_list(struct kube_client *c, const struct kube_resource *res, const char *ns,
              const struct kube_list_options *o, kube_response_cb cb, void *data,
              struct kube_request **ret_req)
{
    if (!c || !res)
        return -EINVAL;
    struct buf p;
    buf_init(&p, 16 * 1024);
    char limit[24];
    snprintf(limit, sizeof(limit), "%ld", o ? o->limit : 0);
    int e = build_path(&p, res, ns, NULL, NULL);
    if (e == 0 && o) {
        e = kube_append_query(&p, "labelSelector", o->label_selector);
        if (e == 0)
            e = kube_append_query(&p, "fieldSelector", o->field_selector);
        if (e == 0 && o->limit > 0)
            e = kube_append_query(&p, "limit", limit);
        if (e == 0)
            e = kube_append_query(&p, "continue", o->continue_token);
        if (e == 0)
            e = kube_append_query(&p, "resourceVersion", o->resource_version);
    }
    struct kube_request *r;
    e = prepare(c, "GET", &p, e, NULL, NULL, cb, data, &r);
    if (e == 0)
        r->is_list = 1;
    return submit(e, r, ret_req);
}

int kube_get_path(struct kube_client *c, const char *path, size_t max_bytes, kube_response_cb cb,
                  void *data, struct kube_request **ret_req)
{
    if (!c || !path || path[0] != '/' || max_bytes == 0)
        return -EINVAL;
    struct buf p;
    buf_init(&p, 64 * 1024);
    struct kube_request *r;
    int e = prepare(c, "GET", &p, buf_append_str(&p, path), NULL, NULL, cb, data, &r);
    if (e == 0) {
        r->raw = 1;
        buf_free(&r->response);
        buf_init(&r->response, max_bytes);
    }
    return submit(e, r, ret_req);
}

static int send_object(struct kube_client *c, const char *method, const struct kube_resource *res,
                       const char *ns, const char *name, const char *subresource, const cJSON *obj,
                       kube_response_cb cb, void *data, struct kube_request **ret_req)
{
    if (!c || !res || !obj)
        return -EINVAL;
    char *body = cJSON_PrintUnformatted(obj);
    if (!body)
        return -ENOMEM;
    struct buf p;
    buf_init(&p, 16 * 1024);
    int e = build_path(&p, res, ns, name, subresource);
    e = start(c, method, &p, e, body, "application/json", cb, data, ret_req);
    free(body);
    return e;
}

int kube_create(struct kube_client *c, const struct kube_resource *res, const char *ns,
                const cJSON *obj, kube_response_cb cb, void *data, struct kube_request **ret_req)
{
    return send_object(c, "POST", res, ns, NULL, NULL, obj, cb, data, ret_req);
}

int kube_replace(struct kube_client *c, const struct kube_resource *res, const char *ns,
                 const char *name, const char *subresource, const cJSON *obj, kube_response_cb cb,
                 void *data, struct kube_request **ret_req)
{
    if (!name || !name[0])
        return -EINVAL;
    return send_object(c, "PUT", res, ns, name, subresource, obj, cb, data, ret_req);
}

int kube_patch(struct kube_client *c, const struct kube_resource *res, const char *ns,
               const char *name, const char *subresource, enum kube_patch_type type,
               const char *patch, kube_response_cb cb, void *data, struct kube_request **ret_req)
{
    if (!c || !res || !name || !name[0] || !patch)
        return -EINVAL;
    struct buf p;
    buf_init(&p, 16 * 1024);
    const char *ct =
        type == KUBE_PATCH_JSON ? "application/json-patch+json" : "application/merge-patch+json";
    int e = build_path(&p, res, ns, name, subresource);
    return start(c, "PATCH", &p, e, patch, ct, cb, data, ret_req);
}

/* The DeleteOptions body for o (NULL: none). Returns NULL out of memory. */
static cJSON *delete_options(const struct kube_delete_options *o)
{
    cJSON *opts = cJSON_CreateObject();
    if (!opts)
        return NULL;
    int ok = cJSON_AddStringToObject(opts, "kind", "DeleteOptions") &&
             cJSON_AddStringToObject(opts, "apiVersion", "v1");
    if (ok && o && (o->precondition_uid || o->precondition_resource_version)) {
        cJSON *pre = cJSON_AddObjectToObject(opts, "preconditions");
        ok = pre != NULL;
        if (ok && o->precondition_uid)
            ok = cJSON_AddStringToObject(pre, "uid", o->precondition_uid) != NULL;
        if (ok && o->precondition_resource_version)
            ok = cJSON_AddStringToObject(pre, "resourceVersion",
                                         o->precondition_resource_version) != NULL;
    }
    if (ok && o && o->propagation_policy)
        ok = cJSON_AddStringToObject(opts, "propagationPolicy", o->propagation_policy) != NULL;
    if (ok && o && o->grace_period_seconds >= 0)
        ok = cJSON_AddNumberToObject(opts, "gracePeriodSeconds", (double)o->grace_period_seconds) !=
             NULL;
    if (!ok) {
        cJSON_Delete(opts);
        return NULL;
    }
    return opts;
}

int kube_delete(struct kube_client *c, const struct kube_resource *res, const char *ns,
                const char *name, const struct kube_delete_options *o, kube_response_cb cb,
                void *data, struct kube_request **ret_req)
{
    if (!name || !name[0])
        return -EINVAL;
    cJSON *opts = delete_options(o);
    if (!opts)
        return -ENOMEM;
    int e = send_object(c, "DELETE", res, ns, name, NULL, opts, cb, data, ret_req);
    cJSON_Delete(opts);
    return e;
}

int kube_watch(struct kube_client *c, const struct kube_resource *res, const char *ns,
               const struct kube_watch_options *o, kube_stream_cb on_bytes, kube_response_cb done,
               void *data, struct kube_request **ret_req)
{
    if (!c || !res || !on_bytes)
        return -EINVAL;
    struct buf p;
    buf_init(&p, 16 * 1024);
    struct kube_request *r;
    char timeout[24];
    long timeout_s = o && o->timeout_seconds > 0 ? o->timeout_seconds : 300;
    snprintf(timeout, sizeof(timeout), "%ld", timeout_s);
    int e = build_path(&p, res, ns, NULL, NULL);
    if (e == 0)
        e = kube_append_query(&p, "watch", "1");
    if (e == 0 && o) {
        e = kube_append_query(&p, "labelSelector", o->label_selector);
        if (e == 0)
            e = kube_append_query(&p, "fieldSelector", o->field_selector);
        if (e == 0)
            e = kube_append_query(&p, "resourceVersion", o->resource_version);
        if (e == 0 && o->allow_bookmarks)
            e = kube_append_query(&p, "allowWatchBookmarks", "true");
    }
    if (e == 0)
        e = kube_append_query(&p, "timeoutSeconds", timeout);
    e = prepare(c, "GET", &p, e, NULL, NULL, done, data, &r);
    if (e < 0)
        return e;
    r->is_watch = 1;
    r->on_bytes = on_bytes;
    /* The server ends the watch after timeoutSeconds; past that (plus slack)
     * the connection is dead, whatever TCP believes. */
    r->timeout_ms = (timeout_s + 30) * 1000;
    buf_free(&r->response);
    buf_init(&r->response, ERROR_BODY_MAX);
    return submit(0, r, ret_req);
}

const char *kube_response_error_text(const struct kube_response *resp)
{
    if (resp->status == -EIO && resp->error.message)
        return resp->error.message;
    return resp->transport_error ? resp->transport_error : log_errno_str(resp->status);
}

int kube_response_not_found(const struct kube_response *resp)
{
    return resp->status == -EIO && resp->http_code == 404;
}

int kube_response_conflict(const struct kube_response *resp)
{
    return resp->status == -EIO && kube_api_error_is_conflict(&resp->error);
}

int kube_response_already_exists(const struct kube_response *resp)
{
    return resp->status == -EIO && resp->http_code == 409 && resp->error.reason &&
           strcmp(resp->error.reason, "AlreadyExists") == 0;
}
