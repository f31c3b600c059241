/*
 * MUST_USE marks a function whose failure loses data (a buffer append, a
 * queue add, a request start): the compiler refuses a call that drops its
 * result, and a (void) cast does not silence it, so every caller decides.
 */
#ifndef HIBERNATOR_UTIL_MUST_USE_H
#define HIBERNATOR_UTIL_MUST_USE_H

#define MUST_USE __attribute__((warn_unused_result))

#endif
