/*
 * list: the table of `kubectl workspace list`.
 *
 *   NAME  STATE  IDLE  ACCELERATOR  SNAPSHOT  RESTORED  AGE
 *
 * IDLE is how long a running workspace has been idle (status.activity.
 * idleSince); ACCELERATOR the GPU product, else the resource name;
 * SNAPSHOT the age of the last pause's snapshot once Ready (else its
 * phase); RESTORED where the last resume came back from (lastResume.
 * restoredFrom; Restoring while that is not known yet); AGE the object's.
 * "-" stands for nothing to show. With all namespaces a NAMESPACE column
 * comes first. Rows are sorted by namespace, then name.
 *
 * The items are read with the controller's decoder, leniently
 * (workspace_decode_lenient()): a workspace the controller refuses is
 * listed with what could be read, and a "Not read:" section below the
 * table names each field that could not be ("ns/name: spec.paused: must be
 * true or false"). An item that is not a JSON object is left out.
 *
 * Pure: the list and "now" are arguments.
 */
#ifndef HIBERNATOR_CLI_LIST_H
#define HIBERNATOR_CLI_LIST_H

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>

/* Prints the table of a WorkspaceList object. Returns the number of rows,
 * or -ENOMEM. Prints nothing for an empty list. */
int list_print(const cJSON *list, int with_namespace, int64_t now_ms, FILE *out);

#endif
