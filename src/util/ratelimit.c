#include "util/ratelimit.h"

#include <math.h>

void token_bucket_init(struct token_bucket *tb, double rate_per_s, int burst, uint64_t now_ms)
{
    tb->rate = rate_per_s;
    tb->burst = burst > 0 ? (double)burst : 0.0;
    tb->tokens = tb->burst;
    tb->last_ms = now_ms;
}

/* A clock that steps back refills nothing rather than draining. */
static void refill(struct token_bucket *tb, uint64_t now_ms)
{
    if (now_ms > tb->last_ms) {
        tb->tokens += (double)(now_ms - tb->last_ms) * tb->rate / 1000.0;
        if (tb->tokens > tb->burst)
            tb->tokens = tb->burst;
        tb->last_ms = now_ms;
    }
}

uint64_t token_bucket_reserve(struct token_bucket *tb, uint64_t now_ms)
{
    if (!(tb->rate > 0.0))
        return 0;

    refill(tb, now_ms);
    tb->tokens -= 1.0;
    if (tb->tokens >= 0.0)
        return 0;

    /* The debt is paid back at rate tokens per second. The small slack keeps
     * rounding noise in the accumulated tokens from adding a millisecond. */
    double wait_ms = ceil(-tb->tokens * 1000.0 / tb->rate - 1e-6);
    if (!(wait_ms < 1.8e19))
        return UINT64_MAX;
    return wait_ms > 0.0 ? (uint64_t)wait_ms : 0;
}

void priority_bucket_init(struct priority_bucket *pb, double rate_per_s, int burst, uint64_t now_ms)
{
    if (burst < 1)
        burst = 1;
    token_bucket_init(&pb->tb, rate_per_s, burst, now_ms);
    static const int quarters[PRIORITY_BUCKET_CLASSES] = {0, 1, 2};
    for (int c = 0; c < PRIORITY_BUCKET_CLASSES; c++) {
        double keep = floor((double)burst * quarters[c] / 4.0);
        pb->keep[c] = keep > burst - 1 ? burst - 1 : keep;
    }
}

int priority_bucket_next(struct priority_bucket *pb, unsigned waiting, uint64_t now_ms,
                         uint64_t *ret_wait_ms)
{
    *ret_wait_ms = UINT64_MAX;
    int c = 0;
    while (c < PRIORITY_BUCKET_CLASSES && !(waiting & (1u << c)))
        c++;
    if (c == PRIORITY_BUCKET_CLASSES)
        return -1;
    struct token_bucket *tb = &pb->tb;
    if (!(tb->rate > 0.0))
        return c;

    refill(tb, now_ms);
    /* The slack keeps rounding noise in the accumulated tokens from holding a
     * request back for another millisecond. */
    double need = pb->keep[c] + 1.0;
    if (tb->tokens >= need - 1e-6) {
        tb->tokens -= 1.0;
        return c;
    }
    /* Less urgent classes leave at least as much: none of them may go either. */
    double wait_ms = ceil((need - tb->tokens) * 1000.0 / tb->rate - 1e-6);
    if (wait_ms < 1.0)
        wait_ms = 1.0;
    *ret_wait_ms = wait_ms < 1.8e19 ? (uint64_t)wait_ms : UINT64_MAX;
    return -1;
}
