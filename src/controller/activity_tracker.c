#include "controller/activity_tracker.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "activity/url_template.h"
#include "kube/resource.h"
#include "util/base64.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/secret.h"
#include "util/strmap.h"
#include "util/tz.h"

/* A restore check asks this often at most: its answer is awaited. */
#define RESTORE_CHECK_INTERVAL_MS 1000

/* A token Secret that could not be read is asked for again after this long;
 * a token the server refused, at most this often. */
#define TOKEN_RETRY_MS (30 * 1000)
#define TOKEN_MAX 4096

enum token_state {
    TOKEN_NONE,
    TOKEN_FETCHING,
    TOKEN_OK,
    TOKEN_FAILED,
};

struct record {
    struct activity_tracker *t;
    char *key;
    int has_obs;
    struct activity_observation obs;

    char *secret_ns, *secret_name, *secret_key; /* what the token was read from */
    char *token;                                /* a secret */
    enum token_state token_state;
    int64_t token_read_ms;
    int token_refused; /* the server answered 401/403 with this token */
    struct kube_request *req;
    int gpu_threshold_percent;

    /* Rounds that check a restored pod's application instead of activity. */
    int checking_restore;
    char *check_pod;
    int64_t check_answered_ms;
    int64_t check_app_started_ms;              /* what the first answer said of its start */
    uint32_t check_kernels[PROBE_KERNELS_MAX]; /* and of its kernels */
    int check_n_kernels;
    int64_t check_last_round_ms;
    int check_failed; /* the latest round failed: check_error says why */
    char check_error[PROBE_ERROR_SIZE];
    struct restore_check check; /* the view handed out */
};

enum zone_state {
    ZONE_LOADING,
    ZONE_READY,
    ZONE_FAILED,
};

struct zone {
    enum zone_state state;
    struct tz *tz;
    char *error; /* ZONE_FAILED: why */
};

/* tz_load() cannot be cancelled: a load outlives a closed tracker. */
struct zone_load {
    struct activity_tracker *t; /* NULL once the tracker is gone */
    char *name;
    struct zone_load *next;
};

struct activity_tracker {
    uv_loop_t *loop;
    struct kube_client *client;
    struct prober *prober;
    char *zoneinfo_dir;
    activity_changed_cb cb;
    void *cb_data;
    int64_t (*now_ms)(void *data);
    void *now_data;
    struct controller_metrics *metrics;
    struct strmap records; /* key -> struct record * */
    struct strmap zones;   /* name -> struct zone * */
    struct zone_load *loads;
};

static void token_drop(struct record *rec)
{
    secret_free_str(rec->token);
    rec->token = NULL;
    free(rec->secret_ns);
    free(rec->secret_name);
    free(rec->secret_key);
    rec->secret_ns = rec->secret_name = rec->secret_key = NULL;
    kube_request_cancel(rec->req);
    rec->req = NULL;
    rec->token_state = TOKEN_NONE;
    rec->token_refused = 0;
}

static void record_free(struct record *rec)
{
    if (!rec)
        return;
    token_drop(rec);
    free(rec->check_pod);
    free(rec->key);
    free(rec);
}

static void changed(struct activity_tracker *t, const char *key)
{
    if (t->cb)
        t->cb(t->cb_data, key);
}

/* A round of a restore check ended (ok or not). */
static void note_check_round(struct record *rec, const struct probe_result *r, int64_t started_ms)
{
    if (!rec->checking_restore)
        return;
    rec->check_last_round_ms = started_ms;
    rec->check_failed = !r->ok;
    snprintf(rec->check_error, sizeof(rec->check_error), "%s", r->ok ? "" : r->error);
    if (r->ok && !rec->check_answered_ms) {
        rec->check_answered_ms = rec->t->now_ms(rec->t->now_data);
        rec->check_app_started_ms = r->app_started_ms;
        memcpy(rec->check_kernels, r->kernels, sizeof(rec->check_kernels));
        rec->check_n_kernels = r->n_kernels;
    }
}

/* A round that could not even start is still a failed round: it shows, and
 * it never reads as idle. */
