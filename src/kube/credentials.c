#include "kube/credentials.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <openssl/crypto.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/base64.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/file_read.h"
#include "util/log.h"
#include "util/secret.h"
#include "util/strfmt.h"
#include "util/text.h"
#include "util/timefmt.h"

#define TOKEN_FILE_MAX_BYTES (1u << 20)
/* client-go re-reads token files every minute; kubelet rotates projected
 * service account tokens well before they expire, so this is enough. */
#define TOKEN_FILE_REFRESH_MS 60000
#define EXEC_STDOUT_MAX_BYTES (1u << 20)
#define EXEC_STDERR_MAX_BYTES (64u << 10)
/* Room for a typical ExecCredential (a token, or a certificate and key). */
#define EXEC_STDOUT_PRESIZE (64u << 10)
#define EXEC_TIMEOUT_MS 30000
/* After the plugin exits, how long to wait for its pipes to reach EOF: a
 * grandchild that kept stdout open must not hold the refresh forever. */
#define EXEC_DRAIN_MS 1000
/* Refresh an expiring credential this long before it expires, so a request
 * sent just before expiry does not arrive just after it. */
#define EXEC_EXPIRY_MARGIN_MS 10000
#define STDERR_QUOTE_MAX 200

enum source_kind {
    SOURCE_NONE,   /* nothing, or a client certificate the HTTP layer handles */
    SOURCE_STATIC, /* users[].user.token */
    SOURCE_FILE,   /* users[].user.tokenFile, in-cluster token */
    SOURCE_EXEC,   /* users[].user.exec */
};

struct waiter {
    kube_credentials_cb cb;
    void *data;
    struct waiter *next;
};

/* One run of an exec plugin. Detached (c == NULL) when the credentials
 * object is freed mid-run: it then kills the plugin and frees itself after
 * its handles are closed. */
struct exec_run {
    struct kube_credentials *c;
    uv_process_t process;
    uv_pipe_t out_pipe;
    uv_pipe_t err_pipe;
    uv_timer_t timer;
    int open_handles;
    bool exited;
    bool out_done;
    bool err_done;
    bool err_lost;
    bool draining;
    bool finished;
    int64_t exit_status;
    int term_signal;
    int failure; /* set when we stopped the plugin: -ETIMEDOUT, -EFBIG, -EIO */
    struct buf out;
    struct buf err;
    char chunk[16384];
};

struct kube_credentials {
    uv_loop_t *loop;
    enum source_kind kind;

    char *static_token;
    char *token_file;

    char *exec_command;
    char **exec_argv; /* command, args..., NULL */
    size_t exec_argc;
    char **exec_env; /* "NAME=VALUE" from the config */
    size_t exec_n_env;
    char *exec_info; /* "KUBERNETES_EXEC_INFO=<json>" */
    char *exec_api_version;
    uint64_t exec_timeout_ms;

    /* The cached credential. Replaced only from loop callbacks, never while
     * a kube_credentials_cb runs, so what a callback sees stays valid. */
    bool valid;
    uint64_t fetched_at;     /* uv_now() of the last token file read */
    int64_t expires_unix_ms; /* exec: 0 when the plugin gave no expiry */
    char *token;
    char *cert_pem;
    size_t cert_pem_len;
    char *key_pem;
    size_t key_pem_len;

    struct waiter *waiters;
    struct waiter **waiters_tail;
    bool refreshing;
    struct file_read *read; /* the token file, while it is read */
    struct exec_run *run;

    unsigned delivering; /* callbacks on the stack; release waits for them */
    bool freeing;
};

/* ---- helpers ------------------------------------------------------------ */

/* The first non-empty line of a plugin's stderr, printable and short, for an
 * error message. It is the plugin's own diagnostic, not its credential. */
static char *first_line(const struct buf *b)
{
    const char *p = buf_str(b), *end = p + b->len;
    while (p < end && (*p == '\n' || *p == '\r' || *p == ' ' || *p == '\t'))
        p++;
    const char *eol = p;
    while (eol < end && *eol != '\n' && *eol != '\r')
        eol++;
    size_t n = (size_t)(eol - p);
    bool cut = n > STDERR_QUOTE_MAX;
    if (cut)
        n = STDERR_QUOTE_MAX;
    while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
        n--;
    return text_printable_copy(p, n, cut, '?');
}

