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
#include <unistd.h>

#include <cmocka.h>

#include "kube/config.h"

#define KC_DIR TEST_DATA_DIR "/kubeconfig"

/* ---- helpers ------------------------------------------------------------ */

static char *slurp(const char *path, size_t *ret_len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static char data[1 << 16];
    size_t n = fread(data, 1, sizeof(data) - 1, f);
    fclose(f);
    data[n] = '\0';
    if (ret_len)
        *ret_len = n;
    return data;
}

static void assert_pem_equals_file(const char *pem, size_t len, const char *path)
{
    size_t flen;
    const char *want = slurp(path, &flen);
    assert_non_null(pem);
    assert_int_equal(len, flen);
    assert_memory_equal(pem, want, len);
    assert_int_equal(pem[len], '\0');
}

static void write_file(const char *dir, const char *name, const char *text)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static char *make_tmpdir(void)
{
    char tmpl[] = "/tmp/hibernator-kubeconfig-XXXXXX";
    char *dir = mkdtemp(tmpl);
    assert_non_null(dir);
    return strdup(dir);
}

static void remove_tmpdir(char *dir)
{
    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(dir);
}

static struct kube_config *load_ok(const char *file, const char *context)
{
    struct kube_config *cfg = NULL;
    char *err = NULL;
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", KC_DIR, file);
    int r = kube_config_load_file(path, context, &cfg, &err);
    if (r < 0)
        fail_msg("loading %s failed: %d %s", file, r, err ? err : "(no message)");
    assert_null(err);
    assert_non_null(cfg);
    assert_string_equal(cfg->source, path);
    return cfg;
}

/* Loads a string that must fail; returns the message (caller frees). */
static char *load_string_err(const char *yaml, int want_errno)
{
    struct kube_config *cfg = (struct kube_config *)0x1;
    char *err = NULL;
    int r = kube_config_load_string(yaml, strlen(yaml), "/etc/kc", KC_DIR, NULL, &cfg, &err);
    assert_int_equal(r, want_errno);
    assert_ptr_equal(cfg, (struct kube_config *)0x1); /* untouched on failure */
    assert_non_null(err);
    return err;
}

static void assert_contains(const char *haystack, const char *needle)
{
    if (!strstr(haystack, needle))
        fail_msg("\"%s\" does not contain \"%s\"", haystack, needle);
}

/* A minimal valid document with one user whose body is given. */
static char *with_user(const char *user_body)
{
    char *s = NULL;
    int n = asprintf(&s,
                     "current-context: c\n"
                     "clusters:\n- name: k\n  cluster:\n    server: https://k.test\n"
                     "contexts:\n- name: c\n  context: {cluster: k, user: u}\n"
                     "users:\n- name: u\n  user:\n%s",
                     user_body);
    assert_true(n > 0);
    return s;
}

static char *with_cluster(const char *cluster_body)
{
    char *s = NULL;
    int n = asprintf(&s,
                     "current-context: c\n"
                     "clusters:\n- name: k\n  cluster:\n%s"
                     "contexts:\n- name: c\n  context: {cluster: k}\n",
                     cluster_body);
    assert_true(n > 0);
    return s;
}

/* ---- good files ----------------------------------------------------------- */

static void test_inline_data(void **state)
{
    (void)state;
    struct kube_config *cfg = load_ok("good-inline.yaml", NULL);
    assert_string_equal(cfg->server, "https://127.0.0.1:6443");
    assert_string_equal(cfg->tls_server_name, "kubernetes.default");
    assert_string_equal(cfg->namespace, "team-a");
    assert_pem_equals_file(cfg->ca_pem, cfg->ca_pem_len, KC_DIR "/pki/ca.crt");
    assert_pem_equals_file(cfg->cert_pem, cfg->cert_pem_len, KC_DIR "/pki/client.crt");
    assert_pem_equals_file(cfg->key_pem, cfg->key_pem_len, KC_DIR "/pki/client.key");
    assert_null(cfg->token);
    assert_null(cfg->token_file);
    assert_null(cfg->exec);
    assert_int_equal(cfg->insecure_skip_tls_verify, 0);
    kube_config_free(cfg);
}

