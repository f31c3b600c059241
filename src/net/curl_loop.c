/*
 * libcurl's multi interface on the libuv loop (curl's multi-uv pattern).
 *
 * A transfer is in one of four states:
 *   PENDING  added from inside libcurl; joins the multi once libcurl returns
 *   RUNNING  in the multi handle
 *   DONE     its done callback is running; freed when it returns
 *   REMOVED  removed from inside libcurl; leaves the multi once libcurl returns
 * PENDING and REMOVED transfers wait on the deferred list; "libcurl returns"
 * is the end of the curl_multi_socket_action() call in on_poll() or
 * on_timer(), where settle() runs before anything else happens.
 */
#include "net/curl_loop.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

enum transfer_state {
    TRANSFER_PENDING,
    TRANSFER_RUNNING,
    TRANSFER_DONE,
    TRANSFER_REMOVED,
};

struct transfer {
    struct curl_loop *cl;
    TAILQ_ENTRY(transfer) link; /* in cl->active or cl->deferred */
    enum transfer_state state;
    int in_multi;
    CURL *easy;
    struct curl_slist *headers;
    curl_loop_write_cb on_write;
    curl_loop_done_cb done;
    void *data;
    char errbuf[CURL_ERROR_SIZE];
};

TAILQ_HEAD(transfer_list, transfer);

struct socket_ctx {
    uv_poll_t poll;
    curl_socket_t fd;
    struct curl_loop *cl;
    LIST_ENTRY(socket_ctx) link; /* in cl->sockets */
};

struct curl_loop {
    uv_loop_t *loop;
    CURLM *multi;
    uv_timer_t timer;
    unsigned open_handles; /* the timer and every socket poll not yet closed */
    int closing;
    int closed;       /* the multi handle is gone */
    unsigned depth;   /* > 0 while libcurl is on the stack */
    unsigned running; /* PENDING + RUNNING */
    struct transfer_list active;
    struct transfer_list deferred;
    LIST_HEAD(socket_list, socket_ctx) sockets;
};

static int curl_global_ready;

/* Takes the transfer out of the multi (if there) and frees it with its easy
 * handle and headers. The transfer is already off every list. */
static void transfer_drop(struct transfer *t)
{
    if (t->in_multi && !t->cl->closed)
        curl_multi_remove_handle(t->cl->multi, t->easy);
    curl_easy_cleanup(t->easy);
    curl_loop_free_headers(t->headers);
    free(t);
}

/* ---- libuv handles ------------------------------------------------------- */

static void handle_gone(struct curl_loop *cl)
{
    if (--cl->open_handles == 0 && cl->closing)
        free(cl);
}

static void timer_closed(uv_handle_t *h)
{
    handle_gone(h->data);
}

static void socket_closed(uv_handle_t *h)
{
    struct socket_ctx *s = h->data;
    struct curl_loop *cl = s->cl;
    free(s);
    handle_gone(cl);
}

static void socket_ctx_close(struct socket_ctx *s)
{
    LIST_REMOVE(s, link);
    uv_poll_stop(&s->poll);
    uv_close((uv_handle_t *)&s->poll, socket_closed);
}

/* ---- finishing ----------------------------------------------------------- */

static void finish_close(struct curl_loop *cl)
{
    if (cl->closed)
        return;
    struct transfer *t;
    while ((t = TAILQ_FIRST(&cl->active))) {
        TAILQ_REMOVE(&cl->active, t, link);
        transfer_drop(t);
    }
    while ((t = TAILQ_FIRST(&cl->deferred))) {
        TAILQ_REMOVE(&cl->deferred, t, link);
        transfer_drop(t);
    }
    /* Stop watching before curl closes the descriptors, so a number reused
     * by a new socket elsewhere is never left registered with us; curl must
     * not call back into a half-closed loop while it cleans up. */
    curl_multi_setopt(cl->multi, CURLMOPT_SOCKETFUNCTION, NULL);
    curl_multi_setopt(cl->multi, CURLMOPT_TIMERFUNCTION, NULL);
    while (!LIST_EMPTY(&cl->sockets))
        socket_ctx_close(LIST_FIRST(&cl->sockets));
    curl_multi_cleanup(cl->multi);
    cl->multi = NULL;
    cl->closed = 1;
    uv_close((uv_handle_t *)&cl->timer, timer_closed);
}

static void check_multi_info(struct curl_loop *cl)
{
    CURLMsg *msg;
    int pending;
    while (!cl->closing && (msg = curl_multi_info_read(cl->multi, &pending))) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        CURL *easy = msg->easy_handle;
        CURLcode code = msg->data.result;
        struct transfer *t = NULL;
        curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&t);
        if (!t || t->state != TRANSFER_RUNNING)
            continue; /* removed meanwhile; settle() drops it */
        curl_multi_remove_handle(cl->multi, easy);
        t->in_multi = 0;
        TAILQ_REMOVE(&cl->active, t, link);
        cl->running--;
        t->state = TRANSFER_DONE;
        const char *error = "";
        if (code != CURLE_OK)
            error = t->errbuf[0] ? t->errbuf : curl_easy_strerror(code);
        t->done(t->data, easy, code, error);
        transfer_drop(t);
    }
}

