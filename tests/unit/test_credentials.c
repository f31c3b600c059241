#include <cjson/cJSON.h>
#include <errno.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include <cmocka.h>

#include "kube/config.h"
#include "kube/credentials.h"
#include "util/timefmt.h"

#define API_V1 "client.authentication.k8s.io/v1"

/* ---- fixture ---------------------------------------------------------- */

struct fx {
    uv_loop_t loop;
    uv_timer_t guard;
    int guard_fired;
    char dir[256];
    char path[512]; /* scratch for file names */
};

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static int setup(void **state)
{
    struct fx *fx = calloc(1, sizeof(*fx));
    assert_non_null(fx);
    assert_int_equal(uv_loop_init(&fx->loop), 0);
    assert_int_equal(uv_timer_init(&fx->loop, &fx->guard), 0);
    fx->guard.data = fx;
    strcpy(fx->dir, "/tmp/hibernator-credentials-XXXXXX");
    assert_non_null(mkdtemp(fx->dir));
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    struct fx *fx = *state;
    uv_close((uv_handle_t *)&fx->guard, NULL);
    /* Everything the credentials object started must wind down by itself. */
    assert_int_equal(uv_run(&fx->loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(uv_loop_close(&fx->loop), 0);
    nftw(fx->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(fx);
    return 0;
}

static const char *fx_path(struct fx *fx, const char *name)
{
    snprintf(fx->path, sizeof(fx->path), "%s/%s", fx->dir, name);
    return fx->path;
}

static void fx_write(struct fx *fx, const char *name, const char *text, mode_t mode)
{
    const char *path = fx_path(fx, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    assert_int_equal(chmod(path, mode), 0);
}

static char *fx_read(struct fx *fx, const char *name)
{
    static char data[1 << 16];
    FILE *f = fopen(fx_path(fx, name), "rb");
    if (!f)
        return NULL;
    size_t n = fread(data, 1, sizeof(data) - 1, f);
    fclose(f);
    data[n] = '\0';
    return data;
}

static int fx_runs(struct fx *fx)
{
    char *s = fx_read(fx, "count");
    int n = 0;
    for (; s && *s; s++)
        n += *s == '\n';
    return n;
}

static void on_guard(uv_timer_t *t)
{
    struct fx *fx = t->data;
    fx->guard_fired = 1;
}

/* Runs the loop until *flag is set, failing after limit_ms. */
static void run_until(struct fx *fx, const int *flag, uint64_t limit_ms)
{
    fx->guard_fired = 0;
    uv_timer_start(&fx->guard, on_guard, limit_ms, 0);
    while (!*flag && !fx->guard_fired)
        uv_run(&fx->loop, UV_RUN_ONCE);
    uv_timer_stop(&fx->guard);
    if (!*flag)
        fail_msg("nothing happened within %llu ms", (unsigned long long)limit_ms);
}

static void run_for(struct fx *fx, uint64_t ms)
{
    int never = 0;
    fx->guard_fired = 0;
    uv_timer_start(&fx->guard, on_guard, ms, 0);
    while (!never && !fx->guard_fired)
        uv_run(&fx->loop, UV_RUN_ONCE);
}

/* ---- callback recorder ------------------------------------------------ */

struct result {
    int called;
    int status;
    int had_cred;
    char token[256];
    char cert[256];
    char key[256];
    char err[1024];
    struct kube_credentials *free_in_cb; /* frees this from inside the callback */
};

static void copy_str(char *dst, size_t size, const char *src)
{
    snprintf(dst, size, "%s", src ? src : "(null)");
}

static void record(void *data, int status, const struct kube_credential *cred, const char *err)
{
    struct result *r = data;
    r->called++;
    r->status = status;
    r->had_cred = cred != NULL;
    copy_str(r->token, sizeof(r->token), cred ? cred->token : NULL);
    copy_str(r->cert, sizeof(r->cert), cred ? cred->cert_pem : NULL);
    copy_str(r->key, sizeof(r->key), cred ? cred->key_pem : NULL);
    copy_str(r->err, sizeof(r->err), err);
    if (status < 0)
        assert_null(cred);
    else
        assert_null(err);
    if (r->free_in_cb) {
        struct kube_credentials *c = r->free_in_cb;
        r->free_in_cb = NULL;
        kube_credentials_free(c);
    }
}

static void assert_contains(const char *haystack, const char *needle)
{
    if (!strstr(haystack, needle))
        fail_msg("\"%s\" does not contain \"%s\"", haystack, needle);
}

static struct result get_sync(struct fx *fx, struct kube_credentials *c)
{
    struct result r = {0};
    kube_credentials_get(c, record, &r);
    run_until(fx, &r.called, 10000);
    assert_int_equal(r.called, 1);
    return r;
}

/* ---- exec plugin helpers ---------------------------------------------- */

/* Counts its runs, records what it saw and prints a token numbered by run.
 * A file "exp" adds that expirationTimestamp. */
static const char plugin_script[] =
    "#!/bin/sh\n"
    "d=\"$PLUGIN_DIR\"\n"
    "echo run >> \"$d/count\"\n"
    "n=$(wc -l < \"$d/count\" | tr -d ' ')\n"
    "printf '%s' \"$KUBERNETES_EXEC_INFO\" > \"$d/exec-info\"\n"
    "printf '%s|%s|%s|%s|%s' \"$PARENT_VAR\" \"$OVERRIDE_VAR\" \"$#\" \"$1\" \"$2\" > "
    "\"$d/seen\"\n"
    "exp=''\n"
    "if [ -s \"$d/exp\" ]; then exp=\",\\\"expirationTimestamp\\\":\\\"$(cat \"$d/exp\")\\\"\"; "
    "fi\n"
    "printf '{\"apiVersion\":\"" API_V1 "\",\"kind\":\"ExecCredential\","
    "\"status\":{\"token\":\"tok-%s\"%s}}\\n' \"$n\" \"$exp\"\n";

struct exec_fixture {
    struct kube_config cfg;
    struct kube_exec_config exec;
    struct kube_exec_env env[2];
    char *args[2];
    char command[512];
    char dir_value[256];
};

static void exec_config(struct fx *fx, struct exec_fixture *e, const char *script_name)
{
    memset(e, 0, sizeof(*e));
    snprintf(e->command, sizeof(e->command), "%s/%s", fx->dir, script_name);
    snprintf(e->dir_value, sizeof(e->dir_value), "%s", fx->dir);
    e->args[0] = "--first";
    e->args[1] = "second arg; $(not expanded)";
    e->env[0].name = "PLUGIN_DIR";
    e->env[0].value = e->dir_value;
    e->env[1].name = "OVERRIDE_VAR";
    e->env[1].value = "from-config";
    e->exec.command = e->command;
    e->exec.args = e->args;
    e->exec.n_args = 2;
    e->exec.env = e->env;
    e->exec.n_env = 2;
    e->exec.api_version = API_V1;
    e->cfg.server = "https://k.test:6443";
    e->cfg.exec = &e->exec;
}

static struct kube_credentials *exec_credentials(struct fx *fx, struct exec_fixture *e,
                                                 const char *script_body)
{
    struct kube_credentials *c = NULL;
    fx_write(fx, "plugin", script_body, 0755);
    exec_config(fx, e, "plugin");
    assert_int_equal(kube_credentials_new(&fx->loop, &e->cfg, &c), 0);
    return c;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void write_expiry(struct fx *fx, int64_t offset_ms)
{
    char ts[TIMEFMT_RFC3339_SIZE];
    assert_int_equal(timefmt_format_rfc3339(now_ms() + offset_ms, ts, sizeof(ts)), 0);
    fx_write(fx, "exp", ts, 0644);
}

/* ---- static, none, token file ----------------------------------------- */

static void test_static_token_is_immediate(void **state)
{
    struct fx *fx = *state;
    struct kube_config cfg = {.token = "static-abc", .server = "https://k.test"};
    struct kube_credentials *c = NULL;
    assert_int_equal(kube_credentials_new(&fx->loop, &cfg, &c), 0);
    struct result r = {0};
    kube_credentials_get(c, record, &r);
    assert_int_equal(r.called, 1); /* before the loop runs */
    assert_int_equal(r.status, 0);
    assert_string_equal(r.token, "static-abc");
    assert_string_equal(r.cert, "(null)");
    kube_credentials_invalidate(c);
    memset(&r, 0, sizeof(r));
    kube_credentials_get(c, record, &r);
    assert_int_equal(r.called, 1);
    assert_string_equal(r.token, "static-abc");
    kube_credentials_free(c);
}

static void test_client_cert_only_gives_empty_credential(void **state)
{
    struct fx *fx = *state;
    struct kube_config cfg = {.server = "https://k.test",
                              .cert_pem = "-----BEGIN CERTIFICATE-----\n",
                              .cert_pem_len = 28,
                              .key_pem = "-----BEGIN PRIVATE KEY-----\n",
                              .key_pem_len = 28};
    struct kube_credentials *c = NULL;
    assert_int_equal(kube_credentials_new(&fx->loop, &cfg, &c), 0);
    struct result r = {0};
    kube_credentials_get(c, record, &r);
    assert_int_equal(r.called, 1);
    assert_int_equal(r.status, 0);
    assert_int_equal(r.had_cred, 1);
    assert_string_equal(r.token, "(null)");
    assert_string_equal(r.cert, "(null)"); /* the HTTP layer uses the config's */
    kube_credentials_free(c);
}

static void test_token_file_rotation(void **state)
{
    struct fx *fx = *state;
    fx_write(fx, "token", "tok-one\n", 0600);
    struct kube_config cfg = {.server = "https://k.test",
                              .token_file = strdup(fx_path(fx, "token"))};
    struct kube_credentials *c = NULL;
    assert_int_equal(kube_credentials_new(&fx->loop, &cfg, &c), 0);

    struct result r = get_sync(fx, c);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.token, "tok-one");

    /* Rotated on disk: the cached value is still fresh. */
    fx_write(fx, "token", "  tok-two \r\n", 0600);
    r = (struct result){0};
    kube_credentials_get(c, record, &r);
    assert_int_equal(r.called, 1);
    assert_string_equal(r.token, "tok-one");

    /* After a 401 the file is read again. */
    kube_credentials_invalidate(c);
    r = get_sync(fx, c);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.token, "tok-two");

    kube_credentials_free(c);
    free(cfg.token_file);
}

static void test_token_file_errors(void **state)
{
    struct fx *fx = *state;
    struct kube_config cfg = {.server = "https://k.test",
                              .token_file = strdup(fx_path(fx, "nope"))};
    struct kube_credentials *c = NULL;
    assert_int_equal(kube_credentials_new(&fx->loop, &cfg, &c), 0);

    struct result r = {0};
    kube_credentials_get(c, record, &r);
    if (!r.called)
        run_until(fx, &r.called, 10000);
    assert_int_equal(r.status, -ENOENT);
    assert_contains(r.err, fx->dir);
    assert_contains(r.err, "/nope");

    fx_write(fx, "nope", " \n\n", 0600);
    r = get_sync(fx, c);
    assert_int_equal(r.status, -EINVAL);
    assert_contains(r.err, "is empty");

    fx_write(fx, "nope", "line-one\nline-two\n", 0600);
    r = get_sync(fx, c);
    assert_int_equal(r.status, -EINVAL);
    assert_contains(r.err, "more than one line");
    assert_null(strstr(r.err, "line-one"));

    /* Over 1 MiB. */
    FILE *f = fopen(fx_path(fx, "nope"), "wb");
    assert_non_null(f);
    for (int i = 0; i < (1 << 20) + 10; i++)
        fputc('t', f);
    fclose(f);
    r = get_sync(fx, c);
    assert_int_equal(r.status, -EFBIG);
    assert_contains(r.err, "larger than 1 MiB");

    kube_credentials_free(c);
    free(cfg.token_file);
}

static void test_token_file_keeps_last_good_token(void **state)
{
    struct fx *fx = *state;
    fx_write(fx, "token", "good-token", 0600);
    struct kube_config cfg = {.server = "https://k.test",
                              .token_file = strdup(fx_path(fx, "token"))};
    struct kube_credentials *c = NULL;
    assert_int_equal(kube_credentials_new(&fx->loop, &cfg, &c), 0);
    struct result r = get_sync(fx, c);
    assert_string_equal(r.token, "good-token");

    unlink(fx_path(fx, "token"));
    kube_credentials_invalidate(c);
    r = get_sync(fx, c);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.token, "good-token");

    kube_credentials_free(c);
    free(cfg.token_file);
}

static void test_token_file_over_static_token(void **state)
{
    struct fx *fx = *state;
    fx_write(fx, "token", "from-file", 0600);
    struct kube_config cfg = {
        .server = "https://k.test", .token = "inline", .token_file = strdup(fx_path(fx, "token"))};
    struct kube_credentials *c = NULL;
    assert_int_equal(kube_credentials_new(&fx->loop, &cfg, &c), 0);
    struct result r = get_sync(fx, c);
    assert_string_equal(r.token, "from-file");
    kube_credentials_free(c);

    /* While the file is unreadable the inline token stands in. */
    unlink(fx_path(fx, "token"));
    assert_int_equal(kube_credentials_new(&fx->loop, &cfg, &c), 0);
    r = get_sync(fx, c);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.token, "inline");
    kube_credentials_free(c);
    free(cfg.token_file);
}

static void test_token_file_shared_refresh(void **state)
{
    struct fx *fx = *state;
    fx_write(fx, "token", "shared", 0600);
    struct kube_config cfg = {.server = "https://k.test",
                              .token_file = strdup(fx_path(fx, "token"))};
    struct kube_credentials *c = NULL;
    assert_int_equal(kube_credentials_new(&fx->loop, &cfg, &c), 0);
    struct result r[3] = {{0}};
    for (int i = 0; i < 3; i++)
        kube_credentials_get(c, record, &r[i]);
    run_until(fx, &r[2].called, 10000);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(r[i].called, 1);
        assert_string_equal(r[i].token, "shared");
    }
    kube_credentials_free(c);
    free(cfg.token_file);
}

