/*
 * kube_client: asynchronous calls to the Kubernetes API server.
 *
 * Every call is an HTTP exchange on libcurl's multi interface, driven by the
 * libuv loop (socket and timer callbacks); connections are reused, TLS is
 * always verified unless the config says insecure-skip-tls-verify (logged
 * loudly), requests pass a client-side token bucket (QPS/burst) in order of
 * priority, and response bodies are bounded. Nothing here blocks.
 *
 * Ownership:
 * - kube_client_new() copies the config; kube_client_close() cancels what is
 *   in flight (no callbacks follow) and frees the client once the loop has
 *   closed its handles.
 * - Objects passed in (cJSON bodies, strings, options) are only read during
 *   the call.
 * - A kube_response belongs to the client and lives until the callback
 *   returns; a callback that wants the body sets resp->body = NULL after
 *   taking it.
 * - A kube_request handle is valid until its callback has been called or it
 *   has been cancelled with kube_request_cancel() (after which no callback is
 *   called).
 */
#ifndef HIBERNATOR_KUBE_CLIENT_H
#define HIBERNATOR_KUBE_CLIENT_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "kube/api_error.h"
#include "kube/config.h"
#include "kube/resource.h"
#include "util/must_use.h"

/* Who goes first when the token bucket is short. A request is NORMAL unless
 * kube_request_set_priority() says otherwise. CRITICAL requests take any
 * token; NORMAL ones leave a quarter of the burst to them, LOW ones half;
 * while a more urgent request waits for a token, no less urgent one is sent
 * (util/ratelimit.h, priority_bucket). LOW requests only inform (Events):
 * one that waited low_max_wait_ms, or the oldest beyond low_max_queued, is
 * dropped: its callback gets -EAGAIN and kube_client_requests_dropped()
 * counts it. */
enum kube_priority {
    KUBE_PRIORITY_CRITICAL, /* what frees or claims an accelerator, the leader's Lease */
    KUBE_PRIORITY_NORMAL,
    KUBE_PRIORITY_LOW,
};
#define KUBE_PRIORITIES 3

struct kube_client_options {
    double qps;                /* default 20; <= 0 with burst 0 means unlimited */
    int burst;                 /* default 30 */
    uint64_t low_max_wait_ms;  /* default 60 s */
    unsigned low_max_queued;   /* default 1000 */
    size_t max_response_bytes; /* default 16 MiB: larger bodies fail with -EFBIG */
    /* Requests other than watches at once, default 64; the rest wait in
     * their priority's queue. libcurl multiplexes up to 100 streams on one
     * HTTP/2 connection and opens another beyond that: under a burst, new
     * connections' TLS handshakes queue behind the busy API server and time
     * out, where requests over one connection only wait. */
    unsigned max_in_flight;
    long timeout_ms;         /* per request, not for watches; default 30 s */
    long connect_timeout_ms; /* default 10 s */
    const char *user_agent;  /* default "hibernator/<version>" */

    /* libcurl's receive buffer of a list while it runs, default 256 KiB,
     * and of a watch, default 64 KiB (CURL_MAX_READ_SIZE at most; 0: the
     * default); other calls keep libcurl's 16 KiB. */
    long list_buffer_bytes;
    long watch_buffer_bytes;
};

struct kube_response {
    int status;     /* 0: 2xx answer; -EIO: API error (see error); other negative errno:
                       transport failure (-ETIMEDOUT, -ECONNREFUSED, -EFBIG, ...) */
    long http_code; /* 0 when no answer was received */
    struct kube_api_error error; /* filled when http_code >= 400 */
    const char *transport_error; /* libcurl's words for a transport failure, else NULL */
    cJSON *body;                 /* parsed JSON of a 2xx answer, NULL if empty or not JSON */
    /* kube_get_path() only: the 2xx answer's bytes as sent (NUL-terminated;
     * borrowed, valid during the callback), NULL otherwise. */
    const char *raw;
    size_t raw_len;
};

typedef void (*kube_response_cb)(void *data, struct kube_response *resp);

/* Receives each chunk of a watch response as it arrives. Return 0 to go on
 * or a negative errno to end the watch (done is then called with it). */
typedef int (*kube_stream_cb)(void *data, const char *bytes, size_t len);

struct kube_client;
struct kube_request;

/* A client on loop for the API server config names (config and options are
 * copied; options NULL: the defaults). Returns 0 and *ret_client (the
 * caller's until kube_client_close()), or a negative errno (-ENOMEM, or
 * what reading the credentials refused with) and, when ret_err is not
 * NULL, a malloc'd sentence in *ret_err (the caller frees it; NULL when
 * none could be made). */
int kube_client_new(uv_loop_t *loop, const struct kube_config *config,
                    const struct kube_client_options *options, struct kube_client **ret_client,
                    char **ret_err);
/* Cancels every request (no callback follows) and frees the client once the
 * loop has closed its handles. A second call, or NULL, is ignored. */
void kube_client_close(struct kube_client *client);

/* The namespace the config names (context namespace or "default"). */
const char *kube_client_namespace(const struct kube_client *client);

/* For metrics and tests: kube_client_requests_sent() counts requests handed
 * to libcurl since the client was made, kube_client_requests_dropped() LOW
 * requests shed under pressure (their callback got -EAGAIN), and
 * kube_client_requests_in_flight() is how many were handed to libcurl and
 * have not ended (watches included). */
