/*
 * Feeds arbitrary bytes to the kubeconfig loader: it must fail cleanly
 * (an error message, no crash, no leak) or return a config that frees.
 * File references resolve against an empty directory, so they fail too,
 * without the fuzzer reading files from the source tree.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kube/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static char empty_dir[] = "/tmp/hibernator-fuzz-kubeconfig-XXXXXX";

static void remove_empty_dir(void)
{
    rmdir(empty_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    if (!mkdtemp(empty_dir))
        abort();
    atexit(remove_empty_dir);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct kube_config *cfg = NULL;
    char *err = NULL;
    /* Once with current-context, once with a context the seeds define. */
    for (int pass = 0; pass < 2; pass++) {
        int r = kube_config_load_string((const char *)data, size, "fuzz", empty_dir,
                                        pass ? "c" : NULL, &cfg, &err);
        if (r == 0) {
            if (!cfg || !cfg->server || !cfg->namespace || err)
                abort();
            kube_config_free(cfg);
            cfg = NULL;
        } else {
            /* Every failure explains itself and names the source. */
            if (!err || strncmp(err, "fuzz", 4) != 0)
                abort();
            free(err);
            err = NULL;
        }
    }
    return 0;
}
