/*
 * url_template_expand(): the class's probe URL and PromQL query, filled in
 * for one pod.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "activity/url_template.h"

static const struct template_vars pod_v4 = {"10.244.1.7", 8888, "team-a", "alice", "alice-3"};
static const struct template_vars pod_v6 = {"fd00:10:244::7", 8888, "team-a", "alice", "alice-3"};

static void expect(const char *tpl, const struct template_vars *v, const char *want)
{
    char *out = NULL, *err = NULL;
    int r = url_template_expand(tpl, v, &out, &err);
    if (r != 0)
        fail_msg("\"%s\": rc %d (%s)", tpl, r, err ? err : "");
    assert_null(err);
    if (strcmp(out, want) != 0)
        fail_msg("\"%s\": \"%s\", want \"%s\"", tpl, out, want);
    free(out);
}

/* Expects rc; on -EINVAL the error must contain err_part. Nothing is
 * returned on failure. */
static void expect_error(const char *tpl, const struct template_vars *v, int rc,
                         const char *err_part)
{
    char *out = (char *)"untouched", *err = NULL;
    int r = url_template_expand(tpl, v, &out, &err);
    if (r != rc)
        fail_msg("\"%.60s\": rc %d, want %d", tpl, r, rc);
    assert_string_equal(out, "untouched");
    if (err_part) {
        if (!err || !strstr(err, err_part))
            fail_msg("\"%.60s\": error \"%s\", want a part \"%s\"", tpl, err ? err : "(null)",
                     err_part);
        /* the error quotes little of the template */
        assert_true(strlen(err) < 128);
    } else {
        assert_null(err);
    }
    free(err);
    /* the error is optional */
    assert_int_equal(url_template_expand(tpl, v, &out, NULL), rc);
    assert_string_equal(out, "untouched");
}

static void test_placeholders(void **state)
{
    (void)state;
    expect("http://{podIP}:{port}", &pod_v4, "http://10.244.1.7:8888");
    expect("https://{podIP}:{port}/user/{namespace}/{workspace}/{pod}/", &pod_v4,
           "https://10.244.1.7:8888/user/team-a/alice/alice-3/");
    expect("http://{workspace}.{namespace}.svc:{port}/{workspace}/", &pod_v4,
           "http://alice.team-a.svc:8888/alice/");
    expect("http://proxy.example/static", &pod_v4, "http://proxy.example/static");
    expect("", &pod_v4, "");
    struct template_vars high = pod_v4;
    high.port = 65535;
    expect("http://{podIP}:{port}", &high, "http://10.244.1.7:65535");
}

static void test_ipv6(void **state)
{
    (void)state;
    expect("http://{podIP}:{port}/api", &pod_v6, "http://[fd00:10:244::7]:8888/api");
    struct template_vars loop = pod_v6;
    loop.pod_ip = "::1";
    expect("http://{podIP}:{port}", &loop, "http://[::1]:8888");
}

static void test_no_pod_ip(void **state)
{
    (void)state;
    struct template_vars v = pod_v4;
    v.pod_ip = NULL;
    expect_error("http://{podIP}:{port}", &v, -EAGAIN, NULL);
    v.pod_ip = "";
    expect_error("http://{podIP}:{port}", &v, -EAGAIN, NULL);
    /* not needed, not missed */
    expect("http://{workspace}.{namespace}.svc:{port}", &v, "http://alice.team-a.svc:8888");
}

static void test_unknown_placeholder(void **state)
{
    (void)state;
    expect_error("http://{host}:{port}", &pod_v4, -EINVAL, "unknown placeholder \"{host}\"");
    /* names are case-sensitive */
    expect_error("http://{PodIP}:{port}", &pod_v4, -EINVAL, "{PodIP}");
    expect_error("http://{pod_ip}", &pod_v4, -EINVAL, "{pod_ip}");
    /* a long name is quoted in part only */
    char tpl[300] = "http://{";
    memset(tpl + strlen(tpl), 'x', 200);
    strcat(tpl, "}");
    expect_error(tpl, &pod_v4, -EINVAL, "unknown placeholder \"{xxxx");
}

static void test_unclosed(void **state)
{
    (void)state;
    expect_error("http://{podIP:{port", &pod_v4, -EINVAL, "unclosed placeholder");
    expect_error("http://{podIP", &pod_v4, -EINVAL, "unclosed placeholder \"{podIP\"");
    expect_error("http://x/{", &pod_v4, -EINVAL, "unclosed");
}

/* PromQL writes label matchers in braces; only {name} is a placeholder. */
static void test_promql(void **state)
{
    (void)state;
    expect("DCGM_FI_DEV_GPU_UTIL{namespace=\"{namespace}\",pod=\"{pod}\"}", &pod_v4,
           "DCGM_FI_DEV_GPU_UTIL{namespace=\"team-a\",pod=\"alice-3\"}");
    expect("max(DCGM_FI_DEV_GPU_UTIL{pod=~\"{workspace}-[0-9]+\", namespace=\"{namespace}\"})",
           &pod_v4, "max(DCGM_FI_DEV_GPU_UTIL{pod=~\"alice-[0-9]+\", namespace=\"team-a\"})");
    expect("up{} or {{pod}}", &pod_v4, "up{} or {alice-3}");
    expect_error("DCGM_FI_DEV_GPU_UTIL{pod=\"{podname}\"}", &pod_v4, -EINVAL, "{podname}");
}

static void test_length_limit(void **state)
{
    (void)state;
    /* exactly the limit fits */
    char *tpl = malloc(URL_TEMPLATE_MAX + 2);
    assert_non_null(tpl);
    memset(tpl, 'a', URL_TEMPLATE_MAX);
    tpl[URL_TEMPLATE_MAX] = '\0';
    char *out = NULL;
    assert_int_equal(url_template_expand(tpl, &pod_v4, &out, NULL), 0);
    assert_int_equal(strlen(out), URL_TEMPLATE_MAX);
    free(out);
    /* one more does not */
    strcat(tpl, "a");
    expect_error(tpl, &pod_v4, -EINVAL, "2048");
    free(tpl);

    /* a short template that grows past the limit once filled in */
    struct template_vars v = pod_v4;
    char name[64];
    memset(name, 'n', 63);
    name[63] = '\0';
    v.workspace = name;
    char big[1024] = "http://x/";
    for (int i = 0; i < 40; i++)
        strcat(big, "{workspace}");
    expect_error(big, &v, -EINVAL, "longer than 2048 bytes");
    /* and one that just fits */
    big[strlen("http://x/") + 32 * strlen("{workspace}")] = '\0';
    out = NULL;
    assert_int_equal(url_template_expand(big, &v, &out, NULL), 0);
    assert_int_equal(strlen(out), strlen("http://x/") + 32 * 63);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_placeholders), cmocka_unit_test(test_ipv6),
        cmocka_unit_test(test_no_pod_ip),    cmocka_unit_test(test_unknown_placeholder),
        cmocka_unit_test(test_unclosed),     cmocka_unit_test(test_promql),
        cmocka_unit_test(test_length_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
