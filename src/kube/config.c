#include "kube/config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/crypto.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "util/base64.h"
#include "util/secret.h"
#include "util/text.h"

#define KUBECONFIG_MAX_BYTES (4u << 20)
#define REFERENCED_FILE_MAX_BYTES (1u << 20)
#define IN_CLUSTER_ROOT "/var/run/secrets/kubernetes.io/serviceaccount"
#define EXEC_API_V1 "client.authentication.k8s.io/v1"
#define EXEC_API_V1BETA1 "client.authentication.k8s.io/v1beta1"

/* Names and values quoted in messages come from the file; they are cut short
 * and stripped of control characters so a message stays one readable line. */
#define QUOTE_MAX 128

/* ---- small helpers ---------------------------------------------------- */

/* A printable copy of s for messages: at most QUOTE_MAX characters. */
static char *quote(const char *s)
{
    size_t n = strnlen(s, QUOTE_MAX + 1);
    bool cut = n > QUOTE_MAX;
    if (cut)
        n = QUOTE_MAX;
    return text_printable_copy(s, n, cut, '?');
}

static char *vformat(const char *fmt, va_list ap)
{
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0)
        return NULL;
    return s;
}

static void set_err(char **ret_err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_err(char **ret_err, const char *fmt, ...)
{
    if (!ret_err)
        return;
    va_list ap;
    va_start(ap, fmt);
    *ret_err = vformat(fmt, ap);
    va_end(ap);
}

static char *join_path(const char *dir, const char *path)
{
    char *s = NULL;
    if (path[0] == '/' || !dir || !dir[0])
        return strdup(path);
    size_t n = strlen(dir);
    if (asprintf(&s, "%s%s%s", dir, dir[n - 1] == '/' ? "" : "/", path) < 0)
        return NULL;
    return s;
}

/* Reads a whole regular file of at most max bytes into a NUL-terminated
 * buffer. Buffers that are outgrown are wiped, as the file may be a key. */
static int read_file_bounded(const char *path, size_t max, char **ret_data, size_t *ret_len)
{
    /* O_NONBLOCK: opening a FIFO must not hang startup; it is refused below. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return -errno;

    struct stat st;
    int r = 0;
    char *data = NULL;
    size_t len = 0, cap;
    if (fstat(fd, &st) < 0) {
        r = -errno;
        goto out;
    }
    if (S_ISDIR(st.st_mode)) {
        r = -EISDIR;
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        r = -EINVAL;
        goto out;
    }
    if ((uintmax_t)st.st_size > max) {
        r = -EFBIG;
        goto out;
    }
    /* One spare byte tells a file that grew past max from one of exactly max. */
    cap = (size_t)st.st_size + 1;
    data = malloc(cap + 1);
    if (!data) {
        r = -ENOMEM;
        goto out;
    }
    for (;;) {
        if (len == cap) {
            if (cap > max) {
                r = -EFBIG;
                goto out;
            }
            size_t ncap = cap * 2 > max + 1 ? max + 1 : cap * 2;
            char *n = malloc(ncap + 1);
            if (!n) {
                r = -ENOMEM;
                goto out;
            }
            memcpy(n, data, len);
            secret_free(data, cap + 1);
            data = n;
            cap = ncap;
        }
        ssize_t k = read(fd, data + len, cap - len);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            r = -errno;
            goto out;
        }
        if (k == 0)
            break;
        len += (size_t)k;
    }
    if (len > max) {
        r = -EFBIG;
        goto out;
    }
    data[len] = '\0';
    *ret_data = data;
    *ret_len = len;
    data = NULL;
out:
    if (data)
        secret_free(data, cap + 1);
    close(fd);
    return r;
}

static const char *read_error_str(int r)
{
    switch (r) {
    case -EFBIG:
        return "file too large";
    case -EINVAL:
        return "not a regular file";
    default:
        return strerror(-r);
    }
}

static bool looks_like_pem(const char *data, size_t len)
{
    static const char marker[] = "-----BEGIN ";
    return memmem(data, len, marker, sizeof(marker) - 1) != NULL;
}

static void trim_right(char *s, size_t *len)
{
    size_t n = *len;
    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    s[n] = '\0';
    *len = n;
}

/* ---- YAML access ------------------------------------------------------ */

/* Where a field lives, for messages: "users[name=admin].user" + ".field". */
struct where {
    const char *section; /* "clusters", "contexts", "users"; NULL at top level */
    const char *name;    /* the entry's name */
    const char *sub;     /* "cluster", "context", "user" */
};

