/*
 * The operator's documentation against the code, so neither drifts:
 *
 * - the vocabulary (include/workspace/vocabulary.h: states, condition
 *   types, condition reasons, Event reasons) is what decide() writes:
 *   src/workspace/decide*.c (and the Idle reasons of idle*.c) pass its
 *   constants, of the right list, never a string literal, and use each of
 *   them; every word is explained in docs/operations.md, and docs/api.md's
 *   "Vocabulary" lists exactly the header's words;
 * - every metric the Grafana dashboard queries
 *   (deploy/grafana/hibernator-dashboard.json), and every label value it
 *   matches exactly, is a name the controller's code has (a string literal
 *   under src/), and the dashboard uses the metric names it is meant to;
 * - every example in deploy/examples/ is applied by its kustomization, is
 *   read by the controller's own decoders and is accepted by decide();
 * - every RBAC rule of deploy/rbac.yaml is listed, with the same verbs, in
 *   docs/security.md.
 *
 * The scanners themselves are tested on small inputs first, so a scanner
 * that finds nothing cannot make the checks pass.
 */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "workspace/action_failure.h"
#include "workspace/class.h"
#include "workspace/decide.h"
#include "workspace/pod.h"
#include "workspace/vocabulary.h"
#include "workspace/workspace.h"
#include "yaml_json.h"

#define MAX_FILE (4 * 1024 * 1024)
#define MAX_NAMES 256

/* ---- small helpers ---- */

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("%s: %s", path, strerror(errno));
    char *s = malloc(MAX_FILE + 1);
    assert_non_null(s);
    size_t n = fread(s, 1, MAX_FILE + 1, f);
    fclose(f);
    if (n > MAX_FILE)
        fail_msg("%s: larger than %d bytes", path, MAX_FILE);
    s[n] = '\0';
    return s;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

static int is_part(const struct dirent *e, const char *stem)
{
    size_t n = strlen(stem), len = strlen(e->d_name);
    return strncmp(e->d_name, stem, n) == 0 && len > 2 && strcmp(e->d_name + len - 2, ".c") == 0 &&
           (e->d_name[n] == '.' || e->d_name[n] == '_');
}

static int is_decide_part(const struct dirent *e)
{
    return is_part(e, "decide");
}

static int is_idle_part(const struct dirent *e)
{
    return is_part(e, "idle");
}

/* A module written in parts (decide.c, decide_*.c), read as one text. */
static char *slurp_parts(int (*filter)(const struct dirent *))
{
    struct dirent **list = NULL;
    int n = scandir(SOURCE_DIR "/src/workspace", &list, filter, by_name);
    if (n <= 0)
        fail_msg("src/workspace: no parts found");
    char *all = calloc(1, 1);
    assert_non_null(all);
    for (int i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/src/workspace/%s", SOURCE_DIR, list[i]->d_name);
        char *part = slurp(path);
        char *joined = NULL;
        assert_true(asprintf(&joined, "%s\n%s", all, part) > 0);
        free(all);
        free(part);
        all = joined;
        free(list[i]);
    }
    free(list);
    return all;
}

static char *dup_range(const char *p, size_t n)
{
    char *s = malloc(n + 1);
    assert_non_null(s);
    memcpy(s, p, n);
    s[n] = '\0';
    return s;
}

static int is_ident(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* A set of strings. */
struct names {
    char *v[MAX_NAMES];
    size_t n;
};

static int names_has(const struct names *s, const char *name)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->v[i], name) == 0)
            return 1;
    return 0;
}

static void names_add(struct names *s, const char *name)
{
    if (names_has(s, name))
        return;
    if (s->n >= MAX_NAMES)
        fail_msg("more than %d names", MAX_NAMES);
    s->v[s->n] = strdup(name);
    assert_non_null(s->v[s->n]);
    s->n++;
}

static void names_clear(struct names *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i]);
    s->n = 0;
}

/* ---- C sources: comments, literals, calls ---- */

/* Skips a string or character literal starting at p (a quote); returns the
 * character after it. */
static const char *skip_quoted(const char *p)
{
    char q = *p++;
    while (*p && *p != q) {
        if (*p == '\\' && p[1])
            p++;
        p++;
    }
    return *p ? p + 1 : p;
}

/* The source with comments blanked out (line breaks kept, so line numbers
 * stay), literals untouched. */
static char *without_comments(const char *src)
{
    char *out = strdup(src);
    assert_non_null(out);
    char *o = out;
    const char *p = src;
    while (*p) {
        if (*p == '"' || *p == '\'') {
            const char *end = skip_quoted(p);
            o += end - p;
            p = end;
        } else if (p[0] == '/' && p[1] == '*') {
            const char *end = strstr(p + 2, "*/");
            end = end ? end + 2 : p + strlen(p);
            for (; p < end; p++, o++)
                *o = *p == '\n' ? '\n' : ' ';
        } else if (p[0] == '/' && p[1] == '/') {
            for (; *p && *p != '\n'; p++, o++)
                *o = ' ';
        } else {
            p++;
            o++;
        }
    }
    return out;
}

/* The text of the string literal(s) starting at p (a '"'; adjacent literals
 * are joined as the compiler joins them), escapes decoded. *end is set past
 * the last one. */
