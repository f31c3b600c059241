/*
 * Failures a user would otherwise not see, on the local cluster with the
 * controller as a process: run under a ClusterRole that is deploy/'s
 * without `delete` on pods, a pause cannot delete the pod, and the
 * Workspace says so (ActionFailed, reason DeletePod, the API server's
 * "forbidden", since when) without a status write per retry; once the verb
 * is granted the condition goes and the pause completes. And a ledger
 * forged through the status subresource is brought back within bounds, with
 * a LedgerCorrected event. And a pause whose snapshot name is taken by an
 * earlier workspace's snapshot (deleted with it, held by a finalizer) never
 * takes that snapshot for its own.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "util/timefmt.h"
#include "workspaces.h"

#define ROLE "hibernator-it-narrow"
#define ACCOUNT "hibernator-it-narrow"

static char *token; /* the narrow ServiceAccount's, to check it never shows */

/* deploy/'s ClusterRole as the API server has it, under ROLE, with or
 * without `delete` on pods. */
static void apply_role(int pods_delete)
{
    char *out = NULL;
    assert_int_equal(harness_kubectl(&out, "get clusterrole hibernator -o json"), 0);
    cJSON *have = cJSON_Parse(out);
    free(out);
    assert_non_null(have);
    cJSON *role = cJSON_CreateObject();
    cJSON_AddStringToObject(role, "apiVersion", "rbac.authorization.k8s.io/v1");
    cJSON_AddStringToObject(role, "kind", "ClusterRole");
    cJSON_AddStringToObject(cJSON_AddObjectToObject(role, "metadata"), "name", ROLE);
    cJSON *rules = cJSON_DetachItemFromObjectCaseSensitive(have, "rules");
    assert_non_null(rules);
    int found = 0;
    cJSON *rule;
    cJSON_ArrayForEach(rule, rules)
    {
        const cJSON *res =
            cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(rule, "resources"), 0);
        const cJSON *group =
            cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(rule, "apiGroups"), 0);
        if (!cJSON_IsString(res) || strcmp(res->valuestring, "pods") != 0 ||
            !cJSON_IsString(group) || group->valuestring[0])
            continue;
        found = 1;
        cJSON *verbs = cJSON_GetObjectItemCaseSensitive(rule, "verbs");
        for (int i = cJSON_GetArraySize(verbs); i-- > 0;)
            if (strcmp(cJSON_GetArrayItem(verbs, i)->valuestring, "delete") == 0)
                cJSON_DeleteItemFromArray(verbs, i);
        if (pods_delete)
            cJSON_AddItemToArray(verbs, cJSON_CreateString("delete"));
    }
    assert_true(found);
    cJSON_AddItemToObject(role, "rules", rules);
    char *text = cJSON_Print(role);
    assert_int_equal(harness_apply("%s", text), 0);
    free(text);
    cJSON_Delete(role);
    cJSON_Delete(have);
}

/* A ServiceAccount bound to ROLE, and the controller's kubeconfig for it. */
static void narrow_identity(void)
{
    assert_int_equal(harness_apply("apiVersion: v1\nkind: ServiceAccount\n"
                                   "metadata: {name: %s, namespace: hibernator-system}\n"
                                   "---\n"
                                   "apiVersion: rbac.authorization.k8s.io/v1\n"
                                   "kind: ClusterRoleBinding\n"
                                   "metadata: {name: %s}\n"
                                   "roleRef: {apiGroup: rbac.authorization.k8s.io, kind: "
                                   "ClusterRole, name: %s}\n"
                                   "subjects: [{kind: ServiceAccount, name: %s, namespace: "
                                   "hibernator-system}]\n",
                                   ACCOUNT, ROLE, ROLE, ACCOUNT),
                     0);
    char *server = NULL, *ca = NULL;
    harness_kubectl(&server,
                    "config view --raw --minify -o jsonpath={.clusters[0].cluster.server}");
    harness_kubectl(&ca, "config view --raw --minify -o "
                         "jsonpath={.clusters[0].cluster.certificate-authority-data}");
    assert_int_equal(
        harness_kubectl(&token, "-n hibernator-system create token %s --duration=2h", ACCOUNT), 0);
    token[strcspn(token, "\n")] = '\0';
    free(kubeconfig);
    assert_true(asprintf(&kubeconfig, "%s/narrow.kubeconfig", tmpdir) > 0);
    FILE *f = fopen(kubeconfig, "w");
    assert_non_null(f);
    fprintf(f,
            "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
            "clusters: [{name: l, cluster: {server: \"%s\", certificate-authority-data: %s}}]\n"
            "contexts: [{name: c, context: {cluster: l, user: u, namespace: hibernator-system}}]\n"
            "users: [{name: u, user: {token: %s}}]\n",
            server, ca, token);
    fclose(f);
    free(server);
    free(ca);
}

