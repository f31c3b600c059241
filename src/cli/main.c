/*
 * kubectl-workspace: the kubectl plugin for hibernator Workspaces. Copied
 * onto PATH as kubectl-workspace it runs as `kubectl workspace ...`
 * (docs/kubectl-workspace.md).
 */
#include <stdio.h>
#include <stdlib.h>

#include "cli/api.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/drill.h"
#include "cli/exit.h"
#include "cli/table.h"
#include "util/clock.h"
#include "util/log.h"

int main(int argc, char **argv)
{
    struct cli_args a;
    char err[512];
    /* Progress lines reach a log or a pipe as they happen. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (cli_args_parse(argc, argv, clock_unix_ms(), &a, err, sizeof(err)) < 0) {
        fprintf(stderr, "error: %s\nSee 'kubectl workspace help'.\n", err);
        return CLI_EXIT_USAGE;
    }
    if (a.command == CLI_CMD_VERSION) {
        printf("kubectl-workspace %s\n", HIBERNATOR_VERSION);
        return CLI_EXIT_OK;
    }
    if (a.help) {
        cli_usage(stdout, a.command);
        return CLI_EXIT_OK;
    }
    if (a.command == CLI_CMD_NONE) {
        cli_usage(stderr, CLI_CMD_NONE);
        return CLI_EXIT_USAGE;
    }

    /* The client library logs only what a user must see (insecure TLS). */
    log_setup(LOG_LEVEL_WARN, LOG_FORMAT_TEXT, stderr);
    struct cli_api api;
    char *why = NULL;
    if (cli_api_open(&api, &a, &why) < 0) {
        fputs("error: ", stderr);
        text_print_clean(stderr, why ? why : "cannot reach the cluster");
        fputc('\n', stderr);
        free(why);
        return CLI_EXIT_ERROR;
    }
    int code = CLI_EXIT_ERROR;
    switch (a.command) {
    case CLI_CMD_LIST:
        code = cmd_list(&api, &a, stdout, stderr);
        break;
    case CLI_CMD_PAUSE:
        code = cmd_pause(&api, &a, stdout, stderr);
        break;
    case CLI_CMD_RESUME:
        code = cmd_resume(&api, &a, stdout, stderr);
        break;
    case CLI_CMD_KEEP_ALIVE:
        code = cmd_keep_alive(&api, &a, stdout, stderr);
        break;
    case CLI_CMD_DESCRIBE:
        code = cmd_describe(&api, &a, stdout, stderr);
        break;
    case CLI_CMD_REPORT:
        code = cmd_report(&api, &a, stdout, stderr);
        break;
    case CLI_CMD_DRILL:
        code = cmd_drill(&api, &a, stdout, stderr);
        break;
    case CLI_CMD_WHAT_IF:
        code = cmd_what_if(&api, &a, stdout, stderr);
        break;
    default:
        break;
    }
    cli_api_close(&api);
    return code;
}
