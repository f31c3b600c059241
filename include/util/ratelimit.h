/*
 * token_bucket: an overall rate limit (client QPS/burst, work queue 10 qps /
 * burst 100), in client-go's "reserve" style: taking a token may put the
 * bucket in debt, and the caller waits the returned delay.
 *
 * Pure: the caller passes the time in milliseconds (any monotonic origin).
 * Ownership: a plain value type; no resources.
 */
#ifndef HIBERNATOR_UTIL_RATELIMIT_H
#define HIBERNATOR_UTIL_RATELIMIT_H

#include <stdint.h>

struct token_bucket {
    double rate;   /* tokens per second; <= 0 means unlimited */
    double burst;  /* bucket size */
    double tokens; /* may go negative: reserved future tokens */
    uint64_t last_ms;
};

void token_bucket_init(struct token_bucket *tb, double rate_per_s, int burst, uint64_t now_ms);

/* Reserves one token and returns how long to wait before using it (0: now). */
uint64_t token_bucket_reserve(struct token_bucket *tb, uint64_t now_ms);

#endif
