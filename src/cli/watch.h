/*
 * watch: following one Workspace as it changes — a GET, then a watch from
 * its resourceVersion (fieldSelector metadata.name=NAME), re-watched when the
 * server ends it, re-read after an error or 410 Gone, until the caller has
 * seen what it waits for, the deadline passes, a signal arrives, or the
 * workspace is deleted. A loaded machine makes watches slow, not wrong:
 * errors are retried every second until the deadline.
 *
 * Ownership: the workspace passed to on_change belongs to the watch and is
 * valid during the call only.
 */
#ifndef HIBERNATOR_CLI_WATCH_H
#define HIBERNATOR_CLI_WATCH_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "cli/api.h"

/* Return nonzero to stop following. */
typedef int (*watch_change_cb)(void *data, const cJSON *ws);

/* Follows ns/name until on_change returns nonzero (0), the monotonic
 * deadline passes (-ETIMEDOUT), a signal (-EINTR), the workspace is gone
 * (-ENOENT) or memory runs out (-ENOMEM). tick (may be NULL) is called about
 * every 250 ms. On an error *ret_err (may be NULL) gets a malloc'd line
 * about the last failure seen, if any. */
int watch_workspace(struct cli_api *api, const char *ns, const char *name, int64_t deadline_ms,
                    watch_change_cb on_change, void (*tick)(void *data), void *data,
                    char **ret_err);

#endif
