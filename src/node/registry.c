#include "node/registry.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <errno.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include "node/registry_token.h"
#include "util/base64.h"
#include "util/secret.h"
#include "util/strfmt.h"

int registry_split(const char *repository, char **ret_host, char **ret_path)
{
    *ret_host = *ret_path = NULL;
    const char *slash = repository ? strchr(repository, '/') : NULL;
    if (!slash || slash == repository || !slash[1])
        return -EINVAL;
    *ret_host = strndup(repository, (size_t)(slash - repository));
    *ret_path = strdup(slash + 1);
    if (!*ret_host || !*ret_path) {
        free(*ret_host);
        free(*ret_path);
        *ret_host = *ret_path = NULL;
        return -ENOMEM;
    }
    return 0;
}

int registry_credentials(const char *dockerconfig_json, const char *host, char **ret_basic,
                         char **ret_err)
{
    *ret_basic = NULL;
    if (ret_err)
        *ret_err = NULL;
    cJSON *root = cJSON_Parse(dockerconfig_json ? dockerconfig_json : "");
    if (!root) {
        strfmt_to(ret_err, "the registry credentials are not JSON");
        return -EINVAL;
    }
    int rc = 0;
    const cJSON *auths = cJSON_GetObjectItemCaseSensitive(root, "auths");
    const cJSON *entry =
        cJSON_IsObject(auths) ? cJSON_GetObjectItemCaseSensitive(auths, host) : NULL;
    if (cJSON_IsObject(entry)) {
        const cJSON *auth = cJSON_GetObjectItemCaseSensitive(entry, "auth");
        const cJSON *user = cJSON_GetObjectItemCaseSensitive(entry, "username");
        const cJSON *pass = cJSON_GetObjectItemCaseSensitive(entry, "password");
        if (cJSON_IsString(auth) && auth->valuestring[0]) {
            char *dec = NULL;
            size_t n = 0;
            int e = base64_decode(auth->valuestring, strlen(auth->valuestring), &dec, &n);
            if (e == 0 && memchr(dec, ':', n) && strlen(dec) == n) {
                *ret_basic = dec;
                rc = 1;
            } else {
                if (dec)
                    secret_free(dec, n);
                strfmt_to(ret_err, "auths[%s].auth: not base64 of user:password", host);
                rc = e == -ENOMEM ? -ENOMEM : -EINVAL;
            }
        } else if (cJSON_IsString(user) && cJSON_IsString(pass)) {
            if (asprintf(ret_basic, "%s:%s", user->valuestring, pass->valuestring) < 0) {
                *ret_basic = NULL;
                rc = -ENOMEM;
            } else {
                rc = 1;
            }
        } else {
            strfmt_to(ret_err, "auths[%s]: neither auth nor username and password", host);
            rc = -EINVAL;
        }
    }
    cJSON_Delete(root);
    return rc;
}

/* ---- one request ---------------------------------------------------------- */

struct answer {
    long code;
    char body[1024]; /* the start of the body, for error texts */
    size_t body_len;
    char location[2048];
    char digest[OCI_DIGEST_SIZE];
    char challenge[2048]; /* WWW-Authenticate */
    int64_t length;       /* Content-Length, -1: none */
};

static size_t on_body(char *p, size_t size, size_t n, void *data)
{
    struct answer *a = data;
    size_t len = size * n, room = sizeof(a->body) - 1 - a->body_len;
    memcpy(a->body + a->body_len, p, len < room ? len : room);
    a->body_len += len < room ? len : room;
    a->body[a->body_len] = '\0';
    return len;
}

/* "Name: value\r\n" into out when the header is name. */
static void header_value(const char *line, size_t len, const char *name, char *out, size_t size)
{
    size_t nl = strlen(name);
    if (len <= nl + 1 || strncasecmp(line, name, nl) != 0 || line[nl] != ':')
        return;
    const char *v = line + nl + 1;
    const char *end = line + len;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
        end--;
    size_t n = (size_t)(end - v);
    if (n >= size)
        return; /* too long to be one we want */
    memcpy(out, v, n);
    out[n] = '\0';
}

static size_t on_header(char *p, size_t size, size_t n, void *data)
{
    struct answer *a = data;
    size_t len = size * n;
    char num[32] = "";
    header_value(p, len, "Location", a->location, sizeof(a->location));
    header_value(p, len, "Docker-Content-Digest", a->digest, sizeof(a->digest));
    header_value(p, len, "WWW-Authenticate", a->challenge, sizeof(a->challenge));
    header_value(p, len, "Content-Length", num, sizeof(num));
    if (num[0])
        a->length = strtoll(num, NULL, 10);
    return len;
}