/* Whether the narrow identity may delete pods in ns now (RBAC changes reach
 * the authorizer within a moment). */
static int may_delete_pods(void)
{
    char *out = NULL;
    harness_kubectl(&out,
                    "auth can-i delete pods -n %s --as=system:serviceaccount:"
                    "hibernator-system:" ACCOUNT " 2>/dev/null",
                    ns);
    int yes = out && strncmp(out, "yes", 3) == 0;
    free(out);
    return yes;
}

static const char *meta_str(const cJSON *ws, const char *field)
{
    const cJSON *v =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(ws, "metadata"), field);
    return cJSON_IsString(v) ? v->valuestring : "";
}

static void test_forbidden_delete(void **state)
{
    (void)state;
    apply_role(0);
    for (int i = 0; i < 50 && may_delete_pods(); i++)
        usleep(100 * 1000);
    assert_false(may_delete_pods());

    apply_ws("nb", "it-failures", 0, NULL);
    cJSON *ws = wait_state("nb", "Running", 60000);
    assert_null(condition(ws, "ActionFailed"));
    cJSON_Delete(ws);

    set_paused("nb", 1);
    ws = wait_reason("nb", "ActionFailed", "DeletePod", 60000);
    const char *msg = cond_field(ws, "ActionFailed", "message");
    print_message("ActionFailed: %s\n", msg);
    assert_string_equal(cond_field(ws, "ActionFailed", "status"), "True");
    assert_non_null(strstr(msg, "DeletePod nb-1: "));
    assert_non_null(strstr(msg, "forbidden"));
    assert_non_null(strstr(msg, "(HTTP 403)"));
    assert_string_equal(str_at(ws, "status.message"), msg);
    /* since when: a time, not after now */
    int64_t since = 0;
    assert_int_equal(
        timefmt_parse_rfc3339(cond_field(ws, "ActionFailed", "lastTransitionTime"), &since), 0);
    /* the rest is the status as it was: still running, the pause not done */
    assert_string_equal(str_at(ws, "status.state"), "Running");
    assert_true(num_at(ws, "status.observedGeneration") < num_at(ws, "metadata.generation"));
    assert_int_equal(live_pods("nb"), 1);
    char *text = cJSON_PrintUnformatted(ws);
    assert_null(strstr(text, token)); /* no credential in the status */
    free(text);

    /* the retries (with backoff) write nothing more while the answer stays */
    char rv[64];
    snprintf(rv, sizeof(rv), "%s", meta_str(ws, "resourceVersion"));
    cJSON_Delete(ws);
    usleep(3000 * 1000);
    ws = ws_json("nb");
    assert_non_null(ws);
    assert_string_equal(meta_str(ws, "resourceVersion"), rv);
    cJSON_Delete(ws);

    /* granted: the condition goes, the pause completes */
    apply_role(1);
    ws = wait_state("nb", "Paused", 120000);
    assert_null(condition(ws, "ActionFailed"));
    assert_true(num_at(ws, "status.observedGeneration") == num_at(ws, "metadata.generation"));
    assert_true(num_at(ws, "status.accounting.pauses") == 1);
    cJSON_Delete(ws);
    assert_int_equal(live_pods("nb"), 0);
    delete_ws("nb");
}

