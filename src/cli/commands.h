/*
 * commands: what each command of kubectl-workspace does against the
 * cluster — list, pause, resume, keep-alive, describe, report (the drill has
 * its own file). Each returns the exit code (exit.h) and writes its result
 * to out and its errors, one line each starting with "error: ", to err.
 */
#ifndef HIBERNATOR_CLI_COMMANDS_H
#define HIBERNATOR_CLI_COMMANDS_H

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>

#include "cli/api.h"
#include "cli/args.h"
#include "cli/progress.h"

int cmd_list(struct cli_api *api, const struct cli_args *a, FILE *out, FILE *err);
int cmd_pause(struct cli_api *api, const struct cli_args *a, FILE *out, FILE *err);
int cmd_resume(struct cli_api *api, const struct cli_args *a, FILE *out, FILE *err);
int cmd_keep_alive(struct cli_api *api, const struct cli_args *a, FILE *out, FILE *err);
int cmd_describe(struct cli_api *api, const struct cli_args *a, FILE *out, FILE *err);
int cmd_report(struct cli_api *api, const struct cli_args *a, FILE *out, FILE *err);
/* what-if: the activity records replayed under other policies (cli/whatif.h). */
int cmd_what_if(struct cli_api *api, const struct cli_args *a, FILE *out, FILE *err);

/* Follows ns/name after a request until goal is reached, printing progress
 * to out (one line per change; rewritten in place with the elapsed time
 * when out is a terminal). after is the request's answer. On return *p
 * holds the outcome and, when ret_ws is not NULL and it went well, *ret_ws
 * the workspace as last seen, decoded leniently (the caller frees it with
 * workspace_free()). Returns an exit code:
 * 0 done, 1 failed or deleted, 4 timed out, 130 interrupted; errors are
 * written to err prefixed by what. */
int cli_follow(struct cli_api *api, const char *ns, const char *name, enum progress_goal goal,
               const struct workspace *after, int64_t timeout_ms, const char *what, FILE *out,
               FILE *err, struct progress *p, struct workspace **ret_ws);

/* The exit code for a failed request's status (-ENOENT: 3, -EINTR: 130, else 1). */
int cli_exit_for(int status);

#endif
