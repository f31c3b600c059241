#include "net/http_get.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <uv.h>

#include "util/buf.h"

struct http_get {
    struct curl_loop *cl;
    CURL *easy; /* the curl_loop's */
    http_get_cb cb;
    void *data;
    struct buf body;
    size_t max_body;
    int too_big;
    int no_memory;
    uint64_t start_ns;
};

static int on_body(void *data, const char *bytes, size_t len)
{
    struct http_get *g = data;
    int e = buf_append(&g->body, bytes, len);
    if (e == -ENOBUFS)
        g->too_big = 1;
    else if (e < 0)
        g->no_memory = 1;
    return e < 0 ? -1 : 0;
}

static void on_done(void *data, CURL *easy, CURLcode code, const char *error)
{
    struct http_get *g = data;
    struct http_get_result res = {.body = "", .error = ""};
    char why[96];
    res.latency_us = (int64_t)((uv_hrtime() - g->start_ns) / 1000);
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &res.http_code);
    if (g->too_big || code == CURLE_FILESIZE_EXCEEDED) {
        res.status = -EFBIG;
        snprintf(why, sizeof(why), "response body larger than %zu bytes", g->max_body);
        res.error = why;
    } else if (g->no_memory) {
        res.status = -ENOMEM;
        res.error = "out of memory for the response body";
    } else if (code != CURLE_OK) {
        res.status = curl_loop_errno(code);
        res.error = error;
    } else {
        res.body = buf_str(&g->body);
        res.body_len = g->body.len;
    }
    g->cb(g->data, &res);
    buf_free(&g->body);
    free(g);
}

static int url_allowed(const char *url)
{
    return strncasecmp(url, "http://", 7) == 0 || strncasecmp(url, "https://", 8) == 0;
}

int http_get_start(struct curl_loop *cl, const struct http_get_request *req, http_get_cb cb,
                   void *data, struct http_get **ret_get)
{
    if (!cl || !req || !cb || !ret_get || !req->url || !url_allowed(req->url) ||
        req->timeout_ms <= 0 || req->connect_timeout_ms < 0 || req->max_body == 0 ||
        (req->method && strcmp(req->method, "GET") != 0 && strcmp(req->method, "POST") != 0 &&
         strcmp(req->method, "PUT") != 0))
        return -EINVAL;
    struct http_get *g = calloc(1, sizeof(*g));
    if (!g)
        return -ENOMEM;
    g->cl = cl;
    g->cb = cb;
    g->data = data;
    g->max_body = req->max_body;
    buf_init(&g->body, req->max_body);

    int err = -ENOMEM;
    struct curl_slist *headers = NULL;
    CURL *e = curl_easy_init();
    if (!e)
        goto fail;
    for (const char *const *h = req->headers; h && *h; h++) {
        struct curl_slist *l = curl_slist_append(headers, *h);
        if (!l)
            goto fail;
        headers = l;
    }
    long timeout = req->timeout_ms > LONG_MAX ? LONG_MAX : (long)req->timeout_ms;
    long connect = req->connect_timeout_ms > 0 && req->connect_timeout_ms < timeout
                       ? (long)req->connect_timeout_ms
                       : timeout;
    if (curl_easy_setopt(e, CURLOPT_URL, req->url) != CURLE_OK ||
        curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https") != CURLE_OK ||
        curl_easy_setopt(e, CURLOPT_PROXY, "") != CURLE_OK)
        goto fail;
    if (!req->method || strcmp(req->method, "GET") == 0) {
        curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    } else {
        /* An empty body: the request itself is the message. */
        if (curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, 0L) != CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_COPYPOSTFIELDS, "") != CURLE_OK ||
            (strcmp(req->method, "PUT") == 0 &&
             curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, "PUT") != CURLE_OK))
            goto fail;
    }
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, connect);
    /* Refuses a declared Content-Length over the limit before any body
     * arrives; on_body() catches the rest. */
    curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)req->max_body);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "hibernator/" HIBERNATOR_VERSION);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    g->start_ns = uv_hrtime();
    err = curl_loop_add(cl, e, headers, on_body, on_done, g);
    if (err < 0)
        goto fail;
    g->easy = e;
    *ret_get = g;
    return 0;

fail:
    curl_loop_free_headers(headers);
    curl_easy_cleanup(e);
    buf_free(&g->body);
    free(g);
    return err;
}

void http_get_cancel(struct http_get *g)
{
    if (!g)
        return;
    curl_loop_remove(g->cl, g->easy);
    buf_free(&g->body);
    free(g);
}
