/*
 * notes: the lines a report adds under its table (what was left out, where
 * a figure came from), and the number format of its JSON. Shared by
 * report and what-if.
 *
 * Ownership: the notes array and its strings are the caller's; free each
 * string and the array.
 */
#ifndef HIBERNATOR_CLI_NOTES_H
#define HIBERNATOR_CLI_NOTES_H

#include <cjson/cJSON.h>
#include <stddef.h>

/* Appends a formatted line to *notes (*n of them). Returns 0 or -ENOMEM
 * (nothing appended). */
int cli_note_add(char ***notes, size_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Adds k: v rounded to a multiple of unit, or null when v is NaN. Returns
 * 1, or 0 when out of memory. */
int cli_json_number(cJSON *o, const char *k, double v, double unit);

#endif