static void test_free_during_token_read(void **state)
{
    struct fx *fx = *state;
    fx_write(fx, "token", "never-seen", 0600);
    struct kube_config cfg = {.server = "https://k.test",
                              .token_file = strdup(fx_path(fx, "token"))};
    struct kube_credentials *c = NULL;
    assert_int_equal(kube_credentials_new(&fx->loop, &cfg, &c), 0);
    struct result r = {0};
    kube_credentials_get(c, record, &r);
    kube_credentials_free(c);
    assert_int_equal(r.called, 1);
    assert_int_equal(r.status, -ECANCELED);
    /* teardown runs the loop: the read finishes and frees itself. */
    free(cfg.token_file);
}

/* ---- exec plugin ---------------------------------------------------- */

static void test_exec_token_args_env(void **state)
{
    struct fx *fx = *state;
    struct exec_fixture e;
    setenv("PARENT_VAR", "from-parent", 1);
    setenv("OVERRIDE_VAR", "parent-loses", 1);
    setenv("KUBERNETES_EXEC_INFO", "stale", 1);
    struct kube_credentials *c = exec_credentials(fx, &e, plugin_script);

    struct result r = get_sync(fx, c);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.token, "tok-1");
    assert_string_equal(r.cert, "(null)");

    /* argv is the command and args, unexpanded: no shell is involved. */
    assert_string_equal(fx_read(fx, "seen"),
                        "from-parent|from-config|2|--first|second arg; $(not expanded)");

    cJSON *info = cJSON_Parse(fx_read(fx, "exec-info"));
    assert_non_null(info);
    assert_string_equal(cJSON_GetObjectItem(info, "apiVersion")->valuestring, API_V1);
    assert_string_equal(cJSON_GetObjectItem(info, "kind")->valuestring, "ExecCredential");
    cJSON *spec = cJSON_GetObjectItem(info, "spec");
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(spec, "interactive")));
    assert_null(cJSON_GetObjectItem(spec, "cluster"));
    cJSON_Delete(info);

    kube_credentials_free(c);
    unsetenv("PARENT_VAR");
    unsetenv("OVERRIDE_VAR");
    unsetenv("KUBERNETES_EXEC_INFO");
}