static void fail_round(struct record *rec, const char *source, const char *message)
{
    rec->has_obs = 1;
    rec->obs.probed_at_ms = rec->t->now_ms(rec->t->now_data);
    probe_result_fail(&rec->obs.result, source, "%s", message);
    note_check_round(rec, &rec->obs.result, rec->obs.probed_at_ms);
    controller_metrics_probe_round(rec->t->metrics, source, "Failed");
    changed(rec->t, rec->key);
}

static void on_result(void *data, const char *key, const struct probe_result *r,
                      int64_t probed_at_ms)
{
    struct activity_tracker *t = data;
    struct record *rec = strmap_get(&t->records, key);
    if (!rec)
        return;
    rec->has_obs = 1;
    rec->obs.probed_at_ms = probed_at_ms;
    rec->obs.result = *r;
    note_check_round(rec, r, probed_at_ms);
    controller_metrics_probe_round(t->metrics, r->source,
                                   idle_probe_result_word(r, rec->gpu_threshold_percent));
    int gpu_work = r->ok && !r->no_data && strstr(r->source, "gpu") &&
                   r->gpu_utilisation >= rec->gpu_threshold_percent;
    if (r->ok && (r->busy || gpu_work)) {
        rec->obs.last_work_ms = probed_at_ms;
        rec->obs.work_on_gpu = !r->busy;
    }
    if (!r->ok && rec->token && strstr(r->error, "unauthorized"))
        rec->token_refused = 1; /* rotated? read it again */
    changed(t, key);
}

/* ---- the token ---- */

static int decode_token(const char *b64, char **ret, const char **why)
{
    size_t len = strlen(b64);
    if (len == 0 || len > TOKEN_MAX * 4 / 3 + 4 || len % 4 != 0) {
        *why = "is empty, too long or not base64";
        return -EINVAL;
    }
    char *text = NULL;
    size_t decoded = 0;
    int e = base64_decode(b64, len, &text, &decoded);
    if (e == -ENOMEM)
        return e;
    if (e < 0) {
        *why = "is not base64";
        return -EINVAL;
    }
    unsigned char *out = (unsigned char *)text;
    int n = (int)decoded;
    /* Trailing newlines are common in hand-made Secrets; anything else that
     * is not printable could split an HTTP header. */
    while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == '\r'))
        out[--n] = '\0';
    for (int i = 0; i < n; i++)
        if (!isprint(out[i]) || out[i] == ' ') {
            secret_free(out, decoded + 1);
            *why = "holds characters a token cannot have";
            return -EINVAL;
        }
    if (n == 0) {
        secret_free(out, decoded + 1);
        *why = "is empty";
        return -EINVAL;
    }
    *ret = (char *)out;
    return 0;
}

static void on_secret(void *data, struct kube_response *resp)
{
    struct record *rec = data;
    rec->req = NULL;
    rec->token_read_ms = rec->t->now_ms(rec->t->now_data);
    char msg[PROBE_ERROR_SIZE];
    if (resp->status < 0) {
        snprintf(msg, sizeof(msg), "token Secret %s/%s: %s", rec->secret_ns, rec->secret_name,
                 resp->http_code == 404 ? "not found"
                 : resp->http_code == 403
                     ? "the controller may not read it (RBAC)"
                     : (resp->transport_error ? resp->transport_error : "cannot be read"));
        rec->token_state = TOKEN_FAILED;
        fail_round(rec, "jupyter", msg);
        return;
    }
    cJSON *value = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(resp->body, "data"), rec->secret_key);
    const char *why = "has no such key";
    char *token = NULL;
    int r = cJSON_IsString(value) ? decode_token(value->valuestring, &token, &why) : -EINVAL;
    if (cJSON_IsString(value)) /* do not leave the encoded token in freed memory either */
        memset(value->valuestring, 0, strlen(value->valuestring));
    if (r < 0) {
        snprintf(msg, sizeof(msg), "token Secret %s/%s: key \"%s\" %s", rec->secret_ns,
                 rec->secret_name, rec->secret_key, r == -ENOMEM ? "cannot be read" : why);
        rec->token_state = TOKEN_FAILED;
        fail_round(rec, "jupyter", msg);
        return;
    }
    secret_free_str(rec->token);
    rec->token = token;
    rec->token_state = TOKEN_OK;
    rec->token_refused = 0;
    changed(rec->t, rec->key); /* the next decision sets the target with it */
}