static char *literal_at(const char *p, const char **end)
{
    size_t cap = strlen(p) + 1, n = 0;
    char *s = malloc(cap);
    assert_non_null(s);
    while (*p == '"') {
        p++;
        while (*p && *p != '"') {
            char c = *p++;
            if (c == '\\' && *p) {
                c = *p++;
                c = c == 'n' ? '\n' : c == 't' ? '\t' : c;
            }
            s[n++] = c;
        }
        if (*p == '"')
            p++;
        const char *q = p;
        while (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r')
            q++;
        if (*q != '"')
            break;
        p = q;
    }
    s[n] = '\0';
    *end = p;
    return s;
}

static int line_of(const char *src, const char *p)
{
    int line = 1;
    for (const char *q = src; q < p; q++)
        line += *q == '\n';
    return line;
}

/* Splits the arguments of a call whose '(' is at open into args (trimmed
 * copies, at most max). Returns the count. */
static size_t call_args(const char *open, char **args, size_t max)
{
    size_t n = 0;
    int depth = 0;
    const char *start = open + 1;
    for (const char *p = open + 1; *p; p++) {
        if (*p == '"' || *p == '\'') {
            p = skip_quoted(p) - 1;
        } else if (*p == '(' || *p == '[' || *p == '{') {
            depth++;
        } else if ((*p == ')' || *p == ']' || *p == '}') && depth > 0) {
            depth--;
        } else if ((*p == ',' && depth == 0) || (*p == ')' && depth == 0)) {
            const char *a = start, *b = p;
            while (a < b && (*a == ' ' || *a == '\n' || *a == '\t'))
                a++;
            while (b > a && (b[-1] == ' ' || b[-1] == '\n' || b[-1] == '\t'))
                b--;
            if (n < max)
                args[n++] = dup_range(a, (size_t)(b - a));
            if (*p == ')')
                return n;
            start = p + 1;
        }
    }
    return n;
}

/* The words an expression gives when each of its results is a word: a
 * vocabulary constant (an identifier starting with WS_), a string literal
 * (written as "\"text\"", so a check can refuse it), or a ?: whose branches
 * are such expressions. 0 when some result is neither (a variable). */
static int result_words(const char *expr, struct names *out)
{
    while (*expr == ' ' || *expr == '\n' || *expr == '(')
        expr++;
    /* A top-level '?' splits condition and branches. */
    int depth = 0;
    const char *q = NULL, *colon = NULL;
    for (const char *p = expr; *p; p++) {
        if (*p == '"' || *p == '\'') {
            p = skip_quoted(p) - 1;
        } else if (*p == '(') {
            depth++;
        } else if (*p == ')') {
            depth--;
        } else if (*p == '?' && depth == 0 && !q) {
            q = p;
        } else if (*p == ':' && depth == 0 && q && !colon) {
            colon = p;
        }
    }
    if (q && colon) {
        char *yes = dup_range(q + 1, (size_t)(colon - q - 1));
        int ok = result_words(yes, out) && result_words(colon + 1, out);
        free(yes);
        return ok;
    }
    const char *end;
    char *word = NULL;
    if (*expr == '"') {
        char *lit = literal_at(expr, &end);
        assert_true(asprintf(&word, "\"%s\"", lit) > 0);
        free(lit);
    } else if (strncmp(expr, "WS_", 3) == 0) {
        end = expr;
        while (is_ident(*end))
            end++;
        word = dup_range(expr, (size_t)(end - expr));
    } else {
        return 0;
    }
    while (*end == ' ' || *end == '\n' || *end == ')' || *end == ';')
        end++;
    int ok = *end == '\0';
    if (ok)
        names_add(out, word);
    free(word);
    return ok;
}

/* Calls name(d, ...) in src (comments removed); for each, the argument at
 * index arg goes to words when it gives words, else its text goes to
 * indirect ("expr@line"). Declarations (first argument not "d") are
 * skipped. Returns the number of calls. */
static size_t scan_calls(const char *src, const char *name, size_t arg, struct names *words,
                         struct names *indirect)
{
    size_t calls = 0, len = strlen(name);
    for (const char *p = src; (p = strstr(p, name)); p += len) {
        if (p > src && (is_ident(p[-1]) || p[-1] == '.' || p[-1] == '>'))
            continue;
        const char *open = p + len;
        while (*open == ' ')
            open++;
        if (*open != '(')
            continue;
        char *args[8] = {0};
        size_t n = call_args(open, args, 8);
        if (n > arg && strcmp(args[0], "d") == 0) {
            calls++;
            if (!result_words(args[arg], words)) {
                char *at = NULL;
                assert_true(asprintf(&at, "%s@%d", args[arg], line_of(src, p)) > 0);
                names_add(indirect, at);
                free(at);
            }
        }
        for (size_t i = 0; i < n; i++)
            free(args[i]);
    }
    return calls;
}

/* The words assigned to lhs ("out->reason", "reason") in src. Returns how
 * many such assignments were found. */
static size_t scan_assignments(const char *src, const char *lhs, struct names *out)
{
    size_t found = 0, len = strlen(lhs);
    for (const char *p = src; (p = strstr(p, lhs)); p += len) {
        if (p > src && (is_ident(p[-1]) || p[-1] == '.' || p[-1] == '>'))
            continue;
        const char *e = p + len;
        while (*e == ' ')
            e++;
        if (e[0] != '=' || e[1] == '=')
            continue;
        const char *stop = e + 1;
        while (*stop && *stop != ';')
            stop = (*stop == '"' || *stop == '\'') ? skip_quoted(stop) : stop + 1;
        char *rhs = dup_range(e + 1, (size_t)(stop - e - 1));
        if (result_words(rhs, out))
            found++;
        free(rhs);
    }
    return found;
}

/* ---- (a) the vocabulary: header, code, docs/operations.md, docs/api.md ---- */

struct word {
    const char *constant; /* "WS_REASON_POD_READY" */
    const char *word;     /* "PodReady" */
    const char *meaning;
};

#define STATE_WORD(id, w, m) {"WS_STATE_NAME_" #id, w, m},
#define COND_WORD(id, w, m) {"WS_COND_" #id, w, m},
#define REASON_WORD(id, w, m) {"WS_REASON_" #id, w, m},
#define EVENT_WORD(id, w, m) {"WS_EVENT_" #id, w, m},
static const struct word states[] = {WS_STATES(STATE_WORD)};
static const struct word conditions[] = {WS_CONDITIONS(COND_WORD)};
static const struct word reasons[] = {WS_REASONS(REASON_WORD)};
static const struct word events[] = {WS_EVENTS(EVENT_WORD)};

static const struct {
    const char *title; /* the heading in docs/api.md's "Vocabulary" */
    const struct word *words;
    size_t n;
} lists[] = {
    {"States", states, sizeof(states) / sizeof(states[0])},
    {"Condition types", conditions, sizeof(conditions) / sizeof(conditions[0])},
    {"Condition reasons", reasons, sizeof(reasons) / sizeof(reasons[0])},
    {"Event reasons", events, sizeof(events) / sizeof(events[0])},
};
#define N_LISTS (sizeof(lists) / sizeof(lists[0]))

/* The entry of a constant's name in any list, or NULL. */
static const struct word *word_of_constant(const char *constant)
{
    for (size_t l = 0; l < N_LISTS; l++)
        for (size_t i = 0; i < lists[l].n; i++)
            if (strcmp(lists[l].words[i].constant, constant) == 0)
                return &lists[l].words[i];
    return NULL;
}

static int list_has_word(const struct word *words, size_t n, const char *word)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(words[i].word, word) == 0)
            return 1;
    return 0;
}

/* ActionFailed's reasons: the names of the actions that can fail. */
static const struct {
    enum action_type type;
    const char *word;
} actions[] = {
    {ACTION_ADD_FINALIZER, WS_REASON_ADD_FINALIZER},
    {ACTION_REMOVE_FINALIZER, WS_REASON_REMOVE_FINALIZER},
    {ACTION_CREATE_PVC, WS_REASON_CREATE_PVC},
    {ACTION_DELETE_PVC, WS_REASON_DELETE_PVC},
    {ACTION_RELEASE_PVC, WS_REASON_RELEASE_PVC},
    {ACTION_CREATE_POD, WS_REASON_CREATE_POD},
    {ACTION_DELETE_POD, WS_REASON_DELETE_POD},
    {ACTION_AUTO_PAUSE, WS_REASON_AUTO_PAUSE},
    {ACTION_AUTO_RESUME, WS_REASON_AUTO_RESUME},
    {ACTION_SNAPSHOT_BEGIN, WS_REASON_SNAPSHOT_BEGIN},
    {ACTION_SNAPSHOT_DELETE, WS_REASON_SNAPSHOT_DELETE},
};

static int is_action_reason(const char *word)
{
    for (size_t i = 0; i < sizeof(actions) / sizeof(actions[0]); i++)
        if (strcmp(actions[i].word, word) == 0)
            return 1;
    return 0;
}

