/*
 * events: Kubernetes Events about a Workspace (core/v1 Event), posted
 * without waiting and at the client's low priority: an Event that cannot be
 * written is logged and dropped, never a reason to hold up reconciling, and
 * under sustained pressure the client may drop it (include/kube/client.h).
 *
 * An Event is named after what it reports (events_name()), not generated:
 * a controller that dies between posting it and writing the status decides
 * the same transition again, posts the same name, and the API server's 409
 * AlreadyExists counts as done. So each transition is reported once, across
 * restarts (docs/architecture.md, "Events").
 *
 * Ownership: all arguments are copied into the request before returning.
 */
#ifndef HIBERNATOR_CONTROLLER_EVENTS_H
#define HIBERNATOR_CONTROLLER_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "kube/client.h"
#include "util/must_use.h"

struct event_subject {
    const char *api_version;
    const char *kind;
    const char *ns;
    const char *name;
    const char *uid;
};

/* Room for any name events_name() writes: a DNS subdomain. */
#define EVENTS_NAME_SIZE 254

/* The Event's name for reason on occasion (the transition it reports, such
 * as "pause-3"): "<subject name>.<16 hex digits>", the digits from a SHA-256
 * of the subject's uid, the reason and the occasion, so a workspace created
 * again under the same name gets new names. The subject's name is cut to
 * keep the whole within 253 characters. Pure. Returns 0, -EINVAL when an
 * argument is missing or size is below EVENTS_NAME_SIZE, or -ENOMEM (the
 * digest could not be set up). */
int events_name(const struct event_subject *subject, const char *reason, const char *occasion,
                char *out, size_t size);

/* The core/v1 Event events_post() sends, whole: every field it names or
 * nothing. Fields whose argument is NULL (the subject's uid, say) are left
 * out. Returns 0 and *ret_ev (the caller's, cJSON_Delete()), -EINVAL when
 * the subject or its name or reason is missing, or -ENOMEM. */
MUST_USE int events_body(const struct event_subject *subject, const char *type, const char *reason,
                         const char *message, const char *occasion, const char *reporting_instance,
                         int64_t now_ms, cJSON **ret_ev);

/* type is "Normal" or "Warning"; reason a CamelCase word; message one line.
 * occasion: what events_name() names the Event after; NULL: a generated
 * name (posted every time). 409 AlreadyExists means the Event was posted
 * before and is treated as done. An Event that cannot be built or started
 * is said in the log and dropped; nothing is returned. */
void events_post(struct kube_client *c, const struct event_subject *subject, const char *type,
                 const char *reason, const char *message, const char *occasion,
                 const char *reporting_instance, int64_t now_ms);

/* The same, and cb(data, resp) once the API server has answered (or the
 * client dropped the Event), so a caller can order the Event before what
 * follows: the reconciler posts a transition's Event before the status
 * write that records the transition, so a controller that dies in between
 * decides the transition again and posts it then (docs/state-machine.md,
 * "Events across crashes"); events_posted() reads resp. Returns 0 and
 * *ret_req (the caller's to cancel until cb has run), or a negative errno
 * and no callback follows (the Event could not be built or started;
 * logged). */
MUST_USE int events_post_then(struct kube_client *c, const struct event_subject *subject,
                              const char *type, const char *reason, const char *message,
                              const char *occasion, const char *reporting_instance, int64_t now_ms,
                              kube_response_cb cb, void *data, struct kube_request **ret_req);

/* What became of a posted Event: 0 recorded (now, or before: 409), or a
 * negative errno (dropped by the client, or refused); says in the log why
 * not. */
int events_posted(const struct kube_response *resp);

/* Whether an Event not recorded may be recorded if posted again: the API
 * server could not be reached or answered 429 or 5xx, or the client shed
 * it under its rate limit. A refusal for the Event itself (403 in a
 * terminating namespace, 422) is not: posting it again changes nothing. */
int events_retriable(const struct kube_response *resp);

#endif
