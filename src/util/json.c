#include "util/json.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/timefmt.h"

const cJSON *json_member(const cJSON *obj, const char *name)
{
    return cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, name) : NULL;
}

const char *json_string(const cJSON *obj, const char *name)
{
    const cJSON *v = json_member(obj, name);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

int64_t json_int(const cJSON *obj, const char *name)
{
    const cJSON *v = json_member(obj, name);
    if (!cJSON_IsNumber(v))
        return 0;
    double d = v->valuedouble;
    if (!isfinite(d) || d != floor(d) || d > 9007199254740992.0 || d < -9007199254740992.0)
        return 0;
    return (int64_t)d;
}

double json_double(const cJSON *obj, const char *name)
{
    const cJSON *v = json_member(obj, name);
    return cJSON_IsNumber(v) && isfinite(v->valuedouble) ? v->valuedouble : 0;
}

int64_t json_time_ms(const cJSON *obj, const char *name)
{
    const char *s = json_string(obj, name);
    int64_t ms;
    if (!s || timefmt_parse_rfc3339(s, &ms) < 0)
        return 0;
    return ms;
}

const char *json_controller_uid(const cJSON *meta)
{
    const cJSON *ref;
    const cJSON *refs = json_member(meta, "ownerReferences");
    if (!cJSON_IsArray(refs))
        return NULL;
    cJSON_ArrayForEach(ref, refs)
    {
        if (cJSON_IsTrue(json_member(ref, "controller")))
            return json_string(ref, "uid");
    }
    return NULL;
}

int json_dup_optional(const char *s, char **ret)
{
    if (!s) {
        *ret = NULL;
        return 0;
    }
    *ret = strdup(s);
    return *ret ? 0 : -ENOMEM;
}
