#include "server/health.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

/* The loop beats every second; a few missed beats mean it is stuck. */
#define HEARTBEAT_STALE_MS 10000

struct health_server {
    struct MHD_Daemon *daemon;
    struct health_state *state;
};

int64_t health_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int health_parse_bind(const char *bind, struct sockaddr_storage *ret)
{
    const char *colon = strrchr(bind, ':');
    if (!colon || !colon[1])
        return -EINVAL;
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || port < 1 || port > 65535)
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

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **req_cls)
{
    (void)version;
    (void)upload_data;
    (void)upload_data_size;
    (void)req_cls;
    struct health_server *s = cls;
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n");
    if (strcmp(url, "/healthz") == 0 || strcmp(url, "/livez") == 0) {
        int64_t age = health_now_ms() - atomic_load(&s->state->heartbeat_ms);
        if (age > HEARTBEAT_STALE_MS) {
            char text[96];
            snprintf(text, sizeof(text), "event loop stuck: no heartbeat for %lld ms\n",
                     (long long)age);
            return reply(c, MHD_HTTP_INTERNAL_SERVER_ERROR, text);
        }
        return reply(c, MHD_HTTP_OK, "ok\n");
    }
    if (strcmp(url, "/readyz") == 0) {
        int leading = atomic_load(&s->state->leading);
        int synced = atomic_load(&s->state->synced);
        if (!leading && atomic_load(&s->state->electing))
            return reply(c, MHD_HTTP_OK, "ok: standby, waiting for leadership\n");
        if (!synced)
            return reply(c, MHD_HTTP_SERVICE_UNAVAILABLE, "not ready: caches not synced yet\n");
        return reply(c, MHD_HTTP_OK,
                     leading ? "ok: leader, caches synced\n" : "ok: caches synced\n");
    }
    return reply(c, MHD_HTTP_NOT_FOUND, "not found\n");
}

int health_server_start(const char *bind, struct health_state *state,
                        struct health_server **ret_server, char **ret_err)
{
    *ret_server = NULL;
    if (!bind || strcmp(bind, "0") == 0)
        return 0;
    struct sockaddr_storage addr;
    if (health_parse_bind(bind, &addr) < 0) {
        if (ret_err &&
            asprintf(ret_err, "--health-probe-bind-address: \"%s\" is not host:port", bind) < 0)
            *ret_err = NULL;
        return -EINVAL;
    }
    struct health_server *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->state = state;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
    if (addr.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    uint16_t port = addr.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&addr)->sin6_port)
                                               : ntohs(((struct sockaddr_in *)&addr)->sin_port);
    /* Probes are tiny: bound connections and their memory, and time out idle ones. */
    s->daemon = MHD_start_daemon(flags, port, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR,
                                 (struct sockaddr *)&addr, MHD_OPTION_CONNECTION_LIMIT,
                                 (unsigned)32, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10,
                                 MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)16384, MHD_OPTION_END);
    if (!s->daemon) {
        free(s);
        if (ret_err &&
            asprintf(ret_err, "--health-probe-bind-address: cannot listen on %s", bind) < 0)
            *ret_err = NULL;
        return -EADDRINUSE;
    }
    *ret_server = s;
    return 0;
}

void health_server_stop(struct health_server *s)
{
    if (!s)
        return;
    MHD_stop_daemon(s->daemon);
    free(s);
}
