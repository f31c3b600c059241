#include "yaml_json.h"

#include <errno.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

/* The project's manifests nest a dozen levels at most. */
#define MAX_DEPTH 64
/* Larger than any manifest of the project. */
#define MAX_FILE_BYTES (4 * 1024 * 1024)

static char *error_text(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *error_text(const char *fmt, ...)
{
    char *s = NULL;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&s, fmt, ap) < 0)
        s = NULL;
    va_end(ap);
    return s;
}

static int matches(const char *pattern, const char *s)
{
    regex_t re;
    if (regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB) != 0)
        return 0;
    int ok = regexec(&re, s, 0, NULL, 0) == 0;
    regfree(&re);
    return ok;
}

/* A plain scalar as Kubernetes' YAML reader types it. */
static cJSON *plain_scalar(const char *s)
{
    if (!*s || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 || strcmp(s, "Null") == 0 ||
        strcmp(s, "NULL") == 0)
        return cJSON_CreateNull();
    if (strcmp(s, "true") == 0 || strcmp(s, "True") == 0 || strcmp(s, "TRUE") == 0)
        return cJSON_CreateTrue();
    if (strcmp(s, "false") == 0 || strcmp(s, "False") == 0 || strcmp(s, "FALSE") == 0)
        return cJSON_CreateFalse();
    if (matches("^[-+]?([0-9]+|[0-9]+\\.[0-9]*|\\.[0-9]+)([eE][-+]?[0-9]+)?$", s))
        return cJSON_CreateNumber(strtod(s, NULL));
    return cJSON_CreateString(s);
}

struct loader {
    yaml_document_t *doc;
    const char *name;
    char *err;
};

static cJSON *convert(struct loader *l, yaml_node_t *n, int depth)
{
    if (!n) {
        l->err = error_text("%s: a node is missing", l->name);
        return NULL;
    }
    if (depth > MAX_DEPTH) {
        l->err = error_text("%s:%zu: nested deeper than %d levels", l->name, n->start_mark.line + 1,
                            MAX_DEPTH);
        return NULL;
    }
    switch (n->type) {
    case YAML_SCALAR_NODE: {
        const char *s = (const char *)n->data.scalar.value;
        cJSON *v = n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE ? plain_scalar(s)
                                                                   : cJSON_CreateString(s);
        if (!v)
            l->err = error_text("%s: out of memory", l->name);
        return v;
    }
    case YAML_SEQUENCE_NODE: {
        cJSON *arr = cJSON_CreateArray();
        if (!arr) {
            l->err = error_text("%s: out of memory", l->name);
            return NULL;
        }
        for (yaml_node_item_t *i = n->data.sequence.items.start; i < n->data.sequence.items.top;
             i++) {
            cJSON *item = convert(l, yaml_document_get_node(l->doc, *i), depth + 1);
            if (!item || !cJSON_AddItemToArray(arr, item)) {
                cJSON_Delete(item);
                cJSON_Delete(arr);
                if (!l->err)
                    l->err = error_text("%s: out of memory", l->name);
                return NULL;
            }
        }
        return arr;
    }
    case YAML_MAPPING_NODE: {
        cJSON *obj = cJSON_CreateObject();
        if (!obj) {
            l->err = error_text("%s: out of memory", l->name);
            return NULL;
        }
        for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top;
             p++) {
            yaml_node_t *k = yaml_document_get_node(l->doc, p->key);
            if (!k || k->type != YAML_SCALAR_NODE) {
                l->err = error_text("%s:%zu: a mapping key that is not a scalar", l->name,
                                    n->start_mark.line + 1);
                cJSON_Delete(obj);
                return NULL;
            }
            const char *key = (const char *)k->data.scalar.value;
            if (cJSON_GetObjectItemCaseSensitive(obj, key)) {
                l->err = error_text("%s:%zu: key \"%s\" appears twice", l->name,
                                    k->start_mark.line + 1, key);
                cJSON_Delete(obj);
                return NULL;
            }
            cJSON *v = convert(l, yaml_document_get_node(l->doc, p->value), depth + 1);
            if (!v || !cJSON_AddItemToObject(obj, key, v)) {
                cJSON_Delete(v);
                cJSON_Delete(obj);
                if (!l->err)
                    l->err = error_text("%s: out of memory", l->name);
                return NULL;
            }
        }
        return obj;
    }
    case YAML_NO_NODE:
        break;
    }
    l->err = error_text("%s: an empty node", l->name);
    return NULL;
}

cJSON *yaml_json_load_string(const char *text, size_t len, const char *name, char **ret_err)
{
    yaml_parser_t parser;
    cJSON *docs = cJSON_CreateArray();
    *ret_err = NULL;
    if (!docs || !yaml_parser_initialize(&parser)) {
        cJSON_Delete(docs);
        *ret_err = error_text("%s: out of memory", name);
        return NULL;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    for (;;) {
        yaml_document_t doc;
        if (!yaml_parser_load(&parser, &doc)) {
            *ret_err = error_text("%s:%zu:%zu: %s", name, parser.problem_mark.line + 1,
                                  parser.problem_mark.column + 1,
                                  parser.problem ? parser.problem : "not YAML");
            break;
        }
        yaml_node_t *root = yaml_document_get_root_node(&doc);
        if (!root) { /* the end of the stream */
            yaml_document_delete(&doc);
            yaml_parser_delete(&parser);
            return docs;
        }
        struct loader l = {.doc = &doc, .name = name};
        cJSON *v = convert(&l, root, 0);
        yaml_document_delete(&doc);
        if (!v) {
            *ret_err = l.err;
            break;
        }
        if (cJSON_IsNull(v)) {
            cJSON_Delete(v);
            continue;
        }
        if (!cJSON_AddItemToArray(docs, v)) {
            cJSON_Delete(v);
            *ret_err = error_text("%s: out of memory", name);
            break;
        }
    }
    yaml_parser_delete(&parser);
    cJSON_Delete(docs);
    return NULL;
}

cJSON *yaml_json_load_file(const char *path, char **ret_err)
{
    *ret_err = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        *ret_err = error_text("%s: %s", path, strerror(errno));
        return NULL;
    }
    char *text = malloc(MAX_FILE_BYTES + 1);
    size_t len = text ? fread(text, 1, MAX_FILE_BYTES + 1, f) : 0;
    int read_error = ferror(f);
    fclose(f);
    if (!text || read_error || len > MAX_FILE_BYTES) {
        *ret_err = error_text("%s: %s", path,
                              !text        ? "out of memory"
                              : read_error ? "cannot be read"
                                           : "larger than 4 MiB");
        free(text);
        return NULL;
    }
    cJSON *docs = yaml_json_load_string(text, len, path, ret_err);
    free(text);
    return docs;
}
