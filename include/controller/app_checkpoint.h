/*
 * app_checkpoint: asking workspaces' applications to write their
 * checkpoint before a snapshot of their memory (docs/snapshots.md, "The
 * application's checkpoint").
 *
 * One HTTP request per workspace and snapshot attempt, on the loop through
 * its own curl_loop (never blocking), bounded in time (the class's
 * checkpoint.request.timeout) and in the answer it reads (APP_CHECKPOINT_MAX_BODY
 * bytes, of which the first line of a refusal becomes the message). What
 * became of the request is kept per workspace key, for decide() to read
 * (app_checkpoints_seen()) and record in the status; the answer also calls
 * the changed callback so the key is decided again.
 *
 * Ownership: the tracker copies every string it is given; what
 * app_checkpoints_seen() returns belongs to the tracker and is valid until
 * the next call for that key (ask, forget) or close. Secrets: none are sent
 * or kept.
 */
#ifndef HIBERNATOR_CONTROLLER_APP_CHECKPOINT_H
#define HIBERNATOR_CONTROLLER_APP_CHECKPOINT_H

#include "util/must_use.h"
#include <stdint.h>
#include <uv.h>

#include "workspace/decide.h"

#define APP_CHECKPOINT_MAX_BODY 4096

struct app_checkpoints;

typedef void (*app_checkpoint_changed_cb)(void *data, const char *key);

struct app_checkpoint_call {
    const char *key;     /* "ns/workspace" */
    const char *attempt; /* the snapshot attempt's handle */
    const char *method;  /* "POST" or "PUT" */
    const char *url;     /* the expanded template */
    int64_t timeout_ms;  /* > 0 */
};

/* now_ms: the wall clock for answer times (NULL: the real one). Returns 0
 * or -ENOMEM. */
int app_checkpoints_new(uv_loop_t *loop, int64_t (*now_ms)(void *), void *now_data,
                        app_checkpoint_changed_cb cb, void *data, struct app_checkpoints **ret);

/* Starts the request unless one for the same key and attempt is in flight
 * or answered (a repeated ask is harmless). A request of the key for
 * another attempt is cancelled. Returns 0, -EINVAL (a bad URL) or -ENOMEM. */
MUST_USE int app_checkpoints_ask(struct app_checkpoints *c, const struct app_checkpoint_call *call);

/* A request the application could not be asked at all (no pod IP, the URL
 * template wrong): recorded as answered, not written, with why. */
int app_checkpoints_refuse(struct app_checkpoints *c, const char *key, const char *attempt,
                           const char *why);

/* What is known of key's request, NULL: none. */
const struct app_checkpoint_seen *app_checkpoints_seen(struct app_checkpoints *c, const char *key);

/* The workspace is gone: its request is cancelled and forgotten. */
void app_checkpoints_forget(struct app_checkpoints *c, const char *key);

/* Cancels everything (no callback follows). Accepts NULL. Run the loop
 * afterwards so the curl_loop can close its handles. */
void app_checkpoints_close(struct app_checkpoints *c);

#endif
