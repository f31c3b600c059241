#include "activity/code_server.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "util/json.h"
#include "util/text.h"

#define EP_HEALTHZ "GET /healthz"

/* Bytes of an unknown status quoted in the error at most. */
#define STATUS_EXCERPT_MAX 32

/* Past 2^53 a double no longer holds every millisecond exactly. */
#define MAX_EXACT_MS 9007199254740992.0

int code_server_parse_healthz(const char *body, size_t len, struct probe_result *r)
{
    cJSON *root = NULL;
    const cJSON *heartbeat;
    const char *status;
    int alive;
    int rc;

    rc = probe_parse_json(body, len, CODE_SERVER_SOURCE, EP_HEALTHZ, r, &root);
    if (rc < 0)
        return rc;

    rc = -EBADMSG;
    if (!cJSON_IsObject(root)) {
        probe_result_fail(r, CODE_SERVER_SOURCE, "%s: expected a JSON object", EP_HEALTHZ);
        goto out;
    }

    status = json_string(root, "status");
    if (!status) {
        probe_result_fail(r, CODE_SERVER_SOURCE, "%s: status is missing or not a string",
                          EP_HEALTHZ);
        goto out;
    }
    if (strcmp(status, "alive") == 0)
        alive = 1;
    else if (strcmp(status, "expired") == 0)
        alive = 0;
    else {
        char excerpt[TEXT_EXCERPT_SIZE(STATUS_EXCERPT_MAX)];
        text_excerpt(status, strlen(status), STATUS_EXCERPT_MAX, excerpt, sizeof(excerpt));
        probe_result_fail(r, CODE_SERVER_SOURCE, "%s: unknown status \"%s\"", EP_HEALTHZ, excerpt);
        goto out;
    }

    heartbeat = json_member(root, "lastHeartbeat");
    if (!cJSON_IsNumber(heartbeat) || !isfinite(heartbeat->valuedouble) ||
        heartbeat->valuedouble < 0 || heartbeat->valuedouble > MAX_EXACT_MS ||
        heartbeat->valuedouble != floor(heartbeat->valuedouble)) {
        probe_result_fail(r, CODE_SERVER_SOURCE,
                          "%s: lastHeartbeat is missing or not a Unix time in milliseconds",
                          EP_HEALTHZ);
        goto out;
    }

    probe_result_init(r, CODE_SERVER_SOURCE);
    r->last_activity_ms = (int64_t)heartbeat->valuedouble;
    r->connections = alive;
    rc = 0;
out:
    cJSON_Delete(root);
    return rc;
}
