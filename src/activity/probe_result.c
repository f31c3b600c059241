#include "activity/probe_result.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util/text.h"

static void copy_bounded(char *dst, size_t size, const char *src)
{
    snprintf(dst, size, "%s", src ? src : "");
}

void probe_result_init(struct probe_result *r, const char *source)
{
    memset(r, 0, sizeof(*r));
    r->ok = 1;
    r->n_kernels = -1;
    copy_bounded(r->source, sizeof(r->source), source);
}

void probe_result_fail(struct probe_result *r, const char *source, const char *fmt, ...)
{
    va_list ap;
    int n;

    probe_result_init(r, source);
    r->ok = 0;
    n = snprintf(r->error, sizeof(r->error), "%s: ", r->source[0] ? r->source : "probe");
    if (n < 0 || (size_t)n >= sizeof(r->error))
        return;
    va_start(ap, fmt);
    vsnprintf(r->error + n, sizeof(r->error) - (size_t)n, fmt, ap);
    va_end(ap);
}

/* Appends s to the NUL-terminated string in dst[size], cutting it to fit. */
static void append_bounded(char *dst, size_t size, const char *s)
{
    size_t used = strnlen(dst, size);
    size_t n = strnlen(s, size);

    if (used + 1 >= size)
        return;
    if (n > size - 1 - used)
        n = size - 1 - used;
    memcpy(dst + used, s, n);
    dst[used + n] = '\0';
}

static void append_error(struct probe_result *dst, const char *error)
{
    if (dst->error[0])
        append_bounded(dst->error, sizeof(dst->error), "; ");
    append_bounded(dst->error, sizeof(dst->error), error[0] ? error : "probe failed");
}

/* True when name appears as one of the '+'-separated words of list. */
static int source_listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    const char *p = list;

    while (*p) {
        const char *end = strchr(p, '+');
        size_t w = end ? (size_t)(end - p) : strlen(p);
        if (w == n && strncmp(p, name, n) == 0)
            return 1;
        if (!end)
            break;
        p = end + 1;
    }
    return 0;
}

static void append_source(struct probe_result *dst, const char *source)
{
    size_t used = strlen(dst->source);
    if (!source[0] || source_listed(dst->source, source))
        return;
    /* Only whole names: a cut name would read as a different source. */
    if (used + 1 + strlen(source) >= sizeof(dst->source))
        return;
    if (used)
        append_bounded(dst->source, sizeof(dst->source), "+");
    append_bounded(dst->source, sizeof(dst->source), source);
}

void probe_result_merge(struct probe_result *dst, const struct probe_result *src)
{
    if (!dst->source[0] && !dst->ok && !dst->error[0]) {
        *dst = *src;
        return;
    }

    if (!src->ok) {
        dst->ok = 0;
        append_error(dst, src->error);
    }
    dst->busy = dst->busy || src->busy;
    if (src->last_activity_ms > dst->last_activity_ms)
        dst->last_activity_ms = src->last_activity_ms;
    if (src->connections > 0)
        dst->connections = src->connections > INT_MAX - dst->connections
                               ? INT_MAX
                               : dst->connections + src->connections;
    if (src->gpu_utilisation > dst->gpu_utilisation)
        dst->gpu_utilisation = src->gpu_utilisation;
    dst->no_data = dst->no_data || src->no_data;
    if (src->app_started_ms)
        dst->app_started_ms = src->app_started_ms;
    if (src->n_kernels >= 0) {
        memcpy(dst->kernels, src->kernels, sizeof(dst->kernels));
        dst->n_kernels = src->n_kernels;
    }
    append_source(dst, src->source);
}

int probe_parse_json(const char *body, size_t len, const char *source, const char *endpoint,
                     struct probe_result *r, cJSON **ret_root)
{
    const char *end = NULL;
    cJSON *root;
    char excerpt[TEXT_EXCERPT_SIZE(PROBE_EXCERPT_MAX)];

    if (len > PROBE_BODY_MAX) {
        probe_result_fail(r, source, "%s: response of %zu bytes exceeds the %d byte limit",
                          endpoint, len, PROBE_BODY_MAX);
        return -EMSGSIZE;
    }
    if (!body || len == 0) {
        probe_result_fail(r, source, "%s: empty response", endpoint);
        return -EBADMSG;
    }

    root = cJSON_ParseWithLengthOpts(body, len, &end, 0);
    if (!root) {
        size_t at = end && end >= body && end <= body + len ? (size_t)(end - body) : 0;
        text_excerpt(body, len, PROBE_EXCERPT_MAX, excerpt, sizeof(excerpt));
        probe_result_fail(r, source, "%s: response is not JSON (error at byte %zu): \"%s\"",
                          endpoint, at, excerpt);
        return -EBADMSG;
    }
    /* cJSON stops after the first value; anything but whitespace after it
     * means the body is not the single document the endpoint sends. */
    for (const char *p = end; p && p < body + len; p++) {
        if (*p != ' ' && *p != '\t' && *p != '\r' && *p != '\n') {
            cJSON_Delete(root);
            probe_result_fail(r, source, "%s: trailing data after the JSON value at byte %zu",
                              endpoint, (size_t)(p - body));
            return -EBADMSG;
        }
    }
    *ret_root = root;
    return 0;
}