static void test_exec_cluster_info(void **state)
{
    struct fx *fx = *state;
    struct exec_fixture e;
    struct kube_credentials *c = NULL;
    fx_write(fx, "plugin", plugin_script, 0755);
    exec_config(fx, &e, "plugin");
    e.exec.api_version = "client.authentication.k8s.io/v1beta1";
    e.exec.provide_cluster_info = 1;
    e.cfg.tls_server_name = "kubernetes";
    e.cfg.ca_pem = "-----BEGIN CERTIFICATE-----\n";
    e.cfg.ca_pem_len = strlen(e.cfg.ca_pem);
    assert_int_equal(kube_credentials_new(&fx->loop, &e.cfg, &c), 0);

    /* The script answers with apiVersion v1, which does not match v1beta1. */
    struct result r = get_sync(fx, c);
    assert_int_equal(r.status, -EBADMSG);
    assert_contains(r.err, "apiVersion does not match");

    cJSON *info = cJSON_Parse(fx_read(fx, "exec-info"));
    assert_non_null(info);
    assert_string_equal(cJSON_GetObjectItem(info, "apiVersion")->valuestring,
                        "client.authentication.k8s.io/v1beta1");
    cJSON *cluster = cJSON_GetObjectItem(cJSON_GetObjectItem(info, "spec"), "cluster");
    assert_non_null(cluster);
    assert_string_equal(cJSON_GetObjectItem(cluster, "server")->valuestring, "https://k.test:6443");
    assert_string_equal(cJSON_GetObjectItem(cluster, "tls-server-name")->valuestring, "kubernetes");
    assert_string_equal(cJSON_GetObjectItem(cluster, "certificate-authority-data")->valuestring,
                        "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==");
    cJSON_Delete(info);
    kube_credentials_free(c);
}

