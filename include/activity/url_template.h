/*
 * url_template: the class's probe URL and PromQL templates, filled in for
 * one pod.
 *
 *   {podIP}      the pod's IP; an IPv6 address is bracketed for a URL
 *   {port}       the class's spec.port
 *   {namespace}  {workspace}  {pod}
 *
 * Pure function. Values are Kubernetes names and IPs, which never contain a
 * quote, a backslash or a character a URL must escape.
 */
#ifndef HIBERNATOR_ACTIVITY_URL_TEMPLATE_H
#define HIBERNATOR_ACTIVITY_URL_TEMPLATE_H

#define URL_TEMPLATE_MAX 2048

struct template_vars {
    const char *pod_ip; /* NULL: not known yet */
    int port;
    const char *ns;
    const char *workspace;
    const char *pod;
};

/* Returns 0 with *ret (malloc'd, caller frees), -EAGAIN when the template
 * needs {podIP} and the pod has none yet, -ENOMEM, or -EINVAL with *ret_err
 * (malloc'd) naming the unknown placeholder or the length limit. */
int url_template_expand(const char *tpl, const struct template_vars *v, char **ret, char **ret_err);

#endif