static void test_forged_ledger(void **state)
{
    (void)state;
    apply_role(1);
    apply_ws("led", "it-failures", 1, NULL);
    cJSON_Delete(wait_state("led", "Paused", 60000));
    assert_int_equal(harness_kubectl(NULL,
                                     "-n %s patch workspace led --subresource=status "
                                     "--type=merge -p '{\"status\":{\"accounting\":{"
                                     "\"resumes\":99999999999,\"acceleratorSecondsHeld\":1e12}}}'",
                                     ns),
                     0);
    uint64_t end = harness_now_ms() + 60000;
    cJSON *ws = NULL;
    for (;;) {
        ws = ws_json("led");
        if (ws && num_at(ws, "status.accounting.resumes") < 1 &&
            num_at(ws, "status.accounting.acceleratorSecondsHeld") < 1e12)
            break;
        cJSON_Delete(ws);
        if (harness_now_ms() >= end)
            fail_msg("the forged ledger stayed");
        usleep(300 * 1000);
    }
    /* never paused, never resumed; held at most its life and a minute times
     * the schema's 16 accelerators (the class has none) */
    assert_true(num_at(ws, "status.accounting.pauses") <= 0);
    int64_t created = 0;
    assert_int_equal(timefmt_parse_rfc3339(meta_str(ws, "creationTimestamp"), &created), 0);
    double life = (double)time(NULL) - (double)created / 1000.0;
    double held = num_at(ws, "status.accounting.acceleratorSecondsHeld");
    print_message("acceleratorSecondsHeld after the correction: %.0f (%.0f s old)\n", held, life);
    assert_true(held <= 16.0 * (life + 60 + 1));
    cJSON_Delete(ws);
    char *reasons = NULL;
    for (int i = 0; i < 50; i++) {
        free(reasons);
        reasons = event_reasons("led");
        if (strstr(reasons, "LedgerCorrected"))
            break;
        usleep(200 * 1000);
    }
    assert_non_null(strstr(reasons, "LedgerCorrected"));
    free(reasons);
    delete_ws("led");
}

/* A Workspace deleted and made again under its name finds its predecessor's
 * ContainerSnapshots under the names its counters give, for as long as a
 * finalizer holds them (the node agent's, while it deletes their images).
 * Played here with a Ready one owned by a Workspace uid that is gone and a
 * finalizer of the test's: the pause's attempt fails at once with the reason
 * (no pod deleted for a stranger's snapshot, nothing recorded of it), the
 * stranger is deleted, and the retry asks under a name of its own. */
