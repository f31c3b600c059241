#include "util/buf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void buf_init(struct buf *b, size_t max)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->max = max;
}

static int buf_reserve(struct buf *b, size_t extra)
{
    if (extra > b->max || b->len > b->max - extra)
        return -ENOBUFS;
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    if (cap > b->max + 1)
        cap = b->max + 1;
    char *p = realloc(b->data, cap);
    if (!p)
        return -ENOMEM;
    b->data = p;
    b->cap = cap;
    return 0;
}

int buf_append(struct buf *b, const void *p, size_t n)
{
    if (n == 0)
        return 0;
    int r = buf_reserve(b, n);
    if (r < 0)
        return r;
    memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int buf_append_str(struct buf *b, const char *s)
{
    return buf_append(b, s, strlen(s));
}

int buf_printf(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return -EINVAL;
    int r = buf_reserve(b, (size_t)n);
    if (r < 0)
        return r;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return 0;
}

void buf_consume(struct buf *b, size_t n)
{
    if (n >= b->len) {
        buf_reset(b);
        return;
    }
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
    b->data[b->len] = '\0';
}

int buf_append_escaped(struct buf *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        int plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                    (*p >= '0' && *p <= '9') || *p == '-' || *p == '.' || *p == '_' || *p == '~';
        char enc[3] = {'%', hex[*p >> 4], hex[*p & 15]};
        int r = plain ? buf_append(b, p, 1) : buf_append(b, enc, 3);
        if (r < 0)
            return r;
    }
    return 0;
}

void buf_truncate(struct buf *b, size_t n)
{
    if (n < b->len) {
        b->len = n;
        b->data[n] = '\0';
    }
}

void buf_reset(struct buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

const char *buf_str(const struct buf *b)
{
    return b->data ? b->data : "";
}

char *buf_steal(struct buf *b)
{
    char *p = b->data ? b->data : strdup("");
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    return p;
}

void buf_free(struct buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}
