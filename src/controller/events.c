#include "controller/events.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"
#include "util/timefmt.h"

/* The hash's digits in a name: 64 bits, a collision between two of one
 * workspace's transitions is not a practical concern. */
#define NAME_HASH_DIGITS 16

int events_name(const struct event_subject *s, const char *reason, const char *occasion, char *out,
                size_t size)
{
    if (!s || !s->name || !s->name[0] || !reason || !occasion || size < EVENTS_NAME_SIZE)
        return -EINVAL;
    unsigned char md[EVP_MAX_MD_SIZE];
    const char *uid = s->uid ? s->uid : "";
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    /* NUL-separated: no two (uid, reason, occasion) give the same text. */
    int ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) &&
             EVP_DigestUpdate(ctx, uid, strlen(uid) + 1) &&
             EVP_DigestUpdate(ctx, reason, strlen(reason) + 1) &&
             EVP_DigestUpdate(ctx, occasion, strlen(occasion)) && EVP_DigestFinal_ex(ctx, md, NULL);
    EVP_MD_CTX_free(ctx);
    if (!ok)
        return -ENOMEM;
    /* name + "." + digits must stay within a DNS subdomain's 253; a cut
     * name ends in an alphanumeric before the dot. */
    size_t keep = strlen(s->name);
    size_t max = EVENTS_NAME_SIZE - 1 - 1 - NAME_HASH_DIGITS;
    if (keep > max)
        keep = max;
    while (keep > 1 && (s->name[keep - 1] == '-' || s->name[keep - 1] == '.'))
        keep--;
    memcpy(out, s->name, keep);
    out[keep] = '.';
    for (size_t i = 0; i < NAME_HASH_DIGITS / 2; i++)
        snprintf(out + keep + 1 + 2 * i, 3, "%02x", md[i]);
    return 0;
}

static void on_posted(void *data, struct kube_response *resp)
{
    (void)data;
    if (resp->status == 0)
        return;
    /* Posted before this controller (or this pass) decided it again. */
    if (kube_response_already_exists(resp)) {
        log_debug("event already recorded");
        return;
    }
    /* Shed by the client under sustained pressure; counted in
     * hibernator_client_requests_dropped_total. */
    if (resp->status == -EAGAIN) {
        log_debug("event dropped: the API client's rate limit is exhausted");
        return;
    }
    log_warn("event not recorded", "code", LOG_INT(resp->http_code), "error",
             resp->error.message ? resp->error.message : resp->transport_error);
}

void events_post(struct kube_client *c, const struct event_subject *s, const char *type,
                 const char *reason, const char *message, const char *occasion,
                 const char *reporting_instance, int64_t now_ms)
{
    char when[TIMEFMT_RFC3339_MICRO_SIZE], micro[TIMEFMT_RFC3339_MICRO_SIZE];
    timefmt_format_rfc3339(now_ms, when, sizeof(when));
    timefmt_format_rfc3339_micro(now_ms, micro, sizeof(micro));
    char prefix[300], name[EVENTS_NAME_SIZE];
    snprintf(prefix, sizeof(prefix), "%s.", s->name);
    int named = occasion && events_name(s, reason, occasion, name, sizeof(name)) == 0;

    cJSON *ev = cJSON_CreateObject();
    cJSON *meta = cJSON_AddObjectToObject(ev, "metadata");
    cJSON *obj = cJSON_AddObjectToObject(ev, "involvedObject");
    cJSON *src = cJSON_AddObjectToObject(ev, "source");
    if (!ev || !meta || !obj || !src) {
        cJSON_Delete(ev);
        return;
    }
    if (named)
        cJSON_AddStringToObject(meta, "name", name);
    else
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
    struct kube_request *req = NULL;
    int e = kube_create(c, &KUBE_RESOURCE_EVENTS, s->ns, ev, on_posted, NULL, &req);
    /* Events only inform: they never hold up what pauses or resumes. */
    if (e == 0)
        kube_request_set_priority(req, KUBE_PRIORITY_LOW);
    else
        log_warn("event not recorded", "reason", reason, "error", log_errno_str(e));
    cJSON_Delete(ev);
}
