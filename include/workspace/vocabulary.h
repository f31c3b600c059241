/*
 * vocabulary: the words of a Workspace's status and Events that people and
 * programs read: status.state, the condition types, the condition reasons
 * and the Event reasons the controller writes.
 *
 * Contract: these words are an API. kubectl (printer columns, `kubectl wait
 * --for=condition=...`), dashboards, alerts and kubectl-workspace match them
 * as strings, so a word is never renamed or reused for another meaning; a
 * new word is added here, explained in docs/operations.md and listed in
 * docs/api.md ("Vocabulary"), which tests/unit/test_docs checks both ways.
 * The controller writes no state, condition type or reason that is not
 * listed here: decide() (src/workspace/decide*.c, idle.c) passes these
 * constants, never a string literal, and test_docs checks that too.
 *
 * Each list is an X-macro: X(ID, "Word", "what it means, in one line").
 * Code uses the constants made from it below:
 *
 *   WS_STATE_NAME_<ID>  status.state ("Paused"); the enum workspace_state
 *                       (workspace/workspace.h) is the same list as numbers
 *   WS_COND_<ID>        a condition type ("Ready")
 *   WS_REASON_<ID>      a condition reason ("PodReady")
 *   WS_EVENT_<ID>       an Event reason ("Resumed")
 *
 * The constants are static arrays of this header: no .c to link, and a
 * test walks the lists themselves (WS_STATES(X) and so on). A word can be
 * both a condition reason and an Event reason ("Paused", "CapacityTimeout",
 * the Valid reasons): it is then in both lists, with the meaning each has.
 */
#ifndef HIBERNATOR_WORKSPACE_VOCABULARY_H
#define HIBERNATOR_WORKSPACE_VOCABULARY_H

/* status.state; "" (never reconciled) is not a word of the list. */
#define WS_STATES(X)                                                                               \
    X(PENDING, "Pending", "its pod is being created, scheduled or started (not a resume)")         \
    X(RUNNING, "Running", "the pod is scheduled and is (or was, since its last start) ready")      \
    X(PAUSING, "Pausing", "paused is asked for and a pod still exists (snapshot, or stopping)")    \
    X(PAUSED, "Paused", "no pod: the accelerator is back in the pool")                             \
    X(RESUMING, "Resuming", "a resume was asked for and its pod is not ready yet")                 \
    X(WAITING_FOR_CAPACITY, "WaitingForCapacity", "the pod cannot be scheduled")                   \
    X(FAILED, "Failed", "the spec is invalid, or no capacity came in time under Fail")             \
    X(QUEUED, "Queued", "its pod waits for Kueue to admit it (the class's spec.queue)")

/* status.conditions[].type */
#define WS_CONDITIONS(X)                                                                           \
    X(VALID, "Valid", "is the spec acceptable to its class")                                       \
    X(READY, "Ready", "is the notebook usable")                                                    \
    X(AVAILABLE, "Available", "usable, and known how it came back (what `kubectl wait` waits on)") \
    X(CAPACITY_AVAILABLE, "CapacityAvailable", "could the scheduler place the pod")                \
    X(RESTORED, "Restored", "what the session came back from")                                     \
    X(HOME, "Home", "the claim that holds home (only after a loss)")                               \
    X(IDLE, "Idle", "is it idle, and when will it be paused")                                      \
    X(ACTIVITY_PROBE, "ActivityProbe", "does the activity probe answer")                           \
    X(IDLE_POLICY, "IdlePolicy", "is the workspace's own idle time accepted (with spec.idle)")     \
    X(SNAPSHOT_READY, "SnapshotReady", "the snapshot of the current pause")                        \
    X(SNAPSHOT_CLEANUP, "SnapshotCleanup", "snapshots that do not go away")                        \
    X(ACTION_FAILED, "ActionFailed", "something the controller must do keeps failing")             \
    X(PRE_WARM, "PreWarm", "is a resume ahead of the owner planned (with spec.preWarm)")

