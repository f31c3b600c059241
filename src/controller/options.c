#include "controller/options.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/args.h"
#include "util/duration.h"

enum flag_kind {
    FLAG_STRING,
    FLAG_BOOL,
    FLAG_DURATION,
    FLAG_DOUBLE,
    FLAG_INT,
    FLAG_LEVEL,
    FLAG_FORMAT
};

struct flag {
    const char *name;
    enum flag_kind kind;
    size_t offset;
    const char *default_text;
    const char *help;
};

#define OPT(field) offsetof(struct controller_options, field)

static const struct flag flags[] = {
    {"kubeconfig", FLAG_STRING, OPT(kubeconfig), "",
     "kubeconfig file; empty: $KUBECONFIG, then in-cluster, then ~/.kube/config"},
    {"namespace", FLAG_STRING, OPT(ns), "", "watch only this namespace; empty: all"},
    {"leader-elect", FLAG_BOOL, OPT(leader_elect), "true",
     "elect a leader on a Lease so that several replicas can run"},
    {"leader-election-namespace", FLAG_STRING, OPT(leader_election_namespace), "",
     "namespace of the Lease; empty: $POD_NAMESPACE, then the kubeconfig's"},
    {"leader-election-id", FLAG_STRING, OPT(leader_election_id), "hibernator", "name of the Lease"},
    {"leader-elect-lease-duration", FLAG_DURATION, OPT(lease_duration_ms), "15s",
     "how long a standby waits, after it last saw the Lease change, before taking over"},
    {"leader-elect-renew-deadline", FLAG_DURATION, OPT(renew_deadline_ms), "10s",
     "how long the leader keeps trying to renew before it gives up leading"},
    {"leader-elect-retry-period", FLAG_DURATION, OPT(retry_period_ms), "2s",
     "time between attempts to acquire or renew"},
    {"health-probe-bind-address", FLAG_STRING, OPT(health_probe_bind_address), ":8081",
     "where /healthz, /livez and /readyz are served (host:port, :port, or 0 to disable)"},
    {"metrics-bind-address", FLAG_STRING, OPT(metrics_bind_address), ":8080",
     "where /metrics is served (host:port, :port, or 0 to disable; the health probe address "
     "serves both)"},
    {"kube-api-qps", FLAG_DOUBLE, OPT(kube_api_qps), "20", "client-side requests per second"},
    {"kube-api-burst", FLAG_INT, OPT(kube_api_burst), "30", "client-side request burst"},
    {"activity-probe-concurrency", FLAG_INT, OPT(activity_probe_concurrency), "64",
     "activity probe requests in flight at once; more wait their turn"},
    {"kueue-visibility-server", FLAG_STRING, OPT(kueue_visibility_server), "",
     "Kueue's visibility server (https://host:port) for the places in its queues, where no "
     "APIService routes to it; empty: through the API server (docs/kueue.md)"},
    {"log-level", FLAG_LEVEL, OPT(log_level), "info", "debug, info, warn or error"},
    {"log-format", FLAG_FORMAT, OPT(log_format), "text", "text (key=value) or json"},
};

static int set_flag(struct controller_options *o, const struct flag *f, const char *value,
                    char *err, size_t size)
{
    char *field = (char *)o + f->offset;
    char *end = NULL;
    switch (f->kind) {
    case FLAG_STRING:
        *(const char **)field = value[0] ? value : NULL;
        return 0;
    case FLAG_BOOL:
        if (strcmp(value, "true") == 0 || strcmp(value, "1") == 0) {
            *(int *)field = 1;
            return 0;
        }
        if (strcmp(value, "false") == 0 || strcmp(value, "0") == 0) {
            *(int *)field = 0;
            return 0;
        }
        break;
    case FLAG_DURATION:
        if (duration_parse_ms(value, (int64_t *)field) == 0)
            return 0;
        break;
    case FLAG_DOUBLE:
        *(double *)field = strtod(value, &end);
        if (end != value && *end == '\0' && *(double *)field >= 0)
            return 0;
        break;
    case FLAG_INT: {
        long v = strtol(value, &end, 10);
        if (end != value && *end == '\0' && v >= 0 && v <= 1000000) {
            *(int *)field = (int)v;
            return 0;
        }
        break;
    }
    case FLAG_LEVEL:
        if (log_level_parse(value, (enum log_level *)field) == 0)
            return 0;
        break;
    case FLAG_FORMAT:
        if (log_format_parse(value, (enum log_format *)field) == 0)
            return 0;
        break;
    }
    snprintf(err, size, "--%s: invalid value \"%s\" (%s)", f->name, value, f->help);
    return -EINVAL;
}

#define N_FLAGS (sizeof(flags) / sizeof(flags[0]))
/* getopt_long's val for flags[i], --help and --version: above every
 * character, so that they never meet -h's 'h'. */
#define LONG_VAL(i) (256 + (int)(i))
#define HELP_VAL LONG_VAL(N_FLAGS)
#define VERSION_VAL LONG_VAL(N_FLAGS + 1)

