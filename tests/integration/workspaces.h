/*
 * Workspace helpers for the integration tests (see workspaces.c): the
 * controller as a process under deploy/'s ServiceAccount and RBAC, and
 * Workspaces read back with kubectl. They block; tests may.
 */
#ifndef HIBERNATOR_TEST_WORKSPACES_H
#define HIBERNATOR_TEST_WORKSPACES_H

#include <cjson/cJSON.h>
#include <stdint.h>

extern char tmpdir[256]; /* this run's scratch directory (logs, kubeconfig) */
extern char *kubeconfig; /* the controller's: its ServiceAccount token */
extern char *ns;         /* the test's namespace; the test sets it */

/* Applies deploy/ (CRDs, RBAC, ServiceAccount), makes tmpdir and the
 * controller's kubeconfig. */
void it_deploy(const char *tmp_prefix);

/* The real node's registry (cluster.sh up --real-node): its host:port and
 * its one account's password, read once from the cluster's env; exits
 * when the cluster has none. */
struct it_registry {
    const char *host;
    char password[128];
};
const struct it_registry *it_registry(void);

/* The registry's HTTP code for HEAD of a manifest (reference: a tag or a
 * digest) in repository_path ("path", no host); -1 when curl did not say. */
int it_registry_head(const char *repository_path, const char *reference);
/* With IT_SHOW_LOGS set, prints the tail of each controller log. */
void it_show_logs(void);

/* Extra flags for the next controller_start() (NULL-terminated, borrowed);
 * they come after the defaults (--leader-elect=false, health probes and
 * metrics off), so a test that wants a server names its address here. */
void controller_extra_args(const char *const *args);
/* Starts the controller; failpoint: HIBERNATOR_FAILPOINT for crash tests or NULL. */
void controller_start(const char *failpoint);
/* The log of the controller started last (stderr), in tmpdir. */
const char *controller_log_path(void);
/* The port the running controller serves routes on (harness_serving_port()):
 * a test passes an address with port 0 and reads the port here. */
int controller_serving_port(const char *routes);
/* Waits for the controller to exit by itself; returns its status, -1 on timeout. */
int controller_wait_exit(uint64_t timeout_ms);
void controller_stop(void);

/* kubectl -n ns get <what> -o json, or NULL. Caller frees. */
cJSON *get_json(const char *what);
/* Dotted paths into JSON: NULL / -1 when absent. */
const char *str_at(const cJSON *o, const char *path);
double num_at(const cJSON *o, const char *path);
/* A status condition of a Workspace by type, or NULL. */
const cJSON *condition(const cJSON *ws, const char *type);
/* Waits until the workspace is in state; returns its JSON (caller frees). */
cJSON *wait_state(const char *name, const char *state, uint64_t timeout_ms);
int live_pods(const char *name);
int all_pods(const char *name);
int wait_gone(const char *name, uint64_t timeout_ms);
void apply_ws(const char *name, const char *cls, int paused, const char *extra);
void set_paused(const char *name, int paused);
void delete_ws(const char *name);

/* The workspace as JSON, or NULL. Caller frees. */
cJSON *ws_json(const char *name);
/* A field of a condition ("status", "reason", "message"); "" when absent. */
const char *cond_field(const cJSON *ws, const char *type, const char *field);
/* Waits until condition type has reason; returns the workspace (caller
 * frees); fails the test on timeout. */
cJSON *wait_reason(const char *name, const char *type, const char *reason, uint64_t timeout_ms);
/* The reasons of the workspace's events, oldest first by eventTime
 * (microseconds; creation times have only seconds), each followed by ','.
 * Caller frees. */
char *event_reasons(const char *name);

/* Applies a WorkspaceClass for the local cluster's kwok nodes (its images
 * registry.local/notebook:*, a 1Gi home, a 1 s pause grace) with extra
 * lines of spec appended (each "  key: value\n"). */
void apply_class(const char *name, const char *extra);
/* Installs the podsnapshot.gke.io CRDs (waits until they are served) and a
 * PodSnapshotStorageConfig named storage_config. */
void install_snapshot_crds(const char *storage_config);
/* Applies file (relative to the source tree) and waits until crd (its
 * name, e.g. "containersnapshots.hibernator.dev") is Established. */
void install_crd(const char *file, const char *crd);
/* Starts the snapshot simulator on ns (its log: tmpdir/simulator.log, at
 * debug level) with checkpoint_delay, and delete_delay (GKE's finalizer
 * holding a deleted PodSnapshot) unless NULL. One at a time. */
void simulator_start(const char *checkpoint_delay, const char *delete_delay);
/* Stops it, if it runs. */
void simulator_stop(void);
/* Sets the simulator's failure mode for the pods of one workspace: key is a
 * pod name, or "_default" for every pod, in ns's ConfigMap
 * snapshot-simulator (docs/simulator.md). */
void simulator_set_mode(const char *key, const char *mode);
/* A test's clean slate: deletes every Workspace in ns and waits up to
 * timeout_s seconds for them to go (a failed wait is left to the test). */
void delete_all_workspaces(int timeout_s);

#endif
