/*
 * Helpers shared by the integration tests. They run against the local
 * cluster that deploy/local/cluster.sh brought up; its directory is named by
 * HIBERNATOR_CLUSTER_DIR and its admin kubeconfig by HIBERNATOR_KUBECONFIG.
 *
 * Test code may block (it runs kubectl with system()); the library code it
 * exercises runs on the loop. While a test blocks, the loop does not run, so
 * the client under test sees nothing until the test runs the loop again:
 * that is how tests line up "the API server restarted while we were away".
 */
#ifndef HIBERNATOR_TEST_HARNESS_H
#define HIBERNATOR_TEST_HARNESS_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "kube/client.h"
#include <sys/types.h>

#include "kube/config.h"

/* Skips the whole program (exit 77, ctest SKIP) when no cluster is set up
 * and HIBERNATOR_REQUIRE_CLUSTER is unset; fails when it is set. */
void harness_require_cluster(void);
/* harness_require_cluster(), and a cluster with the real node
 * (HIBERNATOR_REAL_NODE, HIBERNATOR_CONTAINERD_SOCK from its env file):
 * exits 77 (skipped) without one, 1 when HIBERNATOR_REQUIRE_CLUSTER is set.
 * Returns the real node's name (the environment's; not to be freed). */
const char *harness_require_real_node(void);

const char *harness_kubeconfig(void);

/* Starts `bin --port 0`, a stand-in server that prints "port=N" on its
 * first line once it listens (tests/tools/fake_activity); stores its pid
 * and returns the port. Fails the test when it does not start. The caller
 * stops it (SIGTERM, waitpid). */
int harness_start_server(const char *bin, pid_t *ret_pid);
const char *harness_cluster_dir(void);

/* Waits until the controller's log at path says it is "serving" routes
 * ("health probes", "metrics", or "health probes and metrics") and returns
 * the port it bound (an address with port 0 lets the kernel choose, so
 * tests never race for a port); -1 when pid exits or timeout_ms passes. */
int harness_serving_port(const char *path, pid_t pid, const char *routes, uint64_t timeout_ms);

/* Runs kubectl with the admin kubeconfig; returns its exit status. When out
 * is not NULL, stdout is captured into a malloc'd string. */
int harness_kubectl(char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Runs a shell command (sh -c); returns its exit status. When out is not
 * NULL, stdout is captured into a malloc'd string. */
int harness_sh(char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Pipes the formatted manifest (YAML or JSON) into kubectl apply -f -;
 * returns kubectl's exit status. */
int harness_apply(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Runs deploy/local/cluster.sh SUBCOMMAND --dir <cluster>; returns its exit status. */
int harness_cluster(const char *subcommand);

/* Creates a namespace with a unique name starting with prefix; returns it (malloc'd). */
char *harness_namespace(const char *prefix);
/* Deletes namespace NS without waiting; NULL (a setup that failed before it
 * made one) does nothing. */
void harness_namespace_delete(const char *ns);

/* Loads a kubeconfig (the admin one when path is NULL); fails the test on error. */
struct kube_config *harness_config(const char *path);

/* A client on loop with generous limits for tests. */
struct kube_client *harness_client(uv_loop_t *loop, const struct kube_config *config);

/* Runs the loop until done() is true or timeout_ms passes; returns done(). */
int harness_run_until(uv_loop_t *loop, int (*done)(void *data), void *data, uint64_t timeout_ms);

/* Runs the loop for about ms milliseconds. */
void harness_run_for(uv_loop_t *loop, uint64_t ms);

/* Closes every handle and runs the loop until it is empty. */
void harness_loop_close(uv_loop_t *loop);

/* Milliseconds on a monotonic clock. */
uint64_t harness_now_ms(void);
/* The wall clock in ms since the epoch (harness_now_ms() is monotonic). */
int64_t harness_wall_ms(void);
/* The next whole minute at least min_ahead_s from now, as "HH:MM" (UTC)
 * in hhmm and in ms since the epoch: an owner's time for spec.preWarm. */
uint64_t harness_owner_time(int min_ahead_s, char hhmm[6]);

/* A synchronous wrapper for one request, for test set-up and checks. */
struct harness_call {
    int done;
    int status;
    long http_code;
    char reason[64];
    char message[512];
    char transport_error[512];
    cJSON *body; /* owned by the struct; harness_call_clear frees it */
};
void harness_call_cb(void *data, struct kube_response *resp);
/* Runs the loop until the call completes (fails the test after 30 s). */
void harness_call_wait(uv_loop_t *loop, struct harness_call *call);
void harness_call_clear(struct harness_call *call);

#endif