static void test_exec_cached_until_expiry(void **state)
{
    struct fx *fx = *state;
    struct exec_fixture e;
    struct kube_credentials *c = exec_credentials(fx, &e, plugin_script);

    write_expiry(fx, 3600 * 1000);
    struct result r = get_sync(fx, c);
    assert_string_equal(r.token, "tok-1");
    r = (struct result){0};
    kube_credentials_get(c, record, &r);
    assert_int_equal(r.called, 1); /* cached: answered at once */
    assert_string_equal(r.token, "tok-1");
    assert_int_equal(fx_runs(fx), 1);

    /* A 401 forgets it. */
    kube_credentials_invalidate(c);
    r = get_sync(fx, c);
    assert_string_equal(r.token, "tok-2");
    assert_int_equal(fx_runs(fx), 2);
    kube_credentials_free(c);
}

static void test_exec_expired_reruns(void **state)
{
    struct fx *fx = *state;
    struct exec_fixture e;
    struct kube_credentials *c = exec_credentials(fx, &e, plugin_script);

    write_expiry(fx, -60 * 1000);
    struct result r = get_sync(fx, c);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.token, "tok-1");
    r = get_sync(fx, c);
    assert_string_equal(r.token, "tok-2");

    /* Expiring within the safety margin counts as expired. */
    write_expiry(fx, 5 * 1000);
    kube_credentials_invalidate(c);
    r = get_sync(fx, c);
    assert_string_equal(r.token, "tok-3");
    r = get_sync(fx, c);
    assert_string_equal(r.token, "tok-4");
    assert_int_equal(fx_runs(fx), 4);
    kube_credentials_free(c);
}

