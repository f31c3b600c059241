#include "activity/url_template.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"

static int fail(char **ret_err, const char *fmt, const char *arg, int len)
{
    if (ret_err && asprintf(ret_err, fmt, len, arg) < 0)
        *ret_err = NULL;
    return -EINVAL;
}

int url_template_expand(const char *tpl, const struct template_vars *v, char **ret, char **ret_err)
{
    struct buf b;
    buf_init(&b, URL_TEMPLATE_MAX);
    char port[16];
    snprintf(port, sizeof(port), "%d", v->port);
    int r = 0;
    for (const char *p = tpl; *p && r == 0;) {
        if (*p != '{') {
            const char *next = strchr(p, '{');
            size_t n = next ? (size_t)(next - p) : strlen(p);
            r = buf_append(&b, p, n);
            p += n;
            continue;
        }
        /* A placeholder is a name in braces. Any other brace is text: PromQL
         * writes label matchers in braces (metric{pod="{pod}"}). */
        size_t name = 0;
        while (isalnum((unsigned char)p[1 + name]) || p[1 + name] == '_')
            name++;
        if (name == 0 || p[1 + name] != '}') {
            if (!strchr(p, '}')) {
                r = fail(ret_err, "unclosed placeholder \"%.*s\"", p, (int)strnlen(p, 32));
                break;
            }
            r = buf_append(&b, "{", 1);
            p++;
            continue;
        }
        const char *close = p + 1 + name;
        size_t n = (size_t)(close - p + 1);
        const char *value = NULL;
        int bracket = 0;
        if (n == 7 && strncmp(p, "{podIP}", n) == 0) {
            if (!v->pod_ip || !v->pod_ip[0]) {
                r = -EAGAIN;
                break;
            }
            value = v->pod_ip;
            bracket = strchr(value, ':') != NULL;
        } else if (n == 6 && strncmp(p, "{port}", n) == 0) {
            value = port;
        } else if (n == 11 && strncmp(p, "{namespace}", n) == 0) {
            value = v->ns;
        } else if (n == 11 && strncmp(p, "{workspace}", n) == 0) {
            value = v->workspace;
        } else if (n == 5 && strncmp(p, "{pod}", n) == 0) {
            value = v->pod;
        } else {
            r = fail(ret_err, "unknown placeholder \"%.*s\"", p, (int)(n > 64 ? 64 : n));
            break;
        }
        if (!value)
            value = "";
        if (bracket)
            r = buf_append(&b, "[", 1);
        if (r == 0)
            r = buf_append(&b, value, strlen(value));
        if (r == 0 && bracket)
            r = buf_append(&b, "]", 1);
        p = close + 1;
    }
    if (r == -ENOBUFS) {
        if (ret_err &&
            asprintf(ret_err, "longer than %d bytes once filled in", URL_TEMPLATE_MAX) < 0)
            *ret_err = NULL;
        r = -EINVAL;
    }
    if (r < 0) {
        buf_free(&b);
        return r;
    }
    *ret = buf_steal(&b);
    return *ret ? 0 : -ENOMEM;
}
