#include "controller/pods_seen.h"

#include <string.h>

/* Lower ranks first (include/controller/pods_seen.h). */
static int rank(const struct pods_seen *s, const struct workspace_pod *p)
{
    if (s->named && p->name && strcmp(p->name, s->named) == 0)
        return 0;
    if (p->deletion_ms)
        return 3;
    if (p->phase && (strcmp(p->phase, "Succeeded") == 0 || strcmp(p->phase, "Failed") == 0))
        return 2;
    return 1;
}

/* Whether a comes before b: its rank, then its name, so the same pods are
 * picked on every pass whatever order the cache hands them out in. */
static int before(const struct pods_seen *s, const struct workspace_pod *a,
                  const struct workspace_pod *b)
{
    int ra = rank(s, a), rb = rank(s, b);
    if (ra != rb)
        return ra < rb;
    return strcmp(a->name ? a->name : "", b->name ? b->name : "") < 0;
}

void pods_seen_init(struct pods_seen *s, const char *named)
{
    memset(s, 0, sizeof(*s));
    s->named = named;
}

void pods_seen_offer(struct pods_seen *s, const struct workspace_pod *p)
{
    if (!p)
        return;
    s->n_offered++;
    if (s->n < PODS_SEEN_MAX) {
        s->pods[s->n++] = p;
        return;
    }
    size_t worst = 0;
    for (size_t i = 1; i < s->n; i++)
        if (before(s, s->pods[worst], s->pods[i]))
            worst = i;
    if (before(s, p, s->pods[worst]))
        s->pods[worst] = p;
}

size_t pods_seen_left_out(const struct pods_seen *s)
{
    return s->n_offered - s->n;
}
