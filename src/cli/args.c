#include "cli/args.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli/timetext.h"
#include "util/args.h"

#define BIT(c) (1u << (c))
#define CMDS_ALL                                                                                   \
    (BIT(CLI_CMD_LIST) | BIT(CLI_CMD_PAUSE) | BIT(CLI_CMD_RESUME) | BIT(CLI_CMD_KEEP_ALIVE) |      \
     BIT(CLI_CMD_DESCRIBE) | BIT(CLI_CMD_REPORT) | BIT(CLI_CMD_DRILL) | BIT(CLI_CMD_WHAT_IF))

static const struct {
    enum cli_command command;
    const char *name;
    int takes_name;
} commands[] = {
    {CLI_CMD_HELP, "help", 0},         {CLI_CMD_VERSION, "version", 0},
    {CLI_CMD_LIST, "list", 0},         {CLI_CMD_PAUSE, "pause", 1},
    {CLI_CMD_RESUME, "resume", 1},     {CLI_CMD_KEEP_ALIVE, "keep-alive", 1},
    {CLI_CMD_DESCRIBE, "describe", 1}, {CLI_CMD_REPORT, "report", 0},
    {CLI_CMD_DRILL, "drill", 0},       {CLI_CMD_WHAT_IF, "what-if", 0},
};

enum flag_id {
    F_HELP,
    F_VERSION,
    F_KUBECONFIG,
    F_CONTEXT,
    F_NAMESPACE,
    F_ALL_NAMESPACES,
    F_WAIT,
    F_TIMEOUT,
    F_UNTIL,
    F_FROM,
    F_TO,
    F_OUTPUT,
    F_CLASS,
    F_CANARY_URL,
    F_CANARY_PORT,
};

static const struct flag {
    enum flag_id id;
    const char *name; /* without "--" */
    char short_name;  /* 0: none */
    int takes_value;
    unsigned commands; /* where it is accepted */
} flags[] = {
    {F_HELP, "help", 'h', 0, ~0u},
    {F_VERSION, "version", 0, 0, ~0u},
    {F_KUBECONFIG, "kubeconfig", 0, 1, CMDS_ALL},
    {F_CONTEXT, "context", 0, 1, CMDS_ALL},
    {F_NAMESPACE, "namespace", 'n', 1, CMDS_ALL},
    {F_ALL_NAMESPACES, "all-namespaces", 'A', 0,
     BIT(CLI_CMD_LIST) | BIT(CLI_CMD_REPORT) | BIT(CLI_CMD_WHAT_IF)},
    {F_WAIT, "wait", 0, 0, BIT(CLI_CMD_PAUSE) | BIT(CLI_CMD_RESUME)},
    {F_TIMEOUT, "timeout", 0, 1, BIT(CLI_CMD_PAUSE) | BIT(CLI_CMD_RESUME) | BIT(CLI_CMD_DRILL)},
    {F_UNTIL, "until", 0, 1, BIT(CLI_CMD_KEEP_ALIVE)},
    {F_FROM, "from", 0, 1, BIT(CLI_CMD_REPORT)},
    {F_TO, "to", 0, 1, BIT(CLI_CMD_REPORT)},
    {F_OUTPUT, "output", 'o', 1, BIT(CLI_CMD_REPORT) | BIT(CLI_CMD_WHAT_IF)},
    {F_CLASS, "class", 0, 1, BIT(CLI_CMD_DRILL)},
    {F_CANARY_URL, "canary-url", 0, 1, BIT(CLI_CMD_DRILL)},
    {F_CANARY_PORT, "canary-port", 0, 1, BIT(CLI_CMD_DRILL)},
};

#define N_FLAGS (sizeof(flags) / sizeof(flags[0]))

/* One flag as written, with its value, kept until the command is known. */
struct seen_flag {
    const struct flag *flag;
    const char *spelled; /* as the user wrote it, for messages: "-n", "--wait" */
    const char *value;   /* NULL for a boolean without "=" */
};

static int errorf(char *err, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int errorf(char *err, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, size, fmt, ap);
    va_end(ap);
    return -EINVAL;
}

const char *cli_command_name(enum cli_command command)
{
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (commands[i].command == command)
            return commands[i].name;
    return "";
}