/* Each list: words in CamelCase, none twice, each with a meaning. */
static void test_vocabulary_shape(void **state)
{
    (void)state;
    for (size_t l = 0; l < N_LISTS; l++) {
        assert_true(lists[l].n > 0);
        for (size_t i = 0; i < lists[l].n; i++) {
            const struct word *w = &lists[l].words[i];
            if (!(w->word[0] >= 'A' && w->word[0] <= 'Z'))
                fail_msg("%s: \"%s\" does not start with a capital", w->constant, w->word);
            for (const char *c = w->word; *c; c++)
                if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                      (*c >= '0' && *c <= '9')))
                    fail_msg("%s: \"%s\" is not one CamelCase word", w->constant, w->word);
            if (strlen(w->meaning) < 5)
                fail_msg("%s: no meaning", w->constant);
            for (size_t k = 0; k < i; k++)
                if (strcmp(lists[l].words[k].word, w->word) == 0)
                    fail_msg("%s: \"%s\" twice (%s, %s)", lists[l].title, w->word,
                             lists[l].words[k].constant, w->constant);
        }
    }
    /* The states are the enum's names, the same list both ways. */
#define STATE_SAME(id, w, m) assert_string_equal(workspace_state_name(WS_STATE_##id), w);
    WS_STATES(STATE_SAME)
#undef STATE_SAME
    for (int s = WS_STATE_NONE + 1; workspace_state_name((enum workspace_state)s)[0]; s++)
        if (!list_has_word(states, lists[0].n, workspace_state_name((enum workspace_state)s)))
            fail_msg("the state %s is not in WS_STATES",
                     workspace_state_name((enum workspace_state)s));
    /* ActionFailed: its reasons are the actions' names (reconciler). */
    assert_string_equal(ACTION_FAILED_CONDITION, WS_COND_ACTION_FAILED);
    for (size_t i = 0; i < sizeof(actions) / sizeof(actions[0]); i++)
        assert_string_equal(action_type_name(actions[i].type), actions[i].word);
}

/* Where the values of a word argument that is not a constant come from. A
 * new kind of argument fails the test until it is listed here. */
static const struct {
    const char *expr;                    /* the argument as written in decide*.c */
    int (*parts)(const struct dirent *); /* where its values are set, in src/workspace/ */
    const char *lhs;                     /* assigned there as "lhs = <constant>" */
    const char *call;                    /* or passed there as the reason of this function */
    size_t call_arg;
} indirect_words[] = {
    /* SnapshotReady=False: Failed or Timeout. */
    {"reason", is_decide_part, "reason", NULL, 0},
    /* The SnapshotCleanup condition's type. */
    {"type", is_decide_part, "type", NULL, 0},
    /* The Idle condition: idle_evaluate()'s verdict. */
    {"v.reason", is_idle_part, "out->reason", NULL, 0},
    /* Valid=False and its Warning event: the validation's reasons. */
    {"d->invalid_reason", is_decide_part, NULL, "invalid", 1},
};

static void resolve_indirect(const struct names *indirect, struct names *out)
{
    for (size_t i = 0; i < indirect->n; i++) {
        char *expr = strdup(indirect->v[i]);
        assert_non_null(expr);
        char *at = strrchr(expr, '@');
        *at = '\0';
        size_t k = 0, n = sizeof(indirect_words) / sizeof(indirect_words[0]);
        while (k < n && strcmp(indirect_words[k].expr, expr) != 0)
            k++;
        if (k == n)
            fail_msg("src/workspace/decide*.c:%s: a word given as \"%s\", not a constant of "
                     "workspace/vocabulary.h: add where its values come from to indirect_words "
                     "in tests/unit/test_docs.c",
                     at + 1, expr);
        char *src = slurp_parts(indirect_words[k].parts);
        char *code = without_comments(src);
        struct names values = {0}, none = {0};
        size_t found = indirect_words[k].lhs
                           ? scan_assignments(code, indirect_words[k].lhs, &values)
                           : scan_calls(code, indirect_words[k].call, indirect_words[k].call_arg,
                                        &values, &none);
        if (found == 0 || values.n == 0)
            fail_msg("src/workspace: no values for \"%s\" found", expr);
        if (none.n > 0)
            fail_msg("src/workspace: \"%s\" is given a value that is no constant: %s", expr,
                     none.v[0]);
        for (size_t v = 0; v < values.n; v++)
            names_add(out, values.v[v]);
        names_clear(&values);
        names_clear(&none);
        free(code);
        free(src);
        free(expr);
    }
}

/* What decide() passes as condition types, condition reasons and Event
 * reasons: the constants (or, refused by the checks, literals). */
struct written {
    struct names types, conditions, events;
};

static void scan_written(const char *decide_src, struct written *w)
{
    char *code = without_comments(decide_src);
    struct names ind_t = {0}, ind_c = {0}, ind_e = {0};
    size_t n_type = scan_calls(code, "decide_condition", 1, &w->types, &ind_t);
    size_t n_cond = scan_calls(code, "decide_condition", 3, &w->conditions, &ind_c);
    size_t n_event = scan_calls(code, "decide_event", 2, &w->events, &ind_e);
    /* Events for counted transitions, with their occasion first. */
    size_t n_transition = scan_calls(code, "decide_transition_event", 3, &w->events, &ind_e);
    assert_true(n_type > 0 && n_type == n_cond);
    assert_true(n_event > 0);
    assert_true(n_transition > 0);
    resolve_indirect(&ind_t, &w->types);
    resolve_indirect(&ind_c, &w->conditions);
    resolve_indirect(&ind_e, &w->events);
    names_clear(&ind_t);
    names_clear(&ind_c);
    names_clear(&ind_e);
    free(code);
}

static void written_clear(struct written *w)
{
    names_clear(&w->types);
    names_clear(&w->conditions);
    names_clear(&w->events);
}

