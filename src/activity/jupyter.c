#include "activity/jupyter.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <openssl/sha.h>

#include "util/json.h"
#include "util/timefmt.h"

#define EP_STATUS "GET /api/status"
#define EP_KERNELS "GET /api/kernels"

/* Reads obj[name] as an RFC 3339 time. Returns 0, -ENOENT (absent), or
 * -EINVAL (not a string or not a time). */
static int read_time(const cJSON *obj, const char *name, int64_t *ret_ms)
{
    const cJSON *v = json_member(obj, name);
    if (!v)
        return -ENOENT;
    if (!cJSON_IsString(v) || timefmt_parse_rfc3339(v->valuestring, ret_ms) < 0)
        return -EINVAL;
    return 0;
}

/* Reads an optional count: absent is 0; anything but a whole number in
 * 0..INT_MAX is -EINVAL. */
static int read_count(const cJSON *obj, const char *name, int *ret)
{
    const cJSON *v = json_member(obj, name);
    if (!v) {
        *ret = 0;
        return 0;
    }
    if (!cJSON_IsNumber(v))
        return -EINVAL;
    double d = v->valuedouble;
    if (!isfinite(d) || d != floor(d) || d < 0 || d > INT_MAX)
        return -EINVAL;
    *ret = (int)d;
    return 0;
}

static int fail(struct probe_result *r, const char *endpoint, const char *what)
{
    probe_result_fail(r, JUPYTER_SOURCE, "%s: %s", endpoint, what);
    return -EBADMSG;
}

int jupyter_parse_status(const char *body, size_t len, struct probe_result *r)
{
    cJSON *root = NULL;
    int64_t last = 0;
    int connections = 0;
    int rc;

    rc = probe_parse_json(body, len, JUPYTER_SOURCE, EP_STATUS, r, &root);
    if (rc < 0)
        return rc;

    if (!cJSON_IsObject(root))
        rc = fail(r, EP_STATUS, "expected a JSON object");
    else if ((rc = read_time(root, "last_activity", &last)) < 0)
        rc = fail(r, EP_STATUS,
                  rc == -ENOENT ? "last_activity is missing"
                                : "last_activity is not an RFC 3339 time string");
    else if (read_count(root, "connections", &connections) < 0)
        rc = fail(r, EP_STATUS, "connections is not a non-negative whole number");
    else {
        probe_result_init(r, JUPYTER_SOURCE);
        r->last_activity_ms = last;
        r->connections = connections;
        /* Optional: a server that does not say, or says it oddly, has no
         * start to compare. */
        int64_t started = 0;
        if (read_time(root, "started", &started) == 0)
            r->app_started_ms = started;
    }
    cJSON_Delete(root);
    return rc;
}

/* A kernel runs code, whether or not a browser is attached, while Jupyter
 * Server reports it "busy". Any other state counts through the kernel's
 * last_activity alone, as in Jupyter's own culler (jupyter_server
 * services/kernels/kernelmanager.py, cull_kernel_if_idle: only "busy" keeps
 * a kernel). "starting" in particular is no sign of work: the server sets it
 * when it starts a kernel (with last_activity, so a kernel starting now is
 * activity now) and learns the state only from the kernel's status
 * messages, so a kernel that nothing talks to stays "starting" for as long
 * as it lives. */
static int state_is_busy(const char *state)
{
    return strcmp(state, "busy") == 0;
}

uint32_t jupyter_kernel_hash(const char *id)
{
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)id, strlen(id), md);
    return (uint32_t)md[0] << 24 | (uint32_t)md[1] << 16 | (uint32_t)md[2] << 8 | md[3];
}

/* Counts kernel id in r and keeps its hash among the PROBE_KERNELS_MAX
 * smallest, ascending. */
static void kernel_note(struct probe_result *r, const char *id)
{
    uint32_t h = jupyter_kernel_hash(id);
    size_t kept = r->n_kernels < PROBE_KERNELS_MAX ? (size_t)r->n_kernels : PROBE_KERNELS_MAX;
    r->n_kernels++;
    size_t i = kept;
    while (i > 0 && r->kernels[i - 1] > h)
        i--;
    if (i >= PROBE_KERNELS_MAX)
        return;
    size_t move = kept < PROBE_KERNELS_MAX ? kept - i : PROBE_KERNELS_MAX - 1 - i;
    memmove(&r->kernels[i + 1], &r->kernels[i], move * sizeof(r->kernels[0]));
    r->kernels[i] = h;
}

int jupyter_parse_kernels(const char *body, size_t len, struct probe_result *r)
{
    cJSON *root = NULL;
    const cJSON *kernel;
    struct probe_result out;
    int index = 0;
    int rc;

    rc = probe_parse_json(body, len, JUPYTER_SOURCE, EP_KERNELS, r, &root);
    if (rc < 0)
        return rc;
    if (!cJSON_IsArray(root)) {
        rc = fail(r, EP_KERNELS, "expected a JSON array of kernels");
        goto out;
    }

    probe_result_init(&out, JUPYTER_SOURCE);
    out.n_kernels = 0;
    int known = 1;
    cJSON_ArrayForEach(kernel, root)
    {
        char what[96];
        int64_t last = 0;
        int connections = 0;
        const char *state;

        if (!cJSON_IsObject(kernel)) {
            snprintf(what, sizeof(what), "kernel %d is not an object", index);
            rc = fail(r, EP_KERNELS, what);
            goto out;
        }
        state = json_string(kernel, "execution_state");
        if (!state) {
            snprintf(what, sizeof(what), "kernel %d: execution_state is missing or not a string",
                     index);
            rc = fail(r, EP_KERNELS, what);
            goto out;
        }
        rc = read_time(kernel, "last_activity", &last);
        if (rc < 0) {
            snprintf(what, sizeof(what), "kernel %d: last_activity %s", index,
                     rc == -ENOENT ? "is missing" : "is not an RFC 3339 time string");
            rc = fail(r, EP_KERNELS, what);
            goto out;
        }
        if (read_count(kernel, "connections", &connections) < 0) {
            snprintf(what, sizeof(what),
                     "kernel %d: connections is not a non-negative whole number", index);
            rc = fail(r, EP_KERNELS, what);
            goto out;
        }

        const char *id = json_string(kernel, "id");
        if (!id)
            known = 0;
        else if (known)
            kernel_note(&out, id);

        if (state_is_busy(state))
            out.busy = 1;
        if (last > out.last_activity_ms)
            out.last_activity_ms = last;
        out.connections =
            connections > INT_MAX - out.connections ? INT_MAX : out.connections + connections;
        index++;
    }
    if (!known)
        out.n_kernels = -1;
    *r = out;
    rc = 0;
out:
    cJSON_Delete(root);
    return rc;
}
