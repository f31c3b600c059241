/*
 * canary: reads a value that lives only in a workspace's running process —
 * the drill's proof that a resume brought the memory back.
 *
 * By default: GET /api/v1/namespaces/NS/pods/POD:PORT/proxy/canary through
 * the API server, with the project's API client (kube_get_path(): the
 * kubeconfig's TLS settings and credential, as for every other call). With a URL template instead
 * ({pod}, {uid}, {namespace}, {workspace} filled in, percent-encoded): a
 * plain GET through net/http_get.h, which never carries the cluster's
 * credentials to that address.
 *
 * The value is the answer's body with surrounding white space removed, at
 * most CANARY_MAX_BODY bytes; anything but a 2xx answer is an error.
 *
 * Ownership: canary_new() borrows the api (and its config), which must
 * outlive the canary; canary_free() before cli_api_close().
 */
#ifndef HIBERNATOR_CLI_CANARY_H
#define HIBERNATOR_CLI_CANARY_H

#include "cli/api.h"

#define CANARY_MAX_BODY (64 * 1024)
#define CANARY_TIMEOUT_MS 15000

struct canary;

struct canary_target {
    const char *ns;
    const char *workspace;
    const char *pod;
    const char *uid;
    int port; /* the pod's port, for the proxy path */
};

/* url_template NULL: the API server's pod proxy. Returns 0 or -ENOMEM. */
int canary_new(struct cli_api *api, const char *url_template, struct canary **ret);

/* The URL a template gives for a target (malloc'd), or NULL when out of memory. */
char *canary_url(const char *url_template, const struct canary_target *t);

/* Reads the value. Returns 0 with *ret_value, or a negative errno (-EINTR on
 * a signal) with *ret_err; both malloc'd, the caller frees. */
int canary_read(struct canary *c, const struct canary_target *t, char **ret_value, char **ret_err);

void canary_free(struct canary *c);

/* How much of a failed answer's body an error quotes. */
#define CANARY_ERROR_BODY 200

/* The error for an answer that is not 2xx: "HTTP 503: " and the body's first
 * CANARY_ERROR_BODY bytes (up to a NUL) on one line, control characters as
 * spaces. Malloc'd, the caller frees; NULL when out of memory. */
char *canary_http_error(long http_code, const char *body);

#endif