static void test_word_scanner(void **state)
{
    (void)state;
    const char *src =
        "static void condition(struct decider *d, const char *type, int s,\n"
        "                      const char *reason, const char *fmt, ...);\n"
        "/* condition(d, WS_COND_READY, COND_TRUE, \"InAComment\", \"x\"); */\n"
        "// event(d, \"Warning\", \"AlsoInAComment\", \"x\");\n"
        "condition(d, WS_COND_READY, COND_TRUE, WS_REASON_POD_READY, \"pod %s (\\\"q\\\")\",\n"
        "          name);\n"
        "event(d, \"Warning\", streq(reason, WS_REASON_FAILED) ? WS_EVENT_SNAPSHOT_FAILED\n"
        "                                             : \"SnapshotTimeout\", \"m\");\n"
        "a->event(d, \"Normal\", \"NotACallOfOurs\", \"m\");\n"
        "condition(d, WS_COND_IDLE, cs, v.reason, \"%s\", v.message);\n";
    struct written w = {0};
    struct names ind = {0};
    char *code = without_comments(src);
    assert_int_equal(scan_calls(code, "condition", 3, &w.conditions, &ind), 2);
    assert_int_equal(scan_calls(code, "condition", 1, &w.types, &ind), 2);
    assert_int_equal(scan_calls(code, "event", 2, &w.events, &ind), 1);
    assert_int_equal(w.conditions.n, 1);
    assert_string_equal(w.conditions.v[0], "WS_REASON_POD_READY");
    assert_int_equal(w.types.n, 2);
    assert_true(names_has(&w.types, "WS_COND_IDLE"));
    /* A literal is kept, quoted, for the check to refuse. */
    assert_int_equal(w.events.n, 2);
    assert_true(names_has(&w.events, "WS_EVENT_SNAPSHOT_FAILED"));
    assert_true(names_has(&w.events, "\"SnapshotTimeout\""));
    assert_false(names_has(&w.events, "WS_REASON_FAILED"));
    assert_int_equal(ind.n, 1);
    assert_string_equal(ind.v[0], "v.reason@10");

    struct names values = {0};
    assert_int_equal(scan_assignments("const char *reason = x ? WS_REASON_FAILED : \"Timeout\";\n"
                                      "if (reason == WS_X) out->reason = WS_REASON_OTHER;\n"
                                      "reason = decide_condition_reason(st, WS_COND_READY);\n",
                                      "reason", &values),
                     1);
    assert_int_equal(values.n, 2);
    assert_true(names_has(&values, "WS_REASON_FAILED") && names_has(&values, "\"Timeout\""));
    names_clear(&values);
    names_clear(&ind);
    written_clear(&w);
    free(code);
}

/* Each word decide() writes is a constant of the right list: a condition
 * type a WS_COND_, a condition reason a WS_REASON_, an Event reason a
 * WS_EVENT_ (or, through the validation, a WS_REASON_ that is an Event
 * reason too). A string literal is refused: nothing bypasses the header. */
static void check_written(const struct names *got, const char *what, const char *prefix,
                          const struct word *list, size_t n, char **wrong)
{
    for (size_t i = 0; i < got->n; i++) {
        const char *c = got->v[i];
        const struct word *w = word_of_constant(c);
        const char *why =
            c[0] == '"'                        ? "a string literal"
            : !w                               ? "not in workspace/vocabulary.h"
            : !list_has_word(list, n, w->word) ? "not a word of this list"
            : strncmp(c, prefix, strlen(prefix)) != 0 && strncmp(c, "WS_REASON_", 10) != 0
                ? "a constant of another list"
                : NULL;
        if (!why)
            continue;
        char *m = NULL;
        assert_true(asprintf(&m, "%s\n  %s %s: %s", *wrong ? *wrong : "", what, c, why) > 0);
        free(*wrong);
        *wrong = m;
    }
}

static void test_decide_writes_the_vocabulary(void **state)
{
    (void)state;
    char *src = slurp_parts(is_decide_part);
    struct written w = {0};
    scan_written(src, &w);
    /* The scan sees decide()'s whole vocabulary, not a part of it. */
    const char *conds[] = {
        "WS_REASON_ACCEPTED",         "WS_REASON_POD_READY",       "WS_REASON_UNSCHEDULABLE",
        "WS_REASON_CAPACITY_TIMEOUT", "WS_REASON_RESTORING",       "WS_REASON_RESTORE_CRASHED",
        "WS_REASON_FINALIZER_STUCK",  "WS_REASON_PAUSE_SCHEDULED", "WS_REASON_CLASS_NOT_FOUND",
        "WS_REASON_TIMEOUT",          "WS_REASON_OUT_OF_BOUNDS"};
    for (size_t i = 0; i < sizeof(conds) / sizeof(conds[0]); i++)
        if (!names_has(&w.conditions, conds[i]))
            fail_msg("the scan of decide*.c did not find the condition reason %s", conds[i]);
    const char *evs[] = {"WS_EVENT_CREATED",
                         "WS_EVENT_PAUSED",
                         "WS_EVENT_IDLE_WARNING",
                         "WS_EVENT_SNAPSHOT_STUCK",
                         "WS_EVENT_RESTORE_CRASH_LOOP",
                         "WS_REASON_RESERVED_ENV",
                         "WS_EVENT_SNAPSHOT_TIMEOUT"};
    for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++)
        if (!names_has(&w.events, evs[i]))
            fail_msg("the scan of decide*.c did not find the event reason %s", evs[i]);
    assert_true(names_has(&w.types, "WS_COND_SNAPSHOT_CLEANUP"));
    print_message("decide*.c: %zu condition types, %zu condition reasons, %zu event reasons\n",
                  w.types.n, w.conditions.n, w.events.n);

    char *wrong = NULL;
    check_written(&w.types, "condition type", "WS_COND_", conditions, lists[1].n, &wrong);
    check_written(&w.conditions, "condition reason", "WS_REASON_", reasons, lists[2].n, &wrong);
    check_written(&w.events, "event reason", "WS_EVENT_", events, lists[3].n, &wrong);
    if (wrong)
        fail_msg("src/workspace/decide*.c, idle.c write words that are not "
                 "workspace/vocabulary.h's constants of the right list:%s",
                 wrong);
    written_clear(&w);
    free(src);
}

/* Whether one of the constants in got stands for word. */
static int writes_word(const struct names *got, const char *word)
{
    for (size_t i = 0; i < got->n; i++) {
        const struct word *w = word_of_constant(got->v[i]);
        if (w && strcmp(w->word, word) == 0)
            return 1;
    }
    return 0;
}

/* Nothing extra in the header: decide() writes each condition type,
 * condition reason and Event reason (ActionFailed and its reasons, the
 * actions' names, are the reconciler's: test_vocabulary_shape ties them;
 * the states are the enum's, tied there too). */
static void test_vocabulary_is_written(void **state)
{
    (void)state;
    char *src = slurp_parts(is_decide_part);
    struct written w = {0};
    scan_written(src, &w);
    const struct names *by_list[N_LISTS] = {NULL, &w.types, &w.conditions, &w.events};
    char *unused = NULL;
    for (size_t l = 1; l < N_LISTS; l++)
        for (size_t i = 0; i < lists[l].n; i++) {
            const struct word *x = &lists[l].words[i];
            if (strcmp(x->constant, "WS_COND_ACTION_FAILED") == 0 ||
                (l == 2 && is_action_reason(x->word)) || writes_word(by_list[l], x->word))
                continue;
            char *m = NULL;
            assert_true(asprintf(&m, "%s\n  %s", unused ? unused : "", x->constant) > 0);
            free(unused);
            unused = m;
        }
    if (unused)
        fail_msg("workspace/vocabulary.h has words src/workspace/decide*.c, idle*.c never "
                 "write:%s",
                 unused);
    written_clear(&w);
    free(src);
}

/* Every word is explained in docs/operations.md (written there as `Word`). */
static void test_vocabulary_is_documented(void **state)
{
    (void)state;
    char *doc = slurp(SOURCE_DIR "/docs/operations.md");
    char *missing = NULL;
    for (size_t l = 0; l < N_LISTS; l++)
        for (size_t i = 0; i < lists[l].n; i++) {
            char *quoted = NULL;
            assert_true(asprintf(&quoted, "`%s`", lists[l].words[i].word) > 0);
            if (!strstr(doc, quoted)) {
                char *m = NULL;
                assert_true(asprintf(&m, "%s\n  %s: %s", missing ? missing : "", lists[l].title,
                                     lists[l].words[i].word) > 0);
                free(missing);
                missing = m;
            }
            free(quoted);
        }
    if (missing)
        fail_msg("docs/operations.md does not explain (as `Word`):%s", missing);
    free(doc);
}