static bool is_space(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n';
}

static bool has_line_break(const char *s)
{
    return strpbrk(s, "\r\n") != NULL;
}

/* ---- cache and callbacks ---------------------------------------------- */

static struct kube_credential current(const struct kube_credentials *c)
{
    struct kube_credential cred = {
        .token = c->token ? c->token : c->static_token,
        .cert_pem = c->cert_pem,
        .cert_pem_len = c->cert_pem_len,
        .key_pem = c->key_pem,
        .key_pem_len = c->key_pem_len,
    };
    return cred;
}

static bool cache_fresh(const struct kube_credentials *c)
{
    switch (c->kind) {
    case SOURCE_NONE:
    case SOURCE_STATIC:
        return true;
    case SOURCE_FILE:
        return c->valid && uv_now(c->loop) - c->fetched_at < TOKEN_FILE_REFRESH_MS;
    case SOURCE_EXEC:
        return c->valid && (c->expires_unix_ms == 0 ||
                            clock_unix_ms() < c->expires_unix_ms - EXEC_EXPIRY_MARGIN_MS);
    }
    return false;
}

static void set_cache(struct kube_credentials *c, char *token, char *cert, size_t cert_len,
                      char *key, size_t key_len, int64_t expires_unix_ms)
{
    secret_free_str(c->token);
    secret_free(c->cert_pem, c->cert_pem_len);
    secret_free(c->key_pem, c->key_pem_len);
    c->token = token;
    c->cert_pem = cert;
    c->cert_pem_len = cert_len;
    c->key_pem = key;
    c->key_pem_len = key_len;
    c->expires_unix_ms = expires_unix_ms;
    c->fetched_at = uv_now(c->loop);
    c->valid = true;
}

static void release(struct kube_credentials *c)
{
    secret_free_str(c->static_token);
    free(c->token_file);
    free(c->exec_command);
    for (size_t i = 0; i < c->exec_argc; i++)
        secret_free_str(c->exec_argv[i]);
    free(c->exec_argv);
    for (size_t i = 0; i < c->exec_n_env; i++)
        secret_free_str(c->exec_env[i]);
    free(c->exec_env);
    free(c->exec_info);
    free(c->exec_api_version);
    secret_free_str(c->token);
    secret_free(c->cert_pem, c->cert_pem_len);
    secret_free(c->key_pem, c->key_pem_len);
    free(c);
}

/* Calls every queued waiter with the outcome of a refresh. c may be gone
 * when this returns (a callback may free it): callers touch nothing after. */
static void deliver(struct kube_credentials *c, int status, const char *err)
{
    struct waiter *list = c->waiters;
    c->waiters = NULL;
    c->waiters_tail = &c->waiters;
    struct kube_credential cred = current(c);

    c->delivering++;
    while (list) {
        struct waiter *w = list;
        list = w->next;
        if (c->freeing)
            w->cb(w->data, -ECANCELED, NULL, "credentials released");
        else if (status < 0)
            w->cb(w->data, status, NULL, err ? err : "out of memory");
        else
            w->cb(w->data, 0, &cred, NULL);
        free(w);
    }
    c->delivering--;
    if (c->freeing && c->delivering == 0)
        release(c);
}

/* ---- token file ----------------------------------------------------------- */

/* The token in the file's bytes, trimmed as client-go does (editors and echo
 * add newlines). Returns 0 with *ret_token, or -EINVAL with *ret_err, or
 * -ENOMEM. */
static int token_from_file(const struct kube_credentials *c, const char *s, size_t n,
                           char **ret_token, char **ret_err)
{
    size_t start = 0;
    while (start < n && is_space(s[start]))
        start++;
    while (n > start && is_space(s[n - 1]))
        n--;
    if (n == start) {
        *ret_err = strfmt("token file %s is empty", c->token_file);
        return -EINVAL;
    }
    if (memchr(s + start, '\n', n - start) || memchr(s + start, '\r', n - start) ||
        memchr(s + start, '\0', n - start)) {
        *ret_err = strfmt("token file %s holds more than one line", c->token_file);
        return -EINVAL;
    }
    *ret_token = strndup(s + start, n - start);
    return *ret_token ? 0 : -ENOMEM;
}

