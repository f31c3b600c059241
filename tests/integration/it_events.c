/*
 * The Events of one pause and one resume, read back through the API server
 * (kubectl get events): their reasons (workspace/vocabulary.h's) and what
 * their messages say happened. A class with GKE Pod Snapshots, played by
 * the simulator: the pod keeps running while its snapshot is taken, the
 * pause keeps the memory, the resume restores it, and the Resumed Event
 * says so (not "from the application's checkpoint").
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "workspace/vocabulary.h"
#include "workspaces.h"

/* "reason|message" lines of the workspace's Events, oldest first. */
static char *event_lines(const char *name)
{
    char *out = NULL;
    harness_kubectl(&out,
                    "-n %s get events --field-selector involvedObject.name=%s,"
                    "involvedObject.kind=Workspace --sort-by=.eventTime "
                    "-o jsonpath='{range .items[*]}{.reason}|{.message}{\"\\n\"}{end}'",
                    ns, name);
    return out ? out : strdup("");
}

/* The message of the Event with reason (the line after "reason|"), copied
 * into out; 0 when there is none yet. Fails when there is more than one. */
static int event_message(const char *lines, const char *reason, char *out, size_t size)
{
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "%s|", reason);
    int found = 0;
    for (const char *p = lines; p && *p;) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (strncmp(p, prefix, strlen(prefix)) == 0) {
            if (found++)
                fail_msg("two %s Events:\n%s", reason, lines);
            snprintf(out, size, "%.*s", (int)(len - strlen(prefix)), p + strlen(prefix));
        }
        p = end ? end + 1 : NULL;
    }
    return found;
}

/* How many Events of the workspace have reason. */
static int count_events(const char *name, const char *reason)
{
    char *lines = event_lines(name);
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "%s|", reason);
    int n = 0;
    for (const char *p = lines; *p;) {
        n += strncmp(p, prefix, strlen(prefix)) == 0;
        const char *end = strchr(p, '\n');
        p = end ? end + 1 : p + strlen(p);
    }
    free(lines);
    return n;
}

/* Waits (at most 20 s) for the workspace's one Event with reason and
 * copies its message into out. */
static void event_of(const char *name, const char *reason, char *out, size_t size)
{
    char *lines = NULL;
    uint64_t end = harness_now_ms() + 20000;
    out[0] = '\0';
    for (;;) {
        free(lines);
        lines = event_lines(name);
        if (event_message(lines, reason, out, size) || harness_now_ms() >= end)
            break;
        usleep(300 * 1000);
    }
    if (!out[0])
        fail_msg("no %s Event; the Events:\n%s", reason, lines);
    free(lines);
}

/* Waits (at most 20 s) for the Event and checks its message has each of
 * the words (NULL-terminated) and not the word absent. */
static void expect_event(const char *name, const char *reason, const char *absent, ...)
{
    char msg[1024] = "";
    char *lines = NULL;
    uint64_t end = harness_now_ms() + 20000;
    for (;;) {
        free(lines);
        lines = event_lines(name);
        if (event_message(lines, reason, msg, sizeof(msg)) || harness_now_ms() >= end)
            break;
        usleep(300 * 1000);
    }
    if (!msg[0])
        fail_msg("no %s Event; the Events:\n%s", reason, lines);
    print_message("  %s: %s\n", reason, msg);
    va_list ap;
    va_start(ap, absent);
    for (const char *w; (w = va_arg(ap, const char *));)
        if (!strstr(msg, w))
            fail_msg("%s: \"%s\" lacks \"%s\"", reason, msg, w);
    va_end(ap);
    if (absent && strstr(msg, absent))
        fail_msg("%s: \"%s\" has \"%s\"", reason, msg, absent);
    free(lines);
}

static void test_pause_and_resume_events(void **state)
{
    (void)state;
    apply_ws("ev", "it-ev-snap", 0, NULL);
    cJSON_Delete(wait_state("ev", "Running", 60000));

    set_paused("ev", 1);
    cJSON *ws = wait_state("ev", "Paused", 60000);
    char snapshot[256];
    snprintf(snapshot, sizeof(snapshot), "%s", str_at(ws, "status.snapshot.name"));
    cJSON_Delete(ws);
    expect_event("ev", WS_EVENT_PAUSING, "stopping pod", "pod ev-1 keeps running",
                 "snapshot ev-p1-1", "the pause is tried again", NULL);
    expect_event("ev", WS_EVENT_PAUSED, "files only", snapshot, "memory", NULL);

    set_paused("ev", 0);
    ws = wait_state("ev", "Running", 60000);
    cJSON_Delete(ws);
    ws = wait_reason("ev", WS_COND_RESTORED, WS_REASON_FROM_SNAPSHOT, 30000);
    cJSON_Delete(ws);
    expect_event("ev", WS_EVENT_RESUMING, NULL, "resume requested after", "restored from snapshot",
                 snapshot, NULL);
    expect_event("ev", WS_EVENT_RESUMED, "checkpoint", "from snapshot", snapshot, "memory is back",
                 NULL); /* the class has no accelerator */
}

/* An Event and the crash beside it: the controller killed just before it
 * posts a transition's Event (failpoint before:Event: neither the Event
 * nor the status written) and just after (failpoint Event: the Event
 * posted, the status not). Either way the next controller posts the
 * transition's Event exactly once: a lost one is posted by whoever decides
 * the transition again, and one already posted has the name the next
 * decision gives it, so the API server's AlreadyExists counts as done
 * (docs/state-machine.md, "Events across crashes"). */
