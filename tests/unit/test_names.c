/* The names derived from a workspace's name: limits, syntax, uniqueness and
 * stability over the extremes of name length and counters. Syntax is judged
 * by POSIX regular expressions written from the Kubernetes definitions. */
#include <errno.h>
#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/evp.h>

#include "workspace/names.h"

/* k8s.io/apimachinery/pkg/util/validation: IsDNS1123Subdomain, IsValidLabelValue. */
#define DNS1123_LABEL "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
#define DNS1123_SUBDOMAIN "^" DNS1123_LABEL "(\\." DNS1123_LABEL ")*$"
#define LABEL_VALUE "^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"

static regex_t subdomain_re, label_re;

static int setup(void **state)
{
    (void)state;
    if (regcomp(&subdomain_re, DNS1123_SUBDOMAIN, REG_EXTENDED | REG_NOSUB) != 0 ||
        regcomp(&label_re, LABEL_VALUE, REG_EXTENDED | REG_NOSUB) != 0)
        return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    regfree(&subdomain_re);
    regfree(&label_re);
    return 0;
}

static int is_subdomain(const char *s)
{
    return strlen(s) <= NAMES_MAX_OBJECT && regexec(&subdomain_re, s, 0, NULL, 0) == 0;
}

static int is_label_value(const char *s)
{
    return strlen(s) <= NAMES_MAX_LABEL && regexec(&label_re, s, 0, NULL, 0) == 0;
}

/* A valid workspace name of n characters (1..63): letters and digits with a
 * '-' every seventh and a '.' every thirteenth character, never first or
 * last, never next to each other. */