static const struct flag *find_short(char c)
{
    for (size_t i = 0; i < N_FLAGS; i++)
        if (flags[i].short_name == c)
            return &flags[i];
    return NULL;
}

static int parse_bool(const char *spelled, const char *v, int *ret, char *err, size_t size)
{
    if (!v || strcmp(v, "true") == 0) {
        *ret = 1;
        return 0;
    }
    if (strcmp(v, "false") == 0) {
        *ret = 0;
        return 0;
    }
    return errorf(err, size, "%s: \"%s\" is not true or false", spelled, v);
}

static int parse_port(const char *spelled, const char *v, int *ret, char *err, size_t size)
{
    char *end = NULL;
    errno = 0;
    long p = strtol(v, &end, 10);
    if (errno || !end || *end || end == v || p < 1 || p > 65535)
        return errorf(err, size, "%s: \"%s\" is not a port number (1-65535)", spelled, v);
    *ret = (int)p;
    return 0;
}

/* Applies a flag that holds a time or a duration; from and to are set to
 * the spelling of --from and --to when they are given. */
static int apply_time(const struct seen_flag *s, int64_t now_ms, struct cli_args *a,
                      const char **from, const char **to, char *err, size_t size)
{
    const char *v = s->value;
    int64_t ms;
    switch (s->flag->id) {
    case F_TIMEOUT:
        if (timetext_parse_duration(v, &ms) < 0 || ms <= 0)
            return errorf(err, size,
                          "%s: \"%s\" is not a duration above zero such as \"90s\", \"10m\" or "
                          "\"1h\"",
                          s->spelled, v);
        a->timeout_ms = ms;
        return 0;
    case F_UNTIL:
        if (strcmp(v, "none") == 0) {
            a->until_clear = 1;
            a->until_ms = 0;
            return 0;
        }
        if (timetext_parse_until(v, now_ms, &ms) < 0)
            return errorf(err, size,
                          "%s: \"%s\" is neither a time (2026-01-02T18:00:00Z, 2026-01-02) nor a "
                          "duration from now (2h, 90m), nor \"none\"",
                          s->spelled, v);
        if (ms <= now_ms)
            return errorf(err, size, "%s: %s is in the past", s->spelled, v);
        a->until_ms = ms;
        a->until_clear = 0;
        return 0;
    case F_FROM:
    case F_TO:
        if (timetext_parse_point(v, now_ms, &ms) < 0)
            return errorf(err, size,
                          "%s: \"%s\" is neither a time (2026-01-02T18:00:00Z, 2026-01-02), "
                          "\"now\", nor a duration before now (7d, 12h)",
                          s->spelled, v);
        if (s->flag->id == F_FROM) {
            a->from_ms = ms;
            *from = s->spelled;
        } else {
            a->to_ms = ms;
            *to = s->spelled;
        }
        return 0;
    default:
        return 0;
    }
}

/* Applies one flag once the command is known. */
static int apply(const struct seen_flag *s, int64_t now_ms, struct cli_args *a, const char **from,
                 const char **to, char *err, size_t size)
{
    const char *v = s->value;
    switch (s->flag->id) {
    case F_HELP:
        return parse_bool(s->spelled, v, &a->help, err, size);
    case F_VERSION: {
        int on = 0;
        int r = parse_bool(s->spelled, v, &on, err, size);
        if (r == 0 && on)
            a->command = CLI_CMD_VERSION;
        return r;
    }
    case F_ALL_NAMESPACES:
        return parse_bool(s->spelled, v, &a->all_namespaces, err, size);
    case F_WAIT:
        return parse_bool(s->spelled, v, &a->wait, err, size);
    case F_KUBECONFIG:
        if (!*v)
            return errorf(err, size, "%s: empty path", s->spelled);
        a->kubeconfig = v;
        return 0;
    case F_CONTEXT:
        if (!*v)
            return errorf(err, size, "%s: empty context name", s->spelled);
        a->context = v;
        return 0;
    case F_NAMESPACE:
        if (!*v)
            return errorf(err, size, "%s: empty namespace", s->spelled);
        a->ns = v;
        return 0;
    case F_OUTPUT:
        if (strcmp(v, "table") == 0)
            a->output = CLI_OUTPUT_TABLE;
        else if (strcmp(v, "csv") == 0)
            a->output = CLI_OUTPUT_CSV;
        else if (strcmp(v, "json") == 0)
            a->output = CLI_OUTPUT_JSON;
        else
            return errorf(err, size, "%s: \"%s\" is not one of table, csv, json", s->spelled, v);
        return 0;
    case F_CLASS:
        if (!*v)
            return errorf(err, size, "%s: empty class name", s->spelled);
        a->class_name = v;
        return 0;
    case F_CANARY_URL:
        if (strncmp(v, "http://", 7) != 0 && strncmp(v, "https://", 8) != 0)
            return errorf(err, size, "%s: \"%s\" is not an http:// or https:// URL", s->spelled, v);
        a->canary_url = v;
        return 0;
    case F_CANARY_PORT:
        return parse_port(s->spelled, v, &a->canary_port, err, size);
    default:
        return apply_time(s, now_ms, a, from, to, err, size);
    }
}

