/*
 * Event names (controller/events): an Event is named after the workspace
 * (its uid), its reason and the transition it reports, so the same
 * transition decided again after a crash gets the same name and the API
 * server refuses the second POST with AlreadyExists; any other transition,
 * and the same transition of a workspace created again under the same name,
 * gets another.
 */
#include <errno.h>
#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "controller/events.h"

static const struct event_subject nb = {"hibernator.dev/v1alpha1", "Workspace", "team", "nb",
                                        "0b6f1c9e-1111-4c1a-9d1e-2f7d00000001"};

static void name_of(const struct event_subject *s, const char *reason, const char *occasion,
                    char out[EVENTS_NAME_SIZE])
{
    assert_int_equal(events_name(s, reason, occasion, out, EVENTS_NAME_SIZE), 0);
}

/* A DNS subdomain (RFC 1123), as the API server checks an Event's name. */
static void assert_dns_subdomain(const char *name)
{
    regex_t re;
    assert_int_equal(regcomp(&re,
                             "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
                             REG_EXTENDED | REG_NOSUB),
                     0);
    int match = regexec(&re, name, 0, NULL, 0) == 0;
    regfree(&re);
    if (!match || strlen(name) > 253)
        fail_msg("not a DNS subdomain of at most 253 characters: \"%s\"", name);
}

static void test_same_transition_same_name(void **state)
{
    (void)state;
    char a[EVENTS_NAME_SIZE], b[EVENTS_NAME_SIZE];
    name_of(&nb, "Pausing", "pause-3", a);
    name_of(&nb, "Pausing", "pause-3", b);
    assert_string_equal(a, b);
    /* "<workspace>.<16 hex digits>" */
    assert_int_equal(strlen(a), strlen("nb.") + 16);
    assert_memory_equal(a, "nb.", 3);
    assert_int_equal(strspn(a + 3, "0123456789abcdef"), 16);
    assert_dns_subdomain(a);
}

static void test_other_transitions_other_names(void **state)
{
    (void)state;
    char base[EVENTS_NAME_SIZE], other[EVENTS_NAME_SIZE];
    name_of(&nb, "Pausing", "pause-3", base);
    const struct {
        const char *uid, *reason, *occasion;
    } others[] = {
        {nb.uid, "Pausing", "pause-4"},     /* the next pause */
        {nb.uid, "Paused", "pause-3"},      /* another step of it */
        {nb.uid, "IdleTimeout", "pause-3"}, /* the controller's own pause */
        {"0b6f1c9e-2222-4c1a-9d1e-2f7d00000002", "Pausing", "pause-3"}, /* created again */
        /* the fields are kept apart: moving a character across does not collide */
        {nb.uid, "Pausin", "gpause-3"},
    };
    for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
        struct event_subject s = nb;
        s.uid = others[i].uid;
        name_of(&s, others[i].reason, others[i].occasion, other);
        if (strcmp(base, other) == 0)
            fail_msg("%s/%s/%s has the name of Pausing/pause-3", others[i].uid, others[i].reason,
                     others[i].occasion);
        assert_dns_subdomain(other);
    }
}

/* A workspace's name may be a whole DNS subdomain: it is cut, never at a
 * dash or a dot, so the Event's name stays one. */
static void test_long_name_is_cut(void **state)
{
    (void)state;
    char longname[254];
    memset(longname, 'a', 253);
    longname[253] = '\0';
    longname[236] = '-'; /* the last character kept, were it cut there */
    longname[235] = '.';
    struct event_subject s = nb;
    s.name = longname;
    char out[EVENTS_NAME_SIZE];
    name_of(&s, "Resumed", "resume-1", out);
    assert_true(strlen(out) <= 253);
    assert_dns_subdomain(out);
    assert_memory_equal(out, longname, 235 - 1);
}

static void test_refuses_what_it_cannot_name(void **state)
{
    (void)state;
    char out[EVENTS_NAME_SIZE];
    struct event_subject unnamed = nb;
    unnamed.name = NULL;
    assert_int_equal(events_name(&unnamed, "Pausing", "pause-1", out, sizeof(out)), -EINVAL);
    assert_int_equal(events_name(&nb, NULL, "pause-1", out, sizeof(out)), -EINVAL);
    assert_int_equal(events_name(&nb, "Pausing", NULL, out, sizeof(out)), -EINVAL);
    assert_int_equal(events_name(&nb, "Pausing", "pause-1", out, 100), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_transition_same_name),
        cmocka_unit_test(test_other_transitions_other_names),
        cmocka_unit_test(test_long_name_is_cut),
        cmocka_unit_test(test_refuses_what_it_cannot_name),
    };
    return cmocka_run_group_tests_name("event names", tests, NULL, NULL);
}
