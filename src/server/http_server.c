#include "server/http_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "util/log.h"

/* The exposition is bounded by the registry's series limit; this is far
 * above it and only guards against a runaway. */
#define METRICS_BODY_MAX (256u * 1024 * 1024)

struct http_server {
    struct MHD_Daemon *daemon;
    int port; /* bound: the kernel's choice when bind asked for port 0 */
    struct health_state *health;
    struct metrics_registry *metrics;
};

int http_parse_bind(const char *bind, struct sockaddr_storage *ret)
{
    const char *colon = strrchr(bind, ':');
    if (!colon || !colon[1])
        return -EINVAL;
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || end == colon + 1 || port < 0 || port > 65535)
        return -EINVAL;
    char host[64];
    size_t hl = (size_t)(colon - bind);
    if (hl >= sizeof(host))
        return -EINVAL;
    memcpy(host, bind, hl);
    host[hl] = '\0';
    memset(ret, 0, sizeof(*ret));
    if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
        struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ret;
        host[hl - 1] = '\0';
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)port);
        return inet_pton(AF_INET6, host + 1, &a6->sin6_addr) == 1 ? 0 : -EINVAL;
    }
    struct sockaddr_in *a4 = (struct sockaddr_in *)ret;
    a4->sin_family = AF_INET;
    a4->sin_port = htons((uint16_t)port);
    if (hl == 0) {
        a4->sin_addr.s_addr = htonl(INADDR_ANY);
        return 0;
    }
    return inet_pton(AF_INET, host, &a4->sin_addr) == 1 ? 0 : -EINVAL;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned code, const char *text)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", "text/plain; charset=utf-8");
    enum MHD_Result ret = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result reply_metrics(struct MHD_Connection *c, struct metrics_registry *m)
{
    struct buf b;
    buf_init(&b, METRICS_BODY_MAX);
    int e = metrics_registry_render(m, &b);
    size_t len = b.len;
    char *text = e == 0 ? buf_steal(&b) : NULL;
    buf_free(&b);
    if (!text)
        return reply(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot render the metrics\n");
    struct MHD_Response *r = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", METRICS_CONTENT_TYPE);
    enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **req_cls)
{
    (void)version;
    (void)upload_data;
    (void)upload_data_size;
    (void)req_cls;
    struct http_server *s = cls;
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n");
    struct health_answer a;
    if (s->health && (strcmp(url, "/healthz") == 0 || strcmp(url, "/livez") == 0)) {
        health_live(s->health, &a);
        return reply(c, a.code, a.text);
    }
    if (s->health && strcmp(url, "/readyz") == 0) {
        health_ready(s->health, &a);
        return reply(c, a.code, a.text);
    }
    if (s->metrics && strcmp(url, "/metrics") == 0)
        return reply_metrics(c, s->metrics);
    return reply(c, MHD_HTTP_NOT_FOUND, "not found\n");
}

static void say(char **ret_err, const char *fmt, const char *flag, const char *bind)
{
    if (ret_err && asprintf(ret_err, fmt, flag ? flag : "bind address", bind) < 0)
        *ret_err = NULL;
}

int http_server_start(const struct http_server_options *o, struct http_server **ret_server,
                      char **ret_err)
{
    *ret_server = NULL;
    struct sockaddr_storage addr;
    if (!o->bind || http_parse_bind(o->bind, &addr) < 0) {
        say(ret_err, "%s: \"%s\" is not host:port", o->flag, o->bind ? o->bind : "");
        return -EINVAL;
    }
    struct http_server *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->health = o->health;
    s->metrics = o->metrics;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
    if (addr.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    uint16_t port = addr.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&addr)->sin6_port)
                                               : ntohs(((struct sockaddr_in *)&addr)->sin_port);
    /* Requests are tiny: bound connections and their memory, and time out
     * idle ones. Responses are not counted in the connection's memory. */
    s->daemon = MHD_start_daemon(flags, port, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR,
                                 (struct sockaddr *)&addr, MHD_OPTION_CONNECTION_LIMIT,
                                 (unsigned)32, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10,
                                 MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)16384, MHD_OPTION_END);
    if (!s->daemon) {
        free(s);
        say(ret_err, "%s: cannot listen on %s", o->flag, o->bind);
        return -EADDRINUSE;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info && info->port ? info->port : port;
    /* The address as asked with the port as bound: with port 0 the log is
     * where a caller learns it. */
    char address[96];
    snprintf(address, sizeof(address), "%.*s:%d", (int)(strrchr(o->bind, ':') - o->bind), o->bind,
             s->port);
    log_info("serving", "routes",
             s->health && s->metrics ? "health probes and metrics"
                                     : (s->health ? "health probes" : "metrics"),
             "address", address, "flag", o->flag ? o->flag : "");
    *ret_server = s;
    return 0;
}

int http_server_port(const struct http_server *s)
{
    return s->port;
}

void http_server_stop(struct http_server *s)
{
    if (!s)
        return;
    MHD_stop_daemon(s->daemon);
    free(s);
}

static int off(const char *bind)
{
    return !bind || strcmp(bind, "0") == 0;
}

/* Two addresses that name the same port; port 0 (the kernel's choice)
 * twice is two ports. */
static int same_address(const char *a, const char *b)
{
    struct sockaddr_storage x, y;
    if (http_parse_bind(a, &x) < 0 || http_parse_bind(b, &y) < 0 || x.ss_family != y.ss_family)
        return 0;
    if (x.ss_family == AF_INET6) {
        const struct sockaddr_in6 *x6 = (struct sockaddr_in6 *)&x, *y6 = (struct sockaddr_in6 *)&y;
        return x6->sin6_port && x6->sin6_port == y6->sin6_port &&
               memcmp(&x6->sin6_addr, &y6->sin6_addr, sizeof(x6->sin6_addr)) == 0;
    }
    const struct sockaddr_in *x4 = (struct sockaddr_in *)&x, *y4 = (struct sockaddr_in *)&y;
    return x4->sin_port && x4->sin_port == y4->sin_port &&
           x4->sin_addr.s_addr == y4->sin_addr.s_addr;
}

int http_servers_start(const char *health_bind, struct health_state *health,
                       const char *metrics_bind, struct metrics_registry *metrics,
                       struct http_server *ret_servers[2], char **ret_err)
{
    ret_servers[0] = ret_servers[1] = NULL;
    struct http_server_options h = {health_bind, "--health-probe-bind-address", health, NULL};
    struct http_server_options m = {metrics_bind, "--metrics-bind-address", NULL, metrics};
    int e = 0;
    if (!off(health_bind) && !off(metrics_bind) && same_address(health_bind, metrics_bind)) {
        h.metrics = metrics;
        return http_server_start(&h, &ret_servers[0], ret_err);
    }
    if (!off(health_bind))
        e = http_server_start(&h, &ret_servers[0], ret_err);
    if (e == 0 && !off(metrics_bind))
        e = http_server_start(&m, &ret_servers[1], ret_err);
    if (e < 0) {
        http_server_stop(ret_servers[0]);
        ret_servers[0] = NULL;
    }
    return e;
}
