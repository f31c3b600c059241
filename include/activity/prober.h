/*
 * prober: asks each running workspace, on a schedule, whether it is in use.
 *
 * One target per workspace key ("ns/name"). Each round sends the target's
 * requests concurrently on the libuv loop (net/http_get.h over libcurl's
 * multi interface):
 *   PROBE_JUPYTER      GET <url>/api/status and GET <url>/api/kernels
 *                      ("Authorization: token <token>" when a token is set)
 *   PROBE_CODE_SERVER  GET <url>/healthz
 *   PROBE_GPU          GET <prometheus_url>/api/v1/query?query=<gpu_query>
 *                      (the query percent-encoded)
 * parses the answers (activity/jupyter.h, code_server.h, prometheus.h),
 * merges them (probe_result_merge, in the order above) and reports one
 * result per round. A request that times out, is refused, answers non-2xx
 * (a redirect included: none is followed) or sends more than PROBE_BODY_MAX
 * bytes makes the round a failure (ok == 0, error says which request and
 * why, never the token; a Jupyter 401/403 reads "unauthorized (check the
 * token)"). Prometheus answering with no samples is not a failure (no_data).
 * The token is sent to the Jupyter endpoints only; no proxy is used (see
 * net/http_get.h). Nothing here blocks and nothing here logs.
 *
 * Schedule: a new or changed target's first round comes within a second
 * (or its interval, if shorter), at a random point. The next starts a random
 * 10-100% of the interval after the first, which spreads targets created
 * together evenly over the interval; after that every interval less up to
 * 5%, so a target is never probed less often than its interval asks. A
 * round that takes longer than the interval delays the next, never doubles
 * it. timeout_ms bounds a whole round, waiting for a request slot included.
 * The schedule runs on the loop's monotonic clock; opts->now_ms only stamps
 * results, so a step of the wall clock neither stalls nor floods probing.
 *
 * At most max_in_flight requests run at once; the rest wait in one FIFO
 * queue, which is fair between targets since each has at most one round
 * (and so at most four requests) at a time.
 *
 * Ownership: prober_set() copies the target (the token is wiped when
 * replaced or removed). The key and result passed to the callback are only
 * valid during the call. The callback may call any prober function,
 * prober_close() included. prober_close() cancels everything in flight; no
 * callback follows it.
 */
#ifndef HIBERNATOR_ACTIVITY_PROBER_H
#define HIBERNATOR_ACTIVITY_PROBER_H

#include "util/must_use.h"
#include <stdint.h>
#include <uv.h>

#include "activity/probe_result.h"

enum probe_kind {
    PROBE_JUPYTER = 1u << 0,
    PROBE_CODE_SERVER = 1u << 1,
    PROBE_GPU = 1u << 2,
};

struct probe_target {
    unsigned kinds;             /* enum probe_kind bits; 0 removes the target */
    const char *url;            /* the application's base URL, template already expanded */
    const char *token;          /* Jupyter token or NULL; a secret */
    const char *prometheus_url; /* needed with PROBE_GPU */
    const char *gpu_query;      /* PromQL, already expanded; needed with PROBE_GPU */
    int64_t interval_ms;        /* > 0 */
    int64_t timeout_ms;         /* per round, > 0 */
};

struct prober_options {
    unsigned max_in_flight;        /* requests at once; default 64; more wait their turn */
    int64_t (*now_ms)(void *data); /* Unix ms for probed_at_ms; default the real clock */
    void *now_data;
};

struct prober_stats {
    uint64_t rounds;        /* rounds completed (ok or not) */
    uint64_t rounds_failed; /* rounds with ok == 0 */
    uint64_t requests;      /* HTTP requests completed */
    unsigned targets;
    unsigned in_flight; /* requests running now (not counting queued ones) */
};

/* key: the target's key; r: the merged result of one round; probed_at_ms:
 * when the round started (so an answer about "now" is never newer than
 * this). */
typedef void (*prober_result_cb)(void *data, const char *key, const struct probe_result *r,
                                 int64_t probed_at_ms);

struct prober;

/* Returns 0, -ENOMEM or -EINVAL (no callback). */
int prober_new(uv_loop_t *loop, const struct prober_options *opts, prober_result_cb cb, void *data,
               struct prober **ret_prober);

/* Cancels everything; the prober is freed once libuv has closed its handles
 * (run the loop afterwards). Accepts NULL. */
void prober_close(struct prober *p);

/* Adds or updates the target for key. An unchanged target keeps its
 * schedule; a new or changed one (a new token included) gets its first
 * round soon (within a second, jittered), and a round of the old one in
 * flight is dropped. Returns 0, -ENOMEM (the old target stays), or -EINVAL:
 * unknown kind bits, interval or timeout <= 0, an url that is missing or not
 * http(s) for Jupyter or code-server, a prometheus_url or gpu_query missing
 * for PROBE_GPU. */
MUST_USE int prober_set(struct prober *p, const char *key, const struct probe_target *t);

/* Stops probing key; a round in flight is cancelled, its result dropped. */
void prober_remove(struct prober *p, const char *key);

/* Starts a round for key now unless one is already in flight (its result
 * will do). Returns 0, or -ENOENT when key has no target. */
int prober_probe_now(struct prober *p, const char *key);

/* Copies p's counters into *ret_stats (the caller's; all 0 for a NULL p). */
void prober_get_stats(const struct prober *p, struct prober_stats *ret_stats);

#endif
