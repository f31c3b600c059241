#include <stdio.h>

#include "controller/manager.h"
#include "controller/options.h"
#include "util/log.h"

int main(int argc, char **argv)
{
    struct controller_options o;
    char err[512];
    if (controller_options_parse(argc, argv, &o, err, sizeof(err)) < 0) {
        fprintf(stderr, "hibernator: %s\n", err);
        return 2;
    }
    if (o.show_help) {
        controller_options_usage(stdout);
        return 0;
    }
    if (o.show_version) {
        printf("hibernator %s\n", HIBERNATOR_VERSION);
        return 0;
    }
    log_setup(o.log_level, o.log_format, stderr);
    return manager_run(&o);
}