static void workspace_name(size_t n, char seed, char *out)
{
    static const char alnum[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    for (size_t i = 0; i < n; i++) {
        char c = alnum[(i + (size_t)(seed - 'a')) % 36];
        if (i > 0 && i + 1 < n && i % 13 == 12)
            c = '.';
        else if (i > 0 && i + 1 < n && i % 7 == 6 && i % 13 != 11 && i % 13 != 0)
            c = '-';
        out[i] = c;
    }
    out[n] = '\0';
}

/* The first 8 hex digits of SHA-256(s), through EVP (not the module's call). */
static void hash8(const char *s, char out[9])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    assert_int_equal(EVP_Digest(s, strlen(s), md, &n, EVP_sha256(), NULL), 1);
    for (int i = 0; i < 4; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

/* What the documented rule gives for base + suffix within limit. */
static void expected(const char *base, const char *suffix, size_t limit, char *out, size_t size)
{
    size_t nb = strlen(base), ns = strlen(suffix);
    if (nb + ns <= limit) {
        snprintf(out, size, "%s%s", base, suffix);
        return;
    }
    char whole[400], h[9];
    snprintf(whole, sizeof(whole), "%s%s", base, suffix);
    hash8(whole, h);
    size_t keep = limit - ns - 1 - NAMES_HASH_LEN;
    while (keep > 0 && strchr("-._", base[keep - 1]))
        keep--;
    snprintf(out, size, "%.*s-%s%s", (int)keep, base, h, suffix);
}

static const size_t lengths[] = {1, 8, 41, 58, 59, 60, 62, 63};
static const int64_t counters[] = {
    0, 1, 9, 10, 99, 999999, INT64_C(9007199254740992), INT64_MAX - 1, INT64_MAX};

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* Every name for every length and counter: within its limit, of its syntax,
 * as the rule says, unchanged when it fits, and the pod's generation read
 * back. */
static void test_names_table(void **state)
{
    (void)state;
    char ws[64], got[NAMES_SIZE], want[NAMES_SIZE * 2], suffix[64];
    for (size_t i = 0; i < N(lengths); i++) {
        workspace_name(lengths[i], 'a', ws);
        assert_true(is_subdomain(ws) && is_label_value(ws));
        for (size_t j = 0; j < N(counters); j++) {
            int64_t c = counters[j];

            int n = names_pod(ws, c, got);
            snprintf(suffix, sizeof(suffix), "-%lld", (long long)c);
            expected(ws, suffix, NAMES_MAX_LABEL, want, sizeof(want));
            assert_string_equal(got, want);
            assert_int_equal(n, (int)strlen(got));
            assert_true(is_subdomain(got) && is_label_value(got));
            assert_true(strlen(got) <= NAMES_MAX_LABEL);
            assert_true(names_pod_generation(ws, got) == c);

            n = names_snapshot_handle(ws, c, c, got);
            snprintf(suffix, sizeof(suffix), "-p%lld-%lld", (long long)c, (long long)c);
            expected(ws, suffix, NAMES_MAX_LABEL, want, sizeof(want));
            assert_string_equal(got, want);
            assert_int_equal(n, (int)strlen(got));
            assert_true(is_subdomain(got) && is_label_value(got));
            /* Other counters in the other place give another handle. */
            char other[NAMES_SIZE];
            assert_true(names_snapshot_handle(ws, c, c == 1 ? 2 : 1, other) > 0);
            assert_string_not_equal(got, other);
        }
        /* A workspace name of at most 63 never has these cut. */
        assert_true(names_home_claim(ws, got) > 0);
        snprintf(want, sizeof(want), "%s-home", ws);
        assert_string_equal(got, want);
        assert_true(is_subdomain(got));
        assert_true(names_snapshot_policy(ws, got) > 0);
        snprintf(want, sizeof(want), "%s-snapshots", ws);
        assert_string_equal(got, want);
        assert_true(is_subdomain(got));
    }
}

/* Names that fit are exactly what they were before names were cut. */
static void test_short_names_unchanged(void **state)
{
    (void)state;
    char got[NAMES_SIZE];
    names_pod("alice-nb", 1, got);
    assert_string_equal(got, "alice-nb-1");
    names_pod("alice-nb", 12, got);
    assert_string_equal(got, "alice-nb-12");
    names_home_claim("alice-nb", got);
    assert_string_equal(got, "alice-nb-home");
    names_snapshot_handle("alice-nb", 3, 2, got);
    assert_string_equal(got, "alice-nb-p3-2");
    names_snapshot_policy("alice-nb", got);
    assert_string_equal(got, "alice-nb-snapshots");
    /* 58 + "-p1-1": exactly 63, kept. */
    char ws[64];
    workspace_name(58, 'a', ws);
    names_snapshot_handle(ws, 1, 1, got);
    assert_int_equal(strlen(got), 63);
    assert_memory_equal(got, ws, 58);
    assert_string_equal(got + 58, "-p1-1");
}

/* The defect: a 63-character workspace's first trigger was 68 characters. */
static void test_long_name_handle(void **state)
{
    (void)state;
    const char *ws = "research-team-llm-finetuning-notebook-with-a-long-descriptive-n";
    assert_int_equal(strlen(ws), 63);
    char got[NAMES_SIZE];
    assert_int_equal(names_snapshot_handle(ws, 1, 1, got), 63);
    /* A golden value: the rule may not change, or a controller after an
     * upgrade would name a pause's trigger differently than before it. */
    assert_string_equal(got, "research-team-llm-finetuning-notebook-with-a-long-"
                             "87a79159-p1-1");
    assert_true(is_label_value(got) && is_subdomain(got));
    /* docs/api.md's example. */
    names_snapshot_handle("research.a-workspace-name-of-the-longest-length-the-api-allows1", 1, 1,
                          got);
    assert_string_equal(got, "research.a-workspace-name-of-the-longest-length-t-a3873096-p1-1");
    names_pod("research.a-workspace-name-of-the-longest-length-the-api-allows1", 1, got);
    assert_string_equal(got, "research.a-workspace-name-of-the-longest-length-the-47fbe9c8-1");
    assert_int_equal(names_pod(ws, 1, got), 63);
    assert_true(is_label_value(got) && is_subdomain(got));
    assert_int_equal(names_pod_generation(ws, got), 1);
}

/* The cut never ends on '-' or '.': a base whose cut would. */
static void test_cut_ends_on_alnum(void **state)
{
    (void)state;
    /* For a pod of generation 1 the cut keeps 63 - 2 - 9 = 52 characters. */
    char ws[64], got[NAMES_SIZE];
    static const char marks[][3] = {"-", "--", ".", "a."};
    for (size_t m = 0; m < N(marks); m++) {
        memset(ws, 'x', 63);
        ws[63] = '\0';
        size_t k = strlen(marks[m]);
        memcpy(ws + 52 - k, marks[m], k);
        assert_true(is_subdomain(ws));
        assert_true(names_pod(ws, 1, got) > 0);
        assert_true(is_subdomain(got) && is_label_value(got));
        const char *hash = strrchr(got, '-') - NAMES_HASH_LEN - 1;
        assert_true(hash > got && hash[0] == '-');
        assert_true(hash[-1] != '-' && hash[-1] != '.');
        assert_int_equal(names_pod_generation(ws, got), 1);
    }
}

/* Two 63-character names that differ only in their last character, or only
 * in the part the cut drops, never share a derived name. */
static void test_unique(void **state)
{
    (void)state;
    char a[64], b[64], na[NAMES_SIZE], nb[NAMES_SIZE];
    workspace_name(63, 'a', a);
    strcpy(b, a);
    b[62] = b[62] == 'z' ? 'y' : 'z';
    for (size_t j = 0; j < N(counters); j++) {
        names_pod(a, counters[j], na);
        names_pod(b, counters[j], nb);
        assert_string_not_equal(na, nb);
        names_snapshot_handle(a, counters[j], 1, na);
        names_snapshot_handle(b, counters[j], 1, nb);
        assert_string_not_equal(na, nb);
        /* Neither reads as the other's pod. */
        names_pod(a, counters[j], na);
        assert_true(names_pod_generation(b, na) == -1);
    }
    /* All handles of many names and counters: no two alike. */
    enum { NAMES = 40, COUNTS = 5 };
    static char seen[NAMES * COUNTS * 2][NAMES_SIZE];
    size_t n = 0;
    for (int i = 0; i < NAMES; i++) {
        char ws[64];
        workspace_name(63, 'a', ws);
        snprintf(ws + 60, 4, "%03d", i);
        for (int c = 0; c < COUNTS; c++) {
            names_snapshot_handle(ws, counters[c], 1, seen[n++]);
            names_pod(ws, counters[c], seen[n++]);
        }
    }
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            assert_string_not_equal(seen[i], seen[j]);
}

/* The same input gives the same output, call after call. */
static void test_stable(void **state)
{
    (void)state;
    char ws[64], x[NAMES_SIZE], y[NAMES_SIZE];
    for (size_t i = 0; i < N(lengths); i++) {
        workspace_name(lengths[i], 'q', ws);
        for (size_t j = 0; j < N(counters); j++) {
            names_snapshot_handle(ws, counters[j], 7, x);
            names_snapshot_handle(ws, counters[j], 7, y);
            assert_string_equal(x, y);
            names_pod(ws, counters[j], x);
            names_pod(ws, counters[j], y);
            assert_string_equal(x, y);
        }
    }
}

/* Pods named "<workspace>-<n>" beyond 63 characters (as before names were
 * cut) are still read; other names are not the workspace's. */
static void test_pod_generation(void **state)
{
    (void)state;
    char ws[64], pod[128];
    workspace_name(63, 'a', ws);
    snprintf(pod, sizeof(pod), "%s-12", ws);
    assert_int_equal(names_pod_generation(ws, pod), 12);
    assert_int_equal(names_pod_generation("w", "w-7"), 7);
    assert_int_equal(names_pod_generation("w", "w-07"), 7);
    assert_int_equal(names_pod_generation("w", "w-"), -1);
    assert_int_equal(names_pod_generation("w", "w-1a"), -1);
    assert_int_equal(names_pod_generation("w", "w"), -1);
    assert_int_equal(names_pod_generation("w", "x-1"), -1);
    assert_int_equal(names_pod_generation("w", "w-home"), -1);
    assert_int_equal(names_pod_generation("w", "w-99999999999999999999"), -1);
    assert_int_equal(names_pod_generation("w", "w-9223372036854775807"), INT64_MAX);
    /* A cut name with the hash of another generation. */
    char got[NAMES_SIZE];
    names_pod(ws, 5, got);
    char *dash = strrchr(got, '-');
    strcpy(dash, "-6");
    assert_int_equal(names_pod_generation(ws, got), -1);
}

static void test_invalid(void **state)
{
    (void)state;
    char out[NAMES_SIZE], big[300];
    memset(big, 'a', 254);
    big[254] = '\0';
    assert_int_equal(names_fit("", "-1", 63, out), -EINVAL);
    assert_int_equal(names_fit(big, "-1", 63, out), -EINVAL);
    assert_int_equal(names_fit("abc", "-1", 254, out), -EINVAL);
    /* No room for a character of the base beside the hash. */
    assert_int_equal(names_fit("abcdefghijk", "-12345", 15, out), -EINVAL);
    assert_int_equal(names_fit("abcdefghijk", "-12345", 16, out), 16);
    assert_int_equal(out[0], 'a');
    assert_int_equal(out[1], '-');
    assert_true(is_subdomain(out));
    big[253] = '\0';
    assert_int_equal(names_fit(big, "-home", NAMES_MAX_OBJECT, out), NAMES_MAX_OBJECT);
    assert_true(is_subdomain(out));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_table),      cmocka_unit_test(test_short_names_unchanged),
        cmocka_unit_test(test_long_name_handle), cmocka_unit_test(test_cut_ends_on_alnum),
        cmocka_unit_test(test_unique),           cmocka_unit_test(test_stable),
        cmocka_unit_test(test_pod_generation),   cmocka_unit_test(test_invalid),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