struct body_source {
    const char *text; /* a document in memory, or */
    size_t len, off;
    FILE *file; /* the layer */
};

static size_t on_read(char *p, size_t size, size_t n, void *data)
{
    struct body_source *s = data;
    size_t want = size * n;
    if (s->file)
        return fread(p, 1, want, s->file);
    size_t left = s->len - s->off;
    size_t k = want < left ? want : left;
    memcpy(p, s->text + s->off, k);
    s->off += k;
    return k;
}

/* What every request of the agent's sets: https only, the registry's CA,
 * errors into errbuf, the bearer token when there is one, else the Basic
 * credentials if any (the credentials stay in the handle: gone with it). */
static void set_common(CURL *c, const struct registry_access *ra, const char *url,
                       const char *bearer, char errbuf[static CURL_ERROR_SIZE])
{
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https");
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
    if (ra->ca_file)
        curl_easy_setopt(c, CURLOPT_CAINFO, ra->ca_file);
    if (bearer) {
        curl_easy_setopt(c, CURLOPT_HTTPAUTH, CURLAUTH_BEARER);
        curl_easy_setopt(c, CURLOPT_XOAUTH2_BEARER, bearer);
    } else if (ra->basic) {
        curl_easy_setopt(c, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
        curl_easy_setopt(c, CURLOPT_USERPWD, ra->basic);
    }
}

/* method url, with body (content type) when not NULL, into *ans; with the
 * bearer token when there is one, else the Basic credentials if any.
 * Returns 0 when an answer came (any status), or a negative errno and
 * *ret_err. */
static int request(const struct registry_access *ra, const char *bearer, const char *method,
                   const char *url, const char *content_type, const char *accept,
                   struct body_source *body, int64_t body_len, struct answer *ans, char **ret_err)
{
    memset(ans, 0, sizeof(*ans));
    ans->length = -1;
    CURL *c = curl_easy_init();
    if (!c)
        return -ENOMEM;
    struct curl_slist *h = NULL, *t;
    char line[256];
    int rc = 0;
    if (content_type) {
        snprintf(line, sizeof(line), "Content-Type: %s", content_type);
        if (!(t = curl_slist_append(h, line)))
            rc = -ENOMEM;
        else
            h = t;
    }
    if (rc == 0 && accept) {
        snprintf(line, sizeof(line), "Accept: %s", accept);
        if (!(t = curl_slist_append(h, line)))
            rc = -ENOMEM;
        else
            h = t;
    }
    /* No "Expect: 100-continue": the layer goes in one PUT. */
    if (rc == 0 && body && (t = curl_slist_append(h, "Expect:")))
        h = t;
    char errbuf[CURL_ERROR_SIZE] = "";
    if (rc == 0) {
        set_common(c, ra, url, bearer, errbuf);
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, ans);
        curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(c, CURLOPT_HEADERDATA, ans);
        if (ra->timeout_s > 0)
            curl_easy_setopt(c, CURLOPT_TIMEOUT, ra->timeout_s);
        if (ra->low_speed_time_s > 0) {
            curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, ra->low_speed_bytes);
            curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, ra->low_speed_time_s);
        }
        if (strcmp(method, "HEAD") == 0)
            curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
        if (body) {
            curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
            curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
            curl_easy_setopt(c, CURLOPT_READDATA, body);
            curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)body_len);
        }
        CURLcode code = curl_easy_perform(c);
        if (code == CURLE_OK) {
            curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &ans->code);
        } else {
            strfmt_to(ret_err, "%s %s: %s", method, url,
                      errbuf[0] ? errbuf : curl_easy_strerror(code));
            rc = code == CURLE_OPERATION_TIMEDOUT ? -ETIMEDOUT : -EIO;
        }
    }
    curl_easy_cleanup(c);
    curl_slist_free_all(h);
    return rc;
}

static int refused(const char *what, const char *url, const struct answer *ans, char **ret_err)
{
    strfmt_to(ret_err, "%s: %s answered %ld%s%.300s", what, url, ans->code,
              ans->body_len ? ": " : "", ans->body);
    return ans->code == 401 || ans->code == 403 ? -EACCES : -EIO;
}

/* ---- token authentication --------------------------------------------------- */

