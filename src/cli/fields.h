/*
 * fields: reading an API object other than a Workspace (an Event, a Pod, a
 * WorkspaceClass's port) as the API server sent it, by dotted path:
 * fields_str(ev, "involvedObject.name"). Workspaces are read with the
 * controller's own decoder (workspace_decode_lenient(), workspace.h), never
 * by path.
 *
 * Every getter returns its "absent" value (NULL, 0) for a missing field or
 * one of the wrong type.
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

#endif
