/*
 * code_server: reading code-server's GET /healthz.
 *
 *   {"status": "alive" | "expired", "lastHeartbeat": <Unix ms>}
 *
 * code-server's heartbeat is driven by connected clients: "alive" means an
 * editor is attached and heartbeating, "expired" means none has been for a
 * while. Neither says work is running, so busy is never set; the idle
 * decision rests on lastHeartbeat.
 *
 * Pure function: no I/O, no clock. The body is borrowed for the call only;
 * *r is caller-owned and overwritten entirely (source "code-server").
 */
#ifndef HIBERNATOR_ACTIVITY_CODE_SERVER_H
#define HIBERNATOR_ACTIVITY_CODE_SERVER_H

#include <stddef.h>

#include "activity/probe_result.h"

#define CODE_SERVER_SOURCE "code-server"

/* last_activity_ms = lastHeartbeat (0 when code-server has never seen a
 * heartbeat); connections = 1 for "alive", 0 for "expired". Returns 0, or
 * with r->ok == 0: -EBADMSG for bad JSON, an unknown status, or a
 * lastHeartbeat that is not a whole number of ms in 0..2^53; -EMSGSIZE for a
 * body over PROBE_BODY_MAX. */
int code_server_parse_healthz(const char *body, size_t len, struct probe_result *r);

#endif
