#include "controller/events.h"

#include <stdio.h>
#include <stdlib.h>

#include "util/log.h"
#include "util/timefmt.h"

static void on_posted(void *data, struct kube_response *resp)
{
    (void)data;
    if (resp->status < 0)
        log_warn("event not recorded", "code", LOG_INT(resp->http_code), "error",
                 resp->error.message ? resp->error.message : resp->transport_error);
}

void events_post(struct kube_client *c, const struct event_subject *s, const char *type,
                 const char *reason, const char *message, const char *reporting_instance,
                 int64_t now_ms)
{
    char when[TIMEFMT_RFC3339_MICRO_SIZE], micro[TIMEFMT_RFC3339_MICRO_SIZE];
    timefmt_format_rfc3339(now_ms, when, sizeof(when));
    timefmt_format_rfc3339_micro(now_ms, micro, sizeof(micro));
    char prefix[300];
    snprintf(prefix, sizeof(prefix), "%s.", s->name);

    cJSON *ev = cJSON_CreateObject();
    cJSON *meta = cJSON_AddObjectToObject(ev, "metadata");
    cJSON *obj = cJSON_AddObjectToObject(ev, "involvedObject");
    cJSON *src = cJSON_AddObjectToObject(ev, "source");
    if (!ev || !meta || !obj || !src) {
        cJSON_Delete(ev);
        return;
    }
    cJSON_AddStringToObject(meta, "generateName", prefix);
    cJSON_AddStringToObject(meta, "namespace", s->ns);
    cJSON_AddStringToObject(obj, "apiVersion", s->api_version);
    cJSON_AddStringToObject(obj, "kind", s->kind);
    cJSON_AddStringToObject(obj, "namespace", s->ns);
    cJSON_AddStringToObject(obj, "name", s->name);
    cJSON_AddStringToObject(obj, "uid", s->uid);
    cJSON_AddStringToObject(ev, "type", type);
    cJSON_AddStringToObject(ev, "reason", reason);
    cJSON_AddStringToObject(ev, "message", message);
    cJSON_AddStringToObject(ev, "firstTimestamp", when);
    cJSON_AddStringToObject(ev, "lastTimestamp", when);
    cJSON_AddStringToObject(ev, "eventTime", micro);
    cJSON_AddStringToObject(ev, "action", reason);
    cJSON_AddNumberToObject(ev, "count", 1);
    cJSON_AddStringToObject(src, "component", "hibernator");
    cJSON_AddStringToObject(ev, "reportingComponent", "hibernator.dev/controller");
    cJSON_AddStringToObject(ev, "reportingInstance", reporting_instance);
    if (!kube_create(c, &KUBE_RESOURCE_EVENTS, s->ns, ev, on_posted, NULL))
        log_warn("event not recorded", "reason", reason, "error", "could not start the request");
    cJSON_Delete(ev);
}
