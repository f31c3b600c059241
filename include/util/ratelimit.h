/*
 * token_bucket: an overall rate limit (work queue 10 qps / burst 100), in
 * client-go's "reserve" style: taking a token may put the bucket in debt,
 * and the caller waits the returned delay.
 *
 * priority_bucket: a token bucket shared by classes of requests (the API
 * client's QPS/burst). A request takes its token when it may be sent, not
 * when it is queued, so a more urgent class that arrives later still goes
 * first. See priority_bucket_next().
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

/* A bucket of burst tokens (none when burst < 1), full at now_ms, refilling
 * at rate_per_s tokens a second (<= 0: unlimited, never a wait). */
void token_bucket_init(struct token_bucket *tb, double rate_per_s, int burst, uint64_t now_ms);

/* Reserves one token and returns how long to wait before using it (0: now). */
uint64_t token_bucket_reserve(struct token_bucket *tb, uint64_t now_ms);

/* Classes of a priority_bucket, the most urgent first. */
#define PRIORITY_BUCKET_CLASSES 3

struct priority_bucket {
    struct token_bucket tb; /* never in debt */
    /* Tokens class c leaves in the bucket for the classes above it. */
    double keep[PRIORITY_BUCKET_CLASSES];
};

/* rate <= 0: unlimited. burst < 1 counts as 1. Class 0 may take every token,
 * class 1 leaves a quarter of the burst, class 2 half (each rounded down and
 * at most burst - 1, so every class can send at some point). */
void priority_bucket_init(struct priority_bucket *pb, double rate_per_s, int burst,
                          uint64_t now_ms);

/* waiting: bit (1u << c) set for each class c with requests waiting.
 * Returns the class whose next request may be sent now (its token is taken),
 * or -1 when none may: then *ret_wait_ms is how long until the most urgent
 * waiting class may (UINT64_MAX when nothing waits). Classes are strict: while
 * a class waits for a token, no less urgent class is sent. */
int priority_bucket_next(struct priority_bucket *pb, unsigned waiting, uint64_t now_ms,
                         uint64_t *ret_wait_ms);

#endif