static void test_exec_without_expiry_is_cached(void **state)
{
    struct fx *fx = *state;
    struct exec_fixture e;
    struct kube_credentials *c = exec_credentials(fx, &e, plugin_script);
    struct result r = get_sync(fx, c);
    assert_string_equal(r.token, "tok-1");
    r = get_sync(fx, c);
    assert_string_equal(r.token, "tok-1");
    assert_int_equal(fx_runs(fx), 1);
    kube_credentials_free(c);
}

static void test_exec_concurrent_gets_share_one_run(void **state)
{
    struct fx *fx = *state;
    struct exec_fixture e;
    struct kube_credentials *c = exec_credentials(fx, &e, plugin_script);
    struct result r[4] = {{0}};
    for (int i = 0; i < 4; i++)
        kube_credentials_get(c, record, &r[i]);
    for (int i = 0; i < 4; i++)
        assert_int_equal(r[i].called, 0);
    run_until(fx, &r[3].called, 10000);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(r[i].called, 1);
        assert_int_equal(r[i].status, 0);
        assert_string_equal(r[i].token, "tok-1");
    }
    assert_int_equal(fx_runs(fx), 1);
    kube_credentials_free(c);
}

static void test_exec_client_certificate(void **state)
{
    struct fx *fx = *state;
    struct exec_fixture e;
    struct kube_credentials *c = exec_credentials(
        fx, &e,
        "#!/bin/sh\n"
        "printf '%s' '{\"apiVersion\":\"" API_V1 "\",\"kind\":\"ExecCredential\",\"status\":"
        "{\"clientCertificateData\":\"-----BEGIN CERTIFICATE-----\\nAA==\\n\","
        "\"clientKeyData\":\"-----BEGIN PRIVATE KEY-----\\nBB==\\n\","
        "\"expirationTimestamp\":\"2999-01-01T00:00:00+01:00\"}}'\n");
    struct result r = get_sync(fx, c);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.token, "(null)");
    assert_string_equal(r.cert, "-----BEGIN CERTIFICATE-----\nAA==\n");
    assert_string_equal(r.key, "-----BEGIN PRIVATE KEY-----\nBB==\n");
    kube_credentials_free(c);
}