/* Every flag by its long name (a boolean with an optional "=value"), then
 * --help and --version. */
static void build_options(struct option *longopts)
{
    for (size_t i = 0; i < N_FLAGS; i++) {
        int has_arg = flags[i].kind == FLAG_BOOL ? optional_argument : required_argument;
        longopts[i] = (struct option){flags[i].name, has_arg, NULL, LONG_VAL(i)};
    }
    longopts[N_FLAGS] = (struct option){"help", no_argument, NULL, HELP_VAL};
    longopts[N_FLAGS + 1] = (struct option){"version", no_argument, NULL, VERSION_VAL};
    longopts[N_FLAGS + 2] = (struct option){0};
}

static int unknown_flag(const char *element, char *err, size_t size)
{
    const char *name = element + 2;
    snprintf(err, size, "unknown flag --%.*s (see --help)", (int)strcspn(name, "="), name);
    return -EINVAL;
}

/* getopt_long's '?' (an unknown flag, or a value given to --help or
 * --version) or ':' (a flag without its value). */
static int scan_error(int opt, char **argv, char *err, size_t size)
{
    const char *element = argv[optind - 1]; /* a long option is a whole element */
    if (optopt > 0 && optopt < LONG_VAL(0)) {
        snprintf(err, size, "unknown flag -%c (see --help)", optopt);
        return -EINVAL;
    }
    if (opt == ':' && optopt < HELP_VAL &&
        args_long_exact(element, flags[optopt - LONG_VAL(0)].name)) {
        snprintf(err, size, "--%s needs a value", flags[optopt - LONG_VAL(0)].name);
        return -EINVAL;
    }
    const char *no_value = optopt == HELP_VAL ? "help" : optopt == VERSION_VAL ? "version" : NULL;
    if (opt == '?' && no_value && args_long_exact(element, no_value)) {
        snprintf(err, size, "--%s takes no value", no_value);
        return -EINVAL;
    }
    return unknown_flag(element, err, size);
}

/* Sets one flag getopt_long returned. */
static int scan_flag(struct controller_options *o, int opt, char **argv, char *err, size_t size)
{
    if (opt == 'h') {
        o->show_help = 1;
        return 0;
    }
    const char *element = args_element(argv, optind, optarg);
    if (opt == HELP_VAL || opt == VERSION_VAL) {
        if (!args_long_exact(element, opt == HELP_VAL ? "help" : "version"))
            return unknown_flag(element, err, size);
        *(opt == HELP_VAL ? &o->show_help : &o->show_version) = 1;
        return 0;
    }
    const struct flag *f = &flags[opt - LONG_VAL(0)];
    if (!args_long_exact(element, f->name))
        return unknown_flag(element, err, size);
    return set_flag(o, f, optarg ? optarg : "true", err, size);
}

/* Reads argv with getopt_long: flags only, "--" ends them. */
static int scan_args(int argc, char **argv, struct controller_options *o, char *err, size_t size)
{
    struct option longopts[N_FLAGS + 3];
    build_options(longopts);
    args_getopt_reset();
    int opt;
    while ((opt = getopt_long(argc, argv, "-:h", longopts, NULL)) != -1) {
        if (opt == 1) {
            snprintf(err, size, "unexpected argument \"%s\" (flags start with --)", optarg);
            return -EINVAL;
        }
        if (opt == '?' || opt == ':')
            return scan_error(opt, argv, err, size);
        if (scan_flag(o, opt, argv, err, size) < 0)
            return -EINVAL;
    }
    if (optind < argc) {
        snprintf(err, size, "unexpected argument \"%s\" (flags start with --)", argv[optind]);
        return -EINVAL;
    }
    return 0;
}

int controller_options_parse(int argc, char **argv, struct controller_options *ret, char *err,
                             size_t size)
{
    struct controller_options o = {0};
    for (size_t i = 0; i < N_FLAGS; i++)
        if (set_flag(&o, &flags[i], flags[i].default_text, err, size) < 0)
            return -EINVAL;
    if (scan_args(argc, argv, &o, err, size) < 0)
        return -EINVAL;
    if (o.leader_elect &&
        !(o.retry_period_ms < o.renew_deadline_ms && o.renew_deadline_ms < o.lease_duration_ms)) {
        snprintf(err, size,
                 "--leader-elect-retry-period < --leader-elect-renew-deadline < "
                 "--leader-elect-lease-duration must hold");
        return -EINVAL;
    }
    *ret = o;
    return 0;
}

void controller_options_usage(FILE *out)
{
    fprintf(out, "Usage: hibernator [flags]\n\n"
                 "Pauses idle GPU workspaces and brings them back with their state.\n\n"
                 "Flags:\n");
    for (size_t i = 0; i < N_FLAGS; i++)
        fprintf(out, "  --%-30s %s (default \"%s\")\n", flags[i].name, flags[i].help,
                flags[i].default_text);
    fprintf(out, "  --%-30s %s\n  --%-30s %s\n", "help", "print this text", "version",
            "print the version");
}