/* Runs what was deferred while libcurl was on the stack, then reports
 * finished transfers. */
static void settle(struct curl_loop *cl)
{
    if (cl->depth > 0)
        return;
    if (cl->closing) {
        finish_close(cl);
        return;
    }
    struct transfer *t;
    while ((t = TAILQ_FIRST(&cl->deferred))) {
        TAILQ_REMOVE(&cl->deferred, t, link);
        if (t->state == TRANSFER_REMOVED) {
            transfer_drop(t);
            continue;
        }
        if (curl_multi_add_handle(cl->multi, t->easy) == CURLM_OK) {
            t->in_multi = 1;
            t->state = TRANSFER_RUNNING;
            TAILQ_INSERT_TAIL(&cl->active, t, link);
            continue;
        }
        /* curl_loop_add() has returned 0 already, so report from here. */
        cl->running--;
        t->state = TRANSFER_DONE;
        t->done(t->data, t->easy, CURLE_OUT_OF_MEMORY, "could not start the transfer");
        transfer_drop(t);
        if (cl->closing) {
            finish_close(cl);
            return;
        }
    }
    check_multi_info(cl);
    if (cl->closing)
        finish_close(cl);
}

/* ---- curl <-> libuv glue ------------------------------------------------- */

static void on_poll(uv_poll_t *p, int status, int events)
{
    struct socket_ctx *s = p->data;
    struct curl_loop *cl = s->cl;
    int flags = 0;
    if (status < 0)
        flags = CURL_CSELECT_ERR;
    if (events & UV_READABLE)
        flags |= CURL_CSELECT_IN;
    if (events & UV_WRITABLE)
        flags |= CURL_CSELECT_OUT;
    int running;
    cl->depth++;
    curl_multi_socket_action(cl->multi, s->fd, flags, &running);
    cl->depth--;
    settle(cl);
}

static int on_curl_socket(CURL *easy, curl_socket_t fd, int action, void *userp, void *socketp)
{
    (void)easy;
    struct curl_loop *cl = userp;
    struct socket_ctx *s = socketp;
    if (action == CURL_POLL_REMOVE) {
        if (s) {
            curl_multi_assign(cl->multi, fd, NULL);
            socket_ctx_close(s);
        }
        return 0;
    }
    if (!s) {
        s = calloc(1, sizeof(*s));
        if (!s)
            return -1;
        if (uv_poll_init_socket(cl->loop, &s->poll, fd) < 0) {
            free(s);
            return -1;
        }
        s->fd = fd;
        s->cl = cl;
        s->poll.data = s;
        LIST_INSERT_HEAD(&cl->sockets, s, link);
        cl->open_handles++;
        curl_multi_assign(cl->multi, fd, s);
    }
    int events = 0;
    if (action == CURL_POLL_IN || action == CURL_POLL_INOUT)
        events |= UV_READABLE;
    if (action == CURL_POLL_OUT || action == CURL_POLL_INOUT)
        events |= UV_WRITABLE;
    uv_poll_start(&s->poll, events, on_poll);
    return 0;
}

