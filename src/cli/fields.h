/*
 * fields: reading a Workspace (or any API object) as the API server sent
 * it, by dotted path: fields_str(ws, "status.lastResume.restoredFrom").
 *
 * The plugin reads the JSON it gets rather than the controller's decoded
 * struct, so that it shows whatever a newer or older controller wrote and
 * tolerates what is missing: every getter returns its "absent" value (NULL,
 * 0) for a missing field or one of the wrong type.
 *
 * Ownership: returned strings and nodes point into the object.
 */
#ifndef HIBERNATOR_CLI_FIELDS_H
#define HIBERNATOR_CLI_FIELDS_H

#include <cjson/cJSON.h>
#include <stdint.h>

/* The node at path ("a.b.c"; a path segment has at most 63 characters), or NULL. */
const cJSON *fields_at(const cJSON *obj, const char *path);
const char *fields_str(const cJSON *obj, const char *path);
/* A finite number, else 0; has says whether one was there. */
double fields_num(const cJSON *obj, const char *path);
int fields_has_num(const cJSON *obj, const char *path);
/* An RFC 3339 time in Unix ms, 0 when absent or unreadable. */
int64_t fields_time(const cJSON *obj, const char *path);
/* true when the field is the JSON literal true. */
int fields_true(const cJSON *obj, const char *path);

/* A condition of status.conditions by type, or NULL. */
const cJSON *fields_condition(const cJSON *obj, const char *type);

#endif