/* The backticked words under "### <title>" of the section "## Vocabulary"
 * in doc, up to the next heading. */
static void api_list(const char *doc, const char *title, struct names *out)
{
    const char *section = strstr(doc, "\n## Vocabulary\n");
    if (!section)
        fail_msg("docs/api.md has no section \"## Vocabulary\"");
    char *heading = NULL;
    assert_true(asprintf(&heading, "\n### %s\n", title) > 0);
    const char *p = strstr(section, heading);
    const char *next = strstr(section + 1, "\n## ");
    if (!p || (next && p > next))
        fail_msg("docs/api.md, Vocabulary: no \"### %s\"", title);
    p += strlen(heading);
    free(heading);
    const char *end = strstr(p, "\n#");
    if (!end)
        end = p + strlen(p);
    while ((p = strchr(p, '`')) && p < end) {
        const char *close = strchr(p + 1, '`');
        if (!close || close > end)
            break;
        char *w = dup_range(p + 1, (size_t)(close - p - 1));
        names_add(out, w);
        free(w);
        p = close + 1;
    }
}

static void test_api_lists_the_vocabulary(void **state)
{
    (void)state;
    char *doc = slurp(SOURCE_DIR "/docs/api.md");
    char *diff = NULL;
    for (size_t l = 0; l < N_LISTS; l++) {
        struct names listed = {0};
        api_list(doc, lists[l].title, &listed);
        for (size_t i = 0; i < lists[l].n; i++)
            if (!names_has(&listed, lists[l].words[i].word)) {
                char *m = NULL;
                assert_true(asprintf(&m, "%s\n  %s: %s is missing", diff ? diff : "",
                                     lists[l].title, lists[l].words[i].word) > 0);
                free(diff);
                diff = m;
            }
        for (size_t i = 0; i < listed.n; i++)
            if (!list_has_word(lists[l].words, lists[l].n, listed.v[i])) {
                char *m = NULL;
                assert_true(asprintf(&m, "%s\n  %s: %s is not in the header", diff ? diff : "",
                                     lists[l].title, listed.v[i]) > 0);
                free(diff);
                diff = m;
            }
        names_clear(&listed);
    }
    if (diff)
        fail_msg("docs/api.md's Vocabulary and include/workspace/vocabulary.h differ:%s", diff);
    free(doc);
}

/* ---- (b) the dashboard's metrics ---- */

static int is_metric_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}

static int is_metric_char(char c)
{
    return is_metric_start(c) || (c >= '0' && c <= '9');
}

/* Skips a bracketed group starting at p ('(', '{' or '['), strings inside
 * included; returns the character after it. */
static const char *skip_group(const char *p)
{
    char open = *p, close = open == '(' ? ')' : open == '{' ? '}' : ']';
    int depth = 0;
    for (; *p; p++) {
        if (*p == '"' || *p == '\'' || *p == '`')
            p = skip_quoted(p) - 1;
        else if (*p == open)
            depth++;
        else if (*p == close && --depth == 0)
            return p + 1;
    }
    return p;
}

/* Operator words, and the aggregations, which may be followed by "by (...)"
 * before their parenthesis. */
static int is_keyword(const char *w)
{
    static const char *const kw[] = {
        "by",   "without", "on",       "ignoring",     "group_left", "group_right", "bool",
        "and",  "or",      "unless",   "offset",       "inf",        "nan",         "sum",
        "min",  "max",     "avg",      "group",        "stddev",     "stdvar",      "count",
        "topk", "bottomk", "quantile", "count_values", "limitk",     "limit_ratio", NULL};
    for (size_t i = 0; kw[i]; i++)
        if (strcmp(w, kw[i]) == 0)
            return 1;
    return 0;
}

static int takes_labels(const char *w)
{
    return strcmp(w, "by") == 0 || strcmp(w, "without") == 0 || strcmp(w, "on") == 0 ||
           strcmp(w, "ignoring") == 0 || strcmp(w, "group_left") == 0 ||
           strcmp(w, "group_right") == 0;
}

/* The values of the exact matchers (label="value") in a {...} group from
 * open to end; values with a Grafana variable are left out. */
static void exact_matchers(const char *open, const char *end, struct names *values)
{
    for (const char *p = open; p < end; p++) {
        if (*p == '"') {
            p = skip_quoted(p) - 1;
            continue;
        }
        if (*p != '=' || p[-1] == '!' || p[-1] == '=' || p[1] == '~')
            continue;
        const char *v = p + 1;
        while (*v == ' ')
            v++;
        if (*v != '"')
            continue;
        const char *close = skip_quoted(v);
        char *value = dup_range(v + 1, (size_t)(close - v - 2));
        if (!strchr(value, '$'))
            names_add(values, value);
        free(value);
        p = close - 1;
    }
}

/* The metric names a PromQL expression (or a Grafana label_values() query)
 * reads: identifiers that are not functions, keywords, labels, durations or
 * Grafana variables; with values, also the label values it matches exactly. */
static void promql_metrics(const char *expr, struct names *out, struct names *values)
{
    const char *p = expr;
    while (*p) {
        if (*p == '"' || *p == '\'' || *p == '`') {
            p = skip_quoted(p);
        } else if (*p == '{' || *p == '[') {
            const char *end = skip_group(p); /* label matchers, ranges */
            if (*p == '{' && values)
                exact_matchers(p, end, values);
            p = end;
        } else if (*p == '$') {
            p++;
            while (is_metric_char(*p))
                p++;
        } else if (is_metric_start(*p) && (p == expr || !is_metric_char(p[-1])) &&
                   (p == expr || p[-1] != '.')) {
            const char *s = p;
            while (is_metric_char(*p))
                p++;
            char *w = dup_range(s, (size_t)(p - s));
            const char *next = p;
            while (*next == ' ' || *next == '\n' || *next == '\t')
                next++;
            if (strcmp(w, "label_values") == 0 && *next == '(') {
                /* label_values(metric, label): the metric only. */
                const char *end = skip_group(next);
                const char *comma = memchr(next, ',', (size_t)(end - next));
                if (comma) {
                    char *first = dup_range(next + 1, (size_t)(comma - next - 1));
                    promql_metrics(first, out, values);
                    free(first);
                }
                p = end;
            } else if (takes_labels(w) && *next == '(') {
                p = skip_group(next);
            } else if (*next == '(' || is_keyword(w)) {
                /* a function or an operator word */
            } else {
                names_add(out, w);
            }
            free(w);
        } else {
            if (*p >= '0' && *p <= '9') /* numbers, durations like 5m */
                while (is_metric_char(*p) || *p == '.')
                    p++;
            else
                p++;
        }
    }
}