static enum cli_command find_command(const char *word)
{
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (strcmp(commands[i].name, word) == 0)
            return commands[i].command;
    return CLI_CMD_NONE;
}

static int command_takes_name(enum cli_command c)
{
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (commands[i].command == c)
            return commands[i].takes_name;
    return 0;
}

/* getopt_long's val for flags[i]: above every character, so that a short
 * option's letter and a long option's index never meet. */
#define LONG_VAL(i) (256 + (int)(i))

/* What one pass of getopt_long found: flags in order, and the operands. */
struct scan {
    struct seen_flag *seen;
    int n_seen;
    const char **pos;
    int n_pos;
    /* Short flags are spelled "-n"; the longest spelling kept is "--" + a name. */
    char spelled_short[N_FLAGS][3];
    char spelled_long[N_FLAGS][32];
};

/* The option table from flags[]: every flag by its long name, a boolean
 * with an optional "=value", and the short letters. shortopts starts with
 * '-' (operands come back in order as option 1, argv is left as it is) and
 * ':' (a missing value is ':', not '?'). */
static void build_options(struct option *longopts, char *shortopts)
{
    char *s = shortopts;
    *s++ = '-';
    *s++ = ':';
    for (size_t i = 0; i < N_FLAGS; i++) {
        int has_arg = flags[i].takes_value ? required_argument : optional_argument;
        longopts[i] = (struct option){flags[i].name, has_arg, NULL, LONG_VAL(i)};
        if (flags[i].short_name) {
            *s++ = flags[i].short_name;
            *s++ = ':';
            if (!flags[i].takes_value)
                *s++ = ':';
        }
    }
    *s = '\0';
    longopts[N_FLAGS] = (struct option){0};
}

static int unknown_long(const char *element, char *err, size_t size)
{
    const char *name = element + 2;
    size_t len = strcspn(name, "=");
    return errorf(err, size, "unknown flag: --%.*s", (int)(len > 64 ? 64 : len), name);
}

static const struct flag *flag_of(int opt)
{
    return opt >= LONG_VAL(0) ? &flags[opt - LONG_VAL(0)] : find_short((char)opt);
}

/* getopt_long's '?' (an unknown flag) or ':' (a flag without its value). */
static int scan_error(int opt, char **argv, char *err, size_t size)
{
    const char *element = argv[optind - 1];
    if (opt == ':') {
        const struct flag *f = flag_of(optopt);
        if (strncmp(element, "--", 2) != 0)
            return errorf(err, size, "-%c needs a value", f->short_name);
        if (!args_long_exact(element, f->name))
            return unknown_long(element, err, size);
        return errorf(err, size, "--%s needs a value", f->name);
    }
    if (optopt == 0 || optopt >= LONG_VAL(0))
        return unknown_long(element, err, size); /* a long option is a whole element */
    return errorf(err, size, "unknown flag: -%c", optopt);
}

