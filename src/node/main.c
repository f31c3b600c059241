/* hibernator-node: the node agent of the ContainerCheckpoint backend
 * (include/node/agent.h; docs/snapshots.md). One per node, as a DaemonSet
 * (deploy/node/). */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "kube/client.h"
#include "kube/config.h"
#include "node/agent.h"
#include "util/log.h"

#define SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

static void usage(FILE *f)
{
    fputs("usage: hibernator-node [options]\n"
          "  --node-name NAME         the node this agent acts for (default: $NODE_NAME)\n"
          "  --checkpoint-dir DIR     the kubelet's checkpoints directory as mounted here\n"
          "                           (default /var/lib/kubelet/checkpoints)\n"
          "  --kubelet-url URL        https://host:port of the kubelet (default: the Node's\n"
          "                           InternalIP and kubelet port)\n"
          "  --kubelet-ca FILE        trust for the kubelet's certificate (default: the\n"
          "                           service account's CA)\n"
          "  --token-file FILE        the token shown to the kubelet (default: the service\n"
          "                           account's)\n"
          "  --registry-auth FILE     a Docker config (.dockerconfigjson) with the registry's\n"
          "                           credentials (default: anonymous)\n"
          "  --registry-ca FILE       trust for the registry (default: the system's)\n"
          "  --checkpoint-timeout S   seconds the kubelet gives the runtime (default 600)\n"
          "  --kubeconfig FILE        out of the cluster (default: in-cluster, then\n"
          "                           $KUBECONFIG, then ~/.kube/config)\n"
          "  --log-level LEVEL        debug, info, warn or error (default info)\n"
          "  --log-format FORMAT      text or json (default json)\n",
          f);
}

static const char *readable(const char *path)
{
    return access(path, R_OK) == 0 ? path : NULL;
}

struct agent_main {
    uv_loop_t loop;
    uv_signal_t sigterm, sigint;
    struct kube_client *client;
    struct node_agent *agent;
};

static void on_signal(uv_signal_t *s, int signum)
{
    struct agent_main *m = s->data;
    log_info("shutting down", "signal", signum == SIGTERM ? "SIGTERM" : "SIGINT");
    node_agent_close(m->agent);
    m->agent = NULL;
    kube_client_close(m->client);
    m->client = NULL;
    uv_close((uv_handle_t *)&m->sigterm, NULL);
    uv_close((uv_handle_t *)&m->sigint, NULL);
}

int main(int argc, char **argv)
{
    struct node_agent_options o = {
        .node_name = getenv("NODE_NAME"),
        .checkpoint_dir = "/var/lib/kubelet/checkpoints",
        .kubelet_ca_file = readable(SA_DIR "/ca.crt"),
        .token_file = readable(SA_DIR "/token"),
        .checkpoint_timeout_s = 600,
    };
    const char *kubeconfig = NULL;
    enum log_level level = LOG_LEVEL_INFO;
    enum log_format format = LOG_FORMAT_JSON;
    static const struct option longopts[] = {
        {"node-name", required_argument, NULL, 'n'},
        {"checkpoint-dir", required_argument, NULL, 'd'},
        {"kubelet-url", required_argument, NULL, 'u'},
        {"kubelet-ca", required_argument, NULL, 'c'},
        {"token-file", required_argument, NULL, 't'},
        {"registry-auth", required_argument, NULL, 'a'},
        {"registry-ca", required_argument, NULL, 'r'},
        {"checkpoint-timeout", required_argument, NULL, 'T'},
        {"kubeconfig", required_argument, NULL, 'k'},
        {"log-level", required_argument, NULL, 'l'},
        {"log-format", required_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        char *end = NULL;
        switch (c) {
        case 'n':
            o.node_name = optarg;
            break;
        case 'd':
            o.checkpoint_dir = optarg;
            break;
        case 'u':
            o.kubelet_url = optarg;
            break;
        case 'c':
            o.kubelet_ca_file = optarg;
            break;
        case 't':
            o.token_file = optarg;
            break;
        case 'a':
            o.registry_auth_file = optarg;
            break;
        case 'r':
            o.registry_ca_file = optarg;
            break;
        case 'T':
            o.checkpoint_timeout_s = strtol(optarg, &end, 10);
            if (!*optarg || *end || o.checkpoint_timeout_s < 0) {
                fprintf(stderr, "hibernator-node: --checkpoint-timeout: not seconds: %s\n", optarg);
                return 2;
            }
            break;
        case 'k':
            kubeconfig = optarg;
            break;
        case 'l':
            if (log_level_parse(optarg, &level) < 0) {
                fprintf(stderr, "hibernator-node: --log-level: debug, info, warn or error\n");
                return 2;
            }
            break;
        case 'f':
            if (log_format_parse(optarg, &format) < 0) {
                fprintf(stderr, "hibernator-node: --log-format: text or json\n");
                return 2;
            }
            break;
        case 'h':
            usage(stdout);
            return 0;
        case 'V':
            printf("hibernator-node %s\n", HIBERNATOR_VERSION);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "hibernator-node: unexpected argument: %s\n", argv[optind]);
        return 2;
    }
    log_setup(level, format, stderr);
    /* The DaemonSet mounts both from optional volumes: absent, the registry
     * is reached anonymously and trusted through the system's CAs. */
    if (o.registry_auth_file && !readable(o.registry_auth_file)) {
        log_info("no registry credentials; pushing anonymously", "file", o.registry_auth_file);
        o.registry_auth_file = NULL;
    }
    if (o.registry_ca_file && !readable(o.registry_ca_file)) {
        log_info("no registry CA; trusting the system's", "file", o.registry_ca_file);
        o.registry_ca_file = NULL;
    }
    struct kube_config *config = NULL;
    char *err = NULL;
    if (kube_config_load_default(kubeconfig, &config, &err) < 0) {
        log_error("cannot load the Kubernetes configuration", "error", err);
        free(err);
        return 1;
    }
    struct agent_main m = {0};
    uv_loop_init(&m.loop);
    int rc = 0;
    if (kube_client_new(&m.loop, config, NULL, &m.client, &err) < 0 ||
        node_agent_new(&m.loop, m.client, &o, &m.agent, &err) < 0 ||
        node_agent_start(m.agent) < 0) {
        log_error("cannot start", "error", err ? err : "out of memory");
        free(err);
        node_agent_close(m.agent);
        kube_client_close(m.client);
        rc = 1;
    } else {
        log_info("hibernator-node starting", "version", HIBERNATOR_VERSION, "node", o.node_name,
                 "server", config->server);
        uv_signal_init(&m.loop, &m.sigterm);
        uv_signal_init(&m.loop, &m.sigint);
        m.sigterm.data = m.sigint.data = &m;
        uv_signal_start(&m.sigterm, on_signal, SIGTERM);
        uv_signal_start(&m.sigint, on_signal, SIGINT);
    }
    uv_run(&m.loop, UV_RUN_DEFAULT);
    uv_loop_close(&m.loop);
    kube_config_free(config);
    return rc;
}
