/* The distribution token authentication's client side
 * (node/registry_token.h): challenges as registries send them (the
 * examples of distribution's docs/spec/auth/token.md, and GHCR's and
 * distribution's htpasswd's as they answer), the token URL, the answer. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "node/registry_token.h"

static void test_challenges(void **state)
{
    (void)state;
    static const struct {
        const char *header;
        int rc, bearer;
        const char *realm, *service, *scope;
    } rows[] = {
        /* the spec's example */
        {"Bearer realm=\"https://auth.docker.io/token\",service=\"registry.docker.io\","
         "scope=\"repository:samalba/my-app:pull,push\"",
         0, 1, "https://auth.docker.io/token", "registry.docker.io",
         "repository:samalba/my-app:pull,push"},
        {"Bearer realm=\"https://ghcr.io/token\",service=\"ghcr.io\",scope=\"repository:u/i:pull\"",
         0, 1, "https://ghcr.io/token", "ghcr.io", "repository:u/i:pull"},
        /* distribution with htpasswd */
        {"Basic realm=\"hibernator\"", 0, 0, "hibernator", "", ""},
        /* spaces, case, unquoted values, an escaped quote, unknown parameters */
        {"  bearer  Realm = \"https://a.example/t?x=1\" , service=reg.example , "
         "error=\"in\\\"valid\"",
         0, 1, "https://a.example/t?x=1", "reg.example", ""},
        {"Bearer", 0, 1, "", "", ""},
        {"", -EINVAL, 0, "", "", ""},
        {"Bearer realm=\"https://a.example/t", -EINVAL, 1, "", "", ""},
        {"Bearer realm", -EINVAL, 1, "", "", ""},
        {"Bearer realm=\"x\" service=\"y\"", -EINVAL, 1, "", "", ""},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        struct registry_challenge c;
        int rc = registry_challenge_parse(rows[i].header, &c);
        if (rc != rows[i].rc)
            fail_msg("%s: rc %d, want %d", rows[i].header, rc, rows[i].rc);
        if (rc < 0)
            continue;
        assert_int_equal(c.bearer, rows[i].bearer);
        assert_string_equal(c.realm, rows[i].realm);
        assert_string_equal(c.service, rows[i].service);
        assert_string_equal(c.scope, rows[i].scope);
    }
}

static void test_too_long(void **state)
{
    (void)state;
    char h[3000] = "Bearer realm=\"https://";
    size_t n = strlen(h);
    memset(h + n, 'a', 2000);
    strcpy(h + n + 2000, "\"");
    struct registry_challenge c;
    assert_int_equal(registry_challenge_parse(h, &c), -EINVAL);
}

static void test_url(void **state)
{
    (void)state;
    struct registry_challenge c;
    assert_int_equal(registry_challenge_parse("Bearer realm=\"https://auth.docker.io/token\","
                                              "service=\"registry.docker.io\","
                                              "scope=\"repository:samalba/my-app:pull,push\"",
                                              &c),
                     0);
    char *url = NULL;
    assert_int_equal(registry_token_url(&c, "repository:x:pull", &url), 0);
    assert_string_equal(url, "https://auth.docker.io/token?service=registry.docker.io&scope="
                             "repository%3Asamalba%2Fmy-app%3Apull%2Cpush");
    free(url);
    /* No scope in the challenge: the caller's; a realm with a query. */
    assert_int_equal(
        registry_challenge_parse("Bearer realm=\"https://r.example/t?a=b\",service=\"r\"", &c), 0);
    assert_int_equal(registry_token_url(&c, "repository:team a/nb:pull,push", &url), 0);
    assert_string_equal(url, "https://r.example/t?a=b&service=r&scope="
                             "repository%3Ateam%20a%2Fnb%3Apull%2Cpush");
    free(url);
    /* Neither service nor scope. */
    assert_int_equal(registry_challenge_parse("Bearer realm=\"https://r.example/t\"", &c), 0);
    assert_int_equal(registry_token_url(&c, NULL, &url), 0);
    assert_string_equal(url, "https://r.example/t");
    free(url);
    /* The credentials never go in clear. */
    assert_int_equal(registry_challenge_parse("Bearer realm=\"http://r.example/t\"", &c), 0);
    assert_int_equal(registry_token_url(&c, NULL, &url), -EINVAL);
    assert_null(url);
    assert_int_equal(registry_challenge_parse("Bearer service=\"r\"", &c), 0);
    assert_int_equal(registry_token_url(&c, NULL, &url), -EINVAL);
}

static void test_answer(void **state)
{
    (void)state;
    static const struct {
        const char *body;
        int rc;
        const char *token;
    } rows[] = {
        /* the spec's answer */
        {"{\"token\": \"eyJ0eXAi.x.y\", \"expires_in\": 3600, \"issued_at\": "
         "\"2009-11-10T23:00:00Z\"}",
         0, "eyJ0eXAi.x.y"},
        {"{\"access_token\": \"at\", \"expires_in\": 300}", 0, "at"},
        {"{\"token\": \"\", \"access_token\": \"at\"}", 0, "at"},
        {"{\"token\": \"t\", \"access_token\": \"at\"}", 0, "t"},
        {"{\"expires_in\": 300}", -EINVAL, NULL},
        {"{\"token\": 5}", -EINVAL, NULL},
        {"<html>", -EINVAL, NULL},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        char *t = NULL;
        int rc = registry_token_from_json(rows[i].body, strlen(rows[i].body), &t);
        if (rc != rows[i].rc)
            fail_msg("%s: rc %d, want %d", rows[i].body, rc, rows[i].rc);
        if (rows[i].token)
            assert_string_equal(t, rows[i].token);
        else
            assert_null(t);
        free(t);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_challenges),
        cmocka_unit_test(test_too_long),
        cmocka_unit_test(test_url),
        cmocka_unit_test(test_answer),
    };
    return cmocka_run_group_tests_name("registry_token", tests, NULL, NULL);
}