static void test_exec_nonzero_exit(void **state)
{
    struct fx *fx = *state;
    struct exec_fixture e;
    struct kube_credentials *c = exec_credentials(
        fx, &e,
        "#!/bin/sh\n"
        "echo '{\"status\":{\"token\":\"SECRET-TOKEN\"}}'\n"
        "printf '\\n  error: login required, run: cloud auth login\\nsecond-line\\n' >&2\n"
        "exit 3\n");
    struct result r = get_sync(fx, c);
    assert_int_equal(r.status, -EIO);
    assert_contains(r.err, e.command);
    assert_contains(r.err, "exited with status 3: error: login required, run: cloud auth login");
    assert_null(strstr(r.err, "second-line"));
    assert_null(strstr(r.err, "SECRET"));
    kube_credentials_free(c);
}

static void test_exec_killed_by_signal(void **state)
{
    struct fx *fx = *state;
    struct exec_fixture e;
    struct kube_credentials *c = exec_credentials(fx, &e, "#!/bin/sh\nkill -TERM $$\n");
    struct result r = get_sync(fx, c);
    assert_int_equal(r.status, -EIO);
    assert_contains(r.err, "killed by signal 15");
    kube_credentials_free(c);
}

static void test_exec_bad_output(void **state)
{
    struct fx *fx = *state;
    static const struct {
        const char *out;
        const char *want;
    } cases[] = {
        {"not json at all SECRET", "output is not a JSON object"},
        {"", "output is not a JSON object"},
        {"[1,2]", "output is not a JSON object"},
        {"{\"apiVersion\":\"" API_V1 "\",\"kind\":\"Secret\",\"status\":{\"token\":\"SECRET\"}}",
         "not an ExecCredential"},
        {"{\"apiVersion\":\"v1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"SECRET\"}}",
         "apiVersion does not match the configured " API_V1},
        {"{\"apiVersion\":\"" API_V1 "\",\"kind\":\"ExecCredential\"}", "output has no status"},
        {"{\"apiVersion\":\"" API_V1 "\",\"kind\":\"ExecCredential\",\"status\":{}}",
         "neither a token nor a client certificate"},
        {"{\"apiVersion\":\"" API_V1 "\",\"kind\":\"ExecCredential\",\"status\":{\"token\":5}}",
         "status fields must be strings"},
        {"{\"apiVersion\":\"" API_V1 "\",\"kind\":\"ExecCredential\",\"status\":"
         "{\"clientCertificateData\":\"SECRET\"}}",
         "clientCertificateData without clientKeyData"},
        {"{\"apiVersion\":\"" API_V1 "\",\"kind\":\"ExecCredential\",\"status\":"
         "{\"token\":\"SECRET\",\"expirationTimestamp\":\"tomorrow\"}}",
         "expirationTimestamp is not an RFC 3339 time"},
        {"{\"apiVersion\":\"" API_V1 "\",\"kind\":\"ExecCredential\",\"status\":"
         "{\"token\":\"SECRET\\nX-Injected: 1\"}}",
         "status.token contains a line break"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char script[2048];
        struct exec_fixture e;
        fx_write(fx, "out.json", cases[i].out, 0644);
        snprintf(script, sizeof(script), "#!/bin/sh\ncat '%s'\n", fx_path(fx, "out.json"));
        struct kube_credentials *c = exec_credentials(fx, &e, script);
        struct result r = get_sync(fx, c);
        if (r.status != -EBADMSG || !strstr(r.err, cases[i].want))
            fail_msg("case %zu: got %d \"%s\", want \"%s\"", i, r.status, r.err, cases[i].want);
        assert_null(strstr(r.err, "SECRET"));
        kube_credentials_free(c);
    }
}

static void test_exec_missing_command(void **state)
{
    struct fx *fx = *state;
    struct exec_fixture e;
    struct kube_credentials *c = NULL;
    exec_config(fx, &e, "does-not-exist");
    assert_int_equal(kube_credentials_new(&fx->loop, &e.cfg, &c), 0);
    struct result r = {0};
    kube_credentials_get(c, record, &r);
    if (!r.called)
        run_until(fx, &r.called, 10000);
    assert_int_equal(r.status, -ENOENT);
    assert_contains(r.err, e.command);
    assert_contains(r.err, "command not found");
    kube_credentials_free(c);

    /* A bare name is looked up on PATH. */
    e.exec.command = "hibernator-no-such-credential-plugin";
    assert_int_equal(kube_credentials_new(&fx->loop, &e.cfg, &c), 0);
    r = (struct result){0};
    kube_credentials_get(c, record, &r);
    if (!r.called)
        run_until(fx, &r.called, 10000);
    assert_int_equal(r.status, -ENOENT);
    assert_string_equal(r.err,
                        "exec plugin hibernator-no-such-credential-plugin: command not found");
    kube_credentials_free(c);
}

static void test_exec_not_executable(void **state)
{
    struct fx *fx = *state;
    struct exec_fixture e;
    struct kube_credentials *c = NULL;
    fx_write(fx, "plugin", plugin_script, 0644);
    exec_config(fx, &e, "plugin");
    assert_int_equal(kube_credentials_new(&fx->loop, &e.cfg, &c), 0);
    struct result r = {0};
    kube_credentials_get(c, record, &r);
    if (!r.called)
        run_until(fx, &r.called, 10000);
    assert_int_equal(r.status, -EACCES);
    assert_contains(r.err, "permission denied");
    kube_credentials_free(c);
}

static void test_exec_oversized_output(void **state)
{
    struct fx *fx = *state;
    struct exec_fixture e;
    struct kube_credentials *c =
        exec_credentials(fx, &e, "#!/bin/sh\nhead -c 3000000 /dev/zero | tr '\\0' a\nsleep 30\n");
    uint64_t start = uv_hrtime();
    struct result r = get_sync(fx, c);
    assert_int_equal(r.status, -EFBIG);
    assert_contains(r.err, "wrote more than 1048576 bytes");
    /* The plugin was stopped, not waited for. */
    assert_true(uv_hrtime() - start < UINT64_C(10000000000));
    kube_credentials_free(c);
}

static void test_exec_timeout(void **state)
{
    struct fx *fx = *state;
    struct exec_fixture e;
    struct kube_credentials *c = exec_credentials(fx, &e, "#!/bin/sh\nsleep 30\necho '{}'\n");
    kube_credentials_set_exec_timeout(c, 300);
    uint64_t start = uv_hrtime();
    struct result r = get_sync(fx, c);
    assert_int_equal(r.status, -ETIMEDOUT);
    assert_contains(r.err, "did not finish within 300 ms");
    assert_true(uv_hrtime() - start < UINT64_C(10000000000));
    kube_credentials_free(c);
}

/* True once pid is gone or a zombie waiting for its new parent. */
static int process_gone(pid_t pid)
{
    char path[64], stat[512];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 1;
    size_t n = fread(stat, 1, sizeof(stat) - 1, f);
    fclose(f);
    stat[n] = '\0';
    const char *p = strrchr(stat, ')');
    return p && (p[2] == 'Z' || p[2] == 'X');
}

static void test_free_while_plugin_runs(void **state)
{
    struct fx *fx = *state;
    struct exec_fixture e;
    struct kube_credentials *c =
        exec_credentials(fx, &e,
                         "#!/bin/sh\nsleep 30 &\necho $! > \"$PLUGIN_DIR/sleep.tmp\"\nmv "
                         "\"$PLUGIN_DIR/sleep.tmp\" \"$PLUGIN_DIR/sleep.pid\"\nwait\necho '{}'\n");
    struct result r[2] = {{0}};
    kube_credentials_get(c, record, &r[0]);
    kube_credentials_get(c, record, &r[1]);
    /* Let the plugin start its grandchild. */
    for (int i = 0; i < 100 && !fx_read(fx, "sleep.pid"); i++)
        run_for(fx, 20);
    char *pid_text = fx_read(fx, "sleep.pid");
    assert_non_null(pid_text);
    pid_t sleeper = (pid_t)atoi(pid_text);
    assert_true(sleeper > 0);

    uint64_t start = uv_hrtime();
    kube_credentials_free(c);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(r[i].called, 1);
        assert_int_equal(r[i].status, -ECANCELED);
    }
    /* The plugin and what it started are killed; handles close on their own. */
    assert_int_equal(uv_run(&fx->loop, UV_RUN_DEFAULT), 0);
    assert_true(uv_hrtime() - start < UINT64_C(5000000000));
    for (int i = 0; i < 100 && !process_gone(sleeper); i++)
        usleep(20000);
    assert_true(process_gone(sleeper));
}