static void test_event_and_crash(void **state)
{
    (void)state;
    static const char *const failpoints[] = {"before:Event", "Event"};
    for (size_t i = 0; i < sizeof(failpoints) / sizeof(failpoints[0]); i++) {
        char name[32];
        snprintf(name, sizeof(name), "evc%zu", i);
        apply_ws(name, "it-ev-snap", 0, NULL);
        cJSON_Delete(wait_state(name, "Running", 60000));
        controller_stop();
        controller_start(failpoints[i]);
        set_paused(name, 1);
        assert_int_equal(controller_wait_exit(60000), 3);
        char *lines = event_lines(name);
        print_message("  %s: the controller exited at %s; the Events then:\n%s", name,
                      failpoints[i], lines);
        free(lines);
        controller_start(NULL);
        cJSON_Delete(wait_state(name, "Paused", 90000));
        /* The pod keeps running while its snapshot is taken, or, when the
         * simulator stopped it at its checkpoint before this controller was
         * back (a loaded machine), the snapshot that was asked for is named:
         * never "stopping pod" (deleted for files), never an empty name. */
        char msg[2048];
        event_of(name, WS_EVENT_PAUSING, msg, sizeof(msg));
        print_message("  %s: Pausing: %s\n", name, msg);
        assert_null(strstr(msg, "stopping pod"));
        assert_null(strstr(msg, "already stopping"));
        assert_null(strstr(msg, "snapshot  "));
        char attempt[64];
        snprintf(attempt, sizeof(attempt), "snapshot %s-p1-1", name);
        assert_true(strstr(msg, "keeps running") ||
                    (strstr(msg, attempt) && strstr(msg, "was asked for")));
        expect_event(name, WS_EVENT_PAUSED, "files only", "memory", NULL);
        delete_ws(name);
    }
}

/* The API server cannot record Events for a while: a validating webhook
 * on Event creation in the test's namespace whose server does not listen
 * (failurePolicy Fail), so every POST is refused with 500 "failed calling
 * webhook". A transition waits for its Event: the status does not record
 * the pause until its Pausing Event is there, and once Events are taken
 * again each transition's Event is posted exactly once. */
static void test_event_refused_then_posted(void **state)
{
    (void)state;
    apply_ws("evr", "it-ev-snap", 0, NULL);
    cJSON_Delete(wait_state("evr", "Running", 60000));
    assert_int_equal(
        harness_apply("apiVersion: admissionregistration.k8s.io/v1\n"
                      "kind: ValidatingWebhookConfiguration\n"
                      "metadata: {name: it-events-down-%s}\n"
                      "webhooks:\n"
                      "- name: events-down.it.hibernator.dev\n"
                      "  clientConfig: {url: \"https://127.0.0.1:1/validate\"}\n"
                      "  rules: [{operations: [CREATE], apiGroups: [\"\", events.k8s.io],\n"
                      "           apiVersions: [\"*\"], resources: [events]}]\n"
                      "  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: %s}}\n"
                      "  failurePolicy: Fail\n"
                      "  sideEffects: None\n"
                      "  timeoutSeconds: 2\n"
                      "  admissionReviewVersions: [v1]\n",
                      ns, ns),
        0);
    /* The webhook is in force once an Event like ours is refused. */
    uint64_t end = harness_now_ms() + 30000;
    int refused = 0;
    for (int i = 0; !refused && harness_now_ms() < end; i++) {
        refused = harness_apply("apiVersion: v1\nkind: Event\n"
                                "metadata: {name: it-probe-%d-%d, namespace: %s}\n"
                                "involvedObject: {kind: Workspace, name: evr, namespace: %s}\n"
                                "reason: Probe\nmessage: probe\ntype: Normal\n",
                                (int)getpid(), i, ns, ns) != 0;
        if (!refused)
            usleep(300 * 1000);
    }
    assert_true(refused);
    set_paused("evr", 1);
    sleep(6);
    cJSON *ws = ws_json("evr");
    const cJSON *pauses = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(ws, "status"),
                                         "accounting"),
        "pauses");
    print_message("  Events refused for 6 s: state %s, pauses counted %d, Pausing Events %d\n",
                  str_at(ws, "status.state"), pauses ? (int)pauses->valuedouble : 0,
                  count_events("evr", WS_EVENT_PAUSING));
    assert_string_equal(str_at(ws, "status.state"), "Running");
    assert_true(!pauses || pauses->valuedouble == 0);
    cJSON_Delete(ws);
    assert_int_equal(count_events("evr", WS_EVENT_PAUSING), 0);
    assert_int_equal(
        harness_kubectl(NULL, "delete validatingwebhookconfiguration it-events-down-%s", ns), 0);
    cJSON_Delete(wait_state("evr", "Paused", 90000));
    assert_int_equal(count_events("evr", WS_EVENT_PAUSING), 1);
    assert_int_equal(count_events("evr", WS_EVENT_PAUSED), 1);
}

static int group_setup(void **state)
{
    (void)state;
    it_deploy("it-events");
    install_snapshot_crds("it-events");
    ns = harness_namespace("it-events");
    assert_int_equal(harness_kubectl(NULL, "-n %s create configmap snapshot-simulator", ns), 0);
    apply_class("it-ev-snap", "  snapshot: {backend: GKE, storageConfigName: it-events, "
                              "timeout: 60s, retryAfter: 10m}\n");
    simulator_start("1s", NULL);
    controller_start(NULL);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    controller_stop();
    simulator_stop();
    harness_namespace_delete(ns);
    it_show_logs();
    free(ns);
    return 0;
}

int main(void)
{
    harness_require_cluster();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pause_and_resume_events),
        cmocka_unit_test(test_event_and_crash),
        cmocka_unit_test(test_event_refused_then_posted),
    };
    return cmocka_run_group_tests_name("events", tests, group_setup, group_teardown);
}
