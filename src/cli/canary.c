#include "cli/canary.h"

#include <curl/curl.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/credentials.h"
#include "kube/resource.h"
#include "net/curl_loop.h"
#include "net/http_get.h"
#include "util/buf.h"
#include "util/secret.h"

struct canary {
    struct cli_api *api;
    const char *url_template;
    struct curl_loop *curl;
    struct kube_credentials *creds; /* the proxy path only */
};

/* One read in flight. On the heap: a credential callback may come after
 * the read was given up (a plugin still running at a Ctrl-C), and then frees
 * it. */
struct read {
    struct canary *c;
    char *url;
    int done;
    int status;
    long http_code;
    struct buf body;
    char *error;
    CURL *easy;       /* the proxy path, until its done callback */
    int cred_pending; /* waiting for kube_credentials_get's callback */
    int cred_done;
    int abandoned;
    int too_big;
};

static void read_free(struct read *rd)
{
    free(rd->error);
    free(rd->url);
    buf_free(&rd->body);
    free(rd);
}

int canary_new(struct cli_api *api, const char *url_template, struct canary **ret)
{
    struct canary *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->api = api;
    c->url_template = url_template;
    int r = curl_loop_new(&api->loop, &c->curl);
    if (r == 0 && !url_template)
        r = kube_credentials_new(&api->loop, api->config, &c->creds);
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
    kube_credentials_free(c->creds);
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
            e = kube_append_escaped(&b, v);
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

static int on_proxy_body(void *data, const char *bytes, size_t len)
{
    struct read *rd = data;
    int e = buf_append(&rd->body, bytes, len);
    if (e == -ENOBUFS)
        rd->too_big = 1;
    return e < 0 ? -1 : 0;
}

static void on_proxy_done(void *data, CURL *easy, CURLcode code, const char *error)
{
    struct read *rd = data;
    rd->done = 1;
    rd->easy = NULL;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &rd->http_code);
    if (rd->too_big) {
        rd->status = -EFBIG;
        rd->error = strdup("answer larger than 64 KiB");
    } else if (code != CURLE_OK) {
        rd->status = curl_loop_errno(code);
        rd->error = strdup(error && *error ? error : curl_easy_strerror(code));
    }
}

static int add_header(struct curl_slist **h, const char *line)
{
    struct curl_slist *l = curl_slist_append(*h, line);
    if (!l)
        return -ENOMEM;
    *h = l;
    return 0;
}

static void on_credential(void *data, int status, const struct kube_credential *cred,
                          const char *err)
{
    struct read *rd = data;
    rd->cred_pending = 0;
    if (rd->abandoned) {
        read_free(rd);
        return;
    }
    const struct kube_config *cfg = rd->c->api->config;
    rd->cred_done = 1;
    if (status < 0) {
        rd->done = 1;
        rd->status = status;
        if (asprintf(&rd->error, "credentials: %s", err ? err : "unavailable") < 0)
            rd->error = NULL;
        return;
    }
    CURL *e = curl_easy_init();
    struct curl_slist *headers = NULL;
    int r = e ? add_header(&headers, "Accept: */*") : -ENOMEM;
    if (r == 0 && cred && cred->token) {
        struct buf h;
        buf_init(&h, 64 * 1024);
        r = buf_printf(&h, "Authorization: Bearer %s", cred->token);
        if (r == 0)
            r = add_header(&headers, buf_str(&h));
        secret_buf_free(&h);
    }
    if (r == 0) {
        curl_easy_setopt(e, CURLOPT_URL, rd->url);
        curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "https,http");
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(e, CURLOPT_USERAGENT, "kubectl-workspace/" HIBERNATOR_VERSION);
        curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)CANARY_TIMEOUT_MS);
        curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
        if (cfg->ca_pem) {
            struct curl_blob ca = {cfg->ca_pem, cfg->ca_pem_len, CURL_BLOB_COPY};
            curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &ca);
        }
        const char *cert = cfg->cert_pem, *key = cfg->key_pem;
        size_t cert_len = cfg->cert_pem_len, key_len = cfg->key_pem_len;
        if (cred && cred->cert_pem && cred->key_pem) {
            cert = cred->cert_pem;
            cert_len = cred->cert_pem_len;
            key = cred->key_pem;
            key_len = cred->key_pem_len;
        }
        if (cert && key) {
            struct curl_blob cb = {(void *)cert, cert_len, CURL_BLOB_COPY};
            struct curl_blob kb = {(void *)key, key_len, CURL_BLOB_COPY};
            curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
            curl_easy_setopt(e, CURLOPT_SSLCERT_BLOB, &cb);
            curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
            curl_easy_setopt(e, CURLOPT_SSLKEY_BLOB, &kb);
        }
        if (cfg->insecure_skip_tls_verify) {
            curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
            curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
        }
        r = curl_loop_add(rd->c->curl, e, headers, on_proxy_body, on_proxy_done, rd);
    }
    if (r < 0) {
        curl_loop_free_headers(headers);
        if (e)
            curl_easy_cleanup(e);
        rd->done = 1;
        rd->status = r;
        rd->error = strdup("could not start the request");
        return;
    }
    rd->easy = e;
}

static int read_done(void *data)
{
    return ((struct read *)data)->done;
}

static char *proxy_url(const struct kube_config *cfg, const struct canary_target *t)
{
    struct buf b;
    buf_init(&b, 16 * 1024);
    char port[16];
    snprintf(port, sizeof(port), ":%d", t->port);
    int e = buf_printf(&b, "%s/api/v1/namespaces/", cfg->server);
    if (e == 0)
        e = kube_append_escaped(&b, t->ns);
    if (e == 0)
        e = buf_append_str(&b, "/pods/");
    if (e == 0)
        e = kube_append_escaped(&b, t->pod);
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
    rd->url = c->url_template ? canary_url(c->url_template, t) : proxy_url(c->api->config, t);
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
        rd->cred_pending = 1;
        kube_credentials_get(c->creds, on_credential, rd);
        r = cli_api_run_until(c->api, read_done, rd, deadline, NULL);
        if (r < 0 && rd->easy)
            curl_loop_remove(c->curl, rd->easy);
    }
    if (r == 0)
        r = rd->status;
    if (r == 0 && (rd->http_code < 200 || rd->http_code > 299)) {
        r = -EIO;
        char *start = strndup(buf_str(&rd->body), 200);
        for (char *p = start; p && *p; p++)
            if ((unsigned char)*p < 0x20)
                *p = ' ';
        free(rd->error);
        if (asprintf(&rd->error, "HTTP %ld: %s", rd->http_code, start ? start : "") < 0)
            rd->error = NULL;
        free(start);
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
    if (rd->cred_pending)
        rd->abandoned = 1; /* on_credential frees it */
    else
        read_free(rd);
    return r;
}
