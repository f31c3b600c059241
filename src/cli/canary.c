#include "cli/canary.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/client.h"
#include "kube/resource.h"
#include "net/curl_loop.h"
#include "net/http_get.h"
#include "util/buf.h"
#include "util/text.h"

struct canary {
    struct cli_api *api;
    const char *url_template;
    struct curl_loop *curl; /* the URL template's plain GETs */
};

/* One read in flight. */
struct read {
    struct canary *c;
    char *url;
    int done;
    int status;
    long http_code;
    struct buf body;
    char *error;
};

static void read_free(struct read *rd)
{
    free(rd->error);
    free(rd->url);
    buf_free(&rd->body);
    free(rd);
}

char *canary_http_error(long http_code, const char *body)
{
    char *excerpt = text_printable_copy(body, strnlen(body, CANARY_ERROR_BODY), false, ' ');
    char *msg = NULL;
    if (excerpt && asprintf(&msg, "HTTP %ld: %s", http_code, excerpt) < 0)
        msg = NULL;
    free(excerpt);
    return msg;
}

int canary_new(struct cli_api *api, const char *url_template, struct canary **ret)
{
    struct canary *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->api = api;
    c->url_template = url_template;
    int r = url_template ? curl_loop_new(&api->loop, &c->curl) : 0;
    if (r < 0) {
        canary_free(c);
        return r;
    }
    *ret = c;
    return 0;
}

void canary_free(struct canary *c)
{
    if (!c)
        return;
    curl_loop_close(c->curl);
    free(c);
}

static const char *var(const struct canary_target *t, const char *name, size_t len)
{
    static const struct {
        const char *name;
        size_t offset;
    } vars[] = {
        {"pod", offsetof(struct canary_target, pod)},
        {"uid", offsetof(struct canary_target, uid)},
        {"namespace", offsetof(struct canary_target, ns)},
        {"workspace", offsetof(struct canary_target, workspace)},
    };
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
        if (strlen(vars[i].name) == len && strncmp(vars[i].name, name, len) == 0) {
            const char *v = *(const char *const *)((const char *)t + vars[i].offset);
            return v ? v : "";
        }
    return NULL;
}

char *canary_url(const char *tpl, const struct canary_target *t)
{
    struct buf b;
    buf_init(&b, 16 * 1024);
    int e = 0;
    for (const char *p = tpl; *p && e == 0;) {
        const char *close = *p == '{' ? strchr(p, '}') : NULL;
        const char *v = close ? var(t, p + 1, (size_t)(close - p - 1)) : NULL;
        if (v) {
            e = buf_append_escaped(&b, v);
            p = close + 1;
        } else {
            e = buf_append(&b, p, 1);
            p++;
        }
    }
    char *url = e == 0 ? buf_steal(&b) : NULL;
    buf_free(&b);
    return url;
}

static void trim_into(struct read *rd, char **ret_value)
{
    const char *s = buf_str(&rd->body);
    size_t n = rd->body.len;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == '\t'))
        n--;
    while (n && (*s == ' ' || *s == '\n' || *s == '\r' || *s == '\t')) {
        s++;
        n--;
    }
    *ret_value = strndup(s, n);
}

/* ---- a plain GET (--canary-url) ----------------------------------------------- */

static void on_plain(void *data, const struct http_get_result *res)
{
    struct read *rd = data;
    rd->done = 1;
    rd->http_code = res->http_code;
    rd->status = res->status;
    if (res->status < 0) {
        rd->error = strdup(res->error && *res->error ? res->error : "transfer failed");
        return;
    }
    if (buf_append(&rd->body, res->body, res->body_len) < 0)
        rd->status = -ENOMEM;
}

/* ---- through the API server's pod proxy ------------------------------------- */

/* The API client brings the kubeconfig's TLS settings and credential. */
static void on_proxy(void *data, struct kube_response *resp)
{
    struct read *rd = data;
    rd->done = 1;
    rd->http_code = resp->http_code;
    rd->status = resp->status;
    if (resp->status < 0) {
        rd->error = strdup(kube_response_error_text(resp));
        return;
    }
    if (buf_append(&rd->body, resp->raw ? resp->raw : "", resp->raw_len) < 0)
        rd->status = -ENOMEM;
}

static int read_done(void *data)
{
    return ((struct read *)data)->done;
}

/* The pod proxy's path on the API server. */
static char *proxy_path(const struct canary_target *t)
{
    struct buf b;
    buf_init(&b, 16 * 1024);
    char port[16];
    snprintf(port, sizeof(port), ":%d", t->port);
    int e = buf_append_str(&b, "/api/v1/namespaces/");
    if (e == 0)
        e = buf_append_escaped(&b, t->ns);
    if (e == 0)
        e = buf_append_str(&b, "/pods/");
    if (e == 0)
        e = buf_append_escaped(&b, t->pod);
    if (e == 0)
        e = buf_append_str(&b, port);
    if (e == 0)
        e = buf_append_str(&b, "/proxy/canary");
    char *url = e == 0 ? buf_steal(&b) : NULL;
    buf_free(&b);
    return url;
}

int canary_read(struct canary *c, const struct canary_target *t, char **ret_value, char **ret_err)
{
    struct read *rd = calloc(1, sizeof(*rd));
    if (!rd)
        return -ENOMEM;
    rd->c = c;
    buf_init(&rd->body, CANARY_MAX_BODY);
    rd->url = c->url_template ? canary_url(c->url_template, t) : proxy_path(t);
    struct http_get *g = NULL;
    int r = rd->url ? 0 : -ENOMEM;
    int64_t deadline = cli_api_now(c->api) + CANARY_TIMEOUT_MS + 5000;
    if (r == 0 && c->url_template) {
        struct http_get_request req = {
            .url = rd->url, .timeout_ms = CANARY_TIMEOUT_MS, .max_body = CANARY_MAX_BODY};
        r = http_get_start(c->curl, &req, on_plain, rd, &g);
        if (r == 0)
            r = cli_api_run_until(c->api, read_done, rd, deadline, NULL);
        if (r < 0 && g && !rd->done)
            http_get_cancel(g);
    } else if (r == 0) {
        struct kube_request *req = NULL;
        r = kube_get_path(c->api->client, rd->url, CANARY_MAX_BODY, on_proxy, rd, &req);
        if (r == 0)
            r = cli_api_run_until(c->api, read_done, rd, deadline, NULL);
        if (r < 0 && req && !rd->done)
            kube_request_cancel(req);
    }
    if (r == 0)
        r = rd->status;
    if (r == 0 && (rd->http_code < 200 || rd->http_code > 299)) {
        r = -EIO;
        free(rd->error);
        rd->error = canary_http_error(rd->http_code, buf_str(&rd->body));
    }
    if (r == 0) {
        trim_into(rd, ret_value);
        if (!*ret_value)
            r = -ENOMEM;
    }
    if (r < 0) {
        const char *why = rd->error         ? rd->error
                          : r == -EINTR     ? "interrupted"
                          : r == -ETIMEDOUT ? "timed out"
                          : r == -ENOMEM    ? "out of memory"
                                            : "failed";
        if (asprintf(ret_err, "GET %s: %s", rd->url ? rd->url : "(no URL)", why) < 0)
            *ret_err = NULL;
    }
    read_free(rd);
    return r;
}
