#include "util/backoff.h"

#include <time.h>
#include <unistd.h>

void backoff_init(struct backoff *b, uint64_t initial_ms, uint64_t max_ms, double factor,
                  double jitter)
{
    b->initial_ms = initial_ms;
    b->max_ms = max_ms;
    b->factor = factor;
    b->jitter = jitter;
    b->next_ms = initial_ms;
}

/* Converts d to milliseconds, capped at max. The negated comparison also
 * catches NaN, whose conversion to an integer would be undefined. */
static uint64_t cap_ms(double d, uint64_t max)
{
    if (!(d < (double)max))
        return max;
    if (d <= 0.0)
        return 0;
    return (uint64_t)d;
}

uint64_t backoff_next(struct backoff *b, double u)
{
    uint64_t d = b->next_ms < b->max_ms ? b->next_ms : b->max_ms;
    double jitter = b->jitter;
    if (!(jitter > 0.0))
        jitter = 0.0;
    else if (jitter > 1.0)
        jitter = 1.0;
    if (!(u > 0.0))
        u = 0.0;
    else if (u >= 1.0)
        u = 0.999999999;

    uint64_t delay = cap_ms((double)d * (1.0 + jitter * u), b->max_ms);
    /* A factor below 1 would shrink the delay on every failure. */
    double factor = b->factor >= 1.0 ? b->factor : 1.0;
    b->next_ms = cap_ms((double)d * factor, b->max_ms);
    return delay;
}

void backoff_reset(struct backoff *b)
{
    b->next_ms = b->initial_ms;
}

/* splitmix64: small, fast and good enough for spreading retries; nothing
 * here needs unpredictability. */
static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

double backoff_random(void)
{
    static uint64_t state;
    static int seeded;

    if (!seeded) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        state = ((uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec) ^
                ((uint64_t)getpid() << 32);
        seeded = 1;
    }
    /* The top 53 bits fill a double's mantissa: uniform in [0, 1). */
    return (double)(splitmix64(&state) >> 11) * (1.0 / 9007199254740992.0);
}
