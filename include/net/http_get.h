/*
 * http_get: one asynchronous HTTP GET to a data source (a workspace's
 * application, Prometheus), on a curl_loop; or a POST or PUT without a
 * body, which is how an application is asked to write its checkpoint. Not for the API server, which
 * has its own client (kube/client.h).
 *
 * Deliberately narrow:
 * - only http:// and https:// URLs; redirects are not followed (a 3xx is
 *   reported as the answer, so a redirect can never carry a token elsewhere);
 * - no proxy, whatever http_proxy/https_proxy/no_proxy say: the targets are
 *   pod addresses and in-cluster services, which an egress proxy cannot reach,
 *   and a proxy would see the credentials in the headers;
 * - TLS is verified against the system's CA bundle;
 * - the response body is bounded; past the limit the transfer is aborted at
 *   once and reported as -EFBIG (the same value kube/client.h uses);
 * - connections are reused through the curl_loop's connection cache.
 *
 * Nothing here logs. Extra headers may carry secrets: they are copied, and
 * the copies are wiped once the transfer is over.
 *
 * Ownership: http_get_start() copies the request. The result passed to the
 * callback, body included, belongs to http_get and is valid only during the
 * call. The handle is valid until the callback starts or until
 * http_get_cancel(); the callback is never called from inside
 * http_get_start(). As with libuv's handles and their loop, every http_get
 * must have finished or been cancelled before its curl_loop is closed:
 * closing stops the transfer but cannot free a handle it does not own.
 */
#ifndef HIBERNATOR_NET_HTTP_GET_H
#define HIBERNATOR_NET_HTTP_GET_H

#include "util/must_use.h"
#include <stddef.h>
#include <stdint.h>

#include "net/curl_loop.h"

struct http_get_request {
    const char *url;
    const char *const *headers; /* "Name: value", NULL-terminated array, or NULL */
    int64_t timeout_ms;         /* the whole exchange; > 0 */
    int64_t connect_timeout_ms; /* 0: as timeout_ms */
    size_t max_body;            /* > 0 */
    /* NULL or "GET"; "POST" or "PUT" send an empty body (an application's
     * checkpoint request, controller/app_checkpoint.h). */
    const char *method;
};

struct http_get_result {
    /* 0: an answer arrived, whatever its HTTP status (see http_code).
     * Otherwise a negative errno: -ETIMEDOUT, -ECONNREFUSED, -EHOSTUNREACH
     * (name not resolved), -EPROTO (TLS), -ECONNRESET, -EFBIG (body over
     * max_body), -ENOMEM, -EIO. */
    int status;
    long http_code;   /* the answer's status, also with -EFBIG; 0 when none arrived */
    const char *body; /* NUL-terminated; "" when empty or status < 0 */
    size_t body_len;
    const char *error;  /* libcurl's words when status < 0, else "" */
    int64_t latency_us; /* from http_get_start() to the end of the exchange */
};

typedef void (*http_get_cb)(void *data, const struct http_get_result *res);

struct http_get;

/* Returns 0 and a handle, or -EINVAL (no URL, a scheme other than http or
 * https, a timeout <= 0, max_body 0) or -ENOMEM; no callback then. */
MUST_USE int http_get_start(struct curl_loop *cl, const struct http_get_request *req,
                            http_get_cb cb, void *data, struct http_get **ret_get);

/* Aborts the exchange; no callback follows. Accepts NULL. Not for a handle
 * whose callback has started. */
void http_get_cancel(struct http_get *g);

#endif