uint64_t kube_client_requests_sent(const struct kube_client *client);
uint64_t kube_client_requests_dropped(const struct kube_client *client);
unsigned kube_client_requests_in_flight(const struct kube_client *client);
/* GET /version calls the client made to wake a stalled connection (see
 * "The poke" in src/kube/client.c); not counted in the three above. */
uint64_t kube_client_pokes(const struct kube_client *client);

struct kube_list_options {
    const char *label_selector;
    const char *field_selector;
    long limit; /* page size; 0: no paging */
    const char *continue_token;
    const char *resource_version; /* NULL: most recent */
};

struct kube_delete_options {
    const char *precondition_uid;              /* NULL: none */
    const char *precondition_resource_version; /* NULL: none */
    const char *propagation_policy;            /* "Foreground", "Background", "Orphan" or NULL */
    long grace_period_seconds;                 /* < 0: the object's default */
};

enum kube_patch_type {
    KUBE_PATCH_MERGE, /* application/merge-patch+json */
    KUBE_PATCH_JSON,  /* application/json-patch+json, may carry "test" operations */
};

struct kube_watch_options {
    const char *label_selector;
    const char *field_selector;
    const char *resource_version;
    long timeout_seconds; /* server-side timeout */
    int allow_bookmarks;
};

/*
 * Starting a call: kube_get(), kube_list(), kube_create(), kube_replace(),
 * kube_patch(), kube_delete(), kube_watch(). Each returns 0 and, when
 * ret_req is not NULL, the request in *ret_req (written only on success):
 * the client owns it; it stays valid until its callback has returned or
 * kube_request_cancel(). On failure the callback is never called and the
 * result says why:
 *   -EINVAL     a NULL client or resource, a missing name, patch, object or
 *               stream callback, a path that is not absolute;
 *   -ESHUTDOWN  the client is closing;
 *   -ENOBUFS    the path or query is over its limit (a name from outside);
 *   -ENOMEM     out of memory.
 * A request is queued at least until the loop comes round: set its priority
 * right after the call that made it.
 *
 * name may be NULL for the collection; namespace NULL or "" for cluster-scoped
 * objects or all namespaces. subresource is NULL or e.g. "status".
 */
MUST_USE int kube_get(struct kube_client *c, const struct kube_resource *res, const char *ns,
                      const char *name, kube_response_cb cb, void *data,
                      struct kube_request **ret_req);
/* GET of the collection, filtered and paged as opts says (NULL: all of it). */
MUST_USE int kube_list(struct kube_client *c, const struct kube_resource *res, const char *ns,
                       const struct kube_list_options *opts, kube_response_cb cb, void *data,
                       struct kube_request **ret_req);
/* POST of obj to the collection. */
MUST_USE int kube_create(struct kube_client *c, const struct kube_resource *res, const char *ns,
                         const cJSON *obj, kube_response_cb cb, void *data,
                         struct kube_request **ret_req);
/* PUT of a whole object (with metadata.resourceVersion for optimistic locking). */
MUST_USE int kube_replace(struct kube_client *c, const struct kube_resource *res, const char *ns,
                          const char *name, const char *subresource, const cJSON *obj,
                          kube_response_cb cb, void *data, struct kube_request **ret_req);
/* PATCH of name (or of its subresource) with patch, a document of type
 * (copied). */
MUST_USE int kube_patch(struct kube_client *c, const struct kube_resource *res, const char *ns,
                        const char *name, const char *subresource, enum kube_patch_type type,
                        const char *patch, kube_response_cb cb, void *data,
                        struct kube_request **ret_req);
/* DELETE of name with opts (NULL: the API server's defaults). */
MUST_USE int kube_delete(struct kube_client *c, const struct kube_resource *res, const char *ns,
                         const char *name, const struct kube_delete_options *opts,
                         kube_response_cb cb, void *data, struct kube_request **ret_req);
/* Streams the watch; done is called once when it ends (server timeout: status 0). */
MUST_USE int kube_watch(struct kube_client *c, const struct kube_resource *res, const char *ns,
                        const struct kube_watch_options *opts, kube_stream_cb on_bytes,
                        kube_response_cb done, void *data, struct kube_request **ret_req);

/* GET of a path on the API server that does not answer with an API object
 * (a pod's proxy, /healthz): path is absolute and already escaped. The
 * answer is passed as bytes (resp->raw), at most max_bytes (more: -EFBIG);
 * a non-2xx answer is an error as for the other calls. */
MUST_USE int kube_get_path(struct kube_client *c, const char *path, size_t max_bytes,
                           kube_response_cb cb, void *data, struct kube_request **ret_req);

/* No-op for NULL. */
void kube_request_set_priority(struct kube_request *req, enum kube_priority priority);

/* Cancels req: no callback follows and the handle is freed (at once, or
 * once its callback or credential lookup returns). NULL, and a request
 * already cancelled, are ignored. */
void kube_request_cancel(struct kube_request *req);

/* Reading an answer: the API server's words for an API error, else
 * libcurl's, else the errno's (never NULL; valid while resp is). */
const char *kube_response_error_text(const struct kube_response *resp);
/* 1 when the API server answered 404 (kube_response_not_found()), or 409
 * with reason AlreadyExists (kube_response_already_exists()); else 0, also
 * after a transport failure. */
int kube_response_not_found(const struct kube_response *resp);
int kube_response_already_exists(const struct kube_response *resp);
/* The API server answered 409 Conflict (kube_api_error_is_conflict): the
 * object changed since it was read; read again and decide again. */
int kube_response_conflict(const struct kube_response *resp);

#endif
