/*
 * snapshot_step: what the node agent does next for one ContainerSnapshot of
 * its node (deploy/crds/containersnapshots.yaml), decided from the object
 * and what the agent sees on the node. Everything the agent needs to go on
 * after a crash is in the object: the kubelet's archive path once
 * Checkpointed, the image once Ready.
 *
 *   Checkpointed  Ready       deleting  ->  step
 *   -             -           no        ->  check the pod, then checkpoint it
 *   True          -           no        ->  store (push the archive as an image,
 *                                           read its digest back); Ready=True
 *   True, archive gone, not Ready       ->  checkpoint again (the pod still runs:
 *                                           nothing deletes it before Ready)
 *   any           True/False  no        ->  delete the node-local archive if left
 *   any           any         yes       ->  delete the image and the archive,
 *                                           then let the object go (finalizer)
 *
 * A pod that is gone, was replaced (another uid), runs on another node or
 * whose container is not running cannot be checkpointed: Ready=False,
 * final. So is a checkpoint the kubelet refuses (CRIU's answer). A store
 * that fails is retried with backoff; the controller's timeout bounds it.
 *
 * Pure: no I/O, no allocation.
 */
#ifndef HIBERNATOR_NODE_SNAPSHOT_STEP_H
#define HIBERNATOR_NODE_SNAPSHOT_STEP_H

#define CONTAINER_SNAPSHOT_FINALIZER "hibernator.dev/checkpoint-image"

enum snapshot_cond {
    SNAPSHOT_COND_NONE, /* absent, or Unknown */
    SNAPSHOT_COND_TRUE,
    SNAPSHOT_COND_FALSE,
};

enum pod_check {
    POD_UNKNOWN,     /* not looked at yet */
    POD_RUNS,        /* the pod of spec.podUID, on this node, its container running */
    POD_GONE,        /* no pod of that name */
    POD_REPLACED,    /* a pod of that name with another uid */
    POD_OTHER_NODE,  /* on another node (or not scheduled) */
    POD_NOT_RUNNING, /* the container is not running */
};

struct snapshot_facts {
    int deleting;      /* metadata.deletionTimestamp is set */
    int has_finalizer; /* CONTAINER_SNAPSHOT_FINALIZER is on it */
    enum snapshot_cond checkpointed;
    enum snapshot_cond ready;
    int has_archive; /* status.archive is set */
    /* that file is on the node as far as the agent knows: it never stats
     * it from the loop; it is there until the agent deleted it or a
     * transfer found it missing (-1: not known: counts as 0) */
    int archive_exists;
    int has_image; /* status.image is set */
    enum pod_check pod;
    int busy; /* the agent works on it already (a call or a transfer in flight) */
};

enum snapshot_step {
    STEP_NONE,             /* nothing to do (done, or someone else's) */
    STEP_WAIT,             /* work in flight: its end looks again */
    STEP_CHECK_POD,        /* read the pod, then decide again */
    STEP_CHECKPOINT,       /* the kubelet's checkpoint of the container */
    STEP_FAIL_POD,         /* Ready=False: the pod cannot be checkpointed (facts.pod says why) */
    STEP_STORE,            /* push the archive as an image, read the digest back, Ready=True */
    STEP_DELETE_ARCHIVE,   /* the node-local archive of a finished snapshot */
    STEP_CLEANUP,          /* deleting: the image, the archive, then the finalizer */
    STEP_REMOVE_FINALIZER, /* deleting and nothing left to delete */
};

enum snapshot_step snapshot_step(const struct snapshot_facts *f);

/* "None", "Wait", "CheckPod", ...; "?" for another value. Static. */
const char *snapshot_step_name(enum snapshot_step s);

/* The Ready=False reason for a pod that cannot be checkpointed, and words
 * for it: "PodGone", "PodReplaced", "PodOnOtherNode", "ContainerNotRunning";
 * NULL for POD_UNKNOWN and POD_RUNS. Static. */
const char *pod_check_reason(enum pod_check p);
const char *pod_check_words(enum pod_check p);

#endif
