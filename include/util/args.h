/*
 * args: what both command lines (the controller's and kubectl-workspace's)
 * need around getopt_long(3) besides the option table.
 *
 * getopt_long keeps its state in globals (optind, optarg, optopt, opterr), so
 * a parser that uses it is not reentrant: call it from one thread, and start
 * each parse with args_getopt_reset() so that a second parse in the same
 * process (the unit tests parse many command lines) starts from argv[1].
 *
 * Ownership: everything returned points into the caller's argv.
 */
#ifndef HIBERNATOR_UTIL_ARGS_H
#define HIBERNATOR_UTIL_ARGS_H

#include <stdbool.h>

/* Starts a new scan: optind = 0 (glibc's and musl's way of resetting what
 * they keep between calls, such as the position inside "-abc") and
 * opterr = 0 (the parser writes its own messages). */
void args_getopt_reset(void);

/* The argv element that holds the option getopt_long() has just returned,
 * given the optind and optarg it left: argv[optind - 2] when the value was
 * the next element ("--timeout 90s"), else argv[optind - 1] ("--wait",
 * "--timeout=90s", "-nteam"). Only for options that take the rest of their
 * element (every option with a value, required or optional). */
const char *args_element(char *const *argv, int optind, const char *optarg);

/* Whether element spells the long option name in full: "--name" or
 * "--name=...". getopt_long() also accepts unambiguous prefixes ("--time"
 * for "--timeout"); the parsers refuse them so that adding a flag never
 * changes what an existing command line means. */
bool args_long_exact(const char *element, const char *name);

#endif