static void test_relative_files(void **state)
{
    (void)state;
    struct kube_config *cfg = load_ok("good-files.yaml", NULL);
    assert_string_equal(cfg->server, "https://[::1]:6443/api-prefix");
    assert_null(cfg->tls_server_name);
    assert_string_equal(cfg->namespace, "default");
    assert_pem_equals_file(cfg->ca_pem, cfg->ca_pem_len, KC_DIR "/pki/ca.crt");
    assert_pem_equals_file(cfg->cert_pem, cfg->cert_pem_len, KC_DIR "/pki/client.crt");
    assert_pem_equals_file(cfg->key_pem, cfg->key_pem_len, KC_DIR "/pki/client.key");
    kube_config_free(cfg);
}

static void test_static_token_current_context(void **state)
{
    (void)state;
    struct kube_config *cfg = load_ok("good-multi.yaml", NULL);
    assert_string_equal(cfg->server, "https://dev.example.test:443");
    assert_string_equal(cfg->token, "static-token-abc");
    assert_string_equal(cfg->namespace, "dev");
    assert_int_equal(cfg->insecure_skip_tls_verify, 1);
    assert_null(cfg->ca_pem);
    assert_null(cfg->cert_pem);
    kube_config_free(cfg);
}

static void test_token_file_context(void **state)
{
    (void)state;
    struct kube_config *cfg = load_ok("good-multi.yaml", "prod");
    assert_string_equal(cfg->server, "https://prod.example.test");
    assert_null(cfg->token);
    assert_string_equal(cfg->token_file, KC_DIR "/pki/token");
    assert_string_equal(cfg->namespace, "default");
    assert_non_null(cfg->ca_pem);
    assert_int_equal(cfg->insecure_skip_tls_verify, 0);
    kube_config_free(cfg);
}

static void test_exec_context(void **state)
{
    (void)state;
    struct kube_config *cfg = load_ok("good-multi.yaml", "exec");
    assert_null(cfg->token);
    assert_non_null(cfg->exec);
    assert_string_equal(cfg->exec->command, "get-token");
    assert_string_equal(cfg->exec->api_version, "client.authentication.k8s.io/v1beta1");
    assert_int_equal(cfg->exec->n_args, 3);
    assert_string_equal(cfg->exec->args[0], "--cluster");
    assert_string_equal(cfg->exec->args[1], "prod");
    assert_string_equal(cfg->exec->args[2], "");
    assert_int_equal(cfg->exec->n_env, 2);
    assert_string_equal(cfg->exec->env[0].name, "REGION");
    assert_string_equal(cfg->exec->env[0].value, "eu-west-1");
    assert_string_equal(cfg->exec->env[1].name, "EMPTY");
    assert_string_equal(cfg->exec->env[1].value, "");
    assert_int_equal(cfg->exec->provide_cluster_info, 1);
    /* namespace: ~ is null, so the default applies */
    assert_string_equal(cfg->namespace, "default");
    kube_config_free(cfg);
}

static void test_context_without_user(void **state)
{
    (void)state;
    struct kube_config *cfg = load_ok("good-multi.yaml", "anonymous");
    assert_null(cfg->token);
    assert_null(cfg->token_file);
    assert_null(cfg->exec);
    assert_null(cfg->cert_pem);
    assert_string_equal(cfg->namespace, "default");
    kube_config_free(cfg);
}

static void test_exec_relative_command(void **state)
{
    (void)state;
    struct kube_config *cfg = load_ok("good-exec-relative.yaml", NULL);
    assert_string_equal(cfg->server, "http://localhost:8080");
    assert_string_equal(cfg->exec->command, KC_DIR "/bin/plugin");
    assert_int_equal(cfg->exec->n_args, 0);
    assert_int_equal(cfg->exec->n_env, 0);
    assert_int_equal(cfg->exec->provide_cluster_info, 0);
    kube_config_free(cfg);
}

static void test_explicit_context_missing(void **state)
{
    (void)state;
    struct kube_config *cfg = NULL;
    char *err = NULL;
    assert_int_equal(kube_config_load_file(KC_DIR "/good-multi.yaml", "staging", &cfg, &err),
                     -ENOENT);
    assert_null(cfg);
    assert_string_equal(err, KC_DIR "/good-multi.yaml: context \"staging\": no such context");
    free(err);

    /* An empty context name means the current one. */
    cfg = load_ok("good-multi.yaml", "");
    assert_string_equal(cfg->namespace, "dev");
    kube_config_free(cfg);
}

