#include "node/archive_sweep.h"

#include <string.h>

static int digits(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return 0;
    return 1;
}

int archive_sweep_is_rfc3339(const char *s, size_t len)
{
    /* 2006-01-02T15:04:05 then Z or +hh:mm / -hh:mm */
    if (len != 20 && len != 25)
        return 0;
    if (!digits(s, 4) || s[4] != '-' || !digits(s + 5, 2) || s[7] != '-' || !digits(s + 8, 2) ||
        s[10] != 'T' || !digits(s + 11, 2) || s[13] != ':' || !digits(s + 14, 2) || s[16] != ':' ||
        !digits(s + 17, 2))
        return 0;
    if (len == 20)
        return s[19] == 'Z';
    return (s[19] == '+' || s[19] == '-') && digits(s + 20, 2) && s[22] == ':' && digits(s + 23, 2);
}

/* name is checkpoint-<pod>_<ns>-<container>-<time>.tar for c. */
static int names_container(const char *name, size_t len, const struct sweep_container *c)
{
    static const char head[] = "checkpoint-";
    size_t hl = sizeof(head) - 1, pl = strlen(c->pod), nl = strlen(c->ns),
           cl = strlen(c->container);
    size_t fixed = hl + pl + 1 + nl + 1 + cl + 1;
    if (len < fixed + 4 || strncmp(name, head, hl) != 0)
        return 0;
    const char *p = name + hl;
    if (strncmp(p, c->pod, pl) != 0 || p[pl] != '_')
        return 0;
    p += pl + 1;
    if (strncmp(p, c->ns, nl) != 0 || p[nl] != '-')
        return 0;
    p += nl + 1;
    if (strncmp(p, c->container, cl) != 0 || p[cl] != '-')
        return 0;
    p += cl + 1;
    size_t rest = len - (size_t)(p - name);
    return strcmp(name + len - 4, ".tar") == 0 && archive_sweep_is_rfc3339(p, rest - 4);
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

int archive_sweep_is_leftover(const char *name, int64_t mtime_ms, const struct sweep_rules *r)
{
    if (!name || strchr(name, '/') || mtime_ms >= r->cutoff_ms)
        return 0;
    size_t len = strlen(name);
    int ours = 0;
    for (size_t i = 0; i < r->n_containers && !ours; i++)
        ours = names_container(name, len, &r->containers[i]);
    if (!ours)
        return 0;
    for (size_t i = 0; i < r->n_busy; i++)
        if (names_container(name, len, &r->busy[i]))
            return 0;
    for (size_t i = 0; i < r->n_recorded; i++)
        if (r->recorded[i] && strcmp(base_name(r->recorded[i]), name) == 0)
            return 0;
    return 1;
}
