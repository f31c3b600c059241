/*
 * yaml_json: the documents of a YAML file as cJSON values, for the tools and
 * tests that read the project's own manifests (CRDs, examples). Plain
 * scalars are typed the way Kubernetes reads them (true/false, null, integers
 * and decimals); quoted scalars are strings. Nesting deeper than 64 levels
 * is refused.
 *
 * Ownership: the returned array and everything in it belong to the caller
 * (cJSON_Delete()); *ret_err is malloc'd and the caller frees it.
 */
#ifndef HIBERNATOR_TESTS_YAML_JSON_H
#define HIBERNATOR_TESTS_YAML_JSON_H

#include <cjson/cJSON.h>

/* Reads every document of the file at path into a cJSON array (empty
 * documents are skipped). Returns the array, or NULL with *ret_err saying
 * where and why ("deploy/crds/x.yaml:12:3: mapping values are not allowed"). */
cJSON *yaml_json_load_file(const char *path, char **ret_err);

/* The same for text in memory; name is used in messages. */
cJSON *yaml_json_load_string(const char *text, size_t len, const char *name, char **ret_err);

#endif
