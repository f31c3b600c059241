/*
 * prometheus: reading GPU utilisation from a Prometheus instant query.
 *
 * The query (built by the caller) selects DCGM_FI_DEV_GPU_UTIL for the
 * pod's GPUs; the answer is
 *   {"status":"success","data":{"resultType":"vector",
 *    "result":[{"metric":{...},"value":[<unix s>,"<percent>"]}, ...]}}
 * or {"status":"error","errorType":"...","error":"..."}.
 *
 * Pure function: no I/O, no clock. The body is borrowed for the call only;
 * *r is caller-owned and overwritten entirely (source "gpu").
 */
#ifndef HIBERNATOR_ACTIVITY_PROMETHEUS_H
#define HIBERNATOR_ACTIVITY_PROMETHEUS_H

#include <stddef.h>

#include "activity/probe_result.h"

#define PROMETHEUS_SOURCE "gpu"

/* gpu_utilisation = the maximum sample over the vector, in percent.
 * Samples are strings as Prometheus writes them; "NaN" samples are skipped
 * (DCGM reports no reading that way). No usable sample (empty vector, or all
 * NaN) is a valid answer: ok, gpu_utilisation 0, no_data 1 — the pod may have
 * no GPU or the exporter has not scraped it yet; the caller decides what that
 * means. busy and last_activity_ms are left 0: what utilisation counts as
 * work is policy, not parsing.
 *
 * Returns 0, or with r->ok == 0:
 *   -EREMOTEIO  Prometheus answered "status":"error" (r->error carries its
 *               errorType and error, sanitised and bounded);
 *   -EBADMSG    bad JSON, a wrong shape, a result type other than "vector",
 *               or a sample that is not a number in 0..100 (±Inf included);
 *   -EMSGSIZE   a body over PROBE_BODY_MAX. */
int prometheus_parse_gpu_util(const char *body, size_t len, struct probe_result *r);

#endif