/* The token file has been read (file_read wipes the bytes after this). */
static void on_token_file(void *data, int status, const char *bytes, size_t len)
{
    struct kube_credentials *c = data;
    char *token = NULL, *err = NULL;

    if (status == 0)
        status = token_from_file(c, bytes, len, &token, &err);
    c->read = NULL;
    c->refreshing = false;
    if (status == 0) {
        set_cache(c, token, NULL, 0, NULL, 0, 0);
        deliver(c, 0, NULL);
        return;
    }
    if (!err)
        err = strfmt("cannot read token file %s: %s", c->token_file,
                     status == -EFBIG ? "larger than 1 MiB" : strerror(-status));
    if (c->token || c->static_token) {
        /* As client-go: a rotation hiccup should not fail every request while
         * the last good token may still be accepted. The next get retries. */
        log_warn("token file unreadable, using the previous token", "error",
                 err ? err : log_errno_str(status));
        free(err);
        deliver(c, 0, NULL);
        return;
    }
    deliver(c, status, err);
    free(err);
}

static int token_read_start(struct kube_credentials *c, char **ret_err)
{
    int k =
        file_read_start(c->loop, c->token_file, TOKEN_FILE_MAX_BYTES, on_token_file, c, &c->read);
    if (k < 0 && k != -ENOMEM)
        *ret_err = strfmt("cannot read token file %s: %s", c->token_file, uv_strerror(k));
    return k;
}

/* ---- exec plugin -------------------------------------------------------- */

static void exec_run_maybe_finish(struct exec_run *run);
static void on_exec_timer(uv_timer_t *t);

static void on_exec_handle_closed(uv_handle_t *h)
{
    struct exec_run *run = h->data;
    if (--run->open_handles > 0)
        return;
    secret_buf_free(&run->out);
    buf_free(&run->err);
    OPENSSL_cleanse(run->chunk, sizeof(run->chunk));
    free(run);
}

static void exec_run_close(struct exec_run *run)
{
    uv_close((uv_handle_t *)&run->timer, on_exec_handle_closed);
    uv_close((uv_handle_t *)&run->out_pipe, on_exec_handle_closed);
    uv_close((uv_handle_t *)&run->err_pipe, on_exec_handle_closed);
    uv_close((uv_handle_t *)&run->process, on_exec_handle_closed);
}

/* The plugin runs in its own session (UV_PROCESS_DETACHED), so killing the
 * group also ends whatever it started, and its pipes reach EOF. */
static void exec_run_kill(struct exec_run *run)
{
    if (run->exited)
        return;
    if (uv_kill(-run->process.pid, SIGKILL) < 0)
        uv_process_kill(&run->process, SIGKILL);
}

/* Turns the plugin's stdout into a credential; *ret_err on failure.
 * Long: one check per field of the ExecCredential, each with its message. */
