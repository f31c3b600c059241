/* A real Jupyter Server in a pod of the real node (jupyter.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "jupyter.h"
#include "workspaces.h"

char *jupyter_pod_field(const char *pod, const char *jsonpath)
{
    char *out = NULL;
    assert_int_equal(harness_kubectl(&out, "-n %s get pod %s -o jsonpath='%s'", ns, pod, jsonpath),
                     0);
    return out;
}

char *jupyter_status(const char *pod, const char *token)
{
    char *ip = jupyter_pod_field(pod, "{.status.podIP}");
    char *out = NULL;
    for (int i = 0; i < 60; i++) {
        free(out);
        out = NULL;
        if (harness_sh(&out,
                       "curl -fsS -m 5 -H 'Authorization: token %s' http://%s:8888/api/status",
                       token, ip) == 0)
            break;
        usleep(500 * 1000);
    }
    free(ip);
    assert_non_null(out);
    return out;
}

void jupyter_started_of(const char *status, char out[64])
{
    const char *p = strstr(status, "\"started\": \"");
    assert_non_null(p);
    p += strlen("\"started\": \"");
    snprintf(out, 64, "%.*s", (int)strcspn(p, "\""), p);
}

char *jupyter_run_cell(const char *pod, const char *token, const char *runtime_dir,
                       const char *kernel, const char *code)
{
    char *out = NULL;
    int st =
        harness_kubectl(&out,
                        "-n %s exec -i %s -c workspace -- python3 - http://127.0.0.1:8888 "
                        "%s %s %s '%s' < '%s/tests/tools/jupyter_run.py'",
                        ns, pod, token, runtime_dir, kernel ? kernel : "new", code, SOURCE_DIR);
    if (st != 0)
        fail_msg("cell %s in %s: exit %d: %s", code, pod, st, out ? out : "");
    return out;
}
