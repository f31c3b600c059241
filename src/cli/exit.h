/*
 * exit: the plugin's exit codes (docs/kubectl-workspace.md lists them).
 */
#ifndef HIBERNATOR_CLI_EXIT_H
#define HIBERNATOR_CLI_EXIT_H

enum cli_exit {
    CLI_EXIT_OK = 0,
    CLI_EXIT_ERROR = 1,         /* the API refused, a transfer failed, a drill FAILed */
    CLI_EXIT_USAGE = 2,         /* bad flags or arguments */
    CLI_EXIT_NOT_FOUND = 3,     /* the workspace (or the drill's class) does not exist */
    CLI_EXIT_TIMEOUT = 4,       /* --wait ran out of time */
    CLI_EXIT_COLD_START = 5,    /* drill: the session did not come back from the snapshot */
    CLI_EXIT_INTERRUPTED = 130, /* Ctrl-C or SIGTERM */
};

#endif