static void test_promql_scanner(void **state)
{
    (void)state;
    static const struct {
        const char *expr;
        const char *want; /* space separated, in order */
    } cases[] = {
        {"sum by (state) (hibernator_workspaces{class=~\"$class\"})", "hibernator_workspaces"},
        {"histogram_quantile(0.9, sum by (le, restore_source) "
         "(rate(hibernator_resume_to_ready_seconds_bucket[$__rate_interval])))",
         "hibernator_resume_to_ready_seconds_bucket"},
        {"sum(increase(a_total{x=\"y\"}[1h])) / 3600 + on(instance) group_left(pod) b offset 5m",
         "a_total b"},
        {"label_values(hibernator_pauses_total{class=~\"$class\"}, namespace)",
         "hibernator_pauses_total"},
        {"label_values(namespace)", ""},
        {"max(hibernator_leader) or vector(0)", "hibernator_leader"},
        {"rate(x[5m]) > bool 1e3", "x"},
        {"${datasource}", ""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct names got = {0};
        promql_metrics(cases[i].expr, &got, NULL);
        char joined[512] = "";
        for (size_t k = 0; k < got.n; k++)
            snprintf(joined + strlen(joined), sizeof(joined) - strlen(joined), "%s%s", k ? " " : "",
                     got.v[k]);
        if (strcmp(joined, cases[i].want) != 0)
            fail_msg("%s\n  got  \"%s\"\n  want \"%s\"", cases[i].expr, joined, cases[i].want);
        names_clear(&got);
    }
    /* Exact matchers give their values; regex, negative and variable ones
     * do not. */
    struct names metrics = {0}, values = {0};
    promql_metrics("sum(x{a=\"v1\",b=~\"r.*\",c!=\"n\",d=\"$var\", e = \"v,2\"}) / "
                   "y{f=\"v3\"}",
                   &metrics, &values);
    assert_int_equal(metrics.n, 2);
    assert_int_equal(values.n, 3);
    assert_string_equal(values.v[0], "v1");
    assert_string_equal(values.v[1], "v,2");
    assert_string_equal(values.v[2], "v3");
    names_clear(&metrics);
    names_clear(&values);
}

/* Whether name occurs in a string literal of a .c/.h file under dir, with no
 * name character right before or after it (so "x_total" is not found in
 * "x_total_extra", but is in "# TYPE x_total counter\n" or
 * "x_total{reason=\"%s\"} %llu\n"). */
static int literal_in_tree(const char *dir, const char *name)
{
    DIR *d = opendir(dir);
    if (!d)
        fail_msg("%s: %s", dir, strerror(errno));
    int found = 0;
    size_t len = strlen(name);
    for (struct dirent *e; !found && (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(path, &st) < 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            found = literal_in_tree(path, name);
            continue;
        }
        size_t n = strlen(e->d_name);
        if (n < 3 || (strcmp(e->d_name + n - 2, ".c") != 0 && strcmp(e->d_name + n - 2, ".h") != 0))
            continue;
        char *src = slurp(path);
        char *code = without_comments(src);
        for (const char *p = code; *p && !found;) {
            if (*p == '\'') {
                p = skip_quoted(p);
            } else if (*p == '"') {
                const char *end;
                char *lit = literal_at(p, &end);
                for (const char *q = lit; !found && (q = strstr(q, name)); q++)
                    found = (q == lit || !is_metric_char(q[-1])) && !is_metric_char(q[len]);
                free(lit);
                p = end;
            } else {
                p++;
            }
        }
        free(code);
        free(src);
    }
    closedir(d);
    return found;
}

/* A histogram registered as x is queried as x_bucket, x_sum, x_count. */
static int metric_registered(const char *dir, const char *name)
{
    if (literal_in_tree(dir, name))
        return 1;
    static const char *const suffixes[] = {"_bucket", "_sum", "_count"};
    size_t len = strlen(name);
    for (size_t i = 0; i < 3; i++) {
        size_t sl = strlen(suffixes[i]);
        if (len > sl && strcmp(name + len - sl, suffixes[i]) == 0) {
            char *base = dup_range(name, len - sl);
            int ok = literal_in_tree(dir, base);
            free(base);
            if (ok)
                return 1;
        }
    }
    return 0;
}

static void test_metric_scanner(void **state)
{
    (void)state;
    const char *dir = SOURCE_DIR "/tests/data/docs/metrics-src";
    assert_true(metric_registered(dir, "hibernator_widgets_total"));
    assert_true(metric_registered(dir, "hibernator_gizmo_seconds_bucket"));
    assert_true(metric_registered(dir, "hibernator_gizmo_seconds_count"));
    assert_true(metric_registered(dir, "workqueue_fake_depth"));
    assert_true(metric_registered(dir, "hibernator_joined_total"));
    assert_true(metric_registered(dir, "hibernator_in_header"));
    /* Not registered: only in a comment, only an identifier, only the
     * prefix of a longer name, or a histogram suffix of nothing. */
    assert_false(metric_registered(dir, "hibernator_commented_total"));
    assert_false(metric_registered(dir, "hibernator_identifier_total"));
    assert_false(metric_registered(dir, "hibernator_prefix_total"));
    assert_false(metric_registered(dir, "hibernator_widgets_bucket"));
}

/* The names the dashboard is built on. */
static const char *const dashboard_metrics[] = {
    "workqueue_depth",
    "controller_runtime_reconcile_total",
    "controller_runtime_reconcile_errors_total",
    "hibernator_workspaces",
    "hibernator_pauses_total",
    "hibernator_resumes_total",
    "hibernator_snapshots_total",
    "hibernator_snapshot_duration_seconds_bucket",
    "hibernator_resume_to_ready_seconds_bucket",
    "hibernator_waiting_for_capacity_seconds_bucket",
    "hibernator_activity_probe_rounds_total",
    "hibernator_accelerator_seconds_released_total",
    "hibernator_leader",
};

static int is_dashboard_metric(const char *name)
{
    size_t n = sizeof(dashboard_metrics) / sizeof(dashboard_metrics[0]);
    for (size_t i = 0; i < n; i++) {
        const char *m = dashboard_metrics[i];
        if (strcmp(m, name) == 0)
            return 1;
        /* The _count and _sum of a histogram on the list. */
        size_t ml = strlen(m), nl = strlen(name);
        if (ml > 7 && strcmp(m + ml - 7, "_bucket") == 0 && nl > ml - 7 &&
            strncmp(m, name, ml - 7) == 0 &&
            (strcmp(name + ml - 7, "_count") == 0 || strcmp(name + ml - 7, "_sum") == 0))
            return 1;
    }
    return 0;
}

/* Every "expr" and every templating "query"/"definition" string: the
 * metrics and (values not NULL) the label values they match exactly. */
static void dashboard_queries(const cJSON *node, struct names *metrics, struct names *values,
                              size_t *n_exprs)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, node)
    {
        if (cJSON_IsString(c) && c->string &&
            (strcmp(c->string, "expr") == 0 || strcmp(c->string, "definition") == 0 ||
             (strcmp(c->string, "query") == 0 && strstr(c->valuestring, "label_values")))) {
            promql_metrics(c->valuestring, metrics, values);
            (*n_exprs)++;
        } else if (cJSON_IsObject(c) || cJSON_IsArray(c)) {
            dashboard_queries(c, metrics, values, n_exprs);
        }
    }
}

