/*
 * backoff: exponential delays with jitter, for reconnects and retries.
 *
 * Pure: the caller passes the random number, so tests are exact.
 * Ownership: a plain value type; no resources.
 */
#ifndef HIBERNATOR_UTIL_BACKOFF_H
#define HIBERNATOR_UTIL_BACKOFF_H

#include <stdint.h>

struct backoff {
    uint64_t initial_ms;
    uint64_t max_ms;
    double factor;    /* growth per step, e.g. 2.0 */
    double jitter;    /* 0.0 .. 1.0: delay is d * (1 + jitter * u), u in [0,1) */
    uint64_t next_ms; /* the un-jittered delay the next call returns */
};

/* Sets the fields as given (no check: backoff_next() reads a factor below 1
 * as 1 and clamps jitter to 0..1); the next delay is initial_ms. */
void backoff_init(struct backoff *b, uint64_t initial_ms, uint64_t max_ms, double factor,
                  double jitter);

/* Returns the delay to wait now and grows the next one (capped at max_ms,
 * the jittered value is capped too). u is a random number in [0, 1). */
uint64_t backoff_next(struct backoff *b, double u);

/* Back to the initial delay, after a success. */
void backoff_reset(struct backoff *b);

/* A uniform random number in [0, 1) from the process's generator (seeded once
 * from the clock and pid); for callers that do not need determinism. */
double backoff_random(void);

#endif
