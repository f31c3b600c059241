/*
 * Activity probe benchmark: N workspaces probed every interval against local
 * endpoints (tests/tools/fake_activity), to measure what probing costs the
 * controller and how long a round takes once thousands share the loop.
 *
 *   probe_bench --port P [--targets N] [--interval S] [--rounds R]
 *               [--kinds jupyter,gpu] [--timeout-ms T] [--max-in-flight M]
 *
 * Target i is workspace ns-i/ws-i at http://127.0.0.1:P/ns-i/ws-i, with
 * Prometheus at http://127.0.0.1:P. The run ends once every target has
 * completed R rounds (or after R + 1 intervals and a timeout, whichever
 * comes first). A round's latency is the time from its start (probed_at_ms)
 * to its result, so it includes waiting for a request slot.
 *
 * The first round of every target comes within a second of prober_set() (a
 * burst); later rounds are spread over the interval. Both are reported, and
 * CPU is given over the whole run and over the steady part after everyone's
 * first round. tests/bench/probe.sh starts the server, runs this and adds
 * the server's own CPU time. Exits 1 unless every target completed its rounds
 * without a failure.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <uv.h>

#include "activity/prober.h"
#include "process_stats.h"

#define ROUNDS_MAX 1000
#define FAILURES_SHOWN 5

struct samples {
    int64_t *v;
    size_t len, cap;
};

struct bench {
    uv_loop_t *loop;
    struct prober *prober;
    unsigned n, rounds_wanted;
    int64_t interval_ms;
    unsigned *done; /* rounds completed, per target */
    unsigned complete, first_done;
    struct samples all;
    struct samples *by_round; /* rounds_wanted + 1: the last holds later rounds */
    uint64_t *failed_by_round;
    uint64_t failures;
    int oom, stopped;
    double t0, cpu0, t_first, cpu_first, t_end, cpu_end;
    long rss_kib, rss_peak_kib; /* at the end of the run, before closing */
    struct prober_stats stats;
    uv_timer_t deadline, progress;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int64_t unix_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int samples_add(struct samples *s, int64_t v)
{
    if (s->len == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 1024;
        int64_t *nv = realloc(s->v, cap * sizeof(*nv));
        if (!nv)
            return -ENOMEM;
        s->v = nv;
        s->cap = cap;
    }
    s->v[s->len++] = v;
    return 0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static void samples_sort(struct samples *s)
{
    if (s->len > 1)
        qsort(s->v, s->len, sizeof(*s->v), cmp_i64);
}

/* Nearest rank on sorted samples; 0 when empty. */
static int64_t percentile(const struct samples *s, double q)
{
    if (s->len == 0)
        return 0;
    size_t rank = (size_t)(q * (double)s->len + 0.999999);
    if (rank < 1)
        rank = 1;
    if (rank > s->len)
        rank = s->len;
    return s->v[rank - 1];
}

static void stop(struct bench *b)
{
    if (b->stopped)
        return;
    b->stopped = 1;
    b->t_end = now_s();
    b->cpu_end = process_cpu_s();
    b->rss_kib = process_status_kib("VmRSS");
    b->rss_peak_kib = process_status_kib("VmHWM");
    prober_get_stats(b->prober, &b->stats);
    prober_close(b->prober);
    b->prober = NULL;
    uv_close((uv_handle_t *)&b->deadline, NULL);
    uv_close((uv_handle_t *)&b->progress, NULL);
}

/* Keys are "ns-<i>/ws-<i>". */
static int target_index(const struct bench *b, const char *key, unsigned *ret)
{
    char *end;
    if (strncmp(key, "ns-", 3) != 0)
        return -EINVAL;
    unsigned long i = strtoul(key + 3, &end, 10);
    if (*end != '/' || i >= b->n)
        return -EINVAL;
    *ret = (unsigned)i;
    return 0;
}

static void on_result(void *data, const char *key, const struct probe_result *r,
                      int64_t probed_at_ms)
{
    struct bench *b = data;
    unsigned i;
    if (b->stopped || target_index(b, key, &i) < 0)
        return;
    int64_t latency = unix_ms() - probed_at_ms;
    unsigned round = b->done[i]++;
    unsigned slot = round < b->rounds_wanted ? round : b->rounds_wanted;
    if (samples_add(&b->all, latency) < 0 || samples_add(&b->by_round[slot], latency) < 0)
        b->oom = 1;
    if (!r->ok) {
        b->failed_by_round[slot]++;
        if (b->failures++ < FAILURES_SHOWN)
            fprintf(stderr, "probe_bench: %s failed: %s\n", key, r->error);
    }
    if (round == 0 && ++b->first_done == b->n) {
        b->t_first = now_s();
        b->cpu_first = process_cpu_s();
    }
    if (round + 1 == b->rounds_wanted && ++b->complete == b->n)
        stop(b);
    if (b->oom)
        stop(b);
}

static void on_deadline(uv_timer_t *t)
{
    struct bench *b = t->data;
    fprintf(stderr, "probe_bench: deadline reached with %u of %u targets complete\n", b->complete,
            b->n);
    stop(b);
}

static void on_progress(uv_timer_t *t)
{
    struct bench *b = t->data;
    struct prober_stats st;
    prober_get_stats(b->prober, &st);
    fprintf(stderr,
            "probe_bench: %.0f s: %" PRIu64 " rounds (%" PRIu64 " failed), %u of %u targets "
            "done, %u requests in flight\n",
            now_s() - b->t0, st.rounds, st.rounds_failed, b->complete, b->n, st.in_flight);
}

static int parse_kinds(const char *s, unsigned *ret)
{
    unsigned kinds = 0;
    char *copy = strdup(s);
    if (!copy)
        return -ENOMEM;
    char *save = NULL;
    for (char *k = strtok_r(copy, ",+", &save); k; k = strtok_r(NULL, ",+", &save)) {
        if (strcmp(k, "jupyter") == 0)
            kinds |= PROBE_JUPYTER;
        else if (strcmp(k, "code-server") == 0)
            kinds |= PROBE_CODE_SERVER;
        else if (strcmp(k, "gpu") == 0)
            kinds |= PROBE_GPU;
        else {
            free(copy);
            return -EINVAL;
        }
    }
    free(copy);
    if (!kinds)
        return -EINVAL;
    *ret = kinds;
    return 0;
}

static const char *kinds_text(unsigned kinds, char *out, size_t size)
{
    snprintf(out, size, "%s%s%s%s%s", kinds & PROBE_JUPYTER ? "jupyter" : "",
             (kinds & PROBE_JUPYTER) && (kinds & (PROBE_CODE_SERVER | PROBE_GPU)) ? "+" : "",
             kinds & PROBE_CODE_SERVER ? "code-server" : "",
             (kinds & PROBE_CODE_SERVER) && (kinds & PROBE_GPU) ? "+" : "",
             kinds & PROBE_GPU ? "gpu" : "");
    return out;
}

static int parse_long(const char *s, long min, long max, long *ret)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < min || v > max)
        return -EINVAL;
    *ret = v;
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: probe_bench --port P [--targets N] [--interval S] [--rounds R]\n"
               "                   [--kinds jupyter,gpu] [--timeout-ms T] [--max-in-flight M]\n"
               "kinds: any of jupyter, code-server, gpu (comma or + separated)\n");
}

