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
    assert_non_null(strstr(err, "unexpected argument \"stray\""));
    assert_int_equal(PARSE(&o, err, "--kube-api-qps=-1"), -EINVAL);
    assert_non_null(strstr(err, "--kube-api-qps: invalid value \"-1\""));

    static const struct {
        const char *arg;
        const char *names;
    } cases[] = {
        /* "=value" on an unknown flag: the message names the flag alone. */
        {"--nope=1", "unknown flag --nope (see --help)"},
        /* Only full names: a prefix of one flag is still unknown. */
        {"--kube-api-q=5", "unknown flag --kube-api-q (see --help)"},
        {"--namespace-x", "unknown flag --namespace-x"},
        {"--leader", "unknown flag --leader (see --help)"},
        {"--hel", "unknown flag --hel"},
        {"-x", "unknown flag -x"},
        {"-hx", "unknown flag -x"},
        {"--help=yes", "--help takes no value"},
        {"--version=1", "--version takes no value"},
        {"--vers=1", "unknown flag --vers (see --help)"},
        {"--log-level", "--log-level needs a value"},
        {"--leader-elect=maybe", "--leader-elect: invalid value \"maybe\""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        err[0] = '\0';
        if (PARSE(&o, err, (char *)cases[i].arg) != -EINVAL)
            fail_msg("%s: accepted, want an error naming %s", cases[i].arg, cases[i].names);
        if (!strstr(err, cases[i].names))
            fail_msg("%s: error \"%s\" does not say \"%s\"", cases[i].arg, err, cases[i].names);
    }
    /* A flag's value is the next element, whatever it is; nothing after "--". */
    assert_int_equal(PARSE(&o, err, "--kubeconfig", "--"), 0);
    assert_string_equal(o.kubeconfig, "--");
    assert_int_equal(PARSE(&o, err, "--", "x"), -EINVAL);
    assert_non_null(strstr(err, "unexpected argument \"x\""));
}

/* --help, -h and --version; and a parse after one that stopped inside an
 * element ("-xh") starts afresh and leaves argv in its order. */
static void test_help_and_again(void **state)
{
    (void)state;
    struct controller_options o;
    char err[256];
    assert_int_equal(PARSE(&o, err, "-h"), 0);
    assert_true(o.show_help);
    assert_int_equal(PARSE(&o, err, "--help", "--version"), 0);
    assert_true(o.show_help);
    assert_true(o.show_version);
    assert_int_equal(PARSE(&o, err, "--"), 0);
    assert_false(o.show_help);

    char *argv[] = {"hibernator", "--namespace", "a", "--leader-elect=false", "-xh", NULL};
    char *orig[6];
    memcpy(orig, argv, sizeof(argv));
    for (int round = 0; round < 3; round++) {
        assert_int_equal(controller_options_parse(5, argv, &o, err, sizeof(err)), -EINVAL);
        assert_string_equal(err, "unknown flag -x (see --help)");
        assert_int_equal(controller_options_parse(4, argv, &o, err, sizeof(err)), 0);
        assert_string_equal(o.ns, "a");
        assert_int_equal(o.leader_elect, 0);
        assert_false(o.show_help);
        assert_memory_equal(argv, orig, sizeof(argv));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_forms),
        cmocka_unit_test(test_errors_name_the_flag),
        cmocka_unit_test(test_help_and_again),
    };
    return cmocka_run_group_tests_name("controller options", tests, NULL, NULL);
}