struct loader {
    yaml_document_t *doc;
    const char *source;
    const char *base_dir;
    char *err; /* the first error, complete with source and field */
};

/* Records "<source>: <where>.<field>: <message>" and returns r. */
static int field_fail(struct loader *l, int r, const struct where *w, const char *field,
                      const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int field_fail(struct loader *l, int r, const struct where *w, const char *field,
                      const char *fmt, ...)
{
    if (l->err)
        return r;
    va_list ap;
    va_start(ap, fmt);
    char *msg = vformat(fmt, ap);
    va_end(ap);
    char *name = w && w->section ? quote(w->name) : NULL;
    char *s = NULL;
    int k;
    if (w && w->section)
        k = asprintf(&s, "%s: %s[name=%s].%s%s%s: %s", l->source, w->section, name ? name : "?",
                     w->sub, field ? "." : "", field ? field : "", msg ? msg : "invalid");
    else
        k = asprintf(&s, "%s: %s: %s", l->source, field ? field : "(top level)",
                     msg ? msg : "invalid");
    l->err = k < 0 ? NULL : s;
    free(msg);
    free(name);
    return r;
}

static yaml_node_t *node(struct loader *l, int id)
{
    return id ? yaml_document_get_node(l->doc, id) : NULL;
}

/* YAML's null: a plain ~, null or empty scalar. kubectl treats it as unset. */
static bool is_null(const yaml_node_t *n)
{
    if (!n)
        return true;
    if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return false;
    const char *v = (const char *)n->data.scalar.value;
    return n->data.scalar.length == 0 || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 ||
           strcmp(v, "Null") == 0 || strcmp(v, "NULL") == 0;
}

static const char *scalar_value(const yaml_node_t *n)
{
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* The value of key in a mapping, or NULL when absent or null. */
static yaml_node_t *map_get(struct loader *l, const yaml_node_t *map, const char *key)
{
    if (!map || map->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        const char *k = scalar_value(node(l, p->key));
        if (k && strcmp(k, key) == 0) {
            yaml_node_t *v = node(l, p->value);
            return is_null(v) ? NULL : v;
        }
    }
    return NULL;
}

/* A string field: 0 with *ret NULL when unset, -EINVAL when not a scalar.
 * Empty strings count as unset, as kubectl's Go structs see them. */
static int get_str(struct loader *l, const yaml_node_t *map, const struct where *w,
                   const char *field, const char **ret)
{
    yaml_node_t *v = map_get(l, map, field);
    *ret = NULL;
    if (!v)
        return 0;
    if (v->type != YAML_SCALAR_NODE)
        return field_fail(l, -EINVAL, w, field, "expected a string");
    /* An embedded NUL would silently cut a path or token short. */
    if (strlen((const char *)v->data.scalar.value) != v->data.scalar.length)
        return field_fail(l, -EINVAL, w, field, "contains a NUL character");
    if (v->data.scalar.length > 0)
        *ret = (const char *)v->data.scalar.value;
    return 0;
}

static int get_bool(struct loader *l, const yaml_node_t *map, const struct where *w,
                    const char *field, int *ret)
{
    static const char *const yes[] = {"true", "True", "TRUE", "yes", "Yes",
                                      "YES",  "on",   "On",   "ON"};
    static const char *const no[] = {"false", "False", "FALSE", "no", "No",
                                     "NO",    "off",   "Off",   "OFF"};
    const char *v;
    int r = get_str(l, map, w, field, &v);
    *ret = 0;
    if (r < 0 || !v)
        return r;
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        if (strcmp(v, yes[i]) == 0) {
            *ret = 1;
            return 0;
        }
        if (strcmp(v, no[i]) == 0)
            return 0;
    }
    return field_fail(l, -EINVAL, w, field, "expected true or false");
}

/* Finds the entry of a top-level list (clusters, contexts, users) by name. */
static int find_named(struct loader *l, const yaml_node_t *root, const char *section,
                      const char *name, yaml_node_t **ret_entry)
{
    yaml_node_t *list = map_get(l, root, section);
    yaml_node_t *found = NULL;
    *ret_entry = NULL;
    if (!list)
        return 0;
    if (list->type != YAML_SEQUENCE_NODE)
        return field_fail(l, -EINVAL, NULL, section, "expected a list");
    for (yaml_node_item_t *i = list->data.sequence.items.start; i < list->data.sequence.items.top;
         i++) {
        yaml_node_t *entry = node(l, *i);
        const char *n = scalar_value(map_get(l, entry, "name"));
        if (!n || strcmp(n, name) != 0)
            continue;
        if (found) {
            char *q = quote(name);
            field_fail(l, -EINVAL, NULL, section, "name \"%s\" appears more than once",
                       q ? q : "?");
            free(q);
            return -EINVAL;
        }
        found = entry;
    }
    *ret_entry = found;
    return 0;
}

static char *dup_or_fail(struct loader *l, const char *s, int *r)
{
    char *d = strdup(s);
    if (!d && !l->err) {
        l->err = strdup("out of memory");
        *r = -ENOMEM;
    }
    return d;
}

/* Reads a file a field names, relative to the kubeconfig's directory. */
static int read_field_file(struct loader *l, const struct where *w, const char *field,
                           const char *path, char **ret_data, size_t *ret_len)
{
    char *full = join_path(l->base_dir, path);
    if (!full)
        return field_fail(l, -ENOMEM, w, field, "out of memory");
    int r = read_file_bounded(full, REFERENCED_FILE_MAX_BYTES, ret_data, ret_len);
    if (r < 0) {
        char *q = quote(full);
        field_fail(l, r, w, field, "cannot read \"%s\": %s", q ? q : "?", read_error_str(r));
        free(q);
    }
    free(full);
    return r;
}

/* PEM material from either <data_field> (base64) or <file_field> (a path). */
static int load_pem(struct loader *l, const yaml_node_t *map, const struct where *w,
                    const char *data_field, const char *file_field, char **ret_pem, size_t *ret_len)
{
    const char *data, *file;
    char *pem = NULL;
    size_t len = 0;
    int r;

    if ((r = get_str(l, map, w, data_field, &data)) < 0 ||
        (r = get_str(l, map, w, file_field, &file)) < 0)
        return r;
    if (data && file)
        return field_fail(l, -EINVAL, w, data_field, "both %s and %s are set; keep one", data_field,
                          file_field);
    if (data) {
        r = base64_decode(data, strlen(data), &pem, &len);
        if (r < 0)
            return field_fail(l, r, w, data_field, "not valid base64");
        if (!looks_like_pem(pem, len)) {
            secret_free(pem, len);
            return field_fail(l, -EINVAL, w, data_field, "decoded data is not PEM");
        }
    } else if (file) {
        r = read_field_file(l, w, file_field, file, &pem, &len);
        if (r < 0)
            return r;
        if (!looks_like_pem(pem, len)) {
            secret_free(pem, len);
            char *q = quote(file);
            field_fail(l, -EINVAL, w, file_field, "\"%s\" is not a PEM file", q ? q : "?");
            free(q);
            return -EINVAL;
        }
    }
    *ret_pem = pem;
    *ret_len = len;
    return 0;
}

/* ---- sections ---------------------------------------------------------- */

static int load_cluster(struct loader *l, const yaml_node_t *root, const char *context_name,
                        const char *cluster_name, struct kube_config *cfg)
{
    struct where cw = {"contexts", context_name, "context"};
    struct where w = {"clusters", cluster_name, "cluster"};
    yaml_node_t *entry, *cluster;
    const char *server, *tls_name;
    int r;

    if ((r = find_named(l, root, "clusters", cluster_name, &entry)) < 0)
        return r;
    if (!entry) {
        char *q = quote(cluster_name);
        field_fail(l, -ENOENT, &cw, "cluster", "\"%s\": no such cluster", q ? q : "?");
        free(q);
        return -ENOENT;
    }
    cluster = map_get(l, entry, "cluster");
    if (!cluster)
        return field_fail(l, -EINVAL, &w, NULL, "missing");
    if (cluster->type != YAML_MAPPING_NODE)
        return field_fail(l, -EINVAL, &w, NULL, "expected a mapping");

    if ((r = get_str(l, cluster, &w, "server", &server)) < 0)
        return r;
    if (!server)
        return field_fail(l, -EINVAL, &w, "server", "missing");
    /* The URL is not quoted back: it may carry user:password. */
    const char *rest = strncmp(server, "https://", 8) == 0  ? server + 8
                       : strncmp(server, "http://", 7) == 0 ? server + 7
                                                            : NULL;
    if (!rest)
        return field_fail(l, -EINVAL, &w, "server", "must start with https:// or http://");
    if (!*rest || *rest == '/')
        return field_fail(l, -EINVAL, &w, "server", "has no host");
    if (strpbrk(server, " \t\r\n"))
        return field_fail(l, -EINVAL, &w, "server", "contains white space");
    if (!(cfg->server = dup_or_fail(l, server, &r)))
        return r;
    for (size_t n = strlen(cfg->server); n > 0 && cfg->server[n - 1] == '/'; n--)
        cfg->server[n - 1] = '\0';

    if ((r = get_str(l, cluster, &w, "tls-server-name", &tls_name)) < 0)
        return r;
    if (tls_name && !(cfg->tls_server_name = dup_or_fail(l, tls_name, &r)))
        return r;
    if ((r = get_bool(l, cluster, &w, "insecure-skip-tls-verify", &cfg->insecure_skip_tls_verify)) <
        0)
        return r;
    if ((r = load_pem(l, cluster, &w, "certificate-authority-data", "certificate-authority",
                      &cfg->ca_pem, &cfg->ca_pem_len)) < 0)
        return r;
    /* kubectl refuses this pair too: trusting a CA and trusting anything
     * cannot both be meant. */
    if (cfg->ca_pem && cfg->insecure_skip_tls_verify)
        return field_fail(l, -EINVAL, &w, "insecure-skip-tls-verify",
                          "cannot be combined with a certificate authority");
    return 0;
}

/* Long: one check per field of the exec section, each naming its field. */
static int load_exec(struct loader *l, const yaml_node_t *exec, const struct where *w,
                     struct kube_config *cfg)
{
    struct where xw = {w->section, w->name, "user.exec"};
    const char *command, *api_version, *mode;
    int r;

    if (exec->type != YAML_MAPPING_NODE)
        return field_fail(l, -EINVAL, w, "exec", "expected a mapping");
    struct kube_exec_config *x = calloc(1, sizeof(*x));
    if (!x)
        return field_fail(l, -ENOMEM, w, "exec", "out of memory");
    cfg->exec = x;

    if ((r = get_str(l, exec, &xw, "command", &command)) < 0)
        return r;
    if (!command)
        return field_fail(l, -EINVAL, &xw, "command", "missing");
    /* kubectl resolves a command with a directory part against the
     * kubeconfig's directory; a bare name is looked up on PATH. */
    if (strchr(command, '/'))
        x->command = join_path(l->base_dir, command);
    else
        x->command = strdup(command);
    if (!x->command)
        return field_fail(l, -ENOMEM, &xw, "command", "out of memory");

    if ((r = get_str(l, exec, &xw, "apiVersion", &api_version)) < 0)
        return r;
    if (!api_version)
        return field_fail(l, -EINVAL, &xw, "apiVersion", "missing (use %s)", EXEC_API_V1);
    if (strcmp(api_version, EXEC_API_V1) != 0 && strcmp(api_version, EXEC_API_V1BETA1) != 0) {
        char *q = quote(api_version);
        field_fail(l, -EINVAL, &xw, "apiVersion", "\"%s\" is not supported (use %s or %s)",
                   q ? q : "?", EXEC_API_V1, EXEC_API_V1BETA1);
        free(q);
        return -EINVAL;
    }
    if (!(x->api_version = dup_or_fail(l, api_version, &r)))
        return r;

    if ((r = get_str(l, exec, &xw, "interactiveMode", &mode)) < 0)
        return r;
    /* A controller has no terminal to prompt on. */
    if (mode && strcmp(mode, "Always") == 0)
        return field_fail(l, -EINVAL, &xw, "interactiveMode",
                          "\"Always\" needs a terminal; a controller runs without one");

    if ((r = get_bool(l, exec, &xw, "provideClusterInfo", &x->provide_cluster_info)) < 0)
        return r;

    yaml_node_t *args = map_get(l, exec, "args");
    if (args) {
        if (args->type != YAML_SEQUENCE_NODE)
            return field_fail(l, -EINVAL, &xw, "args", "expected a list");
        size_t n = (size_t)(args->data.sequence.items.top - args->data.sequence.items.start);
        x->args = calloc(n ? n : 1, sizeof(char *));
        if (!x->args)
            return field_fail(l, -ENOMEM, &xw, "args", "out of memory");
        for (size_t i = 0; i < n; i++) {
            yaml_node_t *a = node(l, args->data.sequence.items.start[i]);
            char field[32];
            snprintf(field, sizeof(field), "args[%zu]", i);
            if (!a || a->type != YAML_SCALAR_NODE)
                return field_fail(l, -EINVAL, &xw, field, "expected a string");
            if (strlen((const char *)a->data.scalar.value) != a->data.scalar.length)
                return field_fail(l, -EINVAL, &xw, field, "contains a NUL character");
            if (!(x->args[i] = dup_or_fail(l, (const char *)a->data.scalar.value, &r)))
                return r;
            x->n_args++;
        }
    }

    yaml_node_t *env = map_get(l, exec, "env");
    if (env) {
        if (env->type != YAML_SEQUENCE_NODE)
            return field_fail(l, -EINVAL, &xw, "env", "expected a list");
        size_t n = (size_t)(env->data.sequence.items.top - env->data.sequence.items.start);
        x->env = calloc(n ? n : 1, sizeof(*x->env));
        if (!x->env)
            return field_fail(l, -ENOMEM, &xw, "env", "out of memory");
        for (size_t i = 0; i < n; i++) {
            yaml_node_t *e = node(l, env->data.sequence.items.start[i]);
            char sub[48];
            const char *name, *value;
            snprintf(sub, sizeof(sub), "user.exec.env[%zu]", i);
            struct where ew = {w->section, w->name, sub};
            if (!e || e->type != YAML_MAPPING_NODE)
                return field_fail(l, -EINVAL, &ew, NULL, "expected a mapping with name and value");
            if ((r = get_str(l, e, &ew, "name", &name)) < 0 ||
                (r = get_str(l, e, &ew, "value", &value)) < 0)
                return r;
            if (!name)
                return field_fail(l, -EINVAL, &ew, "name", "missing");
            if (strchr(name, '='))
                return field_fail(l, -EINVAL, &ew, "name", "contains '='");
            x->env[i].name = strdup(name);
            x->env[i].value = strdup(value ? value : "");
            x->n_env++;
            if (!x->env[i].name || !x->env[i].value)
                return field_fail(l, -ENOMEM, &ew, NULL, "out of memory");
        }
    }
    return 0;
}

static int load_user(struct loader *l, const yaml_node_t *root, const char *context_name,
                     const char *user_name, struct kube_config *cfg)
{
    struct where cw = {"contexts", context_name, "context"};
    struct where w = {"users", user_name, "user"};
    yaml_node_t *entry, *user, *exec;
    const char *token, *token_file;
    int r;

    if ((r = find_named(l, root, "users", user_name, &entry)) < 0)
        return r;
    if (!entry) {
        char *q = quote(user_name);
        field_fail(l, -ENOENT, &cw, "user", "\"%s\": no such user", q ? q : "?");
        free(q);
        return -ENOENT;
    }
    user = map_get(l, entry, "user");
    if (!user)
        return 0; /* a user without settings: anonymous, as kubectl has it */
    if (user->type != YAML_MAPPING_NODE)
        return field_fail(l, -EINVAL, &w, NULL, "expected a mapping");

    if (map_get(l, user, "auth-provider"))
        return field_fail(l, -ENOTSUP, &w, "auth-provider",
                          "not supported (removed from Kubernetes); use an exec plugin");
    if (map_get(l, user, "username") || map_get(l, user, "password"))
        return field_fail(l, -ENOTSUP, &w, map_get(l, user, "username") ? "username" : "password",
                          "basic authentication is not supported");

    if ((r = load_pem(l, user, &w, "client-certificate-data", "client-certificate", &cfg->cert_pem,
                      &cfg->cert_pem_len)) < 0)
        return r;
    if ((r = load_pem(l, user, &w, "client-key-data", "client-key", &cfg->key_pem,
                      &cfg->key_pem_len)) < 0)
        return r;
    if (cfg->cert_pem && !cfg->key_pem)
        return field_fail(l, -EINVAL, &w, "client-key",
                          "missing (client-certificate is set; both are needed)");
    if (cfg->key_pem && !cfg->cert_pem)
        return field_fail(l, -EINVAL, &w, "client-certificate",
                          "missing (client-key is set; both are needed)");

    if ((r = get_str(l, user, &w, "token", &token)) < 0)
        return r;
    if (token) {
        if (strpbrk(token, "\r\n"))
            return field_fail(l, -EINVAL, &w, "token", "contains a line break");
        if (!(cfg->token = dup_or_fail(l, token, &r)))
            return r;
    }

    if ((r = get_str(l, user, &w, "tokenFile", &token_file)) < 0)
        return r;
    if (token_file) {
        char *data;
        size_t len;
        /* Read once now, as kubectl does, so a wrong path fails at startup
         * rather than on the first request. The value is re-read later. */
        if ((r = read_field_file(l, &w, "tokenFile", token_file, &data, &len)) < 0)
            return r;
        trim_right(data, &len);
        secret_free(data, len);
        if (len == 0)
            return field_fail(l, -EINVAL, &w, "tokenFile", "the file is empty");
        if (!(cfg->token_file = join_path(l->base_dir, token_file)))
            return field_fail(l, -ENOMEM, &w, "tokenFile", "out of memory");
    }

    exec = map_get(l, user, "exec");
    if (exec && (r = load_exec(l, exec, &w, cfg)) < 0)
        return r;
    return 0;
}

static int load_document(struct loader *l, const char *context, struct kube_config *cfg)
{
    yaml_node_t *root = yaml_document_get_root_node(l->doc);
    yaml_node_t *entry, *ctx;
    const char *current, *cluster_name, *user_name, *ns;
    int r;

    if (!root) {
        if (asprintf(&l->err, "%s: empty file", l->source) < 0)
            l->err = NULL;
        return -EINVAL;
    }
    if (root->type != YAML_MAPPING_NODE) {
        if (asprintf(&l->err, "%s: not a kubeconfig (the top level is not a mapping)", l->source) <
            0)
            l->err = NULL;
        return -EINVAL;
    }

    if ((r = get_str(l, root, NULL, "current-context", &current)) < 0)
        return r;
    if (context && !*context)
        context = NULL; /* like kubectl --context="": the current one */
    const char *name = context ? context : current;
    if (!name)
        return field_fail(l, -ENOENT, NULL, "current-context",
                          "not set (and no context was chosen)");
    if ((r = find_named(l, root, "contexts", name, &entry)) < 0)
        return r;
    if (!entry) {
        char *q = quote(name);
        if (context) {
            if (asprintf(&l->err, "%s: context \"%s\": no such context", l->source, q ? q : "?") <
                0)
                l->err = NULL;
        } else {
            field_fail(l, -ENOENT, NULL, "current-context", "\"%s\": no such context", q ? q : "?");
        }
        free(q);
        return -ENOENT;
    }

    struct where w = {"contexts", name, "context"};
    ctx = map_get(l, entry, "context");
    if (!ctx)
        return field_fail(l, -EINVAL, &w, NULL, "missing");
    if (ctx->type != YAML_MAPPING_NODE)
        return field_fail(l, -EINVAL, &w, NULL, "expected a mapping");
    if ((r = get_str(l, ctx, &w, "cluster", &cluster_name)) < 0 ||
        (r = get_str(l, ctx, &w, "user", &user_name)) < 0 ||
        (r = get_str(l, ctx, &w, "namespace", &ns)) < 0)
        return r;
    if (!cluster_name)
        return field_fail(l, -EINVAL, &w, "cluster", "missing");

    if (!(cfg->namespace = dup_or_fail(l, ns ? ns : "default", &r)))
        return r;
    if ((r = load_cluster(l, root, name, cluster_name, cfg)) < 0)
        return r;
    if (user_name && (r = load_user(l, root, name, user_name, cfg)) < 0)
        return r;
    return 0;
}

/* Secrets sit in the document's scalars: wipe them before libyaml frees them. */
static void wipe_document(yaml_document_t *doc)
{
    for (yaml_node_t *n = doc->nodes.start; n < doc->nodes.top; n++)
        if (n->type == YAML_SCALAR_NODE && n->data.scalar.value)
            OPENSSL_cleanse(n->data.scalar.value, n->data.scalar.length);
}

static char *syntax_error(const yaml_parser_t *p, const char *source)
{
    char *s = NULL;
    int k;
    const char *problem = p->problem ? p->problem : "unknown error";
    switch (p->error) {
    case YAML_MEMORY_ERROR:
        k = asprintf(&s, "%s: out of memory while parsing", source);
        break;
    case YAML_READER_ERROR:
        k = asprintf(&s, "%s: byte offset %zu: %s", source, p->problem_offset, problem);
        break;
    default:
        if (p->context)
            k = asprintf(&s, "%s:%zu:%zu: YAML syntax error: %s (%s at %zu:%zu)", source,
                         p->problem_mark.line + 1, p->problem_mark.column + 1, problem, p->context,
                         p->context_mark.line + 1, p->context_mark.column + 1);
        else
            k = asprintf(&s, "%s:%zu:%zu: YAML syntax error: %s", source, p->problem_mark.line + 1,
                         p->problem_mark.column + 1, problem);
        break;
    }
    return k < 0 ? NULL : s;
}

/* ---- public ------------------------------------------------------------ */

void kube_config_free(struct kube_config *config)
{
    if (!config)
        return;
    free(config->source);
    free(config->server);
    free(config->tls_server_name);
    free(config->ca_pem);
    secret_free(config->cert_pem, config->cert_pem_len);
    secret_free(config->key_pem, config->key_pem_len);
    secret_free_str(config->token);
    free(config->token_file);
    if (config->exec) {
        struct kube_exec_config *x = config->exec;
        free(x->command);
        /* Arguments and environment values may carry secrets (API keys). */
        for (size_t i = 0; i < x->n_args; i++)
            secret_free_str(x->args[i]);
        free(x->args);
        for (size_t i = 0; i < x->n_env; i++) {
            free(x->env[i].name);
            secret_free_str(x->env[i].value);
        }
        free(x->env);
        free(x->api_version);
        free(x);
    }
    free(config->namespace);
    free(config);
}

int kube_config_load_string(const char *yaml, size_t len, const char *source, const char *base_dir,
                            const char *context, struct kube_config **ret_config, char **ret_err)
{
    yaml_parser_t parser;
    yaml_document_t doc;
    struct kube_config *cfg = NULL;
    int r;

    if (!yaml || !ret_config)
        return -EINVAL;
    if (!source)
        source = "kubeconfig";
    if (len > KUBECONFIG_MAX_BYTES) {
        set_err(ret_err, "%s: larger than %u MiB", source, KUBECONFIG_MAX_BYTES >> 20);
        return -EFBIG;
    }
    if (!yaml_parser_initialize(&parser)) {
        set_err(ret_err, "%s: out of memory", source);
        return -ENOMEM;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)yaml, len);
    if (!yaml_parser_load(&parser, &doc)) {
        r = parser.error == YAML_MEMORY_ERROR ? -ENOMEM : -EINVAL;
        if (ret_err)
            *ret_err = syntax_error(&parser, source);
        yaml_parser_delete(&parser);
        return r;
    }

    struct loader l = {.doc = &doc, .source = source, .base_dir = base_dir};
    cfg = calloc(1, sizeof(*cfg));
    if (!cfg || !(cfg->source = strdup(source))) {
        r = -ENOMEM;
        l.err = strdup("out of memory");
        goto out;
    }
    r = load_document(&l, context, cfg);
out:
    wipe_document(&doc);
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    if (r < 0) {
        kube_config_free(cfg);
        if (ret_err)
            *ret_err = l.err;
        else
            free(l.err);
        return r;
    }
    free(l.err);
    *ret_config = cfg;
    return 0;
}