static void on_timer(uv_timer_t *t)
{
    struct curl_loop *cl = t->data;
    int running;
    cl->depth++;
    curl_multi_socket_action(cl->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    cl->depth--;
    settle(cl);
}

static int on_curl_timeout(CURLM *multi, long timeout_ms, void *userp)
{
    (void)multi;
    struct curl_loop *cl = userp;
    if (timeout_ms < 0)
        uv_timer_stop(&cl->timer);
    else
        uv_timer_start(&cl->timer, on_timer, (uint64_t)timeout_ms, 0);
    return 0;
}

static size_t on_curl_write(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    struct transfer *t = userdata;
    size_t n = size * nmemb;
    /* A removed transfer's owner may be gone already: never call it. */
    if (t->state != TRANSFER_RUNNING)
        return 0;
    if (!t->on_write)
        return n;
    if (t->on_write(t->data, ptr, n) != 0)
        return 0;
    return t->state == TRANSFER_RUNNING ? n : 0;
}

/* ---- public -------------------------------------------------------------- */

int curl_loop_new(uv_loop_t *loop, struct curl_loop **ret_cl)
{
    if (!loop || !ret_cl)
        return -EINVAL;
    if (!curl_global_ready) {
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
            return -ENOMEM;
        curl_global_ready = 1;
    }
    struct curl_loop *cl = calloc(1, sizeof(*cl));
    if (!cl)
        return -ENOMEM;
    cl->loop = loop;
    TAILQ_INIT(&cl->active);
    TAILQ_INIT(&cl->deferred);
    LIST_INIT(&cl->sockets);
    cl->multi = curl_multi_init();
    if (!cl->multi) {
        free(cl);
        return -ENOMEM;
    }
    curl_multi_setopt(cl->multi, CURLMOPT_SOCKETFUNCTION, on_curl_socket);
    curl_multi_setopt(cl->multi, CURLMOPT_SOCKETDATA, cl);
    curl_multi_setopt(cl->multi, CURLMOPT_TIMERFUNCTION, on_curl_timeout);
    curl_multi_setopt(cl->multi, CURLMOPT_TIMERDATA, cl);
    curl_multi_setopt(cl->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
    uv_timer_init(loop, &cl->timer);
    cl->timer.data = cl;
    cl->open_handles = 1;
    *ret_cl = cl;
    return 0;
}

void curl_loop_close(struct curl_loop *cl)
{
    if (!cl || cl->closing)
        return;
    cl->closing = 1;
    cl->running = 0;
    /* From here on no write callback reaches an owner; inside libcurl the
     * handles themselves go once it has returned. */
    struct transfer *t;
    TAILQ_FOREACH(t, &cl->active, link)
    t->state = TRANSFER_REMOVED;
    TAILQ_FOREACH(t, &cl->deferred, link)
    t->state = TRANSFER_REMOVED;
    if (cl->depth == 0)
        finish_close(cl);
}

CURLM *curl_loop_multi(struct curl_loop *cl)
{
    return cl->multi;
}

/* Points easy's callbacks at t, or back at nothing (t == NULL). */
static void easy_bind(CURL *easy, struct transfer *t)
{
    curl_easy_setopt(easy, CURLOPT_PRIVATE, t);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, t ? on_curl_write : NULL);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, t);
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, t ? t->errbuf : NULL);
}

int curl_loop_add(struct curl_loop *cl, CURL *easy, struct curl_slist *headers,
                  curl_loop_write_cb on_write, curl_loop_done_cb done, void *data)
{
    if (!cl || !easy || !done || cl->closing)
        return -EINVAL;
    struct transfer *t = calloc(1, sizeof(*t));
    if (!t)
        return -ENOMEM;
    t->cl = cl;
    t->easy = easy;
    t->on_write = on_write;
    t->done = done;
    t->data = data;
    easy_bind(easy, t);
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    if (cl->depth > 0) {
        t->state = TRANSFER_PENDING;
        TAILQ_INSERT_TAIL(&cl->deferred, t, link);
    } else {
        CURLMcode mc = curl_multi_add_handle(cl->multi, easy);
        if (mc != CURLM_OK) {
            easy_bind(easy, NULL);
            free(t);
            return mc == CURLM_OUT_OF_MEMORY ? -ENOMEM : -EINVAL;
        }
        t->in_multi = 1;
        t->state = TRANSFER_RUNNING;
        TAILQ_INSERT_TAIL(&cl->active, t, link);
    }
    /* Only now: on failure the caller keeps its headers. */
    t->headers = headers;
    cl->running++;
    return 0;
}

void curl_loop_remove(struct curl_loop *cl, CURL *easy)
{
    if (!cl || !easy || cl->closing)
        return;
    struct transfer *t = NULL;
    curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&t);
    if (!t || t->cl != cl)
        return;
    switch (t->state) {
    case TRANSFER_PENDING:
        cl->running--;
        TAILQ_REMOVE(&cl->deferred, t, link);
        transfer_drop(t);
        return;
    case TRANSFER_RUNNING:
        cl->running--;
        TAILQ_REMOVE(&cl->active, t, link);
        if (cl->depth > 0) {
            t->state = TRANSFER_REMOVED;
            TAILQ_INSERT_TAIL(&cl->deferred, t, link);
        } else {
            transfer_drop(t);
        }
        return;
    case TRANSFER_DONE:
    case TRANSFER_REMOVED:
        return;
    }
}

void curl_loop_free_headers(struct curl_slist *headers)
{
    for (struct curl_slist *i = headers; i; i = i->next)
        if (i->data)
            explicit_bzero(i->data, strlen(i->data));
    curl_slist_free_all(headers);
}

unsigned curl_loop_running(const struct curl_loop *cl)
{
    return cl ? cl->running : 0;
}

int curl_loop_errno(CURLcode code)
{
    switch (code) {
    case CURLE_OK:
        return 0;
    case CURLE_OPERATION_TIMEDOUT:
        return -ETIMEDOUT;
    case CURLE_COULDNT_CONNECT:
        return -ECONNREFUSED;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
        return -EHOSTUNREACH;
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
        return -EPROTO;
    case CURLE_OUT_OF_MEMORY:
        return -ENOMEM;
    case CURLE_FILESIZE_EXCEEDED:
        return -EFBIG;
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_GOT_NOTHING:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
        return -ECONNRESET;
    default:
        return -EIO;
    }
}
