#include "server/health.h"

#include <stdio.h>
#include <time.h>

/* The loop beats every second; a few missed beats mean it is stuck. */
#define HEARTBEAT_STALE_MS 10000

int64_t health_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void answer(struct health_answer *a, unsigned code, const char *text)
{
    a->code = code;
    snprintf(a->text, sizeof(a->text), "%s", text);
}

void health_live(const struct health_state *s, struct health_answer *ret)
{
    int64_t age = health_now_ms() - atomic_load(&s->heartbeat_ms);
    if (age > HEARTBEAT_STALE_MS) {
        ret->code = 500;
        snprintf(ret->text, sizeof(ret->text), "event loop stuck: no heartbeat for %lld ms\n",
                 (long long)age);
        return;
    }
    answer(ret, 200, "ok\n");
}

void health_ready(const struct health_state *s, struct health_answer *ret)
{
    int leading = atomic_load(&s->leading);
    int synced = atomic_load(&s->synced);
    if (!leading && atomic_load(&s->electing) && !atomic_load(&s->lease_read))
        answer(ret, 503, "not ready: standby, the Lease cannot be read\n");
    else if (!leading && atomic_load(&s->electing))
        answer(ret, 200, "ok: standby, waiting for leadership\n");
    else if (!synced)
        answer(ret, 503, "not ready: caches not synced yet\n");
    else
        answer(ret, 200, leading ? "ok: leader, caches synced\n" : "ok: caches synced\n");
}