int kube_config_load_file(const char *path, const char *context, struct kube_config **ret_config,
                          char **ret_err)
{
    char *data = NULL, *dir = NULL;
    size_t len;
    int r;

    if (!path || !ret_config)
        return -EINVAL;
    r = read_file_bounded(path, KUBECONFIG_MAX_BYTES, &data, &len);
    if (r < 0) {
        set_err(ret_err, "%s: cannot read: %s", path, read_error_str(r));
        return r;
    }
    const char *slash = strrchr(path, '/');
    if (slash) {
        dir = slash == path ? strdup("/") : strndup(path, (size_t)(slash - path));
        if (!dir) {
            secret_free(data, len);
            set_err(ret_err, "%s: out of memory", path);
            return -ENOMEM;
        }
    }
    r = kube_config_load_string(data, len, path, dir, context, ret_config, ret_err);
    secret_free(data, len);
    free(dir);
    return r;
}

/* Long: each file of the service account is read and checked in turn. */
int kube_config_in_cluster(const char *root, struct kube_config **ret_config, char **ret_err)
{
    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    const char *port = getenv("KUBERNETES_SERVICE_PORT");
    struct kube_config *cfg = NULL;
    char *path = NULL, *data = NULL;
    size_t len = 0;
    int r;

    if (!ret_config)
        return -EINVAL;
    if (!root)
        root = IN_CLUSTER_ROOT;
    if (!host || !*host) {
        set_err(ret_err, "in-cluster: KUBERNETES_SERVICE_HOST is not set");
        return -ENOENT;
    }
    if (!port || !*port) {
        set_err(ret_err, "in-cluster: KUBERNETES_SERVICE_PORT is not set");
        return -ENOENT;
    }
    char *end;
    errno = 0;
    long p = strtol(port, &end, 10);
    if (errno || *end || p < 1 || p > 65535 || port[0] < '0' || port[0] > '9') {
        set_err(ret_err, "in-cluster: KUBERNETES_SERVICE_PORT is not a port number");
        return -EINVAL;
    }
    if (strpbrk(host, "/[]@ \t\r\n")) {
        set_err(ret_err, "in-cluster: KUBERNETES_SERVICE_HOST is not a host name or address");
        return -EINVAL;
    }

    cfg = calloc(1, sizeof(*cfg));
    if (!cfg)
        goto oom;
    if (!(cfg->source = strdup("in-cluster")))
        goto oom;
    /* An IPv6 address needs brackets in a URL. */
    if (asprintf(&cfg->server, strchr(host, ':') ? "https://[%s]:%ld" : "https://%s:%ld", host, p) <
        0) {
        cfg->server = NULL;
        goto oom;
    }

    if (asprintf(&path, "%s/ca.crt", root) < 0) {
        path = NULL;
        goto oom;
    }
    r = read_file_bounded(path, REFERENCED_FILE_MAX_BYTES, &cfg->ca_pem, &cfg->ca_pem_len);
    if (r < 0) {
        set_err(ret_err, "in-cluster: %s: cannot read: %s", path, read_error_str(r));
        goto fail;
    }
    if (!looks_like_pem(cfg->ca_pem, cfg->ca_pem_len)) {
        r = -EINVAL;
        set_err(ret_err, "in-cluster: %s: not a PEM file", path);
        goto fail;
    }
    free(path);

    if (asprintf(&path, "%s/token", root) < 0) {
        path = NULL;
        goto oom;
    }
    r = read_file_bounded(path, REFERENCED_FILE_MAX_BYTES, &data, &len);
    if (r < 0) {
        set_err(ret_err, "in-cluster: %s: cannot read: %s", path, read_error_str(r));
        goto fail;
    }
    trim_right(data, &len);
    secret_free(data, len);
    data = NULL;
    if (len == 0) {
        r = -EINVAL;
        set_err(ret_err, "in-cluster: %s: the file is empty", path);
        goto fail;
    }
    /* Kept as a path: kubelet rotates the projected token, so it is re-read. */
    cfg->token_file = path;
    path = NULL;

    if (asprintf(&path, "%s/namespace", root) < 0) {
        path = NULL;
        goto oom;
    }
    r = read_file_bounded(path, REFERENCED_FILE_MAX_BYTES, &data, &len);
    if (r == 0) {
        trim_right(data, &len);
        if (len > 0) {
            cfg->namespace = data;
            data = NULL;
        }
    } else if (r != -ENOENT) {
        set_err(ret_err, "in-cluster: %s: cannot read: %s", path, read_error_str(r));
        goto fail;
    }
    free(data);
    data = NULL;
    if (!cfg->namespace && !(cfg->namespace = strdup("default")))
        goto oom;
    free(path);
    *ret_config = cfg;
    return 0;

oom:
    r = -ENOMEM;
    set_err(ret_err, "in-cluster: out of memory");
fail:
    free(path);
    free(data);
    kube_config_free(cfg);
    return r;
}