static cJSON *load_dashboard(void)
{
    char *text = slurp(SOURCE_DIR "/deploy/grafana/hibernator-dashboard.json");
    cJSON *d = cJSON_Parse(text);
    if (!d)
        fail_msg("deploy/grafana/hibernator-dashboard.json is not JSON (near: %.40s)",
                 cJSON_GetErrorPtr() ? cJSON_GetErrorPtr() : "?");
    free(text);
    return d;
}

static void test_dashboard_shape(void **state)
{
    (void)state;
    cJSON *d = load_dashboard();
    /* The variables: a Prometheus data source, namespace and class. */
    const cJSON *vars = cJSON_GetObjectItem(cJSON_GetObjectItem(d, "templating"), "list"), *v;
    int has_ds = 0, has_ns = 0, has_class = 0;
    cJSON_ArrayForEach(v, vars)
    {
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(v, "name"));
        const char *type = cJSON_GetStringValue(cJSON_GetObjectItem(v, "type"));
        if (!name || !type)
            fail_msg("a dashboard variable without name or type");
        if (strcmp(name, "datasource") == 0 && strcmp(type, "datasource") == 0)
            has_ds =
                strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(v, "query")), "prometheus") == 0;
        has_ns |= strcmp(name, "namespace") == 0 && strcmp(type, "query") == 0;
        has_class |= strcmp(name, "class") == 0 && strcmp(type, "query") == 0;
    }
    assert_true(has_ds);
    assert_true(has_ns);
    assert_true(has_class);
    /* Every panel queries through the variable, with at least one target. */
    const cJSON *panels = cJSON_GetObjectItem(d, "panels"), *p;
    size_t n_panels = 0;
    cJSON_ArrayForEach(p, panels)
    {
        const char *title = cJSON_GetStringValue(cJSON_GetObjectItem(p, "title"));
        const char *type = cJSON_GetStringValue(cJSON_GetObjectItem(p, "type"));
        assert_non_null(title);
        if (type && strcmp(type, "row") == 0)
            continue;
        n_panels++;
        const char *uid =
            cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(p, "datasource"), "uid"));
        if (!uid || strcmp(uid, "${datasource}") != 0)
            fail_msg("panel \"%s\": datasource uid is not ${datasource}", title);
        const cJSON *targets = cJSON_GetObjectItem(p, "targets"), *t;
        if (cJSON_GetArraySize(targets) == 0)
            fail_msg("panel \"%s\" has no query", title);
        cJSON_ArrayForEach(t, targets)
        {
            if (!cJSON_GetStringValue(cJSON_GetObjectItem(t, "expr")))
                fail_msg("panel \"%s\": a target without expr", title);
        }
    }
    assert_true(n_panels >= 9);

    /* Exactly the intended names: each used, nothing else. */
    struct names used = {0};
    size_t n_exprs = 0;
    dashboard_queries(d, &used, NULL, &n_exprs);
    assert_true(n_exprs >= n_panels);
    for (size_t i = 0; i < used.n; i++)
        if (!is_dashboard_metric(used.v[i]))
            fail_msg("the dashboard queries %s, which is not one of the controller's metrics "
                     "it is built on",
                     used.v[i]);
    for (size_t i = 0; i < sizeof(dashboard_metrics) / sizeof(dashboard_metrics[0]); i++)
        if (!names_has(&used, dashboard_metrics[i]))
            fail_msg("the dashboard does not use %s", dashboard_metrics[i]);
    names_clear(&used);
    cJSON_Delete(d);
}

/* The metrics, and the label values matched exactly (a state, a restore
 * source), are what the controller writes. */
static void test_dashboard_metrics_are_registered(void **state)
{
    (void)state;
    cJSON *d = load_dashboard();
    struct names used = {0}, values = {0};
    size_t n_exprs = 0;
    dashboard_queries(d, &used, &values, &n_exprs);
    assert_true(used.n > 0);
    assert_true(values.n > 0);
    char *missing = NULL;
    for (size_t i = 0; i < used.n + values.n; i++) {
        int metric = i < used.n;
        const char *name = metric ? used.v[i] : values.v[i - used.n];
        if (metric ? metric_registered(SOURCE_DIR "/src", name)
                   : literal_in_tree(SOURCE_DIR "/src", name))
            continue;
        char *m = NULL;
        assert_true(asprintf(&m, "%s\n  %s %s", missing ? missing : "",
                             metric ? "metric" : "label value", name) > 0);
        free(missing);
        missing = m;
    }
    if (missing)
        fail_msg("names the dashboard queries that no string literal under src/ has (the "
                 "controller does not export them):%s",
                 missing);
    names_clear(&used);
    names_clear(&values);
    cJSON_Delete(d);
}

/* ---- (c) the examples ---- */

struct example_doc {
    char *file;
    cJSON *obj; /* owned by the file's array */
};

static int is_example(const char *name)
{
    size_t n = strlen(name);
    return n > 5 && strcmp(name + n - 5, ".yaml") == 0 && strcmp(name, "kustomization.yaml") != 0;
}

