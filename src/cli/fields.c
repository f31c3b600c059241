#include "cli/fields.h"

#include <math.h>
#include <string.h>

#include "util/json.h"
#include "util/timefmt.h"

const cJSON *fields_at(const cJSON *obj, const char *path)
{
    const cJSON *cur = obj;
    const char *p = path;
    while (cur && *p) {
        const char *dot = strchr(p, '.');
        size_t len = dot ? (size_t)(dot - p) : strlen(p);
        char name[64];
        if (len == 0 || len >= sizeof(name))
            return NULL;
        memcpy(name, p, len);
        name[len] = '\0';
        cur = json_member(cur, name);
        p += len + (dot ? 1 : 0);
    }
    return cur;
}

const char *fields_str(const cJSON *obj, const char *path)
{
    const cJSON *v = fields_at(obj, path);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

int fields_has_num(const cJSON *obj, const char *path)
{
    const cJSON *v = fields_at(obj, path);
    return cJSON_IsNumber(v) && isfinite(v->valuedouble);
}

double fields_num(const cJSON *obj, const char *path)
{
    return fields_has_num(obj, path) ? fields_at(obj, path)->valuedouble : 0;
}

int64_t fields_time(const cJSON *obj, const char *path)
{
    const char *s = fields_str(obj, path);
    int64_t ms;
    if (!s || timefmt_parse_rfc3339(s, &ms) < 0)
        return 0;
    return ms;
}