/* The requests of one push or delete: a registry that asks for a bearer
 * token (node/registry_token.h) gets one from its realm, kept for the
 * session's later requests. */
struct session {
    const struct registry_access *ra;
    const char *default_scope; /* "repository:<path>:<actions>" when the challenge has none */
    char *bearer;              /* the token, a secret */
    char scope[REGISTRY_CHALLENGE_FIELD]; /* what the token was issued for */
    int fetches;
};

static void session_end(struct session *s)
{
    if (s->bearer)
        secret_free_str(s->bearer);
    s->bearer = NULL;
}

struct token_body {
    char *data;
    size_t len, cap;
    int over;
};

static size_t on_token_body(char *p, size_t size, size_t n, void *data)
{
    struct token_body *b = data;
    size_t len = size * n;
    if (b->len + len > b->cap) {
        b->over = 1;
        return 0;
    }
    memcpy(b->data + b->len, p, len);
    b->len += len;
    return len;
}

/* GET the realm's token for the challenge, with the Basic credentials if
 * any; into s->bearer. */
static int fetch_token(struct session *s, const struct registry_challenge *ch, char **ret_err)
{
    char *url = NULL;
    int e = registry_token_url(ch, s->default_scope, &url);
    if (e == -EINVAL) {
        strfmt_to(ret_err, "the registry asks for a token from %s: not https, refused",
                  ch->realm[0] ? ch->realm : "(no realm)");
        return -EACCES;
    }
    if (e < 0)
        return e;
    struct token_body b = {.data = malloc(REGISTRY_MAX_BODY), .cap = REGISTRY_MAX_BODY};
    CURL *c = curl_easy_init();
    if (!b.data || !c) {
        free(url);
        free(b.data);
        if (c)
            curl_easy_cleanup(c);
        return -ENOMEM;
    }
    char errbuf[CURL_ERROR_SIZE] = "";
    set_common(c, s->ra, url, NULL, errbuf);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_token_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
    CURLcode code = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    /* The URL names the realm, the service and the scope: no secret. */
    if (code != CURLE_OK) {
        strfmt_to(ret_err, "getting a token from %s: %s", url,
                  b.over ? "the answer is too long"
                         : (errbuf[0] ? errbuf : curl_easy_strerror(code)));
        e = -EIO;
    } else if (status != 200) {
        strfmt_to(ret_err, "getting a token from %s: answered %ld", url, status);
        e = status == 401 || status == 403 ? -EACCES : -EIO;
    } else {
        char *token = NULL;
        e = registry_token_from_json(b.data, b.len, &token);
        if (e == -EINVAL)
            strfmt_to(ret_err, "getting a token from %s: the answer holds no token", url);
        if (e == 0) {
            session_end(s);
            s->bearer = token;
            snprintf(s->scope, sizeof(s->scope), "%s", ch->scope[0] ? ch->scope : "");
        }
    }
    secret_free(b.data, b.cap);
    free(url);
    return e;
}

/* request() within the session: a 401 that asks for a bearer token (one the
 * session has not got for that scope) gets one, and the request is sent
 * again, at most three tokens a session. Answers as request(). */
static int call(struct session *s, const char *method, const char *url, const char *content_type,
                const char *accept, struct body_source *body, int64_t body_len, struct answer *ans,
                char **ret_err)
{
    for (;;) {
        int e = request(s->ra, s->bearer, method, url, content_type, accept, body, body_len, ans,
                        ret_err);
        if (e < 0 || ans->code != 401 || !ans->challenge[0])
            return e;
        struct registry_challenge ch;
        if (registry_challenge_parse(ans->challenge, &ch) < 0 || !ch.bearer)
            return 0; /* Basic, refused: the caller says so */
        if ((s->bearer && strcmp(ch.scope, s->scope) == 0) || s->fetches >= 3)
            return 0; /* the token we have does not do: refused */
        s->fetches++;
        e = fetch_token(s, &ch, ret_err);
        if (e < 0)
            return e;
        /* Sent again from the start. */
        if (body && body->file && fseek(body->file, 0, SEEK_SET) != 0)
            return -EIO;
        if (body)
            body->off = 0;
    }
}

/* ---- pushing -------------------------------------------------------------- */

static double seconds_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