/* Returns 1 when the token is ready to use, 0 while it is being read or has
 * failed (the failure was reported as a round). */
static int token_ready(struct record *rec, const char *ns, const char *name, const char *key)
{
    struct activity_tracker *t = rec->t;
    int64_t now = t->now_ms(t->now_data);
    int same = rec->secret_ns && strcmp(rec->secret_ns, ns) == 0 &&
               strcmp(rec->secret_name, name) == 0 && strcmp(rec->secret_key, key) == 0;
    if (!same) {
        token_drop(rec);
        if (!(rec->secret_ns = strdup(ns)) || !(rec->secret_name = strdup(name)) ||
            !(rec->secret_key = strdup(key))) {
            token_drop(rec);
            return 0;
        }
    }
    int refetch = rec->token_state == TOKEN_NONE ||
                  ((rec->token_state == TOKEN_FAILED || rec->token_refused) &&
                   now - rec->token_read_ms >= TOKEN_RETRY_MS);
    if (refetch && !rec->req) {
        int e = kube_get(t->client, &KUBE_RESOURCE_SECRETS, ns, name, on_secret, rec, &rec->req);
        if (e < 0)
            log_warn("token secret read could not start", "namespace", ns, "secret", name, "error",
                     log_errno_str(e));
        else if (rec->token_state != TOKEN_OK)
            rec->token_state = TOKEN_FETCHING;
    }
    return rec->token_state == TOKEN_OK;
}

/* ---- zones ---- */

static void on_zone(void *data, int status, struct tz *tz, const char *error)
{
    struct zone_load *l = data;
    struct activity_tracker *t = l->t;
    if (t) {
        for (struct zone_load **p = &t->loads; *p; p = &(*p)->next)
            if (*p == l) {
                *p = l->next;
                break;
            }
        struct zone *z = strmap_get(&t->zones, l->name);
        if (z && status == 0) {
            z->state = ZONE_READY;
            z->tz = tz;
            tz = NULL;
        } else if (z) {
            z->state = ZONE_FAILED;
            if (asprintf(&z->error, "cannot be loaded: %s", error ? error : log_errno_str(status)) <
                0)
                z->error = NULL;
            log_warn("cannot load the time zone of a pause window", "zone", l->name, "error",
                     error ? error : log_errno_str(status));
        }
        /* Everything probed may have been waiting for it. */
        size_t it = 0;
        const char *key;
        while (strmap_next(&t->records, &it, &key, NULL))
            changed(t, key);
    }
    tz_free(tz);
    free(l->name);
    free(l);
}

const struct tz *activity_tracker_zone(struct activity_tracker *t, const char *name)
{
    if (!name || strcmp(name, "UTC") == 0 || strcmp(name, "Etc/UTC") == 0)
        return tz_utc();
    struct zone *z = strmap_get(&t->zones, name);
    if (z)
        return z->state == ZONE_READY ? z->tz : NULL;
    z = calloc(1, sizeof(*z));
    struct zone_load *l = calloc(1, sizeof(*l));
    if (!z || !l || !(l->name = strdup(name)) || strmap_put(&t->zones, name, z, NULL) < 0) {
        free(z);
        if (l)
            free(l->name);
        free(l);
        return NULL;
    }
    z->state = ZONE_LOADING;
    l->t = t;
    if (tz_load(t->loop, t->zoneinfo_dir, name, on_zone, l) < 0) {
        z->state = ZONE_FAILED;
        free(l->name);
        free(l);
        return NULL;
    }
    l->next = t->loads;
    t->loads = l;
    return NULL;
}

const char *activity_tracker_zone_error(struct activity_tracker *t, const char *name)
{
    struct zone *z = name ? strmap_get(&t->zones, name) : NULL;
    if (!z || z->state != ZONE_FAILED)
        return NULL;
    return z->error ? z->error : "cannot be loaded";
}

