#include "controller/writes.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/timefmt.h"
#include "workspace/pod.h"

int writes_status_object(const char *name, const char *ns, const char *rv,
                         const struct workspace_status *st, cJSON **ret_obj)
{
    if (!rv || !rv[0])
        return -EINVAL;
    cJSON *obj = cJSON_CreateObject();
    cJSON *meta = cJSON_AddObjectToObject(obj, "metadata");
    cJSON *status = workspace_status_to_json(st);
    int ok = meta && status && cJSON_AddStringToObject(obj, "apiVersion", WORKSPACE_API_VERSION) &&
             cJSON_AddStringToObject(obj, "kind", "Workspace") &&
             cJSON_AddStringToObject(meta, "name", name) &&
             cJSON_AddStringToObject(meta, "namespace", ns) &&
             cJSON_AddStringToObject(meta, "resourceVersion", rv) &&
             cJSON_AddItemToObject(obj, "status", status);
    if (!ok) {
        if (!cJSON_GetObjectItemCaseSensitive(obj, "status"))
            cJSON_Delete(status);
        cJSON_Delete(obj);
        return -ENOMEM;
    }
    *ret_obj = obj;
    return 0;
}

/* Appends a copy of s to list; 0 or -ENOMEM. */
static int add_string(cJSON *list, const char *s)
{
    cJSON *item = cJSON_CreateString(s);
    if (!item || !cJSON_AddItemToArray(list, item)) {
        cJSON_Delete(item);
        return -ENOMEM;
    }
    return 0;
}

int writes_finalizer_patch(const cJSON *meta, int add, char **ret_text)
{
    const cJSON *rv = cJSON_GetObjectItemCaseSensitive(meta, "resourceVersion");
    if (!cJSON_IsString(rv) || !rv->valuestring[0])
        return -EINVAL;
    cJSON *patch = cJSON_CreateObject();
    cJSON *pmeta = cJSON_AddObjectToObject(patch, "metadata");
    cJSON *list = cJSON_AddArrayToObject(pmeta, "finalizers");
    int e =
        list && cJSON_AddStringToObject(pmeta, "resourceVersion", rv->valuestring) ? 0 : -ENOMEM;
    const cJSON *f;
    int have = 0;
    cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(meta, "finalizers"))
    {
        if (e < 0)
            break;
        if (!cJSON_IsString(f))
            continue;
        if (strcmp(f->valuestring, WORKSPACE_FINALIZER) == 0) {
            have = 1;
            if (!add)
                continue;
        }
        e = add_string(list, f->valuestring);
    }
    if (e == 0 && add && !have)
        e = add_string(list, WORKSPACE_FINALIZER);
    char *text = e == 0 ? cJSON_PrintUnformatted(patch) : NULL;
    cJSON_Delete(patch);
    if (!text)
        return -ENOMEM;
    *ret_text = text;
    return 0;
}

/* spec.paused with two annotations (and a third, k3, when given: v3, or
 * removed when v3 is NULL), on resourceVersion rv, in one merge patch.
 * Returns 0 and *ret_text or -ENOMEM. */
static int paused_patch(const char *rv, int paused, const char *k1, const char *v1, const char *k2,
                        const char *v2, const char *k3, const char *v3, char **ret_text)
{
    cJSON *patch = cJSON_CreateObject();
    cJSON *meta = cJSON_AddObjectToObject(patch, "metadata");
    cJSON *ann = cJSON_AddObjectToObject(meta, "annotations");
    cJSON *spec = cJSON_AddObjectToObject(patch, "spec");
    char *text = NULL;
    if (ann && spec && cJSON_AddStringToObject(meta, "resourceVersion", rv) &&
        cJSON_AddStringToObject(ann, k1, v1) && cJSON_AddStringToObject(ann, k2, v2) &&
        cJSON_AddBoolToObject(spec, "paused", paused) &&
        (!k3 || (v3 ? cJSON_AddStringToObject(ann, k3, v3) : cJSON_AddNullToObject(ann, k3))))
        text = cJSON_PrintUnformatted(patch);
    cJSON_Delete(patch);
    if (!text)
        return -ENOMEM;
    *ret_text = text;
    return 0;
}

int writes_auto_resume_patch(const char *rv, int64_t at_ms, int64_t for_ms, char **ret_text)
{
    if (!rv || !rv[0])
        return -EINVAL;
    char at[TIMEFMT_RFC3339_MICRO_SIZE], owner[TIMEFMT_RFC3339_MICRO_SIZE];
    int e = timefmt_format_rfc3339_micro(at_ms, at, sizeof(at));
    if (e == 0)
        e = timefmt_format_rfc3339_micro(for_ms, owner, sizeof(owner));
    if (e < 0)
        return e;
    return paused_patch(rv, 0, PREWARMED_AT_ANNOTATION, at, PREWARM_FOR_ANNOTATION, owner, NULL,
                        NULL, ret_text);
}

int writes_auto_pause_patch(const char *rv, int64_t at_ms, const char *reason, const char *cause,
                            char **ret_text)
{
    if (!rv || !rv[0])
        return -EINVAL;
    /* To the millisecond: the decision's own time, compared with the
     * announced pauseAt, which has the same precision. */
    char at[TIMEFMT_RFC3339_MICRO_SIZE];
    int e = timefmt_format_rfc3339_micro(at_ms, at, sizeof(at));
    if (e < 0)
        return e;
    return paused_patch(rv, 1, AUTO_PAUSED_AT_ANNOTATION, at, AUTO_PAUSE_REASON_ANNOTATION,
                        reason ? reason : "idle", AUTO_PAUSE_CAUSE_ANNOTATION,
                        workspace_auto_pause_cause(cause), ret_text);
}

int writes_priority_label_patch(const char *priority_class, const char *uid, char **ret_text)
{
    if (!priority_class || !priority_class[0])
        return -EINVAL;
    cJSON *patch = cJSON_CreateObject();
    cJSON *meta = cJSON_AddObjectToObject(patch, "metadata");
    cJSON *labels = cJSON_AddObjectToObject(meta, "labels");
    char *text = NULL;
    if (labels && cJSON_AddStringToObject(labels, QUEUE_PRIORITY_LABEL, priority_class) &&
        (!uid || cJSON_AddStringToObject(meta, "uid", uid)))
        text = cJSON_PrintUnformatted(patch);
    cJSON_Delete(patch);
    if (!text)
        return -ENOMEM;
    *ret_text = text;
    return 0;
}
