/*
 * The API reference: tests/tools/crd_reference renders what it should from a
 * small CRD (tests/data/reference/), refuses what is not a CRD, and
 * docs/reference.md is exactly what it writes from deploy/crds/ today.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>

#define FIXTURE SOURCE_DIR "/tests/data/reference/gadgets-crd.yaml"
#define MAX_OUTPUT (8 * 1024 * 1024)

struct run {
    char *out; /* stdout, or stderr with stdout discarded */
    int status;
};

/* Runs the generator on args; with want_stderr its stdout is dropped and
 * its stderr kept. */
static struct run generate(const char *args, int want_stderr)
{
    char *cmd = NULL;
    assert_true(asprintf(&cmd, "'%s' %s %s", CRD_REFERENCE_BIN, args,
                         want_stderr ? "2>&1 >/dev/null" : "") > 0);
    FILE *p = popen(cmd, "r");
    free(cmd);
    assert_non_null(p);
    struct run r = {.out = malloc(MAX_OUTPUT + 1)};
    assert_non_null(r.out);
    size_t n = fread(r.out, 1, MAX_OUTPUT, p);
    r.out[n] = '\0';
    int st = pclose(p);
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return r;
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *s = malloc(MAX_OUTPUT + 1);
    assert_non_null(s);
    size_t n = fread(s, 1, MAX_OUTPUT, f);
    s[n] = '\0';
    fclose(f);
    return s;
}

static void assert_line(const char *doc, const char *line)
{
    const char *p = doc;
    size_t len = strlen(line);
    while ((p = strstr(p, line))) {
        if ((p == doc || p[-1] == '\n') && (p[len] == '\n' || p[len] == '\0'))
            return;
        p += len;
    }
    fail_msg("the reference has no line\n  %s", line);
}

static void test_renders_every_kind_of_field(void **state)
{
    (void)state;
    struct run r = generate("'" FIXTURE "'", 0);
    assert_int_equal(r.status, 0);
    const char *doc = r.out;
    /* The kind, its names, columns. */
    assert_line(doc, "## Gadget");
    assert_line(doc, "`gadgets.example.dev`, namespaced; short names `gd`.");
    assert_line(doc, "Served, the storage version; status is a subresource.");
    assert_line(doc, "| Note | string | `.status.note` | with `-o wide` |");
    /* Prose is escaped for a table; folded descriptions are one line. */
    assert_line(doc, "A gadget \\| with a pipe, &lt;angle&gt; brackets and a \\* star.");
    /* Required, default, enum with the empty string. */
    assert_line(doc, "| `spec.mode` | string | yes | `Fast` | one of `\"\"`, `Fast`, `Slow` | "
                     "How it runs, folded over two lines. |");
    /* A pattern with '|' inside a code span. */
    assert_line(doc, "| `spec.size` | int-or-string |  |  | pattern `^([0-9]+\\|[0-9]+Gi)$` |  |");
    /* Lists and maps of scalars carry their elements' constraints. */
    assert_line(doc, "| `spec.tags` | array of string |  |  | ≤ 4 items; list type set; each "
                     "item: ≥ 1 characters |  |");
    assert_line(doc, "| `spec.labels` | map of string |  |  | ≤ 8 entries; each value: ≤ 63 "
                     "characters |  |");
    /* A list of objects links to its own table; an object default. */
    assert_line(doc, "| `spec.parts` | [array of object](#gadget-v1-spec-parts) |  |  | list type "
                     "map keyed by `name` |  |");
    assert_line(doc, "| `spec.limits` | [object](#gadget-v1-spec-limits) |  | `{}` |  |  |");
    assert_line(doc, "<a id=\"gadget-v1-spec-parts\"></a>");
    assert_line(doc, "#### Gadget `spec.parts[]`");
    assert_line(doc, "| `spec.parts[].count` | integer (int32) |  | `1` | 1..9 |  |");
    /* CEL rules with message, computed message, field path and reason. */
    assert_line(doc, "| the object | `self.metadata.name.size() <= 20` | name too long (reason "
                     "`FieldValueInvalid`) |");
    assert_line(doc, "| `spec.size` | `self != '0'` | computed: `'size ' + string(self) + ' is "
                     "zero'` |");
    assert_line(doc, "| `spec.parts[]` | `self.count < 5 \\|\\| self.name != 'x'` | x has fewer "
                     "than 5 (reported on `.count`) |");
    /* Tables come in the schema's order, depth first. */
    const char *spec = strstr(doc, "#### Gadget `spec`");
    const char *parts = strstr(doc, "#### Gadget `spec.parts[]`");
    const char *limits = strstr(doc, "#### Gadget `spec.limits`");
    const char *status = strstr(doc, "#### Gadget `status`");
    assert_true(spec && parts && limits && status);
    assert_true(spec < parts && parts < limits && limits < status);
    free(r.out);
}

static void test_same_input_same_output(void **state)
{
    (void)state;
    struct run a = generate("'" SOURCE_DIR "/deploy/crds'", 0);
    struct run b = generate("'" SOURCE_DIR "/deploy/crds'", 0);
    assert_int_equal(a.status, 0);
    assert_string_equal(a.out, b.out);
    /* Nothing of this machine in it. */
    assert_null(strstr(a.out, SOURCE_DIR));
    free(a.out);
    free(b.out);
}

static void test_refuses_what_is_not_a_crd(void **state)
{
    (void)state;
    struct run r = generate("'" SOURCE_DIR "/deploy/rbac.yaml'", 1);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.out, "no CustomResourceDefinition"));
    free(r.out);
    r = generate("'" SOURCE_DIR "/deploy/crds/no-such.yaml'", 1);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.out, "no-such.yaml"));
    free(r.out);
    /* YAML that does not parse: where. */
    r = generate("'" SOURCE_DIR "/tests/data/kubeconfig/bad-syntax.yaml'", 1);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.out, "bad-syntax.yaml:"));
    free(r.out);
}

/* docs/reference.md is what the generator writes from deploy/crds/. */
static void test_reference_is_current(void **state)
{
    (void)state;
    struct run r = generate("'" SOURCE_DIR "/deploy/crds'", 0);
    assert_int_equal(r.status, 0);
    char *file = read_file(SOURCE_DIR "/docs/reference.md");
    if (!file)
        fail_msg("docs/reference.md is missing: run tests/tools/update-reference.sh");
    if (strcmp(file, r.out) != 0) {
        /* Name the first line that differs. */
        const char *a = file, *b = r.out;
        int line = 1;
        while (*a && *a == *b) {
            if (*a == '\n')
                line++;
            a++;
            b++;
        }
        while (a > file && a[-1] != '\n') {
            a--;
            b--;
        }
        int la = (int)strcspn(a, "\n"), lb = (int)strcspn(b, "\n");
        fail_msg("docs/reference.md is stale: run tests/tools/update-reference.sh\n"
                 "first difference at line %d:\n  file:      %.*s\n  generated: %.*s",
                 line, la > 200 ? 200 : la, a, lb > 200 ? 200 : lb, b);
    }
    free(file);
    free(r.out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_renders_every_kind_of_field),
        cmocka_unit_test(test_same_input_same_output),
        cmocka_unit_test(test_refuses_what_is_not_a_crd),
        cmocka_unit_test(test_reference_is_current),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
