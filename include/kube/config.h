/*
 * kube_config: where the API server is and how to prove who we are.
 *
 * Loaded from a kubeconfig file (libyaml) or from the in-cluster service
 * account. All PEM material is held in memory and handed to libcurl as blobs;
 * nothing is written to temporary files. Relative file paths in a kubeconfig
 * are resolved against the kubeconfig's own directory, as kubectl does.
 *
 * Ownership: a loaded config is owned by the caller and released with
 * kube_config_free(). Error strings returned through ret_err are malloc'd and
 * owned by the caller; they name the file and the field, never a secret.
 */
#ifndef HIBERNATOR_KUBE_CONFIG_H
#define HIBERNATOR_KUBE_CONFIG_H

#include <stddef.h>

struct kube_exec_env {
    char *name;
    char *value;
};

/* users[].user.exec of a kubeconfig: a credential plugin run without a shell. */
struct kube_exec_config {
    /* program: looked up on PATH when it has no '/'; a path is resolved
     * against the kubeconfig's directory when loaded */
    char *command;
    char **args; /* n_args entries */
    size_t n_args;
    struct kube_exec_env *env; /* extra variables, n_env entries */
    size_t n_env;
    char *api_version; /* must be client.authentication.k8s.io/v1 or v1beta1 */
    int provide_cluster_info;
};

struct kube_config {
    char *source;          /* file path or "in-cluster", for messages */
    char *server;          /* "https://host:port" with any path prefix, no trailing '/' */
    char *tls_server_name; /* NULL unless set */
    char *ca_pem;          /* NULL: the system trust store */
    size_t ca_pem_len;
    char *cert_pem; /* client certificate, NULL when none */
    size_t cert_pem_len;
    char *key_pem; /* client key, NULL when none */
    size_t key_pem_len;
    char *token;      /* static bearer token, NULL when none */
    char *token_file; /* bearer token file, re-read so rotation works; NULL when none */
    struct kube_exec_config *exec; /* NULL when none */
    int insecure_skip_tls_verify;
    char *namespace; /* the context's namespace, "default" when unset */
};

/* Reads a kubeconfig file (at most 4 MiB; files it names at most 1 MiB) and
 * resolves context (NULL or "": current-context). Returns 0, or a negative
 * errno with *ret_err saying which file and field, e.g.
 * "/k/config: users[name=admin].user.client-key-data: not valid base64" or
 * "/k/config:7:3: YAML syntax error: ...". ret_err may be NULL.
 * Like kubectl, a field and its -data twin set together, a certificate
 * without a key, or a CA together with insecure-skip-tls-verify are errors;
 * auth-provider and basic authentication are refused as unsupported. */
int kube_config_load_file(const char *path, const char *context, struct kube_config **ret_config,
                          char **ret_err);

/* Parses kubeconfig text. source names it in messages; base_dir resolves
 * relative paths (NULL: the current directory). */
int kube_config_load_string(const char *yaml, size_t len, const char *source, const char *base_dir,
                            const char *context, struct kube_config **ret_config, char **ret_err);

/* The in-cluster config: KUBERNETES_SERVICE_HOST/PORT (IPv6 hosts bracketed),
 * the service account's CA and token file under root (NULL:
 * /var/run/secrets/kubernetes.io/serviceaccount). */
int kube_config_in_cluster(const char *root, struct kube_config **ret_config, char **ret_err);

/* The config a controller uses: explicit path if given, else the first file
 * in $KUBECONFIG, else in-cluster when KUBERNETES_SERVICE_HOST is set, else
 * ~/.kube/config. */
int kube_config_load_default(const char *explicit_path, struct kube_config **ret_config,
                             char **ret_err);

/* The same with a context (NULL or "": the file's current-context), as
 * kubectl's --context; an error when the config is the in-cluster one. */
int kube_config_load_default_context(const char *explicit_path, const char *context,
                                     struct kube_config **ret_config, char **ret_err);

/* Frees everything; accepts NULL. PEM and token memory is wiped first. */
void kube_config_free(struct kube_config *config);

#endif
