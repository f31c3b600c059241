#include "util/strfmt.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static char *vstrfmt(const char *fmt, va_list ap)
{
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0)
        s = NULL;
    return s;
}

char *strfmt(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = vstrfmt(fmt, ap);
    va_end(ap);
    return s;
}

void strfmt_to(char **ret, const char *fmt, ...)
{
    if (!ret)
        return;
    va_list ap;
    va_start(ap, fmt);
    *ret = vstrfmt(fmt, ap);
    va_end(ap);
}