static void test_json_and_aliases(void **state)
{
    (void)state;
    /* kubeconfig files are sometimes JSON; anchors are legal YAML too. */
    static const char json[] =
        "{\"current-context\":\"c\",\"clusters\":[{\"name\":\"k\",\"cluster\":"
        "{\"server\":\"https://j.test\",\"insecure-skip-tls-verify\":false}}],"
        "\"contexts\":[{\"name\":\"c\",\"context\":{\"cluster\":\"k\",\"user\":\"u\","
        "\"namespace\":\"ns1\"}}],\"users\":[{\"name\":\"u\",\"user\":{\"token\":\"tok\"}}]}";
    struct kube_config *cfg = NULL;
    assert_int_equal(kube_config_load_string(json, strlen(json), "j", NULL, NULL, &cfg, NULL), 0);
    assert_string_equal(cfg->server, "https://j.test");
    assert_string_equal(cfg->token, "tok");
    assert_string_equal(cfg->namespace, "ns1");
    assert_string_equal(cfg->source, "j");
    kube_config_free(cfg);

    static const char yaml[] = "current-context: c\n"
                               "clusters:\n- name: k\n  cluster: &cl {server: 'https://a.test'}\n"
                               "- name: k2\n  cluster: *cl\n"
                               "contexts:\n- name: c\n  context: {cluster: k2, user: u}\n"
                               "users:\n- name: u\n  user: {token: \"x\"}\n"
                               "---\nsecond: document is ignored\n";
    assert_int_equal(kube_config_load_string(yaml, strlen(yaml), "y", NULL, NULL, &cfg, NULL), 0);
    assert_string_equal(cfg->server, "https://a.test");
    kube_config_free(cfg);
}

static void test_base_dir_null_uses_cwd(void **state)
{
    (void)state;
    char *dir = make_tmpdir();
    char cwd[4096];
    assert_non_null(getcwd(cwd, sizeof(cwd)));
    write_file(dir, "ca.pem", "-----BEGIN CERTIFICATE-----\nQQ==\n-----END CERTIFICATE-----\n");
    assert_int_equal(chdir(dir), 0);
    char *yaml = with_cluster("    server: https://k.test\n    certificate-authority: ca.pem\n");
    struct kube_config *cfg = NULL;
    int r = kube_config_load_string(yaml, strlen(yaml), "s", NULL, NULL, &cfg, NULL);
    assert_int_equal(chdir(cwd), 0);
    assert_int_equal(r, 0);
    assert_non_null(cfg->ca_pem);
    kube_config_free(cfg);
    free(yaml);
    remove_tmpdir(dir);
}

static void test_booleans_and_nulls(void **state)
{
    (void)state;
    static const char *const truthy[] = {"true", "True", "yes", "on", "\"true\""};
    for (size_t i = 0; i < sizeof(truthy) / sizeof(truthy[0]); i++) {
        char body[128];
        snprintf(body, sizeof(body),
                 "    server: https://k.test\n    insecure-skip-tls-verify: %s\n", truthy[i]);
        char *yaml = with_cluster(body);
        struct kube_config *cfg = NULL;
        assert_int_equal(kube_config_load_string(yaml, strlen(yaml), "b", NULL, NULL, &cfg, NULL),
                         0);
        assert_int_equal(cfg->insecure_skip_tls_verify, 1);
        kube_config_free(cfg);
        free(yaml);
    }
    char *yaml = with_cluster("    server: https://k.test\n    insecure-skip-tls-verify: null\n"
                              "    tls-server-name: ''\n");
    struct kube_config *cfg = NULL;
    assert_int_equal(kube_config_load_string(yaml, strlen(yaml), "b", NULL, NULL, &cfg, NULL), 0);
    assert_int_equal(cfg->insecure_skip_tls_verify, 0);
    assert_null(cfg->tls_server_name);
    kube_config_free(cfg);
    free(yaml);
}

static void test_free_null(void **state)
{
    (void)state;
    kube_config_free(NULL);
}

/* ---- bad files ------------------------------------------------------------ */

struct bad_case {
    const char *file;
    int err;
    const char *want; /* after "<path>" */
};

