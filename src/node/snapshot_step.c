#include "node/snapshot_step.h"

#include <stddef.h>

enum snapshot_step snapshot_step(const struct snapshot_facts *f)
{
    if (f->busy)
        return STEP_WAIT;
    int archive_left = f->has_archive && f->archive_exists > 0;
    if (f->deleting) {
        if (!f->has_finalizer)
            return STEP_NONE;
        return f->has_image || archive_left ? STEP_CLEANUP : STEP_REMOVE_FINALIZER;
    }
    if (f->ready != SNAPSHOT_COND_NONE)
        return archive_left ? STEP_DELETE_ARCHIVE : STEP_NONE;
    if (f->checkpointed == SNAPSHOT_COND_TRUE && archive_left)
        return STEP_STORE;
    /* Not checkpointed yet, or its archive is gone before it was stored. */
    switch (f->pod) {
    case POD_UNKNOWN:
        return STEP_CHECK_POD;
    case POD_RUNS:
        return STEP_CHECKPOINT;
    default:
        return STEP_FAIL_POD;
    }
}

const char *snapshot_step_name(enum snapshot_step s)
{
    switch (s) {
    case STEP_NONE:
        return "None";
    case STEP_WAIT:
        return "Wait";
    case STEP_CHECK_POD:
        return "CheckPod";
    case STEP_CHECKPOINT:
        return "Checkpoint";
    case STEP_FAIL_POD:
        return "FailPod";
    case STEP_STORE:
        return "Store";
    case STEP_DELETE_ARCHIVE:
        return "DeleteArchive";
    case STEP_CLEANUP:
        return "Cleanup";
    case STEP_REMOVE_FINALIZER:
        return "RemoveFinalizer";
    }
    return "?";
}

const char *pod_check_reason(enum pod_check p)
{
    switch (p) {
    case POD_GONE:
        return "PodGone";
    case POD_REPLACED:
        return "PodReplaced";
    case POD_OTHER_NODE:
        return "PodOnOtherNode";
    case POD_NOT_RUNNING:
        return "ContainerNotRunning";
    case POD_UNKNOWN:
    case POD_RUNS:
        break;
    }
    return NULL;
}

const char *pod_check_words(enum pod_check p)
{
    switch (p) {
    case POD_GONE:
        return "the pod is gone";
    case POD_REPLACED:
        return "the pod of that name is another one (another uid)";
    case POD_OTHER_NODE:
        return "the pod does not run on this node";
    case POD_NOT_RUNNING:
        return "the container is not running";
    case POD_UNKNOWN:
    case POD_RUNS:
        break;
    }
    return NULL;
}