static int parse_exec_credential(struct kube_credentials *c, const struct buf *out, char **ret_err)
{
    const char *cmd = c->exec_command;
    cJSON *root = cJSON_ParseWithLength(buf_str(out), out->len);
    char *token = NULL, *cert = NULL, *key = NULL;
    int64_t expires = 0;
    int r = -EBADMSG;

    if (!cJSON_IsObject(root)) {
        *ret_err = strfmt("exec plugin %s: output is not a JSON object", cmd);
        goto out;
    }
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(root, "kind");
    const cJSON *api = cJSON_GetObjectItemCaseSensitive(root, "apiVersion");
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(root, "status");
    if (!cJSON_IsString(kind) || strcmp(kind->valuestring, "ExecCredential") != 0) {
        *ret_err = strfmt("exec plugin %s: output is not an ExecCredential (kind)", cmd);
        goto out;
    }
    if (!cJSON_IsString(api) || strcmp(api->valuestring, c->exec_api_version) != 0) {
        *ret_err = strfmt("exec plugin %s: output apiVersion does not match the "
                          "configured %s",
                          cmd, c->exec_api_version);
        goto out;
    }
    if (!cJSON_IsObject(status)) {
        *ret_err = strfmt("exec plugin %s: output has no status", cmd);
        goto out;
    }
    const cJSON *tok = cJSON_GetObjectItemCaseSensitive(status, "token");
    const cJSON *crt = cJSON_GetObjectItemCaseSensitive(status, "clientCertificateData");
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(status, "clientKeyData");
    const cJSON *exp = cJSON_GetObjectItemCaseSensitive(status, "expirationTimestamp");
    if ((tok && !cJSON_IsNull(tok) && !cJSON_IsString(tok)) ||
        (crt && !cJSON_IsNull(crt) && !cJSON_IsString(crt)) ||
        (k && !cJSON_IsNull(k) && !cJSON_IsString(k))) {
        *ret_err = strfmt("exec plugin %s: status fields must be strings", cmd);
        goto out;
    }
    bool has_tok = cJSON_IsString(tok) && tok->valuestring[0];
    bool has_crt = cJSON_IsString(crt) && crt->valuestring[0];
    bool has_key = cJSON_IsString(k) && k->valuestring[0];
    if (has_crt != has_key) {
        *ret_err = strfmt("exec plugin %s: status has %s without %s", cmd,
                          has_crt ? "clientCertificateData" : "clientKeyData",
                          has_crt ? "clientKeyData" : "clientCertificateData");
        goto out;
    }
    if (!has_tok && !has_crt) {
        *ret_err = strfmt("exec plugin %s: status has neither a token nor a client "
                          "certificate",
                          cmd);
        goto out;
    }
    if (has_tok && has_line_break(tok->valuestring)) {
        *ret_err = strfmt("exec plugin %s: status.token contains a line break", cmd);
        goto out;
    }
    if (exp && !cJSON_IsNull(exp) &&
        (!cJSON_IsString(exp) || timefmt_parse_rfc3339(exp->valuestring, &expires) < 0)) {
        *ret_err = strfmt("exec plugin %s: status.expirationTimestamp is not an RFC 3339 "
                          "time",
                          cmd);
        goto out;
    }
    /* An expiry of exactly the epoch would read as "never" below. */
    if (exp && expires == 0)
        expires = 1;

    r = -ENOMEM;
    if (has_tok && !(token = strdup(tok->valuestring)))
        goto out;
    if (has_crt && (!(cert = strdup(crt->valuestring)) || !(key = strdup(k->valuestring))))
        goto out;
    set_cache(c, token, cert, cert ? strlen(cert) : 0, key, key ? strlen(key) : 0, expires);
    token = cert = key = NULL;
    r = 0;
out:
    if (r == -ENOMEM)
        *ret_err = strfmt("exec plugin %s: out of memory", cmd);
    secret_free_str(token);
    secret_free_str(cert);
    secret_free_str(key);
    if (root) {
        /* cJSON frees without wiping; the token and key are in there. */
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(root, "status");
        const char *const secret_fields[] = {"token", "clientKeyData"};
        for (size_t i = 0; i < 2; i++) {
            cJSON *f = cJSON_GetObjectItemCaseSensitive(st, secret_fields[i]);
            if (cJSON_IsString(f))
                OPENSSL_cleanse(f->valuestring, strlen(f->valuestring));
        }
        cJSON_Delete(root);
    }
    return r;
}

static void exec_run_finish(struct exec_run *run)
{
    struct kube_credentials *c = run->c;
    char *err = NULL;
    int status = 0;

    run->finished = true;
    uv_timer_stop(&run->timer);
    exec_run_close(run);
    if (!c)
        return;
    c->run = NULL;
    c->refreshing = false;

    const char *cmd = c->exec_command;
    if (run->failure == -ETIMEDOUT) {
        status = -ETIMEDOUT;
        err = strfmt("exec plugin %s did not finish within %llu ms and was killed", cmd,
                     (unsigned long long)c->exec_timeout_ms);
    } else if (run->failure == -EFBIG) {
        status = -EFBIG;
        err = strfmt("exec plugin %s wrote more than %u bytes", cmd, EXEC_STDOUT_MAX_BYTES);
    } else if (run->failure < 0) {
        status = run->failure;
        err =
            strfmt("exec plugin %s: reading its output failed: %s", cmd, uv_strerror(run->failure));
    } else if (run->term_signal || run->exit_status != 0) {
        char *line = run->err_lost && run->err.len == 0
                         ? strdup("(its error output was lost: out of memory)")
                         : first_line(&run->err);
        status = -EIO;
        if (run->term_signal)
            err = strfmt("exec plugin %s was killed by signal %d%s%s", cmd, run->term_signal,
                         line && *line ? ": " : "", line ? line : "");
        else
            err = strfmt("exec plugin %s exited with status %lld%s%s", cmd,
                         (long long)run->exit_status, line && *line ? ": " : "", line ? line : "");
        free(line);
    } else {
        status = parse_exec_credential(c, &run->out, &err);
    }
    deliver(c, status, err);
    free(err);
}

