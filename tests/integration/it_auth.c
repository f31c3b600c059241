/*
 * Every way of proving who we are, against the real API server with RBAC:
 * client certificate, bearer token, token file, exec credential plugin; a
 * wrong CA fails with a clear TLS error; a service account without rights
 * gets a clear 403, not a crash.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "kube/informer.h"

static char *ns;
static char dir[256];
static char *server, *ca_data, *reader_token, *nobody_token;

static char *trim(char *s)
{
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == ' '))
        s[--n] = '\0';
    return s;
}

static char *kubectl_out(const char *fmt, const char *arg)
{
    char *out = NULL;
    assert_int_equal(harness_kubectl(&out, fmt, arg), 0);
    return trim(out);
}

static void write_file(const char *path, const char *text, mode_t mode)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    chmod(path, mode);
}

/* A kubeconfig whose user is the given YAML block. Returns its path. */
static char *kubeconfig_with(const char *name, const char *ca, const char *user_yaml)
{
    char *path = NULL, *text = NULL;
    assert_true(asprintf(&path, "%s/%s.kubeconfig", dir, name) > 0);
    assert_true(
        asprintf(&text,
                 "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                 "clusters:\n- name: local\n  cluster:\n    server: %s\n"
                 "    certificate-authority-data: %s\n"
                 "contexts:\n- name: c\n  context: {cluster: local, user: u, namespace: %s}\n"
                 "users:\n- name: u\n  user:\n%s",
                 server, ca, ns, user_yaml) > 0);
    write_file(path, text, 0600);
    free(text);
    return path;
}

/* Lists ConfigMaps in the test namespace with the given kubeconfig. */
static void list_with(const char *kubeconfig, struct harness_call *call)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct kube_config *config = harness_config(kubeconfig);
    struct kube_client *client = harness_client(&loop, config);
    memset(call, 0, sizeof(*call));
    assert_int_equal(
        kube_list(client, &KUBE_RESOURCE_CONFIGMAPS, ns, NULL, harness_call_cb, call, NULL), 0);
    harness_call_wait(&loop, call);
    kube_client_close(client);
    harness_loop_close(&loop);
    kube_config_free(config);
}

static void test_client_certificate(void **state)
{
    (void)state;
    struct harness_call call;
    list_with(harness_kubeconfig(), &call);
    assert_int_equal(call.status, 0);
    assert_int_equal(call.http_code, 200);
    harness_call_clear(&call);
}

static void test_token(void **state)
{
    (void)state;
    char *user = NULL;
    assert_true(asprintf(&user, "    token: %s\n", reader_token) > 0);
    char *kc = kubeconfig_with("token", ca_data, user);
    struct harness_call call;
    list_with(kc, &call);
    assert_int_equal(call.status, 0);
    harness_call_clear(&call);
    free(user);
    free(kc);
}

static void test_token_file(void **state)
{
    (void)state;
    char path[512], *user = NULL;
    snprintf(path, sizeof(path), "%s/token", dir);
    write_file(path, reader_token, 0600);
    assert_true(asprintf(&user, "    tokenFile: %s\n", path) > 0);
    char *kc = kubeconfig_with("tokenfile", ca_data, user);
    struct harness_call call;
    list_with(kc, &call);
    assert_int_equal(call.status, 0);
    harness_call_clear(&call);
    free(user);
    free(kc);
}

static void test_exec_plugin(void **state)
{
    (void)state;
    char plugin[512], *script = NULL, *user = NULL;
    snprintf(plugin, sizeof(plugin), "%s/credential-plugin", dir);
    /* The plugin checks that the environment from the kubeconfig reached it. */
    assert_true(asprintf(&script,
                         "#!/bin/sh\n"
                         "[ \"$FROM_KUBECONFIG\" = yes ] || { echo 'env missing' >&2; exit 3; }\n"
                         "cat <<EOF\n"
                         "{\"apiVersion\":\"client.authentication.k8s.io/v1\","
                         "\"kind\":\"ExecCredential\",\"status\":{\"token\":\"%s\"}}\n"
                         "EOF\n",
                         reader_token) > 0);
    write_file(plugin, script, 0700);
    assert_true(asprintf(&user,
                         "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"
                         "      command: %s\n      args: [\"--cluster\", \"local\"]\n"
                         "      env:\n      - {name: FROM_KUBECONFIG, value: \"yes\"}\n"
                         "      interactiveMode: Never\n",
                         plugin) > 0);
    char *kc = kubeconfig_with("exec", ca_data, user);
    struct harness_call call;
    list_with(kc, &call);
    assert_int_equal(call.status, 0);
    harness_call_clear(&call);
    free(script);
    free(user);
    free(kc);
}

