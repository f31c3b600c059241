/*
 * kube_resource: a kind of object the API serves, and the URL paths for it.
 *
 * Descriptors are plain constant data; the built-in ones below live for the
 * whole program. Paths and queries are returned as malloc'd strings owned by
 * the caller.
 */
#ifndef HIBERNATOR_KUBE_RESOURCE_H
#define HIBERNATOR_KUBE_RESOURCE_H

#include "util/buf.h"
#include "util/must_use.h"

struct kube_resource {
    const char *group; /* "" for the core group */
    const char *version;
    const char *plural;
    const char *kind;
    int namespaced;
};

extern const struct kube_resource KUBE_RESOURCE_PODS;
extern const struct kube_resource KUBE_RESOURCE_CONFIGMAPS;
extern const struct kube_resource KUBE_RESOURCE_EVENTS;
extern const struct kube_resource KUBE_RESOURCE_LEASES;
extern const struct kube_resource KUBE_RESOURCE_NAMESPACES;
extern const struct kube_resource KUBE_RESOURCE_PVCS;
extern const struct kube_resource KUBE_RESOURCE_SECRETS;

/* "v1" or "group/version", for apiVersion fields. Returns a malloc'd string or NULL. */
char *kube_resource_api_version(const struct kube_resource *res);

/* Builds the request path, e.g. /apis/g/v/namespaces/ns/plural/name/status.
 * ns is ignored for cluster-scoped resources; name and subresource may be
 * NULL. Names are percent-encoded. Returns a malloc'd string or NULL. */
char *kube_resource_path(const struct kube_resource *res, const char *ns, const char *name,
                         const char *subresource);

/* Appends "&key=value" (or "?key=value" when b holds no '?' yet), value
 * percent-encoded; does nothing when value is NULL or "". */
MUST_USE int kube_append_query(struct buf *b, const char *key, const char *value);

#endif