static void exec_run_maybe_finish(struct exec_run *run)
{
    if (run->finished || !run->exited)
        return;
    if (run->out_done && run->err_done) {
        exec_run_finish(run);
        return;
    }
    if (!run->draining) {
        run->draining = true;
        uv_timer_start(&run->timer, on_exec_timer, EXEC_DRAIN_MS, 0);
    }
}

static void on_exec_timer(uv_timer_t *t)
{
    struct exec_run *run = t->data;
    if (run->draining) {
        exec_run_finish(run);
        return;
    }
    run->failure = -ETIMEDOUT;
    exec_run_kill(run);
}

static void on_exec_exit(uv_process_t *p, int64_t exit_status, int term_signal)
{
    struct exec_run *run = p->data;
    run->exited = true;
    run->exit_status = exit_status;
    run->term_signal = term_signal;
    if (!run->draining)
        uv_timer_stop(&run->timer);
    exec_run_maybe_finish(run);
}

static void on_exec_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
    struct exec_run *run = h->data;
    (void)suggested;
    *b = uv_buf_init(run->chunk, sizeof(run->chunk));
}

static void on_exec_stdout(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    struct exec_run *run = s->data;
    (void)b;
    if (n == 0)
        return;
    if (n < 0) {
        if (n != UV_EOF && run->failure == 0)
            run->failure = (int)n;
        uv_read_stop(s);
        run->out_done = true;
        exec_run_maybe_finish(run);
        return;
    }
    int k = buf_append(&run->out, run->chunk, (size_t)n);
    OPENSSL_cleanse(run->chunk, (size_t)n);
    if (k < 0) {
        if (run->failure == 0)
            run->failure = k == -ENOBUFS ? -EFBIG : k;
        uv_read_stop(s);
        run->out_done = true;
        exec_run_kill(run);
        exec_run_maybe_finish(run);
    }
}

static void on_exec_stderr(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    struct exec_run *run = s->data;
    (void)b;
    if (n == 0)
        return;
    if (n < 0) {
        uv_read_stop(s);
        run->err_done = true;
        exec_run_maybe_finish(run);
        return;
    }
    /* Past the limit the rest is dropped; reading on keeps the plugin from
     * blocking on a full pipe. */
    size_t room = run->err.max - run->err.len;
    if (buf_append(&run->err, run->chunk, (size_t)n < room ? (size_t)n : room) < 0)
        run->err_lost = true; /* out of memory: the message says its words are missing */
}

/* The parent's environment, minus what the config sets, plus the config's
 * entries and KUBERNETES_EXEC_INFO. The array points into environ and c. */
static char **exec_build_env(const struct kube_credentials *c)
{
    size_t n = 0;
    for (char **e = environ; *e; e++)
        n++;
    char **env = calloc(n + c->exec_n_env + 2, sizeof(char *));
    if (!env)
        return NULL;
    size_t k = 0;
    for (char **e = environ; *e; e++) {
        const char *eq = strchr(*e, '=');
        size_t len = eq ? (size_t)(eq - *e) : strlen(*e);
        bool overridden =
            len == strlen("KUBERNETES_EXEC_INFO") && memcmp(*e, "KUBERNETES_EXEC_INFO", len) == 0;
        for (size_t i = 0; i < c->exec_n_env && !overridden; i++)
            overridden = strncmp(c->exec_env[i], *e, len) == 0 && c->exec_env[i][len] == '=';
        if (!overridden)
            env[k++] = *e;
    }
    for (size_t i = 0; i < c->exec_n_env; i++)
        env[k++] = c->exec_env[i];
    env[k++] = c->exec_info;
    env[k] = NULL;
    return env;
}