static void test_exec_background_child_keeps_stdout(void **state)
{
    struct fx *fx = *state;
    struct exec_fixture e;
    /* The plugin answers and exits, but a child it left behind still holds
     * stdout: the answer is used without waiting for that child. */
    struct kube_credentials *c =
        exec_credentials(fx, &e,
                         "#!/bin/sh\nsleep 3 &\n"
                         "echo '{\"apiVersion\":\"" API_V1 "\",\"kind\":\"ExecCredential\","
                         "\"status\":{\"token\":\"t\"}}'\n");
    uint64_t start = uv_hrtime();
    struct result r = get_sync(fx, c);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.token, "t");
    assert_true(uv_hrtime() - start < UINT64_C(2800000000));
    kube_credentials_free(c);
}

static void test_free_inside_callback(void **state)
{
    struct fx *fx = *state;
    struct exec_fixture e;
    struct kube_credentials *c = exec_credentials(fx, &e, plugin_script);
    struct result r[3] = {{0}};
    r[0].free_in_cb = c;
    for (int i = 0; i < 3; i++)
        kube_credentials_get(c, record, &r[i]);
    run_until(fx, &r[2].called, 10000);
    assert_int_equal(r[0].status, 0);
    assert_string_equal(r[0].token, "tok-1");
    /* Freed by the first callback: the others are cancelled, not served. */
    assert_int_equal(r[1].status, -ECANCELED);
    assert_int_equal(r[2].status, -ECANCELED);
}