static void test_bad_files(void **state)
{
    (void)state;
    static const struct bad_case cases[] = {
        {"bad-syntax.yaml", -EINVAL,
         ":7:1: YAML syntax error: found unexpected end of stream "
         "(while scanning a quoted scalar at 5:13)"},
        {"bad-base64.yaml", -EINVAL, ": users[name=admin].user.client-key-data: not valid base64"},
        {"bad-no-context.yaml", -ENOENT, ": current-context: \"foo\": no such context"},
        {"bad-no-server.yaml", -EINVAL, ": clusters[name=x].cluster.server: missing"},
        {"bad-no-cluster.yaml", -ENOENT,
         ": contexts[name=c].context.cluster: \"nope\": no such cluster"},
        {"bad-no-user.yaml", -ENOENT, ": contexts[name=c].context.user: \"ghost\": no such user"},
        {"bad-missing-file.yaml", -ENOENT,
         ": users[name=admin].user.client-certificate: cannot read \"" KC_DIR
         "/pki/missing.crt\": No such file or directory"},
        {"bad-exec-api.yaml", -EINVAL,
         ": users[name=e].user.exec.apiVersion: \"client.authentication.k8s.io/v1alpha1\" is "
         "not supported (use client.authentication.k8s.io/v1 or "
         "client.authentication.k8s.io/v1beta1)"},
        {"bad-exec-no-command.yaml", -EINVAL, ": users[name=e].user.exec.command: missing"},
        {"bad-insecure-ca.yaml", -EINVAL,
         ": clusters[name=k].cluster.insecure-skip-tls-verify: cannot be combined with a "
         "certificate authority"},
        {"bad-not-pem.yaml", -EINVAL,
         ": clusters[name=k].cluster.certificate-authority: \"pki/not-pem.txt\" is not a PEM "
         "file"},
        {"bad-top-list.yaml", -EINVAL, ": not a kubeconfig (the top level is not a mapping)"},
        {"bad-empty.yaml", -EINVAL, ": empty file"},
        {"bad-tokenfile-missing.yaml", -ENOENT,
         ": users[name=robot].user.tokenFile: cannot read \"" KC_DIR
         "/pki/no-such-token\": No such file or directory"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char path[4096], want[8192];
        struct kube_config *cfg = NULL;
        char *err = NULL;
        snprintf(path, sizeof(path), "%s/%s", KC_DIR, cases[i].file);
        snprintf(want, sizeof(want), "%s%s", path, cases[i].want);
        int r = kube_config_load_file(path, NULL, &cfg, &err);
        if (r != cases[i].err || !err || strcmp(err, want) != 0)
            fail_msg("%s: got %d \"%s\", want %d \"%s\"", cases[i].file, r, err ? err : "(null)",
                     cases[i].err, want);
        assert_null(cfg);
        free(err);
    }
}

static void test_secret_not_in_message(void **state)
{
    (void)state;
    struct kube_config *cfg = NULL;
    char *err = NULL;
    assert_int_equal(kube_config_load_file(KC_DIR "/bad-base64.yaml", NULL, &cfg, &err), -EINVAL);
    assert_null(strstr(err, "SECRET"));
    free(err);

    char *yaml = with_user("    token: \"SECRET-\\nTOKEN\"\n");
    err = load_string_err(yaml, -EINVAL);
    assert_string_equal(err, "/etc/kc: users[name=u].user.token: contains a line break");
    free(err);
    free(yaml);

    yaml = with_cluster("    server: https://user:SECRETPASS@k.test:6443\n"
                        "    certificate-authority-data: U0VDUkVUIG5vdCBwZW0=\n");
    err = load_string_err(yaml, -EINVAL);
    assert_string_equal(
        err,
        "/etc/kc: clusters[name=k].cluster.certificate-authority-data: decoded data is not PEM");
    free(err);
    free(yaml);

    yaml = with_cluster("    server: ftp://user:SECRETPASS@k.test\n");
    err = load_string_err(yaml, -EINVAL);
    assert_null(strstr(err, "SECRET"));
    assert_string_equal(
        err, "/etc/kc: clusters[name=k].cluster.server: must start with https:// or http://");
    free(err);
    free(yaml);
}

static void test_bad_strings(void **state)
{
    (void)state;
    struct {
        const char *user;
        int err;
        const char *want;
    } users[] = {
        {"    client-certificate: pki/client.crt\n", -EINVAL,
         "/etc/kc: users[name=u].user.client-key: missing (client-certificate is set; both are "
         "needed)"},
        {"    client-key: pki/client.key\n", -EINVAL,
         "/etc/kc: users[name=u].user.client-certificate: missing (client-key is set; both are "
         "needed)"},
        {"    client-certificate: pki/client.crt\n    client-certificate-data: QQ==\n"
         "    client-key: pki/client.key\n",
         -EINVAL,
         "/etc/kc: users[name=u].user.client-certificate-data: both client-certificate-data and "
         "client-certificate are set; keep one"},
        {"    auth-provider: {name: gcp}\n", -ENOTSUP,
         "/etc/kc: users[name=u].user.auth-provider: not supported (removed from Kubernetes); use "
         "an exec plugin"},
        {"    username: admin\n    password: hunter2\n", -ENOTSUP,
         "/etc/kc: users[name=u].user.username: basic authentication is not supported"},
        {"    token: [a, b]\n", -EINVAL, "/etc/kc: users[name=u].user.token: expected a string"},
        {"    exec: plugin\n", -EINVAL, "/etc/kc: users[name=u].user.exec: expected a mapping"},
        {"    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: p\n"
         "      args: [a, {b: c}]\n",
         -EINVAL, "/etc/kc: users[name=u].user.exec.args[1]: expected a string"},
        {"    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: p\n"
         "      env: [{value: x}]\n",
         -EINVAL, "/etc/kc: users[name=u].user.exec.env[0].name: missing"},
        {"    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: p\n"
         "      env: [{name: A, value: x}, notamap]\n",
         -EINVAL,
         "/etc/kc: users[name=u].user.exec.env[1]: expected a mapping with name and value"},
        {"    exec:\n      command: p\n", -EINVAL,
         "/etc/kc: users[name=u].user.exec.apiVersion: missing (use "
         "client.authentication.k8s.io/v1)"},
        {"    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: p\n"
         "      interactiveMode: Always\n",
         -EINVAL,
         "/etc/kc: users[name=u].user.exec.interactiveMode: \"Always\" needs a terminal; a "
         "controller runs without one"},
        {"    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: p\n"
         "      provideClusterInfo: maybe\n",
         -EINVAL, "/etc/kc: users[name=u].user.exec.provideClusterInfo: expected true or false"},
        {"    client-certificate-data: \"\"\n    client-key-data: '!!!!'\n", -EINVAL,
         "/etc/kc: users[name=u].user.client-key-data: not valid base64"},
        {"    client-certificate: pki\n    client-key: pki/client.key\n", -EISDIR,
         "/etc/kc: users[name=u].user.client-certificate: cannot read \"" KC_DIR
         "/pki\": Is a directory"},
    };
    for (size_t i = 0; i < sizeof(users) / sizeof(users[0]); i++) {
        char *yaml = with_user(users[i].user);
        char *err = load_string_err(yaml, users[i].err);
        if (strcmp(err, users[i].want) != 0)
            fail_msg("case %zu: got \"%s\", want \"%s\"", i, err, users[i].want);
        free(err);
        free(yaml);
    }

    struct {
        const char *yaml;
        int err;
        const char *want;
    } docs[] = {
        {"clusters: []\n", -ENOENT,
         "/etc/kc: current-context: not set (and no context was chosen)"},
        {"current-context: c\ncontexts: {c: 1}\n", -EINVAL, "/etc/kc: contexts: expected a list"},
        {"current-context: c\ncontexts:\n- name: c\n", -EINVAL,
         "/etc/kc: contexts[name=c].context: missing"},
        {"current-context: c\ncontexts:\n- name: c\n  context: {user: u}\n", -EINVAL,
         "/etc/kc: contexts[name=c].context.cluster: missing"},
        {"current-context: c\ncontexts:\n- name: c\n  context: {cluster: k}\n- name: c\n  context: "
         "{cluster: k}\n",
         -EINVAL, "/etc/kc: contexts: name \"c\" appears more than once"},
        {"current-context: c\ncontexts:\n- name: c\n  context: {cluster: k}\nclusters:\n- name: "
         "k\n",
         -EINVAL, "/etc/kc: clusters[name=k].cluster: missing"},
        {"current-context: \"a\\nb\"\n", -ENOENT,
         "/etc/kc: current-context: \"a?b\": no such context"},
        {"current-context: [x]\n", -EINVAL, "/etc/kc: current-context: expected a string"},
        {"current-context: \"a\\0b\"\n", -EINVAL,
         "/etc/kc: current-context: contains a NUL character"},
        {"a: b\n\tc: d\n", -EINVAL, NULL},
        {"\xff\xfe\x00", -EINVAL, NULL},
    };
    for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
        char *err = load_string_err(docs[i].yaml, docs[i].err);
        if (docs[i].want && strcmp(err, docs[i].want) != 0)
            fail_msg("doc %zu: got \"%s\", want \"%s\"", i, err, docs[i].want);
        assert_true(strncmp(err, "/etc/kc", 7) == 0);
        free(err);
    }

    struct {
        const char *cluster;
        const char *want;
    } clusters[] = {
        {"    server: https://\n", "/etc/kc: clusters[name=k].cluster.server: has no host"},
        {"    server: https://k.test\n    certificate-authority-data: QQ==\n"
         "    certificate-authority: pki/ca.crt\n",
         "/etc/kc: clusters[name=k].cluster.certificate-authority-data: both "
         "certificate-authority-data and certificate-authority are set; keep one"},
        {"    certificate-authority: pki/ca.crt\n",
         "/etc/kc: clusters[name=k].cluster.server: missing"},
    };
    for (size_t i = 0; i < sizeof(clusters) / sizeof(clusters[0]); i++) {
        char *yaml = with_cluster(clusters[i].cluster);
        char *err = load_string_err(yaml, -EINVAL);
        if (strcmp(err, clusters[i].want) != 0)
            fail_msg("cluster %zu: got \"%s\", want \"%s\"", i, err, clusters[i].want);
        free(err);
        free(yaml);
    }
}