static int exec_run_start(struct kube_credentials *c, char **ret_err)
{
    struct exec_run *run = calloc(1, sizeof(*run));
    char **env = NULL;
    int k;

    if (!run)
        return -ENOMEM;
    run->c = c;
    buf_init(&run->out, EXEC_STDOUT_MAX_BYTES);
    buf_init(&run->err, EXEC_STDERR_MAX_BYTES);
    /* buf grows by realloc, which would leave copies of the token behind in
     * freed memory; sizing it up front keeps the usual output in one block. */
    if (buf_printf(&run->out, "%*s", (int)EXEC_STDOUT_PRESIZE, "") < 0) {
        buf_free(&run->out);
        free(run);
        return -ENOMEM;
    }
    buf_reset(&run->out);
    if (!(env = exec_build_env(c))) {
        buf_free(&run->out);
        free(run);
        return -ENOMEM;
    }

    uv_timer_init(c->loop, &run->timer);
    uv_pipe_init(c->loop, &run->out_pipe, 0);
    uv_pipe_init(c->loop, &run->err_pipe, 0);
    run->timer.data = run->out_pipe.data = run->err_pipe.data = run->process.data = run;
    run->open_handles = 4;

    uv_stdio_container_t stdio[3] = {
        {.flags = UV_IGNORE},
        {.flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE, .data.stream = (uv_stream_t *)&run->out_pipe},
        {.flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE, .data.stream = (uv_stream_t *)&run->err_pipe},
    };
    uv_process_options_t opts = {
        .exit_cb = on_exec_exit,
        .file = c->exec_command,
        .args = c->exec_argv,
        .env = env,
        .flags = UV_PROCESS_DETACHED,
        .stdio_count = 3,
        .stdio = stdio,
    };
    k = uv_spawn(c->loop, &run->process, &opts);
    free(env);
    if (k < 0) {
        /* Even a failed spawn leaves an initialised handle to close. */
        run->c = NULL;
        run->finished = true;
        exec_run_close(run);
        if (k == UV_ENOENT)
            *ret_err = strfmt("exec plugin %s: command not found", c->exec_command);
        else if (k == UV_EACCES)
            *ret_err =
                strfmt("exec plugin %s: permission denied (not executable?)", c->exec_command);
        else
            *ret_err = strfmt("exec plugin %s: cannot start: %s", c->exec_command, uv_strerror(k));
        return k;
    }
    uv_read_start((uv_stream_t *)&run->out_pipe, on_exec_alloc, on_exec_stdout);
    uv_read_start((uv_stream_t *)&run->err_pipe, on_exec_alloc, on_exec_stderr);
    uv_timer_start(&run->timer, on_exec_timer, c->exec_timeout_ms, 0);
    c->run = run;
    return 0;
}

/* ---- setup ---------------------------------------------------------------- */

/* KUBERNETES_EXEC_INFO: what client-go passes a plugin. Never interactive. */
static char *exec_info_new(const struct kube_config *cfg)
{
    cJSON *o = cJSON_CreateObject(), *spec = NULL, *cluster = NULL;
    char *json = NULL, *entry = NULL, *ca = NULL;
    bool ok = o && cJSON_AddStringToObject(o, "apiVersion", cfg->exec->api_version) &&
              cJSON_AddStringToObject(o, "kind", "ExecCredential") &&
              (spec = cJSON_AddObjectToObject(o, "spec")) &&
              cJSON_AddFalseToObject(spec, "interactive");
    if (ok && cfg->exec->provide_cluster_info) {
        /* spec.cluster, as client-go fills it (no proxy-url: we have none;
         * "config" is the cluster's exec extension, which we do not read). */
        ok = (cluster = cJSON_AddObjectToObject(spec, "cluster")) &&
             cJSON_AddStringToObject(cluster, "server", cfg->server ? cfg->server : "");
        if (ok && cfg->tls_server_name)
            ok = cJSON_AddStringToObject(cluster, "tls-server-name", cfg->tls_server_name);
        if (ok && cfg->insecure_skip_tls_verify)
            ok = cJSON_AddTrueToObject(cluster, "insecure-skip-tls-verify");
        if (ok && cfg->ca_pem)
            ok = (ca = base64_encode(cfg->ca_pem, cfg->ca_pem_len)) &&
                 cJSON_AddStringToObject(cluster, "certificate-authority-data", ca);
    }
    if (ok && (json = cJSON_PrintUnformatted(o)))
        entry = strfmt("KUBERNETES_EXEC_INFO=%s", json);
    cJSON_free(json);
    free(ca);
    cJSON_Delete(o);
    return entry;
}