static void test_wrong_ca(void **state)
{
    (void)state;
    char cmd[1024];
    snprintf(cmd, sizeof(cmd),
             "openssl req -x509 -newkey rsa:2048 -nodes -keyout '%s/other-ca.key' "
             "-out '%s/other-ca.crt' -days 1 -subj /CN=other-ca 2>/dev/null",
             dir, dir);
    assert_int_equal(system(cmd), 0);
    char path[512];
    snprintf(path, sizeof(path), "%s/other-ca.crt", dir);
    char *other = NULL;
    snprintf(cmd, sizeof(cmd), "base64 -w0 '%s'", path);
    FILE *p = popen(cmd, "r");
    char b64[8192] = {0};
    assert_true(fread(b64, 1, sizeof(b64) - 1, p) > 0);
    pclose(p);
    other = trim(b64);
    char *user = NULL;
    assert_true(asprintf(&user, "    token: %s\n", reader_token) > 0);
    char *kc = kubeconfig_with("wrongca", other, user);
    struct harness_call call;
    list_with(kc, &call);
    print_message("wrong CA: status=%d error=\"%s\"\n", call.status, call.transport_error);
    assert_int_equal(call.status, -EPROTO);
    assert_int_equal(call.http_code, 0);
    assert_non_null(strstr(call.transport_error, "TLS"));
    assert_non_null(strstr(call.transport_error, "certificate"));
    /* Nothing of the token leaks into the error. */
    assert_null(strstr(call.transport_error, reader_token));
    harness_call_clear(&call);
    free(user);
    free(kc);
}

static int not_served(void *data)
{
    return informer_not_served(data);
}

static void test_forbidden(void **state)
{
    (void)state;
    char *user = NULL;
    assert_true(asprintf(&user, "    token: %s\n", nobody_token) > 0);
    char *kc = kubeconfig_with("nobody", ca_data, user);
    struct harness_call call;
    list_with(kc, &call);
    print_message("forbidden: %ld %s: %s\n", call.http_code, call.reason, call.message);
    assert_int_equal(call.status, -EIO);
    assert_int_equal(call.http_code, 403);
    assert_string_equal(call.reason, "Forbidden");
    assert_non_null(strstr(call.message, "cannot list resource \"configmaps\""));
    assert_null(strstr(call.message, nobody_token));
    harness_call_clear(&call);

    /* An informer of a resource it may not list says it is not served to it
     * (a snapshot backend then knows it holds nothing of it). */
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct kube_config *config = harness_config(kc);
    struct kube_client *client = harness_client(&loop, config);
    struct informer_options o = {.resource = &KUBE_RESOURCE_CONFIGMAPS, .ns = ns};
    struct informer *inf = NULL;
    assert_int_equal(informer_new(&loop, client, &o, &inf), 0);
    assert_int_equal(informer_start(inf), 0);
    assert_true(harness_run_until(&loop, not_served, inf, 30000));
    assert_int_equal(informer_has_synced(inf), 0);
    informer_free(inf);
    kube_client_close(client);
    harness_loop_close(&loop);
    kube_config_free(config);

    /* A token the API server does not know: 401, reported, no crash, no loop. */
    char *bad = kubeconfig_with("badtoken", ca_data, "    token: not-a-real-token\n");
    list_with(bad, &call);
    assert_int_equal(call.http_code, 401);
    assert_string_equal(call.reason, "Unauthorized");
    harness_call_clear(&call);
    free(bad);
    free(user);
    free(kc);
}

static int group_setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/it-auth.XXXXXX");
    assert_non_null(mkdtemp(dir));
    ns = harness_namespace("it-auth");
    server =
        kubectl_out("config view --raw --minify -o jsonpath={.clusters[0].cluster.server}%s", "");
    ca_data = kubectl_out("config view --raw --minify -o "
                          "jsonpath={.clusters[0].cluster.certificate-authority-data}%s",
                          "");
    assert_int_equal(harness_kubectl(NULL, "-n %s create serviceaccount reader", ns), 0);
    assert_int_equal(harness_kubectl(NULL, "-n %s create serviceaccount nobody", ns), 0);
    assert_int_equal(harness_kubectl(NULL,
                                     "-n %s create rolebinding reader-view --clusterrole=view "
                                     "--serviceaccount=%s:reader",
                                     ns, ns),
                     0);
    reader_token = kubectl_out("-n %s create token reader --duration=1h", ns);
    nobody_token = kubectl_out("-n %s create token nobody --duration=1h", ns);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    harness_namespace_delete(ns);
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    (void)system(cmd);
    free(ns);
    free(server);
    free(ca_data);
    free(reader_token);
    free(nobody_token);
    return 0;
}

int main(void)
{
    harness_require_cluster();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_client_certificate), cmocka_unit_test(test_token),
        cmocka_unit_test(test_token_file),         cmocka_unit_test(test_exec_plugin),
        cmocka_unit_test(test_wrong_ca),           cmocka_unit_test(test_forbidden),
    };
    return cmocka_run_group_tests_name("authentication and authorisation", tests, group_setup,
                                       group_teardown);
}