/* sha256 of the file, streamed. */
static int hash_file(FILE *f, char out[OCI_DIGEST_SIZE], int64_t *ret_len)
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (!ctx)
        return -ENOMEM;
    enum { CHUNK = 1 << 20 };
    unsigned char *chunk = malloc(CHUNK);
    if (!chunk) {
        EVP_MD_CTX_free(ctx);
        return -ENOMEM;
    }
    EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
    int64_t total = 0;
    size_t n;
    while ((n = fread(chunk, 1, CHUNK, f)) > 0) {
        EVP_DigestUpdate(ctx, chunk, n);
        total += (int64_t)n;
    }
    free(chunk);
    int err = ferror(f);
    unsigned char md[32];
    unsigned int mdlen = 0;
    EVP_DigestFinal_ex(ctx, md, &mdlen);
    EVP_MD_CTX_free(ctx);
    if (err)
        return -EIO;
    memcpy(out, "sha256:", 7);
    for (unsigned i = 0; i < 32; i++)
        snprintf(out + 7 + 2 * i, 3, "%02x", md[i]);
    *ret_len = total;
    return 0;
}

struct push {
    struct session s;
    const char *host, *path;
    char url[4096];
    struct answer ans;
    char **ret_err;
};

/* Sends one blob (a file or a document) unless the registry has it. */
static int push_blob(struct push *p, const char *digest, struct body_source *src, int64_t len,
                     int *ret_existed)
{
    snprintf(p->url, sizeof(p->url), "https://%s/v2/%s/blobs/%s", p->host, p->path, digest);
    int e = call(&p->s, "HEAD", p->url, NULL, NULL, NULL, 0, &p->ans, p->ret_err);
    if (e < 0)
        return e;
    if (p->ans.code == 200 && p->ans.length == len) {
        *ret_existed = 1;
        return 0;
    }
    *ret_existed = 0;
    snprintf(p->url, sizeof(p->url), "https://%s/v2/%s/blobs/uploads/", p->host, p->path);
    e = call(&p->s, "POST", p->url, NULL, NULL, NULL, 0, &p->ans, p->ret_err);
    if (e < 0)
        return e;
    if (p->ans.code != 202 || !p->ans.location[0])
        return refused("starting the upload", p->url, &p->ans, p->ret_err);
    char location[2048];
    snprintf(location, sizeof(location), "%s", p->ans.location);
    /* Location is absolute or a path on the registry. */
    if (strncmp(location, "https://", 8) == 0)
        snprintf(p->url, sizeof(p->url), "%s%sdigest=%s", location,
                 strchr(location, '?') ? "&" : "?", digest);
    else if (location[0] == '/')
        snprintf(p->url, sizeof(p->url), "https://%s%s%sdigest=%s", p->host, location,
                 strchr(location, '?') ? "&" : "?", digest);
    else
        return refused("starting the upload (a Location that is not https)", p->url, &p->ans,
                       p->ret_err);
    e = call(&p->s, "PUT", p->url, "application/octet-stream", NULL, src, len, &p->ans, p->ret_err);
    if (e < 0)
        return e;
    if (p->ans.code != 201)
        return refused("uploading a blob", p->url, &p->ans, p->ret_err);
    return 0;
}

static int push_manifest(struct push *p, const char *reference, const struct oci_document *d,
                         const char *media_type)
{
    snprintf(p->url, sizeof(p->url), "https://%s/v2/%s/manifests/%s", p->host, p->path, reference);
    struct body_source src = {.text = d->text, .len = d->len};
    int e =
        call(&p->s, "PUT", p->url, media_type, NULL, &src, (int64_t)d->len, &p->ans, p->ret_err);
    if (e < 0)
        return e;
    if (p->ans.code != 201)
        return refused("putting a manifest", p->url, &p->ans, p->ret_err);
    if (p->ans.digest[0] && strcmp(p->ans.digest, d->digest) != 0) {
        strfmt_to(p->ret_err, "%s: the registry stored digest %s, not %s", p->url, p->ans.digest,
                  d->digest);
        return -EIO;
    }
    return 0;
}

