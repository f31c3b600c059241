/*
 * health: what the kubelet's probes are told, from the state the event loop
 * publishes. server/http_server.h serves the answers on its own thread, so
 * that a busy or stuck event loop cannot make the probes hang, and a stuck
 * loop is what /healthz reports.
 *
 * The loop publishes its state through struct health_state (atomics only):
 * a heartbeat every second, whether the caches have synced, and whether
 * this replica leads. The server thread only reads it.
 *
 *   /healthz, /livez  200 while the loop's heartbeat is fresh (< 10 s), else 500
 *   /readyz           200 when leading with synced caches, or standing by
 *                     with the Lease read within its duration (stated in the
 *                     body); 503 while leading and not yet synced, or standing
 *                     by without an answer on the Lease (the API server cannot
 *                     be reached: this replica could not take over)
 */
#ifndef HIBERNATOR_SERVER_HEALTH_H
#define HIBERNATOR_SERVER_HEALTH_H

#include <stdatomic.h>
#include <stdint.h>

struct health_state {
    _Atomic int64_t heartbeat_ms; /* CLOCK_MONOTONIC ms of the loop's last beat */
    _Atomic int synced;
    _Atomic int leading;
    _Atomic int electing;   /* leader election is on: not leading means standby */
    _Atomic int lease_read; /* the API server answered on the Lease within its duration */
};

/* Monotonic milliseconds, the clock of heartbeat_ms. */
int64_t health_now_ms(void);

/* A probe's answer: the HTTP status and a one-line text. */
struct health_answer {
    unsigned code;
    char text[96];
};

/* /healthz and /livez: whether the loop still beats. */
void health_live(const struct health_state *s, struct health_answer *ret_answer);

/* /readyz: whether this replica can do its work (or stands by). */
void health_ready(const struct health_state *s, struct health_answer *ret_answer);

#endif