/* ---- targets ---- */

static void drop(struct activity_tracker *t, const char *key)
{
    struct record *rec = strmap_get(&t->records, key);
    if (!rec)
        return;
    prober_remove(t->prober, key);
    strmap_remove(&t->records, key);
    record_free(rec);
}

/* Switches rec between activity rounds and the restore check of pod; what
 * the other kind of rounds saw is forgotten (an application-only round must
 * not read as activity, nor an activity round as the restored pod's). */
static int set_purpose(struct record *rec, int check, const char *pod)
{
    int same = rec->checking_restore == check &&
               (!check || (rec->check_pod && strcmp(rec->check_pod, pod) == 0));
    if (same)
        return 0;
    char *copy = check ? strdup(pod) : NULL;
    if (check && !copy)
        return -ENOMEM;
    free(rec->check_pod);
    rec->check_pod = copy;
    rec->checking_restore = check;
    rec->check_answered_ms = rec->check_last_round_ms = rec->check_app_started_ms = 0;
    rec->check_n_kernels = -1;
    rec->check_failed = 0;
    rec->check_error[0] = '\0';
    rec->has_obs = 0;
    rec->obs = (struct activity_observation){0};
    return 0;
}

static void track(struct activity_tracker *t, const char *key, const struct workspace *ws,
                  const struct workspace_class *cls, const struct workspace_pod *pod, int check,
                  int probe_now)
{
    struct record *rec = strmap_get(&t->records, key);
    if (!rec) {
        rec = calloc(1, sizeof(*rec));
        if (!rec || !(rec->key = strdup(key)) || strmap_put(&t->records, key, rec, NULL) < 0) {
            record_free(rec);
            return;
        }
        rec->t = t;
    }
    if (set_purpose(rec, check, pod->name) < 0)
        return;
    rec->gpu_threshold_percent = cls->idle.gpu_threshold_percent;
    const struct activity_config *a = &cls->activity;
    struct template_vars vars = {pod->pod_ip, cls->port, ws->ns, ws->name, pod->name};
    char *url = NULL, *query = NULL, *secret_name = NULL, *err = NULL;
    struct probe_target target = {
        .interval_ms = a->interval_ms,
        .timeout_ms = a->timeout_ms,
        .prometheus_url = a->prometheus_url,
    };
    if (check && target.interval_ms > RESTORE_CHECK_INTERVAL_MS)
        target.interval_ms = RESTORE_CHECK_INTERVAL_MS;
    int r = 0;
    if (a->application != ACTIVITY_APP_NONE) {
        target.kinds |= a->application == ACTIVITY_APP_JUPYTER ? PROBE_JUPYTER : PROBE_CODE_SERVER;
        r = url_template_expand(a->url_template, &vars, &url, &err);
        target.url = url;
    }
    if (r == 0 && a->prometheus_url && !check) {
        target.kinds |= PROBE_GPU;
        r = url_template_expand(a->gpu_query_template, &vars, &query, &err);
        target.gpu_query = query;
    }
    if (r == -EAGAIN) {
        /* No pod IP yet: the pod's next update brings it. */
        prober_remove(t->prober, key);
        goto out;
    }
    if (r < 0) {
        char msg[PROBE_ERROR_SIZE];
        snprintf(msg, sizeof(msg), "class \"%s\": spec.activity: %s", cls->name,
                 err ? err : "cannot fill in the templates");
        prober_remove(t->prober, key);
        if (!rec->has_obs || rec->obs.result.ok || strcmp(rec->obs.result.error, msg) != 0)
            fail_round(rec, "probe", msg);
        goto out;
    }
    r = workspace_token_secret_name(ws, cls, &secret_name);
    if (r != -ENOENT) {
        if (r < 0) {
            prober_remove(t->prober, key);
            goto out;
        }
        if (!token_ready(rec, ws->ns, secret_name, a->token_secret_key)) {
            if (rec->token_state == TOKEN_FAILED)
                prober_remove(t->prober, key);
            goto out;
        }
        target.token = rec->token;
    } else if (rec->secret_ns) {
        token_drop(rec);
    }
    if (prober_set(t->prober, key, &target) < 0) {
        log_warn("cannot probe a workspace", "workspace", key);
        goto out;
    }
    if (probe_now)
        prober_probe_now(t->prober, key);
out:
    free(url);
    free(query);
    free(secret_name);
    free(err);
}

