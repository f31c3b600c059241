/*
 * events: Kubernetes Events about a Workspace (core/v1 Event), posted
 * without waiting: an Event that cannot be written is logged and dropped,
 * never a reason to hold up reconciling.
 *
 * Ownership: all arguments are copied into the request before returning.
 */
#ifndef HIBERNATOR_CONTROLLER_EVENTS_H
#define HIBERNATOR_CONTROLLER_EVENTS_H

#include <stdint.h>

#include "kube/client.h"

struct event_subject {
    const char *api_version;
    const char *kind;
    const char *ns;
    const char *name;
    const char *uid;
};

/* type is "Normal" or "Warning"; reason a CamelCase word; message one line. */
void events_post(struct kube_client *c, const struct event_subject *subject, const char *type,
                 const char *reason, const char *message, const char *reporting_instance,
                 int64_t now_ms);

#endif