static int copy_exec(struct kube_credentials *c, const struct kube_config *cfg)
{
    const struct kube_exec_config *x = cfg->exec;
    if (!x->command || !x->api_version)
        return -EINVAL;
    if (!(c->exec_command = strdup(x->command)) || !(c->exec_api_version = strdup(x->api_version)))
        return -ENOMEM;
    if (!(c->exec_argv = calloc(x->n_args + 2, sizeof(char *))))
        return -ENOMEM;
    if (!(c->exec_argv[c->exec_argc++] = strdup(x->command)))
        return -ENOMEM;
    for (size_t i = 0; i < x->n_args; i++)
        if (!(c->exec_argv[c->exec_argc++] = strdup(x->args[i])))
            return -ENOMEM;
    if (!(c->exec_env = calloc(x->n_env + 1, sizeof(char *))))
        return -ENOMEM;
    for (size_t i = 0; i < x->n_env; i++)
        if (!(c->exec_env[c->exec_n_env++] =
                  strfmt("%s=%s", x->env[i].name, x->env[i].value ? x->env[i].value : "")))
            return -ENOMEM;
    if (!(c->exec_info = exec_info_new(cfg)))
        return -ENOMEM;
    return 0;
}

/* ---- public ------------------------------------------------------------ */

int kube_credentials_new(uv_loop_t *loop, const struct kube_config *config,
                         struct kube_credentials **ret_credentials)
{
    if (!loop || !config || !ret_credentials)
        return -EINVAL;
    struct kube_credentials *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->loop = loop;
    c->waiters_tail = &c->waiters;
    c->exec_timeout_ms = EXEC_TIMEOUT_MS;

    /* Precedence as client-go: a token (file or inline) wins over an exec
     * plugin, and a file's last good value wins over the inline token. A
     * client certificate from the config needs nothing from us. */
    int r = 0;
    if (config->token && !(c->static_token = strdup(config->token)))
        r = -ENOMEM;
    if (r == 0 && config->token_file) {
        c->kind = SOURCE_FILE;
        if (!(c->token_file = strdup(config->token_file)))
            r = -ENOMEM;
    } else if (r == 0 && config->token) {
        c->kind = SOURCE_STATIC;
    } else if (r == 0 && config->exec) {
        c->kind = SOURCE_EXEC;
        r = copy_exec(c, config);
    }
    if (r < 0) {
        release(c);
        return r;
    }
    *ret_credentials = c;
    return 0;
}

void kube_credentials_set_exec_timeout(struct kube_credentials *c, uint64_t timeout_ms)
{
    if (c)
        c->exec_timeout_ms = timeout_ms > 0 ? timeout_ms : EXEC_TIMEOUT_MS;
}

void kube_credentials_get(struct kube_credentials *c, kube_credentials_cb cb, void *data)
{
    if (!cb)
        return;
    if (!c || c->freeing) {
        cb(data, -ECANCELED, NULL, "credentials released");
        return;
    }
    if (!c->refreshing && cache_fresh(c)) {
        struct kube_credential cred = current(c);
        cb(data, 0, &cred, NULL);
        return;
    }
    struct waiter *w = calloc(1, sizeof(*w));
    if (!w) {
        cb(data, -ENOMEM, NULL, "out of memory");
        return;
    }
    w->cb = cb;
    w->data = data;
    *c->waiters_tail = w;
    c->waiters_tail = &w->next;
    if (c->refreshing)
        return;

    char *err = NULL;
    int r = c->kind == SOURCE_FILE ? token_read_start(c, &err) : exec_run_start(c, &err);
    if (r < 0) {
        deliver(c, r, err);
        free(err);
        return;
    }
    c->refreshing = true;
}

void kube_credentials_invalidate(struct kube_credentials *c)
{
    /* Only marks the cache: the strings may be in use by a callback. */
    if (c)
        c->valid = false;
}

void kube_credentials_free(struct kube_credentials *c)
{
    if (!c || c->freeing)
        return;
    c->freeing = true;
    if (c->run) {
        c->run->c = NULL;
        exec_run_kill(c->run);
        c->run = NULL;
    }
    file_read_cancel(c->read);
    c->read = NULL;
    c->refreshing = false;
    /* deliver() sees freeing and cancels every waiter, then releases c
     * unless a callback further up the stack still uses it. */
    deliver(c, -ECANCELED, NULL);
}
