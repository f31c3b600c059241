/*
 * jupyter: reading Jupyter Server's activity endpoints.
 *
 *   GET /api/status  -> {"started", "last_activity", "kernels", "connections"}
 *   GET /api/kernels -> [{"id", "name", "last_activity", "execution_state",
 *                         "connections"}, ...]
 *
 * Reading /api/status does not itself count as activity on the server, so
 * polling it does not keep a workspace awake. Parse the two responses into
 * separate results and combine them with probe_result_merge().
 *
 * Pure functions: no I/O, no clock. The body is borrowed for the call only;
 * *r is caller-owned and overwritten entirely (source "jupyter").
 * Return 0, or a negative errno with r->ok == 0 and r->error saying which
 * endpoint and what was wrong (quoting at most PROBE_EXCERPT_MAX sanitised
 * bytes of the body): -EBADMSG for bad JSON or a wrong shape, -EMSGSIZE for a
 * body over PROBE_BODY_MAX.
 */
#ifndef HIBERNATOR_ACTIVITY_JUPYTER_H
#define HIBERNATOR_ACTIVITY_JUPYTER_H

#include <stddef.h>

#include "activity/probe_result.h"

#define JUPYTER_SOURCE "jupyter"

/* last_activity (required, RFC 3339) and connections (optional, >= 0).
 * Never sets busy: the status says nothing about running code. */
int jupyter_parse_status(const char *body, size_t len, struct probe_result *r);

/* busy when any kernel is "busy" (work is in flight even with no browser
 * attached); other states ("idle", "starting", "dead", or ones this code
 * does not know) are not busy. last_activity_ms is the latest kernel's
 * (required on each kernel); connections the sum; the kernels listed by
 * their ids' hashes (jupyter_kernel_hash(); n_kernels -1 when one has no
 * id). An empty list is a valid answer: not busy, activity unknown, no
 * kernels. */
int jupyter_parse_kernels(const char *body, size_t len, struct probe_result *r);

/* The first 32 bits of SHA-256 of a kernel's id, as probe_result.kernels
 * and status.snapshot.appKernels keep it. */
uint32_t jupyter_kernel_hash(const char *id);

#endif
