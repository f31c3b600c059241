#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "controller/options.h"

#define PARSE(o, err, ...)                                                                         \
    controller_options_parse(                                                                      \
        (int)(sizeof((char *[]){"hibernator", __VA_ARGS__}) / sizeof(char *)),                     \
        (char *[]){"hibernator", __VA_ARGS__}, (o), (err), sizeof(err))

static void test_defaults(void **state)
{
    (void)state;
    struct controller_options o;
    char err[256];
    char *argv[] = {"hibernator"};
    assert_int_equal(controller_options_parse(1, argv, &o, err, sizeof(err)), 0);
    assert_null(o.kubeconfig);
    assert_null(o.ns);
    assert_int_equal(o.leader_elect, 1);
    assert_string_equal(o.leader_election_id, "hibernator");
    assert_int_equal(o.lease_duration_ms, 15000);
    assert_int_equal(o.renew_deadline_ms, 10000);
    assert_int_equal(o.retry_period_ms, 2000);
    assert_int_equal(o.log_level, LOG_LEVEL_INFO);
    assert_int_equal(o.log_format, LOG_FORMAT_TEXT);
    assert_int_equal(o.activity_probe_concurrency, 64);
    assert_string_equal(o.health_probe_bind_address, ":8081");
    assert_string_equal(o.metrics_bind_address, ":8080");

    /* --help shows each flag with its default. */
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    controller_options_usage(f);
    fclose(f);
    assert_non_null(strstr(text, "--metrics-bind-address"));
    assert_non_null(strstr(text, "(default \":8080\")"));
    free(text);
}

static void test_forms(void **state)
{
    (void)state;
    struct controller_options o;
    char err[256];
    assert_int_equal(PARSE(&o, err, "--kubeconfig", "/k", "--namespace=team-a",
                           "--leader-elect=false", "--log-format", "json", "--log-level=debug",
                           "--kube-api-qps=50", "--kube-api-burst", "80",
                           "--activity-probe-concurrency=8"),
                     0);
    assert_int_equal(o.activity_probe_concurrency, 8);
    assert_string_equal(o.kubeconfig, "/k");
    assert_string_equal(o.ns, "team-a");
    assert_int_equal(o.leader_elect, 0);
    assert_int_equal(o.log_format, LOG_FORMAT_JSON);
    assert_int_equal(o.log_level, LOG_LEVEL_DEBUG);
    assert_true(o.kube_api_qps == 50.0);
    assert_int_equal(o.kube_api_burst, 80);
    assert_int_equal(PARSE(&o, err, "--leader-elect"), 0);
    assert_int_equal(o.leader_elect, 1);
    assert_int_equal(
        PARSE(&o, err, "--metrics-bind-address=0", "--health-probe-bind-address", "127.0.0.1:9000"),
        0);
    assert_string_equal(o.metrics_bind_address, "0");
    assert_string_equal(o.health_probe_bind_address, "127.0.0.1:9000");
}

static void test_errors_name_the_flag(void **state)
{
    (void)state;
    struct controller_options o;
    char err[256];
    assert_int_equal(PARSE(&o, err, "--nope"), -EINVAL);
    assert_non_null(strstr(err, "--nope"));
    assert_int_equal(PARSE(&o, err, "--log-level=loud"), -EINVAL);
    assert_non_null(strstr(err, "--log-level"));
    assert_int_equal(PARSE(&o, err, "--kubeconfig"), -EINVAL);
    assert_non_null(strstr(err, "--kubeconfig needs a value"));
    assert_int_equal(PARSE(&o, err, "--leader-elect-lease-duration=5s"), -EINVAL);
    assert_non_null(strstr(err, "--leader-elect-renew-deadline"));
    assert_int_equal(PARSE(&o, err, "stray"), -EINVAL);
    assert_int_equal(PARSE(&o, err, "--kube-api-qps=-1"), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_forms),
        cmocka_unit_test(test_errors_name_the_flag),
    };
    return cmocka_run_group_tests_name("controller options", tests, NULL, NULL);
}
