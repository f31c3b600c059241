#include "node/kubelet_checkpoint.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/secret.h"
#include "util/strfmt.h"

/* Lower-case letters, digits, '-' and '.': what namespace, pod and
 * container names are made of; nothing to escape in a path. */
static int dns_name(const char *s)
{
    if (!s || !*s || strlen(s) > 253)
        return 0;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '.'))
            return 0;
    return 1;
}

/* The token file's first line (this runs on the thread pool: a plain read). */
static int read_token(const char *path, char **ret, size_t *ret_len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -errno;
    char *t = calloc(1, 64 * 1024);
    if (!t) {
        fclose(f);
        return -ENOMEM;
    }
    size_t n = fread(t, 1, 64 * 1024 - 1, f);
    int bad = ferror(f);
    fclose(f);
    n = strcspn(t, "\r\n");
    if (bad || n == 0) {
        secret_free(t, 64 * 1024);
        return bad ? -EIO : -ENODATA;
    }
    t[n] = '\0';
    *ret = t;
    *ret_len = 64 * 1024;
    return 0;
}

const char *kubelet_archive_name(const char *path)
{
    const char *slash = path ? strrchr(path, '/') : NULL;
    const char *name = slash ? slash + 1 : path;
    size_t n = name ? strlen(name) : 0;
    if (n <= 4 || strcmp(name + n - 4, ".tar") != 0)
        return NULL;
    return name;
}

struct body {
    char data[KUBELET_MAX_BODY + 1];
    size_t len;
    int over;
};

static size_t on_body(char *p, size_t size, size_t n, void *data)
{
    struct body *b = data;
    size_t len = size * n;
    if (b->len + len > KUBELET_MAX_BODY) {
        b->over = 1;
        return 0;
    }
    memcpy(b->data + b->len, p, len);
    b->len += len;
    b->data[b->len] = '\0';
    return len;
}

int kubelet_checkpoint(const struct kubelet_access *k, const char *ns, const char *pod,
                       const char *container, long timeout_s, char **ret_archive, char **ret_err)
{
    *ret_archive = NULL;
    if (ret_err)
        *ret_err = NULL;
    if (!dns_name(ns) || !dns_name(pod) || !dns_name(container)) {
        strfmt_to(ret_err, "not a namespace, pod and container name: %s/%s/%s", ns ? ns : "",
                  pod ? pod : "", container ? container : "");
        return -EINVAL;
    }
    char url[1024];
    if (timeout_s > 0)
        snprintf(url, sizeof(url), "%s/checkpoint/%s/%s/%s?timeout=%ld", k->base_url, ns, pod,
                 container, timeout_s);
    else
        snprintf(url, sizeof(url), "%s/checkpoint/%s/%s/%s", k->base_url, ns, pod, container);
    char *token = NULL;
    size_t token_len = 0;
    if (k->token_file) {
        int e = read_token(k->token_file, &token, &token_len);
        if (e < 0) {
            strfmt_to(ret_err, "reading the token %s: %s", k->token_file, strerror(-e));
            return e;
        }
    }
    struct body *b = calloc(1, sizeof(*b));
    CURL *c = curl_easy_init();
    struct curl_slist *h = NULL;
    char *auth = NULL;
    int rc = 0;
    if (!b || !c) {
        rc = -ENOMEM;
        goto out;
    }
    if (token) {
        if (asprintf(&auth, "Authorization: Bearer %s", token) < 0) {
            auth = NULL;
            rc = -ENOMEM;
            goto out;
        }
        if (!(h = curl_slist_append(NULL, auth))) {
            rc = -ENOMEM;
            goto out;
        }
    }
    char errbuf[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, 0L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https");
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, b);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
    /* The kubelet's own wait plus a margin; with none, an hour at most. */
    curl_easy_setopt(c, CURLOPT_TIMEOUT, timeout_s > 0 ? timeout_s + 30 : 3600L);
    if (k->ca_file)
        curl_easy_setopt(c, CURLOPT_CAINFO, k->ca_file);
    CURLcode code = curl_easy_perform(c);
    long http = 0;
    if (code == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &http);
    if (b->over) {
        strfmt_to(ret_err, "POST %s: an answer over %d bytes", url, KUBELET_MAX_BODY);
        rc = -EFBIG;
    } else if (code != CURLE_OK) {
        strfmt_to(ret_err, "POST %s: %s", url, errbuf[0] ? errbuf : curl_easy_strerror(code));
        rc = code == CURLE_OPERATION_TIMEDOUT ? -ETIMEDOUT : -EIO;
    } else if (http != 200) {
        /* The kubelet's words: "checkpointing of ns/pod/container failed (...)". */
        while (b->len && (b->data[b->len - 1] == '\n' || b->data[b->len - 1] == '\r'))
            b->data[--b->len] = '\0';
        strfmt_to(ret_err, "the kubelet answered %ld: %.2000s", http, b->data);
        rc = http == 401 || http == 403 ? -EACCES : -EIO;
    } else {
        cJSON *root = cJSON_Parse(b->data);
        const cJSON *items = root ? cJSON_GetObjectItemCaseSensitive(root, "items") : NULL;
        const cJSON *first = cJSON_IsArray(items) ? cJSON_GetArrayItem(items, 0) : NULL;
        if (cJSON_IsString(first) && kubelet_archive_name(first->valuestring)) {
            *ret_archive = strdup(first->valuestring);
            rc = *ret_archive ? 0 : -ENOMEM;
        } else {
            strfmt_to(ret_err, "the kubelet answered without an archive: %.300s", b->data);
            rc = -EIO;
        }
        cJSON_Delete(root);
    }
out:
    if (c)
        curl_easy_cleanup(c);
    curl_slist_free_all(h);
    if (auth)
        secret_free_str(auth);
    if (token)
        secret_free(token, token_len);
    free(b);
    return rc;
}
