/*
 * json: reading fields of API objects (cJSON trees) without tripping over
 * missing or mistyped members. Every getter accepts NULL or a non-object and
 * then returns its "absent" value, so decoders read optional fields without
 * checking each level.
 *
 * Ownership: returned strings point into the tree; json_dup_optional()
 * returns a malloc'd copy owned by the caller.
 */
#ifndef HIBERNATOR_UTIL_JSON_H
#define HIBERNATOR_UTIL_JSON_H

#include <cjson/cJSON.h>
#include <stdint.h>

/* obj[name] when obj is an object, else NULL. */
const cJSON *json_member(const cJSON *obj, const char *name);

/* obj[name] as a string, or NULL. */
const char *json_string(const cJSON *obj, const char *name);

/* obj[name] as an integer; 0 when absent, not a whole number, or beyond the
 * range a double holds exactly (2^53). */
int64_t json_int(const cJSON *obj, const char *name);

/* obj[name] as a finite number, else 0. */
double json_double(const cJSON *obj, const char *name);

/* obj[name] as an RFC 3339 time in Unix ms; 0 when absent or unreadable. */
int64_t json_time_ms(const cJSON *obj, const char *name);

/* The uid of metadata's controlling owner reference (the one with
 * controller: true), or NULL. meta: an object's metadata. */
const char *json_controller_uid(const cJSON *meta);

/* *ret = a copy of s, or NULL when s is NULL. Returns 0 or -ENOMEM. */
int json_dup_optional(const char *s, char **ret);

#endif