static void test_examples_decode_and_are_accepted(void **state)
{
    (void)state;
    const char *dir = SOURCE_DIR "/deploy/examples";
    char *err = NULL;
    cJSON *kust = yaml_json_load_file(SOURCE_DIR "/deploy/examples/kustomization.yaml", &err);
    if (!kust)
        fail_msg("%s", err);
    const cJSON *resources = cJSON_GetObjectItem(cJSON_GetArrayItem(kust, 0), "resources");

    cJSON *files[64];
    size_t n_files = 0;
    struct workspace_class *classes[64];
    size_t n_classes = 0;
    struct workspace *workspaces[64];
    char *ws_files[64];
    size_t n_ws = 0;

    DIR *d = opendir(dir);
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d));) {
        if (!is_example(e->d_name))
            continue;
        /* Applied with the others (it_schema applies the kustomization). */
        int listed = 0;
        const cJSON *r;
        cJSON_ArrayForEach(r, resources)
        {
            listed |= cJSON_IsString(r) && strcmp(r->valuestring, e->d_name) == 0;
        }
        if (!listed)
            fail_msg("deploy/examples/%s is not in deploy/examples/kustomization.yaml", e->d_name);
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        assert_true(n_files < 64);
        cJSON *docs = yaml_json_load_file(path, &err);
        if (!docs)
            fail_msg("%s", err);
        files[n_files++] = docs;
        if (cJSON_GetArraySize(docs) == 0)
            fail_msg("deploy/examples/%s: no object", e->d_name);
        const cJSON *obj;
        cJSON_ArrayForEach(obj, docs)
        {
            const char *kind = cJSON_GetStringValue(cJSON_GetObjectItem(obj, "kind"));
            const char *api = cJSON_GetStringValue(cJSON_GetObjectItem(obj, "apiVersion"));
            if (!api || strcmp(api, "hibernator.dev/v1alpha1") != 0)
                fail_msg("deploy/examples/%s: apiVersion %s, want hibernator.dev/v1alpha1",
                         e->d_name, api ? api : "(none)");
            if (kind && strcmp(kind, "WorkspaceClass") == 0) {
                struct workspace_class *c = NULL;
                if (workspace_class_decode(obj, &c, &err) != 0)
                    fail_msg("deploy/examples/%s: WorkspaceClass: %s", e->d_name, err);
                assert_true(n_classes < 64);
                classes[n_classes++] = c;
            } else if (kind && strcmp(kind, "Workspace") == 0) {
                struct workspace *ws = NULL;
                if (workspace_decode(obj, &ws, &err) != 0)
                    fail_msg("deploy/examples/%s: Workspace: %s", e->d_name, err);
                assert_true(n_ws < 64);
                ws_files[n_ws] = strdup(e->d_name);
                assert_non_null(ws_files[n_ws]);
                workspaces[n_ws++] = ws;
            } else {
                fail_msg("deploy/examples/%s: kind %s is not Workspace or WorkspaceClass",
                         e->d_name, kind ? kind : "(none)");
            }
        }
    }
    closedir(d);
    assert_true(n_classes >= 4);
    assert_true(n_ws >= 4);

    /* Each workspace names an example class, and decide() accepts it: the
     * Valid condition is True and the first pass creates its claim and pod,
     * which build. */
    for (size_t i = 0; i < n_ws; i++) {
        struct workspace *ws = workspaces[i];
        const struct workspace_class *cls = NULL;
        for (size_t k = 0; k < n_classes; k++)
            if (strcmp(classes[k]->name, ws->class_name) == 0)
                cls = classes[k];
        if (!cls)
            fail_msg("deploy/examples/%s: class %s is not among the examples", ws_files[i],
                     ws->class_name);
        struct decide_input in = {.ws = ws, .cls = cls, .now_ms = INT64_C(1798761600000)};
        struct decide_output out;
        assert_int_equal(workspace_decide(&in, &out), 0);
        const struct condition *valid = workspace_status_condition(&out.status, "Valid");
        assert_non_null(valid);
        if (valid->status != COND_TRUE)
            fail_msg("deploy/examples/%s: %s: %s", ws_files[i], valid->reason, valid->message);
        int creates_pod = 0;
        for (size_t a = 0; a < out.n_actions; a++)
            creates_pod |= out.actions[a].type == ACTION_CREATE_POD;
        assert_int_equal(creates_pod, !ws->paused);
        cJSON *pod = workspace_pod_build(ws, cls, "example-1", 0);
        cJSON *pvc = workspace_pvc_build(ws, cls);
        assert_non_null(pod);
        assert_non_null(pvc);
        cJSON_Delete(pod);
        cJSON_Delete(pvc);
        decide_output_clear(&out);
    }

    for (size_t i = 0; i < n_ws; i++) {
        workspace_free(workspaces[i]);
        free(ws_files[i]);
    }
    for (size_t i = 0; i < n_classes; i++)
        workspace_class_free(classes[i]);
    for (size_t i = 0; i < n_files; i++)
        cJSON_Delete(files[i]);
    cJSON_Delete(kust);
}

/* ---- (d) RBAC in docs/security.md ---- */

/* The row of the table in doc whose first two cells are group and resource
 * (in backticks), or NULL. */
static char *rbac_row(const char *doc, const char *group, const char *resource)
{
    char *prefix = NULL;
    assert_true(asprintf(&prefix, "| `%s` | `%s` |", group, resource) > 0);
    const char *p = doc;
    char *row = NULL;
    while (!row && (p = strstr(p, prefix))) {
        if (p == doc || p[-1] == '\n')
            row = dup_range(p, strcspn(p, "\n"));
        p++;
    }
    free(prefix);
    return row;
}

static void test_rbac_is_documented(void **state)
{
    (void)state;
    char *err = NULL;
    cJSON *docs = yaml_json_load_file(SOURCE_DIR "/deploy/rbac.yaml", &err);
    if (!docs)
        fail_msg("%s", err);
    char *doc = slurp(SOURCE_DIR "/docs/security.md");
    size_t checked = 0;
    const cJSON *obj;
    cJSON_ArrayForEach(obj, docs)
    {
        const char *kind = cJSON_GetStringValue(cJSON_GetObjectItem(obj, "kind"));
        if (!kind || (strcmp(kind, "ClusterRole") != 0 && strcmp(kind, "Role") != 0))
            continue;
        const cJSON *rule;
        cJSON_ArrayForEach(rule, cJSON_GetObjectItem(obj, "rules"))
        {
            const cJSON *g, *res, *verb;
            cJSON_ArrayForEach(g, cJSON_GetObjectItem(rule, "apiGroups"))
            {
                const char *group = g->valuestring[0] ? g->valuestring : "core";
                cJSON_ArrayForEach(res, cJSON_GetObjectItem(rule, "resources"))
                {
                    char *row = rbac_row(doc, group, res->valuestring);
                    if (!row)
                        fail_msg("docs/security.md has no row \"| `%s` | `%s` | ...\" for the "
                                 "%s rule of deploy/rbac.yaml",
                                 group, res->valuestring, kind);
                    /* The same verbs: each of the rule's, and no other. */
                    size_t n_verbs = 0, n_row = 0;
                    cJSON_ArrayForEach(verb, cJSON_GetObjectItem(rule, "verbs"))
                    {
                        char *q = NULL;
                        assert_true(asprintf(&q, "`%s`", verb->valuestring) > 0);
                        if (!strstr(row, q))
                            fail_msg("docs/security.md, %s %s: verb %s missing:\n  %s", group,
                                     res->valuestring, verb->valuestring, row);
                        free(q);
                        n_verbs++;
                    }
                    /* Backticked words in the verbs cell (the third). */
                    const char *cell = row;
                    for (int bars = 0; *cell && bars < 3; cell++)
                        bars += *cell == '|';
                    for (const char *c = cell; *c && *c != '|'; c++)
                        n_row += *c == '`';
                    n_row /= 2;
                    if (n_row != n_verbs)
                        fail_msg("docs/security.md, %s %s: %zu verbs listed, deploy/rbac.yaml "
                                 "has %zu:\n  %s",
                                 group, res->valuestring, n_row, n_verbs, row);
                    free(row);
                    checked++;
                }
            }
        }
    }
    assert_true(checked >= 10);
    free(doc);
    cJSON_Delete(docs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_word_scanner),
        cmocka_unit_test(test_vocabulary_shape),
        cmocka_unit_test(test_decide_writes_the_vocabulary),
        cmocka_unit_test(test_vocabulary_is_written),
        cmocka_unit_test(test_vocabulary_is_documented),
        cmocka_unit_test(test_api_lists_the_vocabulary),
        cmocka_unit_test(test_promql_scanner),
        cmocka_unit_test(test_metric_scanner),
        cmocka_unit_test(test_dashboard_shape),
        cmocka_unit_test(test_dashboard_metrics_are_registered),
        cmocka_unit_test(test_examples_decode_and_are_accepted),
        cmocka_unit_test(test_rbac_is_documented),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