/* Keeps one flag getopt_long returned, with its value and its spelling. */
static int scan_flag(struct scan *sc, int opt, char **argv, char *err, size_t size)
{
    const struct flag *f = flag_of(opt);
    const char *element = args_element(argv, optind, optarg);
    const char *value = optarg;
    char *spelled;
    if (opt >= LONG_VAL(0)) {
        if (!args_long_exact(element, f->name))
            return unknown_long(element, err, size);
        spelled = sc->spelled_long[f - flags];
        snprintf(spelled, sizeof(sc->spelled_long[0]), "--%s", f->name);
    } else {
        spelled = sc->spelled_short[f - flags];
        snprintf(spelled, sizeof(sc->spelled_short[0]), "-%c", f->short_name);
        /* "-n=team" is "-n team", as kubectl reads it; "-Ax" is no "-A -x". */
        if (value && value == element + 2 && value[0] == '=')
            value++;
        else if (value && value == element + 2 && !f->takes_value)
            return errorf(err, size, "unknown flag: %s (flags do not combine)", element);
    }
    sc->seen[sc->n_seen++] = (struct seen_flag){f, spelled, value};
    return 0;
}

/* Splits argv into flags and operands; "--" ends the flags. */
static int scan_args(int argc, char **argv, struct scan *sc, char *err, size_t size)
{
    struct option longopts[N_FLAGS + 1];
    char shortopts[3 + 3 * N_FLAGS];
    build_options(longopts, shortopts);
    args_getopt_reset();
    int opt;
    while ((opt = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
        if (opt == 1) {
            sc->pos[sc->n_pos++] = optarg;
            continue;
        }
        if (opt == '?' || opt == ':')
            return scan_error(opt, argv, err, size);
        int r = scan_flag(sc, opt, argv, err, size);
        if (r < 0)
            return r;
    }
    for (; optind < argc; optind++)
        sc->pos[sc->n_pos++] = argv[optind];
    return 0;
}

/* The command, from the first operand; "help COMMAND" is "COMMAND --help". */
static int resolve_command(const struct scan *sc, struct cli_args *a, char *err, size_t size)
{
    if (sc->n_pos == 0)
        return 0;
    a->command = find_command(sc->pos[0]);
    if (a->command == CLI_CMD_NONE)
        return errorf(err, size,
                      "unknown command \"%s\" (commands: list, pause, resume, keep-alive, "
                      "describe, report, drill)",
                      sc->pos[0]);
    if (a->command == CLI_CMD_HELP) {
        a->help = 1;
        a->command = sc->n_pos > 1 ? find_command(sc->pos[1]) : CLI_CMD_NONE;
        if (sc->n_pos > 1 && a->command == CLI_CMD_NONE)
            return errorf(err, size, "help: unknown command \"%s\"", sc->pos[1]);
    }
    return 0;
}

/* Applies every flag the command accepts; from and to are their spellings. */
static int apply_all(const struct scan *sc, int64_t now_ms, struct cli_args *a, const char **from,
                     const char **to, char *err, size_t size)
{
    for (int i = 0; i < sc->n_seen; i++) {
        const struct seen_flag *s = &sc->seen[i];
        if (a->command != CLI_CMD_NONE && a->command != CLI_CMD_VERSION &&
            !(s->flag->commands & BIT(a->command)))
            return errorf(err, size, "%s is not a flag of %s", s->spelled,
                          cli_command_name(a->command));
        int r = apply(s, now_ms, a, from, to, err, size);
        if (r < 0)
            return r;
    }
    return 0;
}

/* The workspace's NAME, and nothing after it. */
static int take_name(const struct scan *sc, struct cli_args *a, char *err, size_t size)
{
    int want = command_takes_name(a->command);
    if (want && sc->n_pos < 2)
        return errorf(err, size, "%s needs the workspace's NAME", cli_command_name(a->command));
    if (sc->n_pos > 1 + want)
        return errorf(err, size, "%s: unexpected argument \"%s\"", cli_command_name(a->command),
                      sc->pos[1 + want]);
    if (want)
        a->name = sc->pos[1];
    return 0;
}

/* Flags that need each other, or exclude each other; the defaults. */
static int finish(struct cli_args *a, int64_t now_ms, const char *from, const char *to, char *err,
                  size_t size)
{
    if (a->ns && a->all_namespaces)
        return errorf(err, size, "-n/--namespace and -A/--all-namespaces cannot be used together");
    if (a->timeout_ms && (a->command == CLI_CMD_PAUSE || a->command == CLI_CMD_RESUME) && !a->wait)
        return errorf(err, size, "--timeout only applies with --wait");
    if (a->command == CLI_CMD_KEEP_ALIVE && !a->until_ms && !a->until_clear)
        return errorf(err, size, "keep-alive needs --until TIME|DURATION (or --until none)");
    if (a->command == CLI_CMD_DRILL && !a->class_name)
        return errorf(err, size, "drill needs --class CLASS");
    if (a->command == CLI_CMD_REPORT) {
        if (!to)
            a->to_ms = now_ms;
        if (!from)
            a->from_ms = a->to_ms - CLI_DEFAULT_REPORT_SPAN_MS;
        if (a->from_ms >= a->to_ms)
            return errorf(err, size, "%s must be before %s", from, to ? to : "--to (default: now)");
    }
    if (!a->timeout_ms)
        a->timeout_ms = a->command == CLI_CMD_DRILL ? CLI_DEFAULT_DRILL_TIMEOUT_MS
                                                    : CLI_DEFAULT_WAIT_TIMEOUT_MS;
    return 0;
}

int cli_args_parse(int argc, char **argv, int64_t now_ms, struct cli_args *ret, char *err,
                   size_t size)
{
    struct cli_args a = {0};
    struct scan *sc = calloc(1, sizeof(*sc));
    const char *from = NULL, *to = NULL;
    int r = -ENOMEM;
    if (sc) {
        sc->seen = calloc((size_t)(argc > 0 ? argc : 1), sizeof(*sc->seen));
        sc->pos = calloc((size_t)(argc > 0 ? argc : 1), sizeof(*sc->pos));
    }
    if (!sc || !sc->seen || !sc->pos) {
        r = errorf(err, size, "out of memory");
        goto out;
    }
    r = scan_args(argc, argv, sc, err, size);
    if (r == 0)
        r = resolve_command(sc, &a, err, size);
    if (r < 0 || a.help)
        goto out;
    r = apply_all(sc, now_ms, &a, &from, &to, err, size);
    if (r < 0 || a.help || a.command == CLI_CMD_VERSION || a.command == CLI_CMD_NONE)
        goto out;
    r = take_name(sc, &a, err, size);
    if (r == 0)
        r = finish(&a, now_ms, from, to, err, size);
out:
    if (sc) {
        free(sc->seen);
        free(sc->pos);
        free(sc);
    }
    if (r == 0)
        *ret = a;
    return r;
}

static const char *const usage_text[] = {
    [CLI_CMD_NONE] =
        "kubectl workspace: pause, resume and inspect hibernator Workspaces.\n"
        "\n"
        "Usage:\n"
        "  kubectl workspace COMMAND [NAME] [flags]\n"
        "\n"
        "Commands:\n"
        "  list                        workspaces with state, idle time, accelerator, snapshot\n"
        "  pause NAME [--wait]         give the accelerator back (spec.paused: true)\n"
        "  resume NAME [--wait]        bring the session back (spec.paused: false)\n"
        "  keep-alive NAME --until T   no automatic pause before T (spec.keepAliveUntil)\n"
        "  describe NAME               spec, conditions, last pause and resume, events\n"
        "  report                      accelerator-hours held and given back, time to ready\n"
        "  drill --class CLASS         the release check: pause and resume a throw-away workspace\n"
        "  what-if                     what other idle policies would have done with the use seen\n"
        "  help [COMMAND]              this text, or a command's\n"
        "  version                     the plugin's version\n"
        "\n"
        "Global flags:\n"
        "  --kubeconfig PATH    kubeconfig file (default: $KUBECONFIG, in-cluster, "
        "~/.kube/config)\n"
        "  --context NAME       kubeconfig context (default: the current context)\n"
        "  -n, --namespace NS   namespace (default: the context's)\n"
        "  -h, --help           help\n"
        "\n"
        "Exit codes: 0 ok, 1 error, 2 usage, 3 not found, 4 timeout, 5 drill cold start,\n"
        "130 interrupted.\n",
    [CLI_CMD_LIST] =
        "Usage: kubectl workspace list [-n NS | -A]\n"
        "\n"
        "Columns: NAME, STATE, IDLE (idle for), ACCELERATOR (product, else resource),\n"
        "SNAPSHOT (age of the last Ready snapshot), RESTORED (how the last resume\n"
        "came back), AGE; NAMESPACE first with -A.\n",
    [CLI_CMD_PAUSE] = "Usage: kubectl workspace pause NAME [--wait [--timeout D]]\n"
                      "\n"
                      "Sets spec.paused to true. With --wait, waits until the workspace is Paused\n"
                      "(its snapshot taken and the pod gone) and shows the progress.\n",
    [CLI_CMD_RESUME] =
        "Usage: kubectl workspace resume NAME [--wait [--timeout D]]\n"
        "\n"
        "Sets spec.paused to false. With --wait, follows the resume live (waiting for\n"
        "capacity, restoring, ready) and ends with the time to ready and where the\n"
        "session came from: snapshot, checkpoint or cold start. --timeout defaults to 30m.\n",
    [CLI_CMD_KEEP_ALIVE] =
        "Usage: kubectl workspace keep-alive NAME --until TIME|DURATION|none\n"
        "\n"
        "Sets spec.keepAliveUntil: no automatic pause before then (the class's\n"
        "idle.maxKeepAlive bounds it). TIME is RFC 3339 (2026-01-02T18:00:00Z) or a date;\n"
        "DURATION counts from now (2h, 90m); none removes the keep-alive.\n",
    [CLI_CMD_DESCRIBE] = "Usage: kubectl workspace describe NAME\n"
                         "\n"
                         "Spec summary, conditions, the last pause and resume, the snapshot,\n"
                         "accounting, the pause history and recent Events.\n",
    [CLI_CMD_REPORT] =
        "Usage: kubectl workspace report [--from T] [--to T] [-o table|csv|json] [-n NS | -A]\n"
        "\n"
        "Per namespace and class over the range (default: the last 7 days):\n"
        "accelerator-hours held and given back, snapshot time, median and p90 time to\n"
        "ready after a resume, the share of resumes that lost memory, pauses, resumes.\n"
        "T is RFC 3339, a date, \"now\", or a duration before now (7d, 12h).\n",
    [CLI_CMD_DRILL] =
        "Usage: kubectl workspace drill --class CLASS [-n NS] [--timeout D]\n"
        "                               [--canary-url URL] [--canary-port PORT]\n"
        "\n"
        "Creates a throw-away Workspace of CLASS, waits until it runs, reads a value\n"
        "that lives only in the running process (GET /canary through the API server's\n"
        "pod proxy, or URL with {pod} and {uid} filled in), pauses, resumes, reads it\n"
        "again, and deletes the workspace whatever happens (also on Ctrl-C).\n"
        "PASS (exit 0): same value, restored from the snapshot. COLD START (exit 5):\n"
        "the value changed or the resume came from a checkpoint or a cold start.\n"
        "FAIL (exit 1): anything else. --timeout (default 15m) bounds each step.\n",
    [CLI_CMD_WHAT_IF] =
        "Usage: kubectl workspace what-if [-o table|csv|json] [-n NS | -A]\n"
        "\n"
        "Replays each workspace's activity record (the ConfigMap <workspace>-activity)\n"
        "through the controller's own rules under its class as it is and under other\n"
        "policies (idle after 15m, 30m, 1h, 2h; no pause windows; pre-warms on or\n"
        "off): accelerator-hours held and given back, pauses, pauses followed by a\n"
        "person's resume within 10 minutes, snapshot and restore time, people's wait,\n"
        "and how many of the day's first arrivals found the notebook ready.\n",
};

void cli_usage(FILE *out, enum cli_command command)
{
    if (command == CLI_CMD_HELP || command == CLI_CMD_VERSION ||
        (size_t)command >= sizeof(usage_text) / sizeof(usage_text[0]) || !usage_text[command])
        command = CLI_CMD_NONE;
    fputs(usage_text[command], out);
    if (command != CLI_CMD_NONE)
        fputs("\nGlobal flags: --kubeconfig PATH, --context NAME, -n/--namespace NS.\n", out);
}