/* status.conditions[].reason, of every condition type. */
#define WS_REASONS(X)                                                                              \
    /* Valid */                                                                                    \
    X(ACCEPTED, "Accepted", "the class accepts the workspace, or spec.idle.after applies")         \
    X(CLASS_NOT_FOUND, "ClassNotFound", "spec.className names no WorkspaceClass")                  \
    X(INVALID_CLASS, "InvalidClass", "the class exists but the controller cannot use it")          \
    X(INVALID_SPEC, "InvalidSpec", "the Workspace's spec cannot be read")                          \
    X(NAME_TOO_LONG, "NameTooLong", "the Workspace's name is longer than 63 characters")           \
    X(IMAGE_NOT_ALLOWED, "ImageNotAllowed", "spec.image matches none of the class's images")       \
    X(INVALID_HOME_SIZE, "InvalidHomeSize", "spec.home.size is not a quantity")                    \
    X(HOME_TOO_LARGE, "HomeTooLarge", "spec.home.size is above the class's home.maxSize")          \
    X(RESERVED_ENV, "ReservedEnv", "an spec.env name is reserved to the controller")               \
    X(QUEUE_NOT_ALLOWED, "QueueNotAllowed", "spec.localQueue is not a queue the class allows")     \
    /* Ready */                                                                                    \
    X(POD_READY, "PodReady", "the pod is ready")                                                   \
    X(POD_PENDING, "PodPending", "the pod exists or is being created, and is not scheduled yet")   \
    X(POD_STARTING, "PodStarting", "scheduled; the image is pulled, the container starts")         \
    X(POD_NOT_READY, "PodNotReady", "a Running workspace's pod stopped being ready")               \
    X(CRASH_LOOP, "CrashLoop", "the pod crash-loops and was not restored from a snapshot")         \
    X(POD_TERMINATING, "PodTerminating", "a previous pod (or a snapshot in the way) is going")     \
    X(WAITING_FOR_CAPACITY, "WaitingForCapacity", "the pod cannot be scheduled")                   \
    X(WAITING_FOR_HOME, "WaitingForHome", "the pod waits for its home claim to be bound")          \
    X(WAITING_FOR_ADMISSION, "WaitingForAdmission",                                                \
      "the pod waits in its Kueue queue: the queue, its place, the quota that holds it")           \
    X(CAPACITY_TIMEOUT, "CapacityTimeout", "the wait for capacity passed capacityTimeout")         \
    X(AWAITING_APPLICATION, "AwaitingApplication", "restored; waiting for the app to answer")      \
    X(SNAPSHOTTING, "Snapshotting", "the pod runs on until its snapshot is Ready")                 \
    X(PAUSING, "Pausing", "the pod is being stopped")                                              \
    X(PAUSED, "Paused", "paused, no pod")                                                          \
    X(HOME_LOST, "HomeLost", "no pod starts: the home claim was lost, a person must acknowledge")  \
    /* Available (and PodReady, Paused, Restoring, FromSnapshot, FromCheckpoint, Fresh) */         \
    X(NOT_READY, "NotReady", "the pod is not ready; the message is Ready's")                       \
    /* CapacityAvailable */                                                                        \
    X(SCHEDULED, "Scheduled", "the pod is on a node")                                              \
    X(UNSCHEDULABLE, "Unschedulable", "no node fits; the message is the scheduler's")              \
    /* Restored */                                                                                 \
    X(RESTORING, "Restoring", "the pod is being restored from a snapshot")                         \
    X(FROM_SNAPSHOT, "FromSnapshot", "memory, kernel state and GPU state are back")                \
    X(COLD_START, "ColdStart", "ready without the snapshot's state; files and checkpoint remain")  \
    X(FROM_CHECKPOINT, "FromCheckpoint",                                                           \
      "started from the files and the application's checkpoint")                                   \
    X(FRESH, "Fresh", "a first start")                                                             \
    X(FRESH_HOME, "FreshHome", "started on a new, empty home after the claim was lost")            \
    X(RESTORE_CRASHED, "RestoreCrashed", "the restored pod crash-looped and was replaced")         \
    X(RESTORE_UNRESPONSIVE, "RestoreUnresponsive", "the restored app did not answer in time")      \
    X(UNWANTED_RESTORE, "UnwantedRestore", "a pod meant to start from files was restored")         \
    /* Home */                                                                                     \
    X(LOST, "Lost", "the claim that held home is gone")                                            \
    X(RECREATED, "Recreated", "a new, empty claim holds home since the loss")                      \
    /* Idle */                                                                                     \
    X(ACTIVE, "Active", "in use")                                                                  \
    X(KEEP_ALIVE, "KeepAlive", "spec.keepAliveUntil holds pauses off")                             \
    X(PRE_WARMED, "PreWarmed",                                                                     \
      "resumed ahead of its owner: held until the owner's time and grace")                         \
    X(MIN_RUNNING, "MinRunning", "recently started: no automatic pause before idle.minRunning")    \
    X(PAUSE_SCHEDULED, "PauseScheduled", "idle; the pause is announced")                           \
    X(OUTSIDE_PAUSE_WINDOW, "OutsidePauseWindow", "idle, but the class's pause windows are shut")  \
    X(AUTO_PAUSE_DISABLED, "AutoPauseDisabled", "idle, but the class has idle.autoPause false")    \
    X(NO_ACTIVITY_SOURCE, "NoActivitySource", "the class has no application probe and no GPU")     \
    X(PROBING, "Probing", "waiting for the first probe round since the start")                     \
    X(PROBE_FAILED, "ProbeFailed", "the last probe round failed; a failed probe never pauses")     \
    X(TIME_ZONE_UNAVAILABLE, "TimeZoneUnavailable",                                                \
      "a time zone (pause windows, preWarm) is not loaded")                                        \
    /* ActivityProbe; Failed also SnapshotReady */                                                 \
    X(SUCCEEDED, "Succeeded", "the last probe round answered")                                     \
    X(FAILED, "Failed", "the probe did not answer, or the backend reports the snapshot failed")    \
    /* IdlePolicy (and Accepted) */                                                                \
    X(OUT_OF_BOUNDS, "OutOfBounds", "spec.idle.after is outside the class's bounds")               \
    /* PreWarm */                                                                                  \
    X(PLANNED, "Planned", "a resume ahead of the owner is planned at status.preWarm.nextAt")       \
    X(PRE_WARMING, "PreWarming", "resumed ahead of the owner; not ready yet")                      \
    X(NOT_ALLOWED, "NotAllowed", "the class does not allow spec.preWarm")                          \
    X(SKIPPED, "Skipped", "no person used it for the class's preWarm.skipAfterDays")               \
    X(WAITING_FOR_TURN, "WaitingForTurn", "other pre-warms, or a person's resume, go first")       \
    /* SnapshotReady */                                                                            \
    X(CHECKPOINTING, "Checkpointing", "the application is asked to write its checkpoint")          \
    X(CANCELLED, "Cancelled", "unpaused, or the pod went, while the checkpoint was asked for")     \
    X(IN_PROGRESS, "InProgress", "the snapshot is being taken")                                    \
    X(STORAGE_CHANGING, "StorageChanging", "older snapshots go before one under a new storage")    \
    X(NOT_RESTORABLE, "NotRestorable", "no node can restore the paused workspace's snapshot")      \
    X(READY, "Ready", "the snapshot is ready")                                                     \
    X(TIMEOUT, "Timeout", "the snapshot was not Ready within snapshot.timeout")                    \
    X(NOT_USED, "NotUsed", "the resume did not restore the last pause's Ready snapshot")           \
    /* SnapshotCleanup */                                                                          \
    X(FINALIZER_STUCK, "FinalizerStuck", "deleted snapshots are held by the backend's finalizer")  \
    /* ActionFailed: the action (action_type_name()) */                                            \
    X(ADD_FINALIZER, "AddFinalizer", "the finalizer cannot be added")                              \
    X(REMOVE_FINALIZER, "RemoveFinalizer", "the finalizer cannot be removed")                      \
    X(CREATE_PVC, "CreatePVC", "the home claim cannot be created")                                 \
    X(DELETE_PVC, "DeletePVC", "the home claim cannot be deleted")                                 \
    X(RELEASE_PVC, "ReleasePVC", "the home claim cannot be released")                              \
    X(CREATE_POD, "CreatePod", "the pod cannot be created")                                        \
    X(DELETE_POD, "DeletePod", "the pod cannot be deleted")                                        \
    X(AUTO_PAUSE, "AutoPause", "the automatic pause cannot be written into spec.paused")           \
    X(AUTO_RESUME, "AutoResume", "the pre-warm cannot be written into spec.paused")                \
    X(SNAPSHOT_BEGIN, "SnapshotBegin", "the snapshot backend's objects cannot be created")         \
    X(SNAPSHOT_DELETE, "SnapshotDelete", "the snapshot backend's objects cannot be deleted")

