#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/resource.h"
#include "util/buf.h"

const struct kube_resource KUBE_RESOURCE_PODS = {"", "v1", "pods", "Pod", 1};
const struct kube_resource KUBE_RESOURCE_CONFIGMAPS = {"", "v1", "configmaps", "ConfigMap", 1};
const struct kube_resource KUBE_RESOURCE_EVENTS = {"", "v1", "events", "Event", 1};
const struct kube_resource KUBE_RESOURCE_NAMESPACES = {"", "v1", "namespaces", "Namespace", 0};
const struct kube_resource KUBE_RESOURCE_PVCS = {"", "v1", "persistentvolumeclaims",
                                                 "PersistentVolumeClaim", 1};
const struct kube_resource KUBE_RESOURCE_SECRETS = {"", "v1", "secrets", "Secret", 1};
const struct kube_resource KUBE_RESOURCE_LEASES = {"coordination.k8s.io", "v1", "leases", "Lease",
                                                   1};

char *kube_resource_path(const struct kube_resource *res, const char *ns, const char *name,
                         const char *subresource)
{
    struct buf b;
    buf_init(&b, 4096);
    int r;
    if (res->group[0] == '\0')
        r = buf_printf(&b, "/api/%s", res->version);
    else
        r = buf_printf(&b, "/apis/%s/%s", res->group, res->version);
    if (r == 0 && res->namespaced && ns && ns[0]) {
        r = buf_append_str(&b, "/namespaces/");
        if (r == 0)
            r = buf_append_escaped(&b, ns);
    }
    if (r == 0)
        r = buf_printf(&b, "/%s", res->plural);
    if (r == 0 && name && name[0]) {
        r = buf_append_str(&b, "/");
        if (r == 0)
            r = buf_append_escaped(&b, name);
        if (r == 0 && subresource && subresource[0])
            r = buf_printf(&b, "/%s", subresource);
    }
    if (r < 0) {
        buf_free(&b);
        return NULL;
    }
    return buf_steal(&b);
}

char *kube_resource_api_version(const struct kube_resource *res)
{
    struct buf b;
    buf_init(&b, 512);
    int r = res->group[0] ? buf_printf(&b, "%s/%s", res->group, res->version)
                          : buf_append_str(&b, res->version);
    if (r < 0) {
        buf_free(&b);
        return NULL;
    }
    return buf_steal(&b);
}

int kube_append_query(struct buf *b, const char *key, const char *value)
{
    if (!value || !value[0])
        return 0;
    int r = buf_printf(b, "%c%s=", strchr(buf_str(b), '?') ? '&' : '?', key);
    if (r < 0)
        return r;
    return buf_append_escaped(b, value);
}
