/*
 * node agent (hibernator-node): the part of the ContainerCheckpoint backend
 * that runs on each node, acting only for its own node's ContainerSnapshots
 * (a field selector on spec.nodeName). For each one it checks the pod,
 * asks the kubelet to checkpoint the container, pushes the archive as a
 * checkpoint image to the registry spec.repository names, reads the digest
 * back, and says so in the object's status; when the object is deleted it
 * deletes the image and the node-local archive, then removes its finalizer.
 * What to do next is snapshot_step() of the object (node/snapshot_step.h),
 * so a restarted agent goes on from the API server alone. Archives a killed
 * agent left unrecorded (a container's memory on the node's disk) are
 * swept at start and every 10 minutes (node/archive_sweep.h).
 *
 * The kubelet call and the registry transfers block: they run on libuv's
 * thread pool, the loop only starts them and writes their results.
 *
 * Ownership: options strings are copied. The registry credentials (a
 * Docker config file's text) are read once at node_agent_new() and wiped
 * at close; they never reach a log or a status.
 */
#ifndef HIBERNATOR_NODE_AGENT_H
#define HIBERNATOR_NODE_AGENT_H

#include <uv.h>

#include "kube/client.h"
#include "kube/resource.h"

extern const struct kube_resource KUBE_RESOURCE_CONTAINER_SNAPSHOTS;

struct node_agent_options {
    const char *node_name;          /* required: the node this agent acts for */
    const char *kubelet_url;        /* "https://host:port"; NULL: the Node's InternalIP and
                                       status.daemonEndpoints.kubeletEndpoint.Port */
    const char *kubelet_ca_file;    /* trust for the kubelet's serving certificate; NULL: the
                                       system's */
    const char *token_file;         /* the bearer token the kubelet is shown */
    const char *checkpoint_dir;     /* where the kubelet's checkpoints directory is seen */
    const char *registry_ca_file;   /* NULL: the system's */
    const char *registry_auth_file; /* a Docker config (dockerconfigjson); NULL: anonymous */
    long checkpoint_timeout_s;      /* the kubelet's ?timeout=; 0: its default */
};

struct node_agent;

/* Returns 0 and *ret (the caller's; node_agent_close()), -EINVAL (no node
 * name or checkpoint dir; *ret_err says which), -ENOMEM, or what reading
 * the registry credentials failed with (*ret_err names the file). */
int node_agent_new(uv_loop_t *loop, struct kube_client *client, const struct node_agent_options *o,
                   struct node_agent **ret, char **ret_err);

/* Finds the kubelet (when no URL was given) and starts watching. Returns 0
 * or a negative errno. */
int node_agent_start(struct node_agent *a);

/* Stops watching and starting work; transfers already on the thread pool
 * finish and their results are dropped. Frees a once the loop has closed
 * its handles. NULL is ignored. */
void node_agent_close(struct node_agent *a);

#endif