/* Event.reason of the Events about a Workspace. */
#define WS_EVENTS(X)                                                                               \
    X(CREATED, "Created", "a pod with a new name is created outside a resume")                     \
    X(PAUSING, "Pausing", "a pause asked for by someone is counted")                               \
    X(IDLE_TIMEOUT, "IdleTimeout", "the controller paused the idle workspace itself")              \
    X(PREEMPTED, "Preempted", "Kueue preempted the running pod: paused while its hook holds it")   \
    X(EVICTED, "Evicted",                                                                          \
      "Kueue evicted the running pod otherwise: paused while its hook holds it")                   \
    X(PAUSED, "Paused", "the pod is gone")                                                         \
    X(RESUMING, "Resuming", "a resume is counted")                                                 \
    X(RESUMED, "Resumed", "the resumed pod is ready")                                              \
    X(IDLE_CANCELLED, "IdleCancelled", "an announced pause was taken back")                        \
    X(SNAPSHOT_READY, "SnapshotReady", "the pause's snapshot is ready")                            \
    X(CLASS_NOT_FOUND, "ClassNotFound", "the spec became invalid: no such class")                  \
    X(INVALID_CLASS, "InvalidClass", "the spec became invalid: the class cannot be used")          \
    X(INVALID_SPEC, "InvalidSpec", "the spec became invalid: it cannot be read")                   \
    X(NAME_TOO_LONG, "NameTooLong", "the spec became invalid: the name is too long")               \
    X(IMAGE_NOT_ALLOWED, "ImageNotAllowed", "the spec became invalid: the image is not allowed")   \
    X(INVALID_HOME_SIZE, "InvalidHomeSize", "the spec became invalid: home.size is no quantity")   \
    X(HOME_TOO_LARGE, "HomeTooLarge", "the spec became invalid: home.size is too large")           \
    X(RESERVED_ENV, "ReservedEnv", "the spec became invalid: a reserved env name")                 \
    X(QUEUE_NOT_ALLOWED, "QueueNotAllowed", "the spec became invalid: the queue is not allowed")   \
    X(IDLE_WARNING, "IdleWarning", "an automatic pause is announced, with its time")               \
    X(IDLE_POLICY_OUT_OF_BOUNDS, "IdlePolicyOutOfBounds", "spec.idle.after is out of bounds")      \
    X(CAPACITY_TIMEOUT, "CapacityTimeout", "the capacity timeout was crossed")                     \
    X(CAPACITY_FALLBACK, "CapacityFallback", "the pod was replaced by one for other products")     \
    X(SNAPSHOT_FAILED, "SnapshotFailed", "the pause's snapshot failed")                            \
    X(SNAPSHOT_TIMEOUT, "SnapshotTimeout", "the pause's snapshot was late")                        \
    X(CHECKPOINT_FAILED, "CheckpointFailed", "the application refused to write its checkpoint")    \
    X(CHECKPOINT_TIMEOUT, "CheckpointTimeout", "the application did not answer the checkpoint")    \
    X(SNAPSHOT_NOT_USED, "SnapshotNotUsed", "a resume starts from files though it was paused")     \
    X(SNAPSHOT_NOT_RESTORABLE, "SnapshotNotRestorable", "no node can restore a paused snapshot")   \
    X(COLD_START, "ColdStart", "the restored pod came up without the snapshot's state")            \
    X(RESTORE_CRASH_LOOP, "RestoreCrashLoop", "the restored pod crash-loops; it is replaced")      \
    X(RESTORE_UNRESPONSIVE, "RestoreUnresponsive", "the restored app did not answer; replaced")    \
    X(UNWANTED_RESTORE, "UnwantedRestore", "a pod meant to start from files was restored")         \
    X(CRASH_LOOP, "CrashLoop", "a pod that was not restored crash-loops")                          \
    X(SNAPSHOT_STUCK, "SnapshotStuck", "snapshots are stuck in the backend's finalizer")           \
    X(SNAPSHOT_STORAGE_CHANGED, "SnapshotStorageChanged",                                          \
      "a snapshot under a new storage, older ones stuck")                                          \
    X(POD_STOPPED, "PodStopped", "a pod the status does not name stopped for good")                \
    X(POD_INTERRUPTED, "PodInterrupted", "the pod ended without the controller asking")            \
    X(HOME_LOST, "HomeLost", "the claim that held home is gone")                                   \
    X(HOME_LOSS_ACKNOWLEDGED, "HomeLossAcknowledged", "a person acknowledged the loss of home")    \
    X(LEDGER_CORRECTED, "LedgerCorrected", "the ledger in the status was out of bounds")           \
    X(DUPLICATE_POD, "DuplicatePod", "more than one live pod was found; all but one are deleted")  \
    X(PRE_WARM_NOT_ALLOWED, "PreWarmNotAllowed",                                                   \
      "spec.preWarm asks what the class does not allow")                                           \
    X(PRE_WARM_SKIPPED, "PreWarmSkipped", "pre-warms stop: nobody used the workspace for days")    \
    X(PRE_WARM_YIELDED, "PreWarmYielded", "a pre-warm waiting for capacity gave way to a person")

/* The constants. */
#define WS_VOCAB_STATE_(id, word, meaning)                                                         \
    static const char WS_STATE_NAME_##id[] __attribute__((unused)) = word;
#define WS_VOCAB_COND_(id, word, meaning)                                                          \
    static const char WS_COND_##id[] __attribute__((unused)) = word;
#define WS_VOCAB_REASON_(id, word, meaning)                                                        \
    static const char WS_REASON_##id[] __attribute__((unused)) = word;
#define WS_VOCAB_EVENT_(id, word, meaning)                                                         \
    static const char WS_EVENT_##id[] __attribute__((unused)) = word;
WS_STATES(WS_VOCAB_STATE_)
WS_CONDITIONS(WS_VOCAB_COND_)
WS_REASONS(WS_VOCAB_REASON_)
WS_EVENTS(WS_VOCAB_EVENT_)
#undef WS_VOCAB_STATE_
#undef WS_VOCAB_COND_
#undef WS_VOCAB_REASON_
#undef WS_VOCAB_EVENT_

#endif
