/*
 * queue_positions_parse: Kueue's visibility answer (a PendingWorkloadsSummary
 * of a LocalQueue, as Kueue v0.17.0's visibility server wrote it on the local
 * cluster) read into the places of the pods that own the Workloads, counted
 * from 1; items that are no pod's, or have no place, left out; anything but
 * such an answer refused.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "controller/queue_positions.h"

static const char answer[] =
    "{\"kind\":\"PendingWorkloadsSummary\",\"apiVersion\":\"visibility.kueue.x-k8s.io/v1beta2\","
    "\"metadata\":{},\"items\":["
    "{\"metadata\":{\"name\":\"pod-p2-2e984\",\"namespace\":\"team-a\",\"ownerReferences\":["
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"name\":\"p2\",\"uid\":\"u-2\"}]},"
    "\"priority\":0,\"localQueueName\":\"gpus\",\"positionInClusterQueue\":3,"
    "\"positionInLocalQueue\":0},"
    "{\"metadata\":{\"name\":\"job-x\",\"namespace\":\"team-a\",\"ownerReferences\":["
    "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"name\":\"x\",\"uid\":\"u-x\"}]},"
    "\"positionInLocalQueue\":1},"
    "{\"metadata\":{\"name\":\"pod-p3-1a2b3\",\"namespace\":\"team-a\",\"ownerReferences\":["
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"name\":\"p3\",\"uid\":\"u-3\"}]},"
    "\"positionInLocalQueue\":2},"
    "{\"metadata\":{\"name\":\"pod-p4\",\"ownerReferences\":["
    "{\"kind\":\"Pod\",\"name\":\"p4\",\"uid\":\"u-4\"}]}}]}";

static void test_parse(void **state)
{
    (void)state;
    cJSON *body = cJSON_Parse(answer);
    assert_non_null(body);
    struct queue_position pos[8];
    size_t n = 0;
    assert_int_equal(queue_positions_parse(body, pos, 8, &n), 0);
    assert_int_equal(n, 2);
    assert_string_equal(pos[0].pod_uid, "u-2");
    assert_string_equal(pos[0].pod_name, "p2");
    assert_int_equal(pos[0].position, 1);
    /* the Job's Workload keeps its place: the pod after it is third */
    assert_string_equal(pos[1].pod_uid, "u-3");
    assert_int_equal(pos[1].position, 3);
    /* at most max */
    assert_int_equal(queue_positions_parse(body, pos, 1, &n), 0);
    assert_int_equal(n, 1);
    cJSON_Delete(body);
}

static void test_refused(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "{}",
        "{\"kind\":\"Status\",\"status\":\"Failure\"}",
        "{\"kind\":\"PendingWorkloadsSummary\",\"items\":{}}",
        "[]",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cJSON *body = cJSON_Parse(bad[i]);
        struct queue_position pos[2];
        size_t n = 0;
        assert_int_equal(queue_positions_parse(body, pos, 2, &n), -EINVAL);
        cJSON_Delete(body);
    }
    /* none pending */
    cJSON *body = cJSON_Parse("{\"kind\":\"PendingWorkloadsSummary\",\"items\":[]}");
    struct queue_position pos[2];
    size_t n = 7;
    assert_int_equal(queue_positions_parse(body, pos, 2, &n), 0);
    assert_int_equal(n, 0);
    cJSON_Delete(body);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