static void test_long_names_are_cut(void **state)
{
    (void)state;
    char name[1000];
    memset(name, 'n', sizeof(name) - 1);
    name[sizeof(name) - 1] = '\0';
    char *yaml = NULL;
    assert_true(asprintf(&yaml, "current-context: %s\n", name) > 0);
    char *err = load_string_err(yaml, -ENOENT);
    assert_true(strlen(err) < 300);
    assert_contains(err, "...\": no such context");
    free(err);
    free(yaml);
}

static void test_size_limits(void **state)
{
    (void)state;
    char *dir = make_tmpdir();
    char path[4096];
    struct kube_config *cfg = NULL;
    char *err = NULL;

    /* A kubeconfig over 4 MiB. */
    snprintf(path, sizeof(path), "%s/big", dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    for (int i = 0; i < 5 * 1024; i++)
        for (int j = 0; j < 1024; j++)
            fputc('#', f);
    fclose(f);
    assert_int_equal(kube_config_load_file(path, NULL, &cfg, &err), -EFBIG);
    assert_contains(err, "/big: cannot read: file too large");
    free(err);
    err = NULL;

    /* A referenced file over 1 MiB. */
    snprintf(path, sizeof(path), "%s/ca.pem", dir);
    f = fopen(path, "wb");
    assert_non_null(f);
    fputs("-----BEGIN CERTIFICATE-----\n", f);
    for (int i = 0; i < 1100 * 1024; i++)
        fputc('A', f);
    fclose(f);
    char *yaml = with_cluster("    server: https://k.test\n    certificate-authority: ca.pem\n");
    assert_int_equal(kube_config_load_string(yaml, strlen(yaml), "s", dir, NULL, &cfg, &err),
                     -EFBIG);
    assert_contains(err, "certificate-authority: cannot read \"");
    assert_contains(err, "/ca.pem\": file too large");
    free(err);
    free(yaml);

    /* A FIFO must be refused, not waited on. */
    snprintf(path, sizeof(path), "%s/fifo", dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    yaml = with_cluster("    server: https://k.test\n    certificate-authority: fifo\n");
    assert_int_equal(kube_config_load_string(yaml, strlen(yaml), "s", dir, NULL, &cfg, &err),
                     -EINVAL);
    assert_contains(err, "/fifo\": not a regular file");
    free(err);
    free(yaml);

    remove_tmpdir(dir);
}

static void test_missing_file(void **state)
{
    (void)state;
    struct kube_config *cfg = NULL;
    char *err = NULL;
    assert_int_equal(kube_config_load_file("/nonexistent/kubeconfig", NULL, &cfg, &err), -ENOENT);
    assert_string_equal(err, "/nonexistent/kubeconfig: cannot read: No such file or directory");
    free(err);
    /* ret_err is optional */
    assert_int_equal(kube_config_load_file("/nonexistent/kubeconfig", NULL, &cfg, NULL), -ENOENT);
    assert_int_equal(kube_config_load_file(KC_DIR "/bad-base64.yaml", NULL, &cfg, NULL), -EINVAL);
}

/* ---- in-cluster ------------------------------------------------------------ */

static char *service_account_dir(const char *ns)
{
    char *dir = make_tmpdir();
    write_file(dir, "ca.crt", "-----BEGIN CERTIFICATE-----\nQQ==\n-----END CERTIFICATE-----\n");
    write_file(dir, "token", "sa-token-1\n");
    if (ns)
        write_file(dir, "namespace", ns);
    return dir;
}

static void test_in_cluster(void **state)
{
    (void)state;
    char *dir = service_account_dir("hibernator-system\n");
    setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    struct kube_config *cfg = NULL;
    char *err = NULL;
    assert_int_equal(kube_config_in_cluster(dir, &cfg, &err), 0);
    assert_null(err);
    assert_string_equal(cfg->source, "in-cluster");
    assert_string_equal(cfg->server, "https://10.96.0.1:443");
    assert_string_equal(cfg->namespace, "hibernator-system");
    assert_null(cfg->token);
    char want[4096];
    snprintf(want, sizeof(want), "%s/token", dir);
    assert_string_equal(cfg->token_file, want);
    assert_non_null(cfg->ca_pem);
    assert_true(cfg->ca_pem_len > 0);
    kube_config_free(cfg);
    remove_tmpdir(dir);
}

static void test_in_cluster_ipv6_no_namespace(void **state)
{
    (void)state;
    char *dir = service_account_dir(NULL);
    setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "6443", 1);
    struct kube_config *cfg = NULL;
    assert_int_equal(kube_config_in_cluster(dir, &cfg, NULL), 0);
    assert_string_equal(cfg->server, "https://[fd00::1]:6443");
    assert_string_equal(cfg->namespace, "default");
    kube_config_free(cfg);
    remove_tmpdir(dir);
}

static void test_in_cluster_errors(void **state)
{
    (void)state;
    char *dir = service_account_dir("ns");
    struct kube_config *cfg = NULL;
    char *err = NULL;

    unsetenv("KUBERNETES_SERVICE_HOST");
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    assert_int_equal(kube_config_in_cluster(dir, &cfg, &err), -ENOENT);
    assert_string_equal(err, "in-cluster: KUBERNETES_SERVICE_HOST is not set");
    free(err);

    setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1", 1);
    unsetenv("KUBERNETES_SERVICE_PORT");
    assert_int_equal(kube_config_in_cluster(dir, &cfg, &err), -ENOENT);
    assert_string_equal(err, "in-cluster: KUBERNETES_SERVICE_PORT is not set");
    free(err);

    static const char *const bad_ports[] = {"0", "65536", "https", "44x", "-1", " 443"};
    for (size_t i = 0; i < sizeof(bad_ports) / sizeof(bad_ports[0]); i++) {
        setenv("KUBERNETES_SERVICE_PORT", bad_ports[i], 1);
        assert_int_equal(kube_config_in_cluster(dir, &cfg, &err), -EINVAL);
        assert_string_equal(err, "in-cluster: KUBERNETES_SERVICE_PORT is not a port number");
        free(err);
    }
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    setenv("KUBERNETES_SERVICE_HOST", "evil/path", 1);
    assert_int_equal(kube_config_in_cluster(dir, &cfg, &err), -EINVAL);
    free(err);
    setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1", 1);

    char path[4096];
    snprintf(path, sizeof(path), "%s/token", dir);
    unlink(path);
    assert_int_equal(kube_config_in_cluster(dir, &cfg, &err), -ENOENT);
    char want[4200];
    snprintf(want, sizeof(want), "in-cluster: %s: cannot read: No such file or directory", path);
    assert_string_equal(err, want);
    free(err);

    write_file(dir, "token", "\n");
    assert_int_equal(kube_config_in_cluster(dir, &cfg, &err), -EINVAL);
    assert_contains(err, "/token: the file is empty");
    free(err);

    snprintf(path, sizeof(path), "%s/ca.crt", dir);
    unlink(path);
    assert_int_equal(kube_config_in_cluster(dir, &cfg, &err), -ENOENT);
    assert_contains(err, "/ca.crt: cannot read: No such file or directory");
    free(err);

    assert_null(cfg);
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
    remove_tmpdir(dir);
}

/* ---- precedence ------------------------------------------------------------ */

static void test_default_precedence(void **state)
{
    (void)state;
    char *home = make_tmpdir();
    char kube_dir[2048], home_cfg[4096];
    snprintf(kube_dir, sizeof(kube_dir), "%s/.kube", home);
    assert_int_equal(mkdir(kube_dir, 0700), 0);
    write_file(
        kube_dir, "config",
        "current-context: c\nclusters:\n- name: k\n  cluster: {server: 'https://home.test'}\n"
        "contexts:\n- name: c\n  context: {cluster: k}\n");
    snprintf(home_cfg, sizeof(home_cfg), "%s/config", kube_dir);

    struct kube_config *cfg = NULL;
    char *err = NULL;
    setenv("HOME", home, 1);
    unsetenv("KUBERNETES_SERVICE_HOST");

    /* explicit path beats everything */
    setenv("KUBECONFIG", home_cfg, 1);
    assert_int_equal(kube_config_load_default(KC_DIR "/good-multi.yaml", &cfg, &err), 0);
    assert_string_equal(cfg->server, "https://dev.example.test:443");
    kube_config_free(cfg);

    /* a context chosen as with kubectl --context, from $KUBECONFIG or the path */
    setenv("KUBECONFIG", KC_DIR "/good-multi.yaml", 1);
    assert_int_equal(kube_config_load_default_context(NULL, "prod", &cfg, &err), 0);
    assert_string_equal(cfg->server, "https://prod.example.test");
    kube_config_free(cfg);
    assert_int_equal(kube_config_load_default_context(NULL, "nope", &cfg, &err), -ENOENT);
    assert_contains(err, "context \"nope\": no such context");
    free(err);
    err = NULL;
    assert_int_equal(kube_config_load_default_context(NULL, NULL, &cfg, &err), 0);
    assert_string_equal(cfg->server, "https://dev.example.test:443");
    kube_config_free(cfg);

    /* then the first entry of $KUBECONFIG */
    setenv("KUBECONFIG", ":" KC_DIR "/good-files.yaml:" KC_DIR "/good-multi.yaml", 1);
    setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1", 1);
    assert_int_equal(kube_config_load_default(NULL, &cfg, &err), 0);
    assert_string_equal(cfg->source, KC_DIR "/good-files.yaml");
    kube_config_free(cfg);

    /* then in-cluster, which here fails because there is no service account */
    unsetenv("KUBECONFIG");
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    assert_int_equal(kube_config_load_default_context(NULL, "dev", &cfg, &err), -ENOENT);
    assert_contains(err, "context \"dev\": there is no kubeconfig");
    free(err);
    err = NULL;
    if (access("/var/run/secrets/kubernetes.io/serviceaccount/token", F_OK) != 0) {
        assert_true(kube_config_load_default(NULL, &cfg, &err) < 0);
        assert_contains(err, "in-cluster: /var/run/secrets/kubernetes.io/serviceaccount/");
        free(err);
        err = NULL;
    }

    /* finally ~/.kube/config */
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
    assert_int_equal(kube_config_load_default(NULL, &cfg, &err), 0);
    assert_string_equal(cfg->server, "https://home.test");
    assert_string_equal(cfg->source, home_cfg);
    kube_config_free(cfg);

    unlink(home_cfg);
    assert_int_equal(kube_config_load_default(NULL, &cfg, &err), -ENOENT);
    assert_contains(err, "/.kube/config: cannot read: No such file or directory");
    free(err);

    unsetenv("HOME");
    assert_int_equal(kube_config_load_default(NULL, &cfg, &err), -ENOENT);
    assert_contains(err, "no kubeconfig");
    free(err);
    remove_tmpdir(home);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inline_data),
        cmocka_unit_test(test_relative_files),
        cmocka_unit_test(test_static_token_current_context),
        cmocka_unit_test(test_token_file_context),
        cmocka_unit_test(test_exec_context),
        cmocka_unit_test(test_context_without_user),
        cmocka_unit_test(test_exec_relative_command),
        cmocka_unit_test(test_explicit_context_missing),
        cmocka_unit_test(test_json_and_aliases),
        cmocka_unit_test(test_base_dir_null_uses_cwd),
        cmocka_unit_test(test_booleans_and_nulls),
        cmocka_unit_test(test_free_null),
        cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_secret_not_in_message),
        cmocka_unit_test(test_bad_strings),
        cmocka_unit_test(test_long_names_are_cut),
        cmocka_unit_test(test_size_limits),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_in_cluster),
        cmocka_unit_test(test_in_cluster_ipv6_no_namespace),
        cmocka_unit_test(test_in_cluster_errors),
        cmocka_unit_test(test_default_precedence),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
