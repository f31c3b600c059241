#include "util/ratelimit.h"

#include <math.h>

void token_bucket_init(struct token_bucket *tb, double rate_per_s, int burst, uint64_t now_ms)
{
    tb->rate = rate_per_s;
    tb->burst = burst > 0 ? (double)burst : 0.0;
    tb->tokens = tb->burst;
    tb->last_ms = now_ms;
}

uint64_t token_bucket_reserve(struct token_bucket *tb, uint64_t now_ms)
{
    if (!(tb->rate > 0.0))
        return 0;

    /* A clock that steps back refills nothing rather than draining. */
    if (now_ms > tb->last_ms) {
        tb->tokens += (double)(now_ms - tb->last_ms) * tb->rate / 1000.0;
        if (tb->tokens > tb->burst)
            tb->tokens = tb->burst;
        tb->last_ms = now_ms;
    }

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