static void test_name_taken(void **state)
{
    (void)state;
    apply_role(1);
    install_crd("deploy/crds/containersnapshots.yaml", "containersnapshots.hibernator.dev");
    apply_class("it-failures-cc", "  snapshot: {backend: ContainerCheckpoint, repository: "
                                  "registry.local/ckpt, timeout: 1m, retryAfter: 20s}\n");
    /* Pods of this backend run only on nodes that can checkpoint (the
     * node agent's label): one kwok node plays such a node. */
    char *node = NULL;
    assert_int_equal(harness_kubectl(&node, "get nodes -l type=kwok -o "
                                            "jsonpath='{.items[0].metadata.name}'"),
                     0);
    assert_true(node && node[0]);
    assert_int_equal(
        harness_kubectl(NULL, "label node %s hibernator.dev/container-checkpoint=true --overwrite",
                        node),
        0);
    apply_ws("taken", "it-failures-cc", 0, NULL);
    cJSON *running = wait_state("taken", "Running", 60000);
    assert_string_equal(str_at(running, "status.nodeName"), node);
    cJSON_Delete(running);
    static const char gone_uid[] = "00000000-0000-4000-8000-000000000001";
    assert_int_equal(
        harness_apply("apiVersion: hibernator.dev/v1alpha1\nkind: ContainerSnapshot\n"
                      "metadata:\n"
                      "  name: taken-p1-1\n  namespace: %s\n"
                      "  labels: {app.kubernetes.io/managed-by: hibernator, "
                      "hibernator.dev/workspace: taken}\n"
                      "  finalizers: [it.hibernator.dev/hold]\n"
                      "  ownerReferences: [{apiVersion: hibernator.dev/v1alpha1, kind: Workspace, "
                      "name: taken, uid: %s, controller: true}]\n"
                      "spec: {nodeName: kwok-gone, podName: taken-1, podUID: %s, containerName: "
                      "workspace, repository: registry.local/ckpt/taken, tag: taken-p1-1}\n",
                      ns, gone_uid, gone_uid),
        0);
    assert_int_equal(
        harness_kubectl(
            NULL,
            "-n %s patch containersnapshot taken-p1-1 --subresource=status --type=merge -p "
            "'{\"status\":{\"image\":\"registry.local/ckpt/taken@sha256:"
            "%064d\",\"storedAt\":\"2026-01-01T00:00:00Z\",\"conditions\":[{\"type\":\"Ready\","
            "\"status\":\"True\",\"reason\":\"Stored\",\"message\":\"of an earlier workspace\","
            "\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}]}}'",
            ns, 0),
        0);

    set_paused("taken", 1);
    cJSON *ws = wait_reason("taken", "SnapshotReady", "Failed", 30000);
    const char *msg = cond_field(ws, "SnapshotReady", "message");
    print_message("SnapshotReady: %s\n", msg);
    assert_non_null(strstr(msg, "snapshot taken-p1-1 failed"));
    assert_non_null(strstr(msg, "earlier workspace of this name"));
    assert_non_null(strstr(msg, gone_uid));
    assert_true(str_at(ws, "status.snapshot.image") == NULL ||
                strstr(str_at(ws, "status.snapshot.image"), "sha256:000000") == NULL);
    cJSON_Delete(ws);
    assert_int_equal(live_pods("taken"), 1);

    /* The retry gets a name of its own; the stranger is being deleted. */
    uint64_t end = harness_now_ms() + 60000;
    while (harness_kubectl(NULL, "-n %s get containersnapshot taken-p1-2 >/dev/null 2>&1", ns) !=
           0) {
        if (harness_now_ms() >= end)
            fail_msg("no second attempt taken-p1-2");
        usleep(300 * 1000);
    }
    char *del = NULL;
    harness_kubectl(&del,
                    "-n %s get containersnapshot taken-p1-1 -o "
                    "jsonpath={.metadata.deletionTimestamp}",
                    ns);
    print_message("taken-p1-1 deletionTimestamp: %s\n", del ? del : "");
    assert_true(del && del[0]);
    free(del);
    ws = ws_json("taken");
    assert_non_null(ws);
    assert_string_equal(str_at(ws, "status.snapshot.attempt"), "taken-p1-2");
    cJSON_Delete(ws);
    assert_int_equal(live_pods("taken"), 1);

    harness_kubectl(NULL,
                    "-n %s patch containersnapshot taken-p1-1 --type=merge -p "
                    "'{\"metadata\":{\"finalizers\":null}}'",
                    ns);
    /* Nobody takes the second (no node agent here): it is let go with the
     * workspace. */
    harness_kubectl(NULL,
                    "-n %s patch containersnapshot taken-p1-2 --type=merge -p "
                    "'{\"metadata\":{\"finalizers\":null}}'",
                    ns);
    delete_ws("taken");
    harness_kubectl(NULL, "label node %s hibernator.dev/container-checkpoint-", node);
    free(node);
}

static int group_setup(void **state)
{
    (void)state;
    it_deploy("it-failures");
    apply_class("it-failures", "");
    ns = harness_namespace("it-failures");
    apply_role(0);
    narrow_identity();
    controller_start(NULL);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    controller_stop();
    /* test_name_taken's finalizers, should it have failed before it let go */
    harness_sh(NULL,
               "kubectl --kubeconfig '%s' -n %s get containersnapshots -o name 2>/dev/null | "
               "xargs -r kubectl --kubeconfig '%s' -n %s patch --type=merge -p "
               "'{\"metadata\":{\"finalizers\":null}}' >/dev/null 2>&1",
               harness_kubeconfig(), ns, harness_kubeconfig(), ns);
    harness_namespace_delete(ns);
    harness_kubectl(NULL, "delete clusterrolebinding %s --ignore-not-found", ROLE);
    harness_kubectl(NULL, "delete clusterrole %s --ignore-not-found", ROLE);
    harness_kubectl(NULL, "-n hibernator-system delete serviceaccount %s --ignore-not-found",
                    ACCOUNT);
    it_show_logs();
    free(ns);
    free(token);
    return 0;
}

int main(void)
{
    harness_require_cluster();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forbidden_delete),
        cmocka_unit_test(test_forged_ledger),
        cmocka_unit_test(test_name_taken),
    };
    return cmocka_run_group_tests_name("failures", tests, group_setup, group_teardown);
}
