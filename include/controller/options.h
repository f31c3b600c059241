/*
 * controller_options: the controller's command line, in the style of
 * Kubernetes controllers (--kubeconfig, --leader-elect, ...).
 *
 * Ownership: strings point into argv or are static defaults; the struct owns
 * nothing and needs no freeing.
 */
#ifndef HIBERNATOR_CONTROLLER_OPTIONS_H
#define HIBERNATOR_CONTROLLER_OPTIONS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "util/log.h"

struct controller_options {
    const char *kubeconfig;                /* NULL: $KUBECONFIG, in-cluster, ~/.kube/config */
    const char *ns;                        /* --namespace: watch only this one; NULL: all */
    int leader_elect;                      /* default on */
    const char *leader_election_namespace; /* NULL: $POD_NAMESPACE or the config's */
    const char *leader_election_id;        /* the Lease's name */
    int64_t lease_duration_ms;
    int64_t renew_deadline_ms;
    int64_t retry_period_ms;
    const char *health_probe_bind_address; /* "host:port", ":port", or "0" for off */
    const char *metrics_bind_address;      /* the same; the same address: one server */
    double kube_api_qps;
    int kube_api_burst;
    int activity_probe_concurrency; /* 0: the prober's default */
    /* Kueue's visibility server (https://host:port), asked directly where
     * no APIService routes to it; NULL: through the API server. */
    const char *kueue_visibility_server;
    enum log_level log_level;
    enum log_format log_format;
    int show_help;
    int show_version;
};

/* Parses argv. Returns 0, or -EINVAL with a message naming the flag written
 * to err (size bytes). */
int controller_options_parse(int argc, char **argv, struct controller_options *ret_options,
                             char *err, size_t size);

/* Writes the usage text with every flag and its default. */
void controller_options_usage(FILE *out);

#endif
