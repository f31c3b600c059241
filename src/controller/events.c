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

/* 0 when the Event is recorded (now or before), else a negative errno;
 * says in the log why not. */
int events_posted(const struct kube_response *resp)
{
    if (resp->status == 0)
        return 0;
    /* Posted before this controller (or this pass) decided it again. */
    if (kube_response_already_exists(resp)) {
        log_debug("event already recorded");
        return 0;
    }
    /* Shed by the client under sustained pressure; counted in
     * hibernator_client_requests_dropped_total. */
    if (resp->status == -EAGAIN) {
        log_debug("event dropped: the API client's rate limit is exhausted");
        return -EAGAIN;
    }
    log_warn("event not recorded", "code", LOG_INT(resp->http_code), "error",
             resp->error.message ? resp->error.message : resp->transport_error);
    return resp->status < 0 ? resp->status : -EIO;
}

int events_retriable(const struct kube_response *resp)
{
    if (resp->status == 0 || kube_response_already_exists(resp))
        return 0;
    long code = resp->http_code;
    return resp->status == -EAGAIN || code == 0 || code == 429 || code >= 500;
}

static void on_posted(void *data, struct kube_response *resp)
{
    (void)data;
    (void)events_posted(resp);
}

/* Adds key: value to o unless value is NULL (the field is then left out).
 * Returns whether o has what it should. */
static int add_string(cJSON *o, const char *key, const char *value)
{
    return !value || cJSON_AddStringToObject(o, key, value);
}

int events_body(const struct event_subject *s, const char *type, const char *reason,
                const char *message, const char *occasion, const char *reporting_instance,
                int64_t now_ms, cJSON **ret_ev)
{
    if (!s || !s->name || !reason)
        return -EINVAL;
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
    int ok = ev && meta && obj && src &&
             (named ? add_string(meta, "name", name) : add_string(meta, "generateName", prefix)) &&
             add_string(meta, "namespace", s->ns) &&
             add_string(obj, "apiVersion", s->api_version) && add_string(obj, "kind", s->kind) &&
             add_string(obj, "namespace", s->ns) && add_string(obj, "name", s->name) &&
             add_string(obj, "uid", s->uid) && add_string(ev, "type", type) &&
             add_string(ev, "reason", reason) && add_string(ev, "message", message) &&
             add_string(ev, "firstTimestamp", when) && add_string(ev, "lastTimestamp", when) &&
             add_string(ev, "eventTime", micro) && add_string(ev, "action", reason) &&
             cJSON_AddNumberToObject(ev, "count", 1) &&
             add_string(src, "component", "hibernator") &&
             add_string(ev, "reportingComponent", "hibernator.dev/controller") &&
             add_string(ev, "reportingInstance", reporting_instance);
    if (!ok) {
        cJSON_Delete(ev);
        return -ENOMEM;
    }
    *ret_ev = ev;
    return 0;
}

void events_post(struct kube_client *c, const struct event_subject *s, const char *type,
                 const char *reason, const char *message, const char *occasion,
                 const char *reporting_instance, int64_t now_ms)
{
    /* Nobody waits for it: the handle is the client's, and the answer is
     * only logged. A failure to start is logged by events_post_then(). */
    struct kube_request *req = NULL;
    if (events_post_then(c, s, type, reason, message, occasion, reporting_instance, now_ms,
                         on_posted, NULL, &req) < 0)
        return;
}

int events_post_then(struct kube_client *c, const struct event_subject *s, const char *type,
                     const char *reason, const char *message, const char *occasion,
                     const char *reporting_instance, int64_t now_ms, kube_response_cb cb,
                     void *data, struct kube_request **ret_req)
{
    cJSON *ev = NULL;
    int e = events_body(s, type, reason, message, occasion, reporting_instance, now_ms, &ev);
    struct kube_request *req = NULL;
    if (e == 0)
        e = kube_create(c, &KUBE_RESOURCE_EVENTS, s->ns, ev, cb, data, &req);
    cJSON_Delete(ev);
    if (e < 0) {
        log_warn("event not recorded", "reason", reason, "error", log_errno_str(e));
        return e;
    }
    kube_request_set_priority(req, KUBE_PRIORITY_LOW);
    *ret_req = req;
    return 0;
}
