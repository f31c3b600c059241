/*
 * drill: the release check of a WorkspaceClass, end to end on a real
 * cluster.
 *
 *   1. create a throw-away Workspace of the class (generateName "drill-",
 *      label hibernator.dev/drill=true) and wait until it runs;
 *   2. read the canary (canary.h): a value only the running process knows;
 *   3. pause and wait until Paused; resume and wait until ready and the
 *      controller knows where the session came from;
 *   4. read the canary again from the new pod;
 *   5. delete the workspace — always: after a failure, a timeout, and on
 *      Ctrl-C or SIGTERM (handled on the loop; a second one stops waiting
 *      for the deletion to finish).
 *
 * Verdict: PASS (exit 0) when the value is the same and the controller says
 * FromSnapshot; COLD START (exit 5) when the value changed or the resume
 * came from a checkpoint, a cold start or a fresh start; FAIL (exit 1) for
 * anything else; 130 when interrupted. Each is printed with the timings:
 * pause (request to Paused), snapshot, resume to ready.
 */
#ifndef HIBERNATOR_CLI_DRILL_H
#define HIBERNATOR_CLI_DRILL_H

#include <stddef.h>
#include <stdio.h>

#include "cli/api.h"
#include "cli/args.h"

enum drill_verdict {
    DRILL_PASS,
    DRILL_COLD_START,
    DRILL_FAIL,
};

/* The verdict from what was seen: the two canary values and the resume's
 * restoredFrom. Pure. */
enum drill_verdict drill_judge(const char *before, const char *after, const char *restored_from);

/* The COLD START line's words (before the timings) into out: the value
 * changed or not, and where the controller says the resume came from. A
 * changed value with FromSnapshot says so plainly: the controller reports a
 * restore, yet the process is new (a snapshot that brought no memory back,
 * as the snapshot simulator's restores in front of a real pod). Pure. */
void drill_cold_start_why(const char *before, const char *after, const char *restored_from,
                          char *out, size_t size);

int cmd_drill(struct cli_api *api, const struct cli_args *a, FILE *out, FILE *err);

#endif