static void print_row(const char *label, const struct samples *s, uint64_t failed)
{
    printf("%-8s %8zu %9" PRIu64 " %8" PRId64 " %8" PRId64 " %8" PRId64 " %8" PRId64 "\n", label,
           s->len, failed, percentile(s, 0.5), percentile(s, 0.9), percentile(s, 0.99),
           s->len ? s->v[s->len - 1] : 0);
}

static void report(struct bench *b, unsigned kinds, long max_in_flight)
{
    char kt[64];
    kinds_text(kinds, kt, sizeof(kt));
    samples_sort(&b->all);
    for (unsigned r = 0; r <= b->rounds_wanted; r++)
        samples_sort(&b->by_round[r]);

    double wall = b->t_end - b->t0, cpu = b->cpu_end - b->cpu0;
    /* Steady state: from everyone's first result to the end; only meaningful
     * with more than one round. */
    int steady = b->rounds_wanted > 1 && b->first_done == b->n && b->t_end > b->t_first;
    double steady_wall = steady ? b->t_end - b->t_first : 0;
    double steady_cpu = steady ? b->cpu_end - b->cpu_first : 0;
    long rss = b->rss_kib, hwm = b->rss_peak_kib;

    printf("probe benchmark: %u targets (%s), every %" PRId64 " s, %u rounds each, "
           "%ld requests in flight at most\n",
           b->n, kt, b->interval_ms / 1000, b->rounds_wanted, max_in_flight ? max_in_flight : 64L);
    printf("%-8s %8s %9s %8s %8s %8s %8s\n", "round", "results", "failures", "p50 ms", "p90 ms",
           "p99 ms", "max ms");
    for (unsigned r = 0; r < b->rounds_wanted; r++) {
        char label[24];
        snprintf(label, sizeof(label), "%u%s", r + 1, r == 0 ? " burst" : "");
        print_row(label, &b->by_round[r], b->failed_by_round[r]);
    }
    if (b->by_round[b->rounds_wanted].len)
        print_row("extra", &b->by_round[b->rounds_wanted], b->failed_by_round[b->rounds_wanted]);
    print_row("all", &b->all, b->failures);
    printf("wall %.1f s, %.2f rounds/s, %" PRIu64 " HTTP requests, %u of %u targets complete\n",
           wall, wall > 0 ? (double)b->all.len / wall : 0.0, b->stats.requests, b->complete, b->n);
    printf("controller CPU %.2f s = %.2f %% of one core over the run", cpu,
           wall > 0 ? 100.0 * cpu / wall : 0.0);
    if (steady)
        printf("; %.2f %% after the first round (%.2f s over %.1f s)",
               100.0 * steady_cpu / steady_wall, steady_cpu, steady_wall);
    printf("\ncontroller RSS %ld KiB (peak %ld KiB)\n", rss, hwm);
    printf("RESULT probe_bench targets=%u kinds=%s interval_s=%" PRId64 " rounds_each=%u "
           "complete=%u results=%zu failures=%" PRIu64 " requests=%" PRIu64 " p50_ms=%" PRId64
           " p90_ms=%" PRId64 " p99_ms=%" PRId64 " max_ms=%" PRId64 " steady_p99_ms=%" PRId64
           " wall_s=%.1f rounds_per_s=%.2f cpu_s=%.2f cpu_pct=%.2f steady_cpu_pct=%.2f "
           "rss_kib=%ld rss_peak_kib=%ld\n",
           b->n, kt, b->interval_ms / 1000, b->rounds_wanted, b->complete, b->all.len, b->failures,
           b->stats.requests, percentile(&b->all, 0.5), percentile(&b->all, 0.9),
           percentile(&b->all, 0.99), b->all.len ? b->all.v[b->all.len - 1] : 0,
           b->rounds_wanted > 1 ? percentile(&b->by_round[1], 0.99) : 0, wall,
           wall > 0 ? (double)b->all.len / wall : 0.0, cpu, wall > 0 ? 100.0 * cpu / wall : 0.0,
           steady ? 100.0 * steady_cpu / steady_wall : 0.0, rss, hwm);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"port", required_argument, NULL, 'p'},
        {"targets", required_argument, NULL, 'n'},
        {"interval", required_argument, NULL, 'i'},
        {"rounds", required_argument, NULL, 'r'},
        {"kinds", required_argument, NULL, 'k'},
        {"timeout-ms", required_argument, NULL, 't'},
        {"max-in-flight", required_argument, NULL, 'm'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    long port = 0, n = 2000, interval = 60, rounds = 3, timeout_ms = 10000, max_in_flight = 0;
    unsigned kinds = PROBE_JUPYTER | PROBE_GPU;
    int opt, bad = 0;
    while ((opt = getopt_long(argc, argv, "p:n:i:r:k:t:m:h", opts, NULL)) != -1) {
        switch (opt) {
        case 'p':
            bad |= parse_long(optarg, 1, 65535, &port) < 0;
            break;
        case 'n':
            bad |= parse_long(optarg, 1, 1000000, &n) < 0;
            break;
        case 'i':
            bad |= parse_long(optarg, 1, 86400, &interval) < 0;
            break;
        case 'r':
            bad |= parse_long(optarg, 1, ROUNDS_MAX, &rounds) < 0;
            break;
        case 'k':
            bad |= parse_kinds(optarg, &kinds) < 0;
            break;
        case 't':
            bad |= parse_long(optarg, 1, 600000, &timeout_ms) < 0;
            break;
        case 'm':
            bad |= parse_long(optarg, 1, 100000, &max_in_flight) < 0;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            bad = 1;
        }
    }
    if (bad || !port || optind != argc) {
        usage(stderr);
        return 2;
    }

    struct bench b = {.n = (unsigned)n, .rounds_wanted = (unsigned)rounds};
    b.interval_ms = interval * 1000;
    b.done = calloc(b.n, sizeof(*b.done));
    b.by_round = calloc(b.rounds_wanted + 1, sizeof(*b.by_round));
    b.failed_by_round = calloc(b.rounds_wanted + 1, sizeof(*b.failed_by_round));
    if (!b.done || !b.by_round || !b.failed_by_round) {
        fprintf(stderr, "probe_bench: out of memory\n");
        return 1;
    }
    b.loop = uv_default_loop();
    struct prober_options po = {.max_in_flight = (unsigned)max_in_flight};
    int e = prober_new(b.loop, &po, on_result, &b, &b.prober);
    if (e < 0) {
        fprintf(stderr, "probe_bench: prober_new: %s\n", strerror(-e));
        return 1;
    }

    b.t0 = now_s();
    b.cpu0 = process_cpu_s();
    char prometheus[64], url[128], key[64], query[160];
    snprintf(prometheus, sizeof(prometheus), "http://127.0.0.1:%ld", port);
    for (unsigned i = 0; i < b.n; i++) {
        snprintf(key, sizeof(key), "ns-%u/ws-%u", i, i);
        snprintf(url, sizeof(url), "http://127.0.0.1:%ld/ns-%u/ws-%u", port, i, i);
        snprintf(query, sizeof(query), "DCGM_FI_DEV_GPU_UTIL{namespace=\"ns-%u\",pod=\"ws-%u\"}", i,
                 i);
        struct probe_target t = {
            .kinds = kinds,
            .url = url,
            .prometheus_url = prometheus,
            .gpu_query = query,
            .interval_ms = b.interval_ms,
            .timeout_ms = timeout_ms,
        };
        e = prober_set(b.prober, key, &t);
        if (e < 0) {
            fprintf(stderr, "probe_bench: prober_set %s: %s\n", key, strerror(-e));
            return 1;
        }
    }

    uv_timer_init(b.loop, &b.deadline);
    uv_timer_init(b.loop, &b.progress);
    b.deadline.data = b.progress.data = &b;
    uv_timer_start(&b.deadline, on_deadline,
                   (uint64_t)((rounds + 1) * b.interval_ms + timeout_ms + 5000), 0);
    uint64_t every = (uint64_t)(b.interval_ms < 10000 ? b.interval_ms : 10000);
    uv_timer_start(&b.progress, on_progress, every, every);
    uv_run(b.loop, UV_RUN_DEFAULT);
    if (b.oom)
        fprintf(stderr, "probe_bench: out of memory recording samples\n");

    report(&b, kinds, max_in_flight);
    /* Against local endpoints every round should succeed: anything else is
     * not a clean run, whatever the figures say. */
    int rc = b.oom || b.complete < b.n || b.failures ? 1 : 0;
    uv_loop_close(b.loop);
    free(b.all.v);
    for (unsigned r = 0; r <= b.rounds_wanted; r++)
        free(b.by_round[r].v);
    free(b.by_round);
    free(b.failed_by_round);
    free(b.done);
    return rc;
}
