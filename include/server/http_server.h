/*
 * http_server: the controller's HTTP endpoints, served by libmicrohttpd on
 * a thread of its own (never the event loop's):
 *
 *   /healthz, /livez, /readyz  the probes' answers (server/health.h)
 *   /metrics                   the Prometheus exposition (metrics/registry.h)
 *
 * GET and HEAD only. A server serves the routes of what it is given: health
 * probes, metrics, or both. http_servers_start() sets up the controller's
 * two addresses (--health-probe-bind-address and --metrics-bind-address):
 * a server for each, or one serving every route when both name the same
 * address; "0" turns one off. Port 0 in an address lets the kernel choose
 * one; every server logs "serving" with the address it listens on.
 *
 * Ownership: the health state and the registry are borrowed and must stay
 * alive until http_server_stop() has returned.
 */
#ifndef HIBERNATOR_SERVER_HTTP_SERVER_H
#define HIBERNATOR_SERVER_HTTP_SERVER_H

#include "metrics/registry.h"
#include "server/health.h"

struct http_server_options {
    const char *bind;                 /* "host:port", ":port" (all addresses), "[v6]:port" */
    const char *flag;                 /* where bind came from, named in errors */
    struct health_state *health;      /* serves the probes when set */
    struct metrics_registry *metrics; /* serves /metrics when set */
};

struct http_server;

/* Starts serving. Returns 0, or -EINVAL (bind is not an address) or
 * -EADDRINUSE (cannot listen) with *ret_err (malloc'd, naming the flag)
 * saying why, or -ENOMEM. */
int http_server_start(const struct http_server_options *o, struct http_server **ret_server,
                      char **ret_err);

/* The port the server listens on: the one asked for, or the kernel's
 * choice when the address asked for port 0 (also logged as "serving"). */
int http_server_port(const struct http_server *s);

/* Stops the thread and frees the server; accepts NULL. */
void http_server_stop(struct http_server *s);

/* Health probes on health_bind, metrics on metrics_bind ("0" or NULL: off).
 * ret_servers receives the servers started (NULL where none; both NULL or
 * one when the addresses are off or the same). On error nothing keeps
 * running. Errors as http_server_start(). */
int http_servers_start(const char *health_bind, struct health_state *health,
                       const char *metrics_bind, struct metrics_registry *metrics,
                       struct http_server *ret_servers[2], char **ret_err);

struct sockaddr_storage;
/* Parses "host:port", ":port" (every IPv4 address) or "[v6]:port" into
 * *ret_addr (the caller's). host is a numeric address, never a name; port is
 * 0..65535 (0: the kernel chooses). Returns 0, or -EINVAL (*ret_addr may be partly written). */
int http_parse_bind(const char *bind, struct sockaddr_storage *ret_addr);

#endif