int kube_config_load_default(const char *explicit_path, struct kube_config **ret_config,
                             char **ret_err)
{
    return kube_config_load_default_context(explicit_path, NULL, ret_config, ret_err);
}

int kube_config_load_default_context(const char *explicit_path, const char *context,
                                     struct kube_config **ret_config, char **ret_err)
{
    if (explicit_path && *explicit_path)
        return kube_config_load_file(explicit_path, context, ret_config, ret_err);

    /* kubectl merges every file of $KUBECONFIG; a controller is pointed at
     * one cluster, so the first entry is the one that counts. */
    const char *list = getenv("KUBECONFIG");
    if (list && *list) {
        const char *colon = strchr(list, ':');
        while (colon == list) { /* skip empty entries */
            list++;
            colon = strchr(list, ':');
        }
        if (*list) {
            char *first = colon ? strndup(list, (size_t)(colon - list)) : strdup(list);
            if (!first) {
                set_err(ret_err, "KUBECONFIG: out of memory");
                return -ENOMEM;
            }
            int r = kube_config_load_file(first, context, ret_config, ret_err);
            free(first);
            return r;
        }
    }

    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    if (host && *host) {
        if (context && *context) {
            set_err(ret_err,
                    "context \"%s\": there is no kubeconfig to find it in (in-cluster "
                    "configuration)",
                    context);
            return -ENOENT;
        }
        return kube_config_in_cluster(NULL, ret_config, ret_err);
    }

    const char *home = getenv("HOME");
    if (!home || !*home) {
        set_err(ret_err, "no kubeconfig: KUBECONFIG and HOME are not set and "
                         "KUBERNETES_SERVICE_HOST is not set (not running in a cluster)");
        return -ENOENT;
    }
    char *path = NULL;
    if (asprintf(&path, "%s/.kube/config", home) < 0) {
        set_err(ret_err, "out of memory");
        return -ENOMEM;
    }
    int r = kube_config_load_file(path, context, ret_config, ret_err);
    free(path);
    return r;
}