struct again {
    struct kube_credentials *c;
    struct result second;
    int first_called;
};

static void get_again(void *data, int status, const struct kube_credential *cred, const char *err)
{
    struct again *a = data;
    (void)cred;
    (void)err;
    a->first_called = 1;
    assert_int_equal(status, 0);
    kube_credentials_invalidate(a->c);
    kube_credentials_get(a->c, record, &a->second);
}

static void test_get_inside_callback(void **state)
{
    struct fx *fx = *state;
    struct exec_fixture e;
    struct again a = {0};
    a.c = exec_credentials(fx, &e, plugin_script);
    kube_credentials_get(a.c, get_again, &a);
    run_until(fx, &a.second.called, 10000);
    assert_int_equal(a.second.status, 0);
    assert_string_equal(a.second.token, "tok-2");
    kube_credentials_free(a.c);
}

static void test_null_and_freed(void **state)
{
    (void)state;
    struct result r = {0};
    kube_credentials_free(NULL);
    kube_credentials_invalidate(NULL);
    kube_credentials_get(NULL, record, &r);
    assert_int_equal(r.status, -ECANCELED);
    struct kube_config cfg = {0};
    assert_int_equal(kube_credentials_new(NULL, &cfg, NULL), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_static_token_is_immediate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_client_cert_only_gives_empty_credential, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_token_file_rotation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_token_file_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_token_file_keeps_last_good_token, setup, teardown),
        cmocka_unit_test_setup_teardown(test_token_file_over_static_token, setup, teardown),
        cmocka_unit_test_setup_teardown(test_token_file_shared_refresh, setup, teardown),
        cmocka_unit_test_setup_teardown(test_free_during_token_read, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exec_token_args_env, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exec_cluster_info, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exec_cached_until_expiry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exec_expired_reruns, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exec_without_expiry_is_cached, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exec_concurrent_gets_share_one_run, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exec_client_certificate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exec_nonzero_exit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exec_killed_by_signal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exec_bad_output, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exec_missing_command, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exec_not_executable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exec_oversized_output, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exec_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_free_while_plugin_runs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exec_background_child_keeps_stdout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_free_inside_callback, setup, teardown),
        cmocka_unit_test_setup_teardown(test_get_inside_callback, setup, teardown),
        cmocka_unit_test_setup_teardown(test_null_and_freed, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
