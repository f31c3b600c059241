#include "cli/notes.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

int cli_note_add(char ***notes, size_t *n, const char *fmt, ...)
{
    char *s = NULL;
    va_list ap;
    va_start(ap, fmt);
    int len = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (len < 0)
        return -ENOMEM;
    char **grown = realloc(*notes, (*n + 1) * sizeof(*grown));
    if (!grown) {
        free(s);
        return -ENOMEM;
    }
    *notes = grown;
    grown[(*n)++] = s;
    return 0;
}

int cli_json_number(cJSON *o, const char *k, double v, double unit)
{
    if (isnan(v))
        return cJSON_AddNullToObject(o, k) != NULL;
    return cJSON_AddNumberToObject(o, k, round(v / unit) * unit) != NULL;
}
