/* The ContainerCheckpoint backend's pure parts: the repository of a
 * workspace's images (cut and hashed where it would be too long) and the
 * ContainerSnapshot an attempt creates. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "snapshot/container_checkpoint.h"

static struct workspace_class *cc_class(const char *repository)
{
    char json[1024];
    snprintf(json, sizeof(json),
             "{\"metadata\":{\"name\":\"cc\"},\"spec\":{\"images\":{\"allowed\":[\"img:*\"],"
             "\"default\":\"img:1\"},\"port\":8888,\"home\":{\"size\":\"1Gi\"},"
             "\"snapshot\":{\"backend\":\"ContainerCheckpoint\",\"repository\":\"%s\"}}}",
             repository);
    cJSON *obj = cJSON_Parse(json);
    struct workspace_class *c = NULL;
    char *err = NULL;
    if (workspace_class_decode(obj, &c, &err) < 0)
        fail_msg("class: %s", err ? err : "?");
    cJSON_Delete(obj);
    return c;
}

static void test_repository(void **state)
{
    (void)state;
    struct workspace_class *c = cc_class("registry.example:5000/checkpoints");
    char *r = container_checkpoint_repository(c, "team-a", "nb");
    assert_string_equal(r, "registry.example:5000/checkpoints/team-a/nb");
    free(r);
    /* A workspace name of 253 characters: cut, a hash after it, at most 255
     * in all, still a valid path component; two such names stay apart. */
    char longname[254], other[254];
    memset(longname, 'a', 253);
    longname[253] = '\0';
    memcpy(other, longname, sizeof(other));
    other[252] = 'b';
    longname[200] = '-'; /* a cut that would end on '-' steps back */
    char *a = container_checkpoint_repository(c, "team-a", longname);
    char *b = container_checkpoint_repository(c, "team-a", other);
    assert_non_null(a);
    assert_non_null(b);
    assert_true(strlen(a) <= 255);
    assert_true(strlen(b) <= 255);
    assert_string_not_equal(a, b);
    const char *last = strrchr(a, '/') + 1;
    assert_true(last[0] == 'a');
    const char *dash = strrchr(last, '-');
    assert_int_equal(strlen(dash + 1), 8);
    assert_true(dash[-1] != '-' && dash[-1] != '.');
    free(a);
    free(b);
    assert_null(container_checkpoint_repository(NULL, "team-a", "nb"));
    workspace_class_free(c);
}

static void test_begin_bodies(void **state)
{
    (void)state;
    struct workspace_class *c = cc_class("r.example/ck");
    cJSON *obj = cJSON_Parse("{\"metadata\":{\"name\":\"nb\",\"namespace\":\"team\","
                             "\"uid\":\"w-uid\"},\"spec\":{\"className\":\"cc\"}}");
    struct workspace *ws = NULL;
    assert_int_equal(workspace_decode(obj, &ws, NULL), 0);
    cJSON_Delete(obj);
    struct workspace_pod pod = {.name = "nb-3", .uid = "p-uid", .node_name = "node-a"};
    cJSON *bodies = container_checkpoint_begin_bodies(ws, c, "nb-p2-1", &pod);
    assert_non_null(bodies);
    cJSON *cs = cJSON_GetObjectItem(bodies, "containerSnapshot");
    char *text = cJSON_PrintUnformatted(cs);
    assert_string_equal(
        text,
        "{\"metadata\":{\"labels\":{\"app.kubernetes.io/managed-by\":\"hibernator\","
        "\"hibernator.dev/workspace\":\"nb\"},\"finalizers\":[\"hibernator.dev/checkpoint-image\"],"
        "\"ownerReferences\":[{\"apiVersion\":\"hibernator.dev/v1alpha1\",\"kind\":\"Workspace\","
        "\"name\":\"nb\",\"uid\":\"w-uid\",\"controller\":true}],\"name\":\"nb-p2-1\","
        "\"namespace\":\"team\"},\"spec\":{\"nodeName\":\"node-a\",\"podName\":\"nb-3\","
        "\"podUID\":\"p-uid\",\"containerName\":\"workspace\",\"repository\":"
        "\"r.example/ck/team/nb\",\"tag\":\"nb-p2-1\"},\"apiVersion\":\"hibernator.dev/v1alpha1\","
        "\"kind\":\"ContainerSnapshot\"}");
    free(text);
    cJSON_Delete(bodies);
    /* What it needs missing: nothing is built. */
    struct workspace_pod unscheduled = {.name = "nb-3", .uid = "p-uid"};
    assert_null(container_checkpoint_begin_bodies(ws, c, "nb-p2-1", &unscheduled));
    assert_null(container_checkpoint_begin_bodies(ws, c, "nb-p2-1", NULL));
    assert_null(container_checkpoint_begin_bodies(ws, c, "", &pod));
    workspace_free(ws);
    workspace_class_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_repository),
        cmocka_unit_test(test_begin_bodies),
    };
    return cmocka_run_group_tests_name("container checkpoint backend", tests, NULL, NULL);
}