int registry_push_checkpoint(const struct registry_access *a, const char *repository,
                             const char *tag, const char *archive, const char *container,
                             const char *architecture, struct registry_pushed *ret, char **ret_err)
{
    memset(ret, 0, sizeof(*ret));
    if (ret_err)
        *ret_err = NULL;
    char *host = NULL, *path = NULL;
    int e = registry_split(repository, &host, &path);
    if (e < 0) {
        strfmt_to(ret_err, "repository %s: not host/path", repository ? repository : "(none)");
        return e;
    }
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    FILE *f = fopen(archive, "rb");
    struct checkpoint_image img = {0};
    char scope[600];
    snprintf(scope, sizeof(scope), "repository:%s:pull,push", path);
    struct push p = {
        .s = {.ra = a, .default_scope = scope}, .host = host, .path = path, .ret_err = ret_err};
    char layer[OCI_DIGEST_SIZE];
    int64_t len = 0;
    if (!f) {
        e = -errno;
        strfmt_to(ret_err, "reading %s: %s", archive, strerror(errno));
        goto out;
    }
    e = hash_file(f, layer, &len);
    if (e < 0) {
        strfmt_to(ret_err, "reading %s: %s", archive, strerror(-e));
        goto out;
    }
    ret->hash_seconds = seconds_since(&t0);
    e = checkpoint_image_build(layer, len, container, architecture, "linux", &img);
    if (e < 0) {
        strfmt_to(ret_err, "building the image of %s: %s", archive, strerror(-e));
        goto out;
    }
    clock_gettime(CLOCK_MONOTONIC, &t0);
    rewind(f);
    struct body_source file_src = {.file = f};
    e = push_blob(&p, layer, &file_src, len, &ret->layer_existed);
    int existed = 0;
    struct body_source cfg_src = {.text = img.config.text, .len = img.config.len};
    if (e == 0)
        e = push_blob(&p, img.config.digest, &cfg_src, (int64_t)img.config.len, &existed);
    if (e == 0)
        e = push_manifest(&p, img.manifest.digest, &img.manifest, OCI_MEDIA_MANIFEST);
    if (e == 0)
        e = push_manifest(&p, tag, &img.index, OCI_MEDIA_INDEX);
    /* Read back: the tag names this index, the layer is all there. */
    if (e == 0) {
        snprintf(p.url, sizeof(p.url), "https://%s/v2/%s/manifests/%s", host, path, tag);
        e = call(&p.s, "HEAD", p.url, NULL, OCI_MEDIA_INDEX, NULL, 0, &p.ans, ret_err);
        if (e == 0 && (p.ans.code != 200 || strcmp(p.ans.digest, img.index.digest) != 0)) {
            strfmt_to(ret_err, "%s: read back %ld with digest %s, not %s", p.url, p.ans.code,
                      p.ans.digest[0] ? p.ans.digest : "(none)", img.index.digest);
            e = -EIO;
        }
    }
    if (e == 0) {
        snprintf(p.url, sizeof(p.url), "https://%s/v2/%s/blobs/%s", host, path, layer);
        e = call(&p.s, "HEAD", p.url, NULL, NULL, NULL, 0, &p.ans, ret_err);
        if (e == 0 && (p.ans.code != 200 || p.ans.length != len)) {
            strfmt_to(ret_err, "%s: read back %ld with %lld bytes, not %lld", p.url, p.ans.code,
                      (long long)p.ans.length, (long long)len);
            e = -EIO;
        }
    }
    if (e == 0) {
        snprintf(ret->index_digest, sizeof(ret->index_digest), "%s", img.index.digest);
        ret->layer_bytes = len;
        ret->upload_seconds = seconds_since(&t0);
    }
out:
    if (f)
        fclose(f);
    session_end(&p.s);
    checkpoint_image_free(&img);
    free(host);
    free(path);
    return e;
}

int registry_delete(const struct registry_access *a, const char *repository, const char *digest,
                    char **ret_err)
{
    if (ret_err)
        *ret_err = NULL;
    if (!oci_digest_valid(digest)) {
        strfmt_to(ret_err, "not a digest: %s", digest ? digest : "(none)");
        return -EINVAL;
    }
    char *host = NULL, *path = NULL;
    int e = registry_split(repository, &host, &path);
    if (e < 0) {
        strfmt_to(ret_err, "repository %s: not host/path", repository ? repository : "(none)");
        return e;
    }
    char url[4096];
    struct answer ans;
    snprintf(url, sizeof(url), "https://%s/v2/%s/manifests/%s", host, path, digest);
    char scope[600];
    snprintf(scope, sizeof(scope), "repository:%s:delete", path);
    struct session s = {.ra = a, .default_scope = scope};
    e = call(&s, "DELETE", url, NULL, NULL, NULL, 0, &ans, ret_err);
    session_end(&s);
    if (e == 0 && ans.code != 202 && ans.code != 200 && ans.code != 404)
        e = refused("deleting the image", url, &ans, ret_err);
    free(host);
    free(path);
    return e;
}