void activity_tracker_update(struct activity_tracker *t, const char *key,
                             const struct workspace *ws, const struct workspace_class *cls,
                             const struct workspace_pod *pod, int wanted, int probe_now)
{
    if (!t)
        return;
    if (!wanted || !ws || !cls || !pod) {
        drop(t, key);
        return;
    }
    track(t, key, ws, cls, pod, 0, probe_now);
}

void activity_tracker_check_restore(struct activity_tracker *t, const char *key,
                                    const struct workspace *ws, const struct workspace_class *cls,
                                    const struct workspace_pod *pod, int probe_now)
{
    if (!t)
        return;
    if (!ws || !cls || !pod || !pod->name || cls->activity.application == ACTIVITY_APP_NONE) {
        drop(t, key);
        return;
    }
    track(t, key, ws, cls, pod, 1, probe_now);
}

const struct restore_check *activity_tracker_restore_check(struct activity_tracker *t,
                                                           const char *key)
{
    struct record *rec = t ? strmap_get(&t->records, key) : NULL;
    if (!rec || !rec->checking_restore || !rec->check_last_round_ms)
        return NULL;
    rec->check = (struct restore_check){
        .pod = rec->check_pod,
        .answered_ms = rec->check_answered_ms,
        .app_started_ms = rec->check_app_started_ms,
        .kernels = rec->check_kernels,
        .n_kernels = rec->check_n_kernels,
        .last_round_ms = rec->check_last_round_ms,
        .error = rec->check_failed ? rec->check_error : NULL,
    };
    return &rec->check;
}

const struct activity_observation *activity_tracker_observation(struct activity_tracker *t,
                                                                const char *key)
{
    struct record *rec = t ? strmap_get(&t->records, key) : NULL;
    return rec && rec->has_obs ? &rec->obs : NULL;
}

void activity_tracker_stats(const struct activity_tracker *t, struct prober_stats *ret)
{
    prober_get_stats(t->prober, ret);
}

int activity_tracker_new(uv_loop_t *loop, struct kube_client *client,
                         const struct activity_tracker_options *opts, activity_changed_cb cb,
                         void *data, struct activity_tracker **ret)
{
    struct activity_tracker *t = calloc(1, sizeof(*t));
    if (!t)
        return -ENOMEM;
    t->loop = loop;
    t->client = client;
    t->cb = cb;
    t->cb_data = data;
    t->now_ms = opts && opts->now_ms ? opts->now_ms : clock_unix_ms_cb;
    t->now_data = opts ? opts->now_data : NULL;
    t->metrics = opts ? opts->metrics : NULL;
    strmap_init(&t->records);
    strmap_init(&t->zones);
    if (opts && opts->zoneinfo_dir && !(t->zoneinfo_dir = strdup(opts->zoneinfo_dir))) {
        free(t);
        return -ENOMEM;
    }
    int r = prober_new(loop, opts ? &opts->prober : NULL, on_result, t, &t->prober);
    if (r < 0) {
        free(t->zoneinfo_dir);
        free(t);
        return r;
    }
    *ret = t;
    return 0;
}

void activity_tracker_close(struct activity_tracker *t)
{
    if (!t)
        return;
    prober_close(t->prober);
    void *v;
    for (size_t it = 0; strmap_next(&t->records, &it, NULL, &v);)
        record_free(v);
    strmap_free(&t->records);
    for (size_t it = 0; strmap_next(&t->zones, &it, NULL, &v);) {
        struct zone *z = v;
        tz_free(z->tz);
        free(z->error);
        free(z);
    }
    strmap_free(&t->zones);
    for (struct zone_load *l = t->loads; l; l = l->next)
        l->t = NULL;
    free(t->zoneinfo_dir);
    free(t);
}
