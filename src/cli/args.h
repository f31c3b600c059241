/*
 * args: the command line of kubectl-workspace.
 *
 *   kubectl workspace [global flags] COMMAND [NAME] [flags]
 *
 * Flags may come before or after the command, as with kubectl, in the forms
 * "--flag value", "--flag=value", "-n value", "-n=value" and "-nvalue";
 * "--" ends the flags. Long flags are spelled in full (no "--time" for
 * "--timeout") and short flags do not combine ("-Ah" is refused). Each flag
 * is accepted only by the commands it means something to, and every error
 * names the flag or argument at fault.
 *
 * Pure: "now" is an argument (times such as "--until 2h" are resolved
 * against it), nothing is read from the environment. argv is scanned with
 * getopt_long(3), whose state is global: not reentrant (one parse at a time,
 * from one thread); each parse starts afresh and leaves argv in its order.
 *
 * Ownership: strings in struct cli_args point into argv.
 */
#ifndef HIBERNATOR_CLI_ARGS_H
#define HIBERNATOR_CLI_ARGS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum cli_command {
    CLI_CMD_NONE, /* no command given: usage */
    CLI_CMD_HELP,
    CLI_CMD_VERSION,
    CLI_CMD_LIST,
    CLI_CMD_PAUSE,
    CLI_CMD_RESUME,
    CLI_CMD_KEEP_ALIVE,
    CLI_CMD_DESCRIBE,
    CLI_CMD_REPORT,
    CLI_CMD_DRILL,
    CLI_CMD_WHAT_IF,
};

enum cli_output {
    CLI_OUTPUT_TABLE,
    CLI_OUTPUT_CSV,
    CLI_OUTPUT_JSON,
};

/* Defaults when the flag is absent. */
#define CLI_DEFAULT_WAIT_TIMEOUT_MS (30 * 60 * 1000)  /* pause/resume --wait */
#define CLI_DEFAULT_DRILL_TIMEOUT_MS (15 * 60 * 1000) /* drill, each step */
#define CLI_DEFAULT_REPORT_SPAN_MS (7LL * 24 * 3600 * 1000)

struct cli_args {
    enum cli_command command;
    int help; /* -h/--help: print the command's usage and stop */

    /* Where the cluster is (global flags). */
    const char *kubeconfig; /* NULL: $KUBECONFIG, in-cluster, ~/.kube/config */
    const char *context;    /* NULL: the current context */
    const char *ns;         /* NULL: the context's namespace */
    int all_namespaces;

    const char *name; /* the workspace (pause, resume, keep-alive, describe) */

    int wait;           /* pause, resume */
    int64_t timeout_ms; /* --wait and drill; the default when not given */

    int64_t until_ms; /* keep-alive: the deadline; 0 with until_clear */
    int until_clear;  /* keep-alive --until none */

    int64_t from_ms, to_ms; /* report range, from < to */
    enum cli_output output;

    const char *class_name; /* drill */
    const char *canary_url; /* drill: NULL for the API server's pod proxy */
    int canary_port;        /* drill: 0 for the class's port */
};

/* Parses argv[1..argc-1]. Returns 0, or -EINVAL with a message in err
 * naming the flag or argument (usage error, exit code 2). */
int cli_args_parse(int argc, char **argv, int64_t now_ms, struct cli_args *ret, char *err,
                   size_t err_size);

/* The usage of one command, or of the plugin for CLI_CMD_NONE/CLI_CMD_HELP. */
void cli_usage(FILE *out, enum cli_command command);

/* "list", "pause", ...; "" for none. */
const char *cli_command_name(enum cli_command command);

#endif
