/*
 * health: /healthz and /readyz for the kubelet's probes, served by
 * libmicrohttpd on its own thread so that a busy or stuck event loop cannot
 * make the probes hang, and a stuck loop is what /healthz reports.
 *
 * The loop publishes its state through struct health_state (atomics only):
 * a heartbeat every second, whether the caches have synced, and whether
 * this replica leads. The server thread only reads it.
 *
 *   /healthz  200 while the loop's heartbeat is fresh (< 10 s), else 500
 *   /readyz   200 when leading with synced caches, or standing by (stated in
 *             the body); 503 while leading and not yet synced
 *
 * Ownership: the caller owns the state and keeps it alive until
 * health_server_stop() has returned.
 */
#ifndef HIBERNATOR_SERVER_HEALTH_H
#define HIBERNATOR_SERVER_HEALTH_H

#include <stdatomic.h>
#include <stdint.h>

struct health_state {
    _Atomic int64_t heartbeat_ms; /* CLOCK_MONOTONIC ms of the loop's last beat */
    _Atomic int synced;
    _Atomic int leading;
    _Atomic int electing; /* leader election is on: not leading means standby */
};

/* Monotonic milliseconds, the clock of heartbeat_ms. */
int64_t health_now_ms(void);

struct health_server;

/* Starts serving on bind ("host:port" or ":port"; "0" disables and returns 0
 * with *ret_server NULL). Returns 0 or a negative errno with *ret_err (malloc'd)
 * saying why. */
int health_server_start(const char *bind, struct health_state *state,
                        struct health_server **ret_server, char **ret_err);

/* Stops the thread and frees the server; accepts NULL. */
void health_server_stop(struct health_server *s);

/* Parses "host:port" / ":port" into an IPv4 or IPv6 socket address.
 * Returns 0 or -EINVAL. */
struct sockaddr_storage;
int health_parse_bind(const char *bind, struct sockaddr_storage *ret_addr);

#endif
