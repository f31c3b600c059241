/*
 * api: the plugin's connection to the API server — the project's own
 * client (kube/client.h) on a libuv loop, with the kubeconfig found by the
 * controller's rules (--kubeconfig, else the first file of $KUBECONFIG,
 * else in-cluster, else ~/.kube/config) and kubectl's --context and -n.
 *
 * A command is a sequence of steps, so each request here is run to its end
 * by running the loop (never by blocking it) until the answer arrives, the
 * deadline passes, or SIGINT/SIGTERM (handled on the loop) interrupts it.
 *
 * Ownership: struct cli_api is the caller's; cli_api_close() releases what
 * open made. A cli_reply owns its body and error text; cli_reply_clear()
 * frees them.
 */
#ifndef HIBERNATOR_CLI_API_H
#define HIBERNATOR_CLI_API_H

#include <cjson/cJSON.h>
#include <stdint.h>
#include <uv.h>

#include "cli/args.h"
#include "kube/client.h"
#include "kube/config.h"
#include "kube/resource.h"

extern const struct kube_resource CLI_RESOURCE_WORKSPACES;
extern const struct kube_resource CLI_RESOURCE_WORKSPACE_CLASSES;

struct cli_api {
    uv_loop_t loop;
    struct kube_config *config;
    struct kube_client *client;
    const char *ns; /* -n, else the context's namespace (points into args or config) */
    uv_signal_t sigint, sigterm;
    int interrupted;  /* signals received */
    int acknowledged; /* of those, the ones cli_api_acknowledge_interrupts() let pass */
    int open;
};

/* Loads the kubeconfig and starts the client. Returns 0, or a negative
 * errno with *ret_err (malloc'd) saying which file and field. */
int cli_api_open(struct cli_api *api, const struct cli_args *args, char **ret_err);
void cli_api_close(struct cli_api *api);

/* The loop's clock (monotonic ms), for deadlines. */
int64_t cli_api_now(struct cli_api *api);

/* Runs the loop until done(data) is true (0), the monotonic deadline passes
 * (-ETIMEDOUT; deadline 0 means none) or a signal has arrived (-EINTR). A
 * signal counts wherever the loop happened to run when it came, and keeps
 * counting (every later call returns -EINTR at once) until
 * cli_api_acknowledge_interrupts(). tick, when not NULL, is called about
 * every 250 ms meanwhile.
 * The loop runs once more after the verdict (to close the wait's timer),
 * and that turn may finish what was waited for: -EINTR and -ETIMEDOUT mean
 * done(data) was still false on return. The client frees a request once
 * its callback returns: a caller keeps the handle until its callback
 * clears it, and cancels only a handle still set. */
int cli_api_run_until(struct cli_api *api, int (*done)(void *data), void *data, int64_t deadline_ms,
                      void (*tick)(void *data));

/* The signals received so far are taken care of: later calls run again
 * (cleaning up after Ctrl-C); another signal interrupts them. */
void cli_api_acknowledge_interrupts(struct cli_api *api);

/* Runs the loop for ms (or until a signal: -EINTR). */
int cli_api_sleep(struct cli_api *api, int64_t ms);

struct cli_reply {
    int status;     /* 0, -ENOENT (404), -EEXIST (409 AlreadyExists), -EINTR, other < 0 */
    long http_code; /* 0 when none came */
    cJSON *body;    /* a 2xx answer's JSON */
    char *error;    /* what went wrong, one line; NULL on success */
};
void cli_reply_clear(struct cli_reply *r);

/* One request, run to its end; the result is also reply->status. The
 * request is the call's own until its callback (then the client frees it);
 * it is cancelled only when the wait ends without an answer (-EINTR). An
 * answer that arrives with a signal is the result, and the signal stops
 * the next wait. */
int cli_api_get(struct cli_api *api, const struct kube_resource *res, const char *ns,
                const char *name, struct cli_reply *reply);
int cli_api_list(struct cli_api *api, const struct kube_resource *res, const char *ns,
                 const struct kube_list_options *opts, struct cli_reply *reply);
/* A JSON merge patch. */
int cli_api_patch(struct cli_api *api, const struct kube_resource *res, const char *ns,
                  const char *name, const char *patch, struct cli_reply *reply);
int cli_api_create(struct cli_api *api, const struct kube_resource *res, const char *ns,
                   const cJSON *obj, struct cli_reply *reply);
/* Foreground propagation when uid is NULL; with uid, only that object. */
int cli_api_delete(struct cli_api *api, const struct kube_resource *res, const char *ns,
                   const char *name, const char *uid, struct cli_reply *reply);

/* A list of every page (limit 500 each) merged into one "items" array. */
int cli_api_list_all(struct cli_api *api, const struct kube_resource *res, const char *ns,
                     const struct kube_list_options *opts, struct cli_reply *reply);

#endif
