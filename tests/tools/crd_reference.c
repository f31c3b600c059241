/*
 * crd_reference: writes the API reference (docs/reference.md) from the
 * CustomResourceDefinitions, so that the reference is the schema the API
 * server enforces and nothing else.
 *
 *   crd_reference deploy/crds > docs/reference.md
 *
 * Arguments are CRD files or directories (their *.yaml files, in byte order
 * of the name). For each kind and version it walks openAPIV3Schema: one table
 * per object level (field path, type, required, default, constraints,
 * description) and the level's CEL rules (x-kubernetes-validations) with
 * their messages. The output depends only on the files: no dates, no paths
 * of the machine. tests/tools/update-reference.sh runs it;
 * tests/unit/test_reference.c fails when docs/reference.md differs from it.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "yaml_json.h"

#define MAX_FILES 64

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("crd_reference: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static void *checked(void *p)
{
    if (!p)
        die("out of memory");
    return p;
}

static const cJSON *member(const cJSON *o, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(o, key);
}

static const char *string_of(const cJSON *o, const char *key)
{
    const cJSON *v = member(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* ---- text ---- */

/* A growing string; every function dies rather than fail. */
struct text {
    char *s;
    size_t len, cap;
};

static void text_add(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void text_add(struct text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        die("cannot format text");
    if (t->len + (size_t)n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 64;
        while (cap < t->len + (size_t)n + 1)
            cap *= 2;
        t->s = checked(realloc(t->s, cap));
        t->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(t->s + t->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
}

static const char *text_str(const struct text *t)
{
    return t->s ? t->s : "";
}

/* Runs of white space (folded YAML, line breaks) become one space. */
static char *one_line(const char *s)
{
    char *out = checked(malloc(strlen(s) + 1)), *o = out;
    int space = 0;
    for (; *s; s++) {
        if (isspace((unsigned char)*s)) {
            space = o > out;
            continue;
        }
        if (space)
            *o++ = ' ';
        space = 0;
        *o++ = *s;
    }
    *o = '\0';
    return out;
}

/* Prose for a table cell: one line, '|' escaped, nothing a Markdown reader
 * would take for markup. */
static void add_prose(struct text *t, const char *s)
{
    char *line = one_line(s);
    for (const char *p = line; *p; p++) {
        switch (*p) {
        case '|':
            text_add(t, "\\|");
            break;
        case '*':
            text_add(t, "\\*");
            break;
        case '<':
            text_add(t, "&lt;");
            break;
        case '>':
            text_add(t, "&gt;");
            break;
        default:
            text_add(t, "%c", *p);
        }
    }
    free(line);
}

/* Code in a table cell: a code span on one line, '|' escaped (GitHub's
 * tables need that inside code spans too). */
static void add_code(struct text *t, const char *s)
{
    char *line = one_line(s);
    const char *fence = strchr(line, '`') ? "``" : "`";
    const char *pad = strchr(line, '`') ? " " : "";
    text_add(t, "%s%s", fence, pad);
    if (!*line)
        text_add(t, "\"\"");
    for (const char *p = line; *p; p++) {
        if (*p == '|')
            text_add(t, "\\|");
        else
            text_add(t, "%c", *p);
    }
    text_add(t, "%s%s", pad, fence);
    free(line);
}

/* "workspaceclass-v1alpha1-spec-tolerations": letters and digits, single
 * dashes between runs of anything else. */
static char *anchor(const char *kind, const char *version, const char *path)
{
    struct text raw = {0}, out = {0};
    text_add(&raw, "%s-%s-%s", kind, version, path);
    int dash = 0;
    for (const char *p = raw.s; *p; p++) {
        if (isalnum((unsigned char)*p)) {
            if (dash && out.len)
                text_add(&out, "-");
            dash = 0;
            text_add(&out, "%c", tolower((unsigned char)*p));
        } else {
            dash = 1;
        }
    }
    free(raw.s);
    return out.s ? out.s : checked(strdup(""));
}

/* ---- the schema ---- */

static int has_properties(const cJSON *schema)
{
    return cJSON_IsObject(member(schema, "properties"));
}

/* The schema of a field's own table, and its path, when the field is a
 * level of its own: an object with properties, a list of them, a map of
 * them. NULL otherwise. */
static const cJSON *level_of(const cJSON *field, const char *path, char **ret_path)
{
    const cJSON *items = member(field, "items");
    const cJSON *values = member(field, "additionalProperties");
    struct text p = {0};
    const cJSON *level = NULL;
    if (has_properties(field)) {
        text_add(&p, "%s", path);
        level = field;
    } else if (cJSON_IsObject(items) && has_properties(items)) {
        text_add(&p, "%s[]", path);
        level = items;
    } else if (cJSON_IsObject(values) && has_properties(values)) {
        text_add(&p, "%s.<key>", path);
        level = values;
    }
    *ret_path = p.s;
    return level;
}

static void add_type(struct text *t, const cJSON *s);

static void add_scalar_type(struct text *t, const cJSON *s)
{
    const char *type = string_of(s, "type");
    const char *format = string_of(s, "format");
    if (cJSON_IsTrue(member(s, "x-kubernetes-int-or-string")))
        text_add(t, "int-or-string");
    else if (cJSON_IsTrue(member(s, "x-kubernetes-preserve-unknown-fields")) && !type)
        text_add(t, "any");
    else
        text_add(t, "%s", type ? type : "any");
    if (format)
        text_add(t, " (%s)", format);
}

/* The type column; a level links to its table. */
static void add_type(struct text *t, const cJSON *s)
{
    const char *type = string_of(s, "type");
    const cJSON *items = member(s, "items");
    const cJSON *values = member(s, "additionalProperties");
    if (type && strcmp(type, "array") == 0 && cJSON_IsObject(items)) {
        text_add(t, "array of ");
        add_type(t, items);
    } else if (type && strcmp(type, "object") == 0 && cJSON_IsObject(values)) {
        text_add(t, "map of ");
        add_type(t, values);
    } else {
        add_scalar_type(t, s);
    }
}

static void add_sep(struct text *t)
{
    if (t->len)
        text_add(t, "; ");
}

static void add_number(struct text *t, const cJSON *v)
{
    char *n = checked(cJSON_PrintUnformatted(v));
    text_add(t, "%s", n);
    free(n);
}

static void add_range(struct text *t, const cJSON *s, const char *lo, const char *hi,
                      const char *unit)
{
    const cJSON *min = member(s, lo), *max = member(s, hi);
    if (!cJSON_IsNumber(min) && !cJSON_IsNumber(max))
        return;
    add_sep(t);
    if (cJSON_IsNumber(min) && cJSON_IsNumber(max)) {
        add_number(t, min);
        text_add(t, "..");
        add_number(t, max);
    } else if (cJSON_IsNumber(min)) {
        text_add(t, "≥ ");
        add_number(t, min);
    } else {
        text_add(t, "≤ ");
        add_number(t, max);
    }
    if (unit)
        text_add(t, " %s", unit);
}

/* enum, pattern, bounds, list and map rules of one schema node. */
static void add_own_constraints(struct text *t, const cJSON *s)
{
    const cJSON *en = member(s, "enum");
    if (cJSON_IsArray(en)) {
        add_sep(t);
        text_add(t, "one of ");
        int first = 1;
        const cJSON *v;
        cJSON_ArrayForEach(v, en)
        {
            text_add(t, "%s", first ? "" : ", ");
            first = 0;
            if (cJSON_IsString(v)) {
                add_code(t, v->valuestring);
            } else {
                char *n = checked(cJSON_PrintUnformatted(v));
                add_code(t, n);
                free(n);
            }
        }
    }
    const char *pattern = string_of(s, "pattern");
    if (pattern) {
        add_sep(t);
        text_add(t, "pattern ");
        add_code(t, pattern);
    }
    add_range(t, s, "minimum", "maximum", NULL);
    add_range(t, s, "minLength", "maxLength", "characters");
    add_range(t, s, "minItems", "maxItems", "items");
    add_range(t, s, "minProperties", "maxProperties", "entries");
    const char *list_type = string_of(s, "x-kubernetes-list-type");
    if (list_type) {
        add_sep(t);
        text_add(t, "list type %s", list_type);
        const cJSON *keys = member(s, "x-kubernetes-list-map-keys");
        if (cJSON_IsArray(keys)) {
            text_add(t, " keyed by");
            const cJSON *k;
            cJSON_ArrayForEach(k, keys)
            {
                if (cJSON_IsString(k)) {
                    text_add(t, " ");
                    add_code(t, k->valuestring);
                }
            }
        }
    }
}

static void add_constraints(struct text *t, const cJSON *s)
{
    add_own_constraints(t, s);
    /* Lists and maps of scalars have no table: their elements' rules are
     * told here. */
    const cJSON *items = member(s, "items");
    const cJSON *values = member(s, "additionalProperties");
    const cJSON *inner = cJSON_IsObject(items) && !has_properties(items)     ? items
                         : cJSON_IsObject(values) && !has_properties(values) ? values
                                                                             : NULL;
    if (inner) {
        struct text each = {0};
        add_own_constraints(&each, inner);
        if (each.len) {
            add_sep(t);
            text_add(t, "%s: %s", inner == items ? "each item" : "each value", each.s);
        }
        free(each.s);
    }
}

static void add_default(struct text *t, const cJSON *s)
{
    const cJSON *d = member(s, "default");
    if (!d)
        return;
    if (cJSON_IsString(d)) {
        add_code(t, d->valuestring);
    } else {
        char *v = checked(cJSON_PrintUnformatted(d));
        add_code(t, v);
        free(v);
    }
}

static int is_required(const cJSON *level, const char *name)
{
    const cJSON *req = member(level, "required"), *r;
    cJSON_ArrayForEach(r, req)
    {
        if (cJSON_IsString(r) && strcmp(r->valuestring, name) == 0)
            return 1;
    }
    return 0;
}

static char *join_path(const char *parent, const char *name)
{
    struct text p = {0};
    text_add(&p, "%s%s%s", parent, parent[0] ? "." : "", name);
    return p.s;
}

/* ---- the output ---- */

struct ctx {
    FILE *out;
    const char *kind;
    const char *version;
};

/* Rows for the CEL rules on schema s at path; one header for the table. */
static void add_rules(struct text *t, const char *path, const cJSON *s, int *n)
{
    const cJSON *rules = member(s, "x-kubernetes-validations"), *r;
    cJSON_ArrayForEach(r, rules)
    {
        const char *rule = string_of(r, "rule");
        if (!rule)
            continue;
        if ((*n)++ == 0)
            text_add(t, "| on | rule | message |\n|---|---|---|\n");
        text_add(t, "| ");
        if (path[0])
            add_code(t, path);
        else
            text_add(t, "the object");
        text_add(t, " | ");
        add_code(t, rule);
        text_add(t, " | ");
        const char *msg = string_of(r, "message");
        const char *expr = string_of(r, "messageExpression");
        if (msg)
            add_prose(t, msg);
        else if (expr) {
            text_add(t, "computed: ");
            add_code(t, expr);
        } else {
            text_add(t, "failed rule: ");
            add_code(t, rule);
        }
        const char *field = string_of(r, "fieldPath");
        const char *reason = string_of(r, "reason");
        if (field) {
            text_add(t, " (reported on ");
            add_code(t, field);
            text_add(t, ")");
        }
        if (reason) {
            text_add(t, " (reason ");
            add_code(t, reason);
            text_add(t, ")");
        }
        text_add(t, " |\n");
    }
}

static void emit_table(const struct ctx *c, const char *path, const cJSON *level)
{
    const cJSON *props = member(level, "properties"), *f;
    struct text rules = {0};
    int n_rules = 0;
    add_rules(&rules, path, level, &n_rules);

    char *id = anchor(c->kind, c->version, path[0] ? path : "root");
    fprintf(c->out, "<a id=\"%s\"></a>\n\n", id);
    free(id);
    if (path[0])
        fprintf(c->out, "#### %s `%s`\n\n", c->kind, path);
    else
        fprintf(c->out, "#### %s (the object)\n\n", c->kind);
    const char *desc = string_of(level, "description");
    if (desc) {
        struct text d = {0};
        add_prose(&d, desc);
        fprintf(c->out, "%s\n\n", text_str(&d));
        free(d.s);
    }
    fprintf(c->out, "| field | type | required | default | constraints | description |\n"
                    "|---|---|---|---|---|---|\n");
    cJSON_ArrayForEach(f, props)
    {
        char *fpath = join_path(path, f->string);
        char *sub_path = NULL;
        const cJSON *sub = level_of(f, fpath, &sub_path);
        struct text row = {0}, type = {0}, cons = {0}, def = {0}, d = {0};
        add_type(&type, f);
        if (sub) {
            char *sid = anchor(c->kind, c->version, sub_path);
            struct text linked = {0};
            text_add(&linked, "[%s](#%s)", type.s, sid);
            free(type.s);
            type = linked;
            free(sid);
        }
        add_constraints(&cons, f);
        add_default(&def, f);
        const char *fd = string_of(f, "description");
        if (fd)
            add_prose(&d, fd);
        text_add(&row, "| ");
        add_code(&row, fpath);
        text_add(&row, " | %s | %s | %s | %s | %s |\n", text_str(&type),
                 is_required(level, f->string) ? "yes" : "", text_str(&def), text_str(&cons),
                 text_str(&d));
        fputs(row.s, c->out);
        /* Rules of fields without a table of their own are told here;
         * a level tells its own. */
        if (!sub) {
            add_rules(&rules, fpath, f, &n_rules);
            const cJSON *inner = member(f, "items");
            if (!cJSON_IsObject(inner))
                inner = member(f, "additionalProperties");
            if (cJSON_IsObject(inner)) {
                char *ipath = join_path(fpath, cJSON_IsObject(member(f, "items")) ? "[]" : "<key>");
                add_rules(&rules, ipath, inner, &n_rules);
                free(ipath);
            }
        } else if (sub != f) {
            /* A list or map of objects: rules on the list itself. */
            add_rules(&rules, fpath, f, &n_rules);
        }
        free(row.s);
        free(type.s);
        free(cons.s);
        free(def.s);
        free(d.s);
        free(sub_path);
        free(fpath);
    }
    fputc('\n', c->out);
    if (n_rules)
        fprintf(c->out, "Rules (CEL):\n\n%s\n", rules.s);
    free(rules.s);

    cJSON_ArrayForEach(f, props)
    {
        char *fpath = join_path(path, f->string);
        char *sub_path = NULL;
        const cJSON *sub = level_of(f, fpath, &sub_path);
        if (sub)
            emit_table(c, sub_path, sub);
        free(sub_path);
        free(fpath);
    }
}

static void emit_columns(FILE *out, const cJSON *version)
{
    const cJSON *cols = member(version, "additionalPrinterColumns"), *col;
    if (!cJSON_IsArray(cols) || cJSON_GetArraySize(cols) == 0)
        return;
    fprintf(out, "Columns of `kubectl get`:\n\n| column | type | JSONPath | shown |\n"
                 "|---|---|---|---|\n");
    cJSON_ArrayForEach(col, cols)
    {
        struct text row = {0};
        const cJSON *prio = member(col, "priority");
        text_add(&row, "| ");
        add_prose(&row, string_of(col, "name") ? string_of(col, "name") : "");
        text_add(&row, " | %s | ", string_of(col, "type") ? string_of(col, "type") : "");
        add_code(&row, string_of(col, "jsonPath") ? string_of(col, "jsonPath") : "");
        text_add(&row, " | %s |\n",
                 cJSON_IsNumber(prio) && prio->valueint > 0 ? "with `-o wide`" : "always");
        fputs(row.s, out);
        free(row.s);
    }
    fputc('\n', out);
}

static void emit_crd(FILE *out, const cJSON *crd, const char *file)
{
    const cJSON *spec = member(crd, "spec");
    const cJSON *names = member(spec, "names");
    const char *kind = string_of(names, "kind");
    const char *group = string_of(spec, "group");
    const cJSON *versions = member(spec, "versions"), *v;
    if (!kind || !group || !cJSON_IsArray(versions))
        die("%s: not a CustomResourceDefinition (spec.group, spec.names.kind and spec.versions "
            "are needed)",
            file);

    char *id = anchor(kind, "", "");
    fprintf(out, "<a id=\"%s\"></a>\n\n## %s\n\n", id, kind);
    free(id);
    struct text about = {0};
    const char *scope = string_of(spec, "scope");
    text_add(&about, "`%s.%s`, %s", string_of(names, "plural") ? string_of(names, "plural") : "?",
             group,
             !scope                             ? "scope not given"
             : strcmp(scope, "Cluster") == 0    ? "cluster-scoped"
             : strcmp(scope, "Namespaced") == 0 ? "namespaced"
                                                : scope);
    const cJSON *shorts = member(names, "shortNames"), *s;
    if (cJSON_GetArraySize(shorts) > 0) {
        text_add(&about, "; short names");
        cJSON_ArrayForEach(s, shorts)
        {
            if (cJSON_IsString(s))
                text_add(&about, " `%s`", s->valuestring);
        }
    }
    const cJSON *cats = member(names, "categories");
    if (cJSON_GetArraySize(cats) > 0) {
        text_add(&about, "; categories");
        cJSON_ArrayForEach(s, cats)
        {
            if (cJSON_IsString(s))
                text_add(&about, " `%s`", s->valuestring);
        }
    }
    fprintf(out, "%s.\n\n", about.s);
    free(about.s);

    cJSON_ArrayForEach(v, versions)
    {
        const char *name = string_of(v, "name");
        const cJSON *schema = member(member(v, "schema"), "openAPIV3Schema");
        if (!name || !cJSON_IsObject(schema))
            die("%s: version %s has no schema.openAPIV3Schema", file, name ? name : "?");
        fprintf(out, "### %s `%s/%s`\n\n", kind, group, name);
        struct text flags = {0};
        text_add(&flags, "%s", cJSON_IsTrue(member(v, "served")) ? "Served" : "Not served");
        if (cJSON_IsTrue(member(v, "storage")))
            text_add(&flags, ", the storage version");
        if (cJSON_IsTrue(member(v, "deprecated")))
            text_add(&flags, ", deprecated");
        const cJSON *sub = member(v, "subresources");
        if (member(sub, "status"))
            text_add(&flags, "; status is a subresource");
        if (member(sub, "scale"))
            text_add(&flags, "; scale subresource");
        fprintf(out, "%s.\n\n", flags.s);
        free(flags.s);
        emit_columns(out, v);
        struct ctx c = {.out = out, .kind = kind, .version = name};
        emit_table(&c, "", schema);
    }
}

/* ---- the files ---- */

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static size_t add_files(const char *arg, char **files, size_t n)
{
    struct stat st;
    if (stat(arg, &st) < 0)
        die("%s: %s", arg, strerror(errno));
    if (!S_ISDIR(st.st_mode)) {
        if (n >= MAX_FILES)
            die("more than %d files", MAX_FILES);
        files[n++] = checked(strdup(arg));
        return n;
    }
    DIR *d = opendir(arg);
    if (!d)
        die("%s: %s", arg, strerror(errno));
    size_t first = n;
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".yaml") != 0 || e->d_name[0] == '.')
            continue;
        if (n >= MAX_FILES)
            die("more than %d files", MAX_FILES);
        struct text p = {0};
        text_add(&p, "%s/%s", arg, e->d_name);
        files[n++] = p.s;
    }
    closedir(d);
    qsort(files + first, n - first, sizeof(*files), by_name);
    return n;
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fprintf(argc < 2 ? stderr : stdout,
                "usage: crd_reference <crd.yaml | directory>...\n"
                "Writes the Markdown API reference of the CustomResourceDefinitions to stdout.\n");
        return argc < 2 ? 2 : 0;
    }
    char *files[MAX_FILES];
    size_t n = 0;
    for (int i = 1; i < argc; i++)
        n = add_files(argv[i], files, n);

    /* Every file's documents stay loaded until the end: the CRDs point into them. */
    cJSON *loaded[MAX_FILES];
    struct {
        const cJSON *crd;
        const char *file;
    } crds[MAX_FILES * 4];
    size_t n_crds = 0;
    for (size_t i = 0; i < n; i++) {
        char *err = NULL;
        loaded[i] = yaml_json_load_file(files[i], &err);
        if (!loaded[i])
            die("%s", err ? err : files[i]);
        const cJSON *doc;
        cJSON_ArrayForEach(doc, loaded[i])
        {
            const char *kind = string_of(doc, "kind");
            if (!kind || strcmp(kind, "CustomResourceDefinition") != 0)
                continue;
            if (n_crds >= sizeof(crds) / sizeof(crds[0]))
                die("more than %zu CustomResourceDefinitions", sizeof(crds) / sizeof(crds[0]));
            crds[n_crds].crd = doc;
            crds[n_crds++].file = files[i];
        }
    }
    if (n_crds == 0)
        die("no CustomResourceDefinition in the files given");

    FILE *out = stdout;
    fprintf(out, "<!-- Generated from deploy/crds/ by tests/tools/crd_reference; do not edit.\n"
                 "     tests/tools/update-reference.sh writes it again. -->\n\n"
                 "# API reference\n\n"
                 "Every field of the CustomResourceDefinitions in `deploy/crds/`, as the API\n"
                 "server enforces them: type, whether it is required, the default the API server\n"
                 "fills in, the constraints of the schema and its CEL rules (with the message a\n"
                 "client gets when one fails). [api.md](api.md) explains what the fields are for;\n"
                 "the controller checks a few more things the schema cannot express (it reports\n"
                 "them in the Workspace's `Valid` condition, see [operations.md](operations.md)).\n"
                 "\n");
    for (size_t i = 0; i < n_crds; i++) {
        const char *kind = string_of(member(member(crds[i].crd, "spec"), "names"), "kind");
        char *id = anchor(kind ? kind : "?", "", "");
        fprintf(out, "- [%s](#%s)\n", kind ? kind : "?", id);
        free(id);
    }
    fputc('\n', out);
    for (size_t i = 0; i < n_crds; i++)
        emit_crd(out, crds[i].crd, crds[i].file);
    for (size_t i = 0; i < n; i++) {
        cJSON_Delete(loaded[i]);
        free(files[i]);
    }
    if (fflush(out) != 0 || ferror(out))
        die("cannot write the output: %s", strerror(errno));
    return 0;
}
