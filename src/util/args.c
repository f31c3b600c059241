#include "util/args.h"

#include <getopt.h>
#include <string.h>

void args_getopt_reset(void)
{
    optind = 0;
    opterr = 0;
}

const char *args_element(char *const *argv, int ind, const char *arg)
{
    if (arg && ind >= 2 && arg == argv[ind - 1])
        return argv[ind - 2];
    return argv[ind - 1];
}

bool args_long_exact(const char *element, const char *name)
{
    size_t n = strlen(name);
    return strncmp(element, "--", 2) == 0 && strncmp(element + 2, name, n) == 0 &&
           (element[2 + n] == '\0' || element[2 + n] == '=');
}
