#include "controller/activity_log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "activity/record.h"
#include "kube/client.h"
#include "kube/resource.h"
#include "util/json.h"
#include "util/log.h"
#include "util/strmap.h"
#include "workspace/idle.h"
#include "workspace/workspace.h"

#define LIST_PAGE 500
#define NAME_MAX_LEN 253
/* In memory a record keeps at most this many runs; more are cut to what
 * its text keeps. */
#define MAX_RUNS 600

struct entry {
    struct activity_log *log;
    char *key;
    char *ns, *name, *uid;
    struct activity_record rec;
    int64_t written_s; /* the last write's time; 0: none by this process */
    int exists;        /* the ConfigMap is known to exist */
    int due;           /* a write is wanted once the one in flight ends */
    struct kube_request *req;
};

struct activity_log {
    struct kube_client *client;
    char *ns;
    struct strmap entries; /* key -> struct entry * */
    int ready;
    struct kube_request *list_req;
    char *continue_token;
};

static void entry_free(struct entry *e)
{
    if (!e)
        return;
    if (e->req)
        kube_request_cancel(e->req);
    activity_record_free(&e->rec);
    free(e->key);
    free(e->ns);
    free(e->name);
    free(e->uid);
    free(e);
}

int activity_log_new(struct kube_client *client, const char *ns, struct activity_log **ret)
{
    struct activity_log *l = calloc(1, sizeof(*l));
    if (!l || (ns && !(l->ns = strdup(ns)))) {
        free(l);
        return -ENOMEM;
    }
    l->client = client;
    strmap_init(&l->entries);
    *ret = l;
    return 0;
}

/* ---- the records written before ---- */

static struct entry *entry_new(struct activity_log *l, const char *key, const char *ns,
                               const char *name, const char *uid)
{
    struct entry *e = calloc(1, sizeof(*e));
    if (!e || !(e->key = strdup(key)) || !(e->ns = strdup(ns)) || !(e->name = strdup(name)) ||
        (uid && !(e->uid = strdup(uid))) || strmap_put(&l->entries, key, e, NULL) < 0) {
        entry_free(e);
        return NULL;
    }
    e->log = l;
    return e;
}

/* One ConfigMap of the list: its workspace's record goes on from it. */
static void read_one(struct activity_log *l, const cJSON *cm)
{
    const cJSON *meta = json_member(cm, "metadata");
    const char *ns = json_string(meta, "namespace"), *name = json_string(meta, "name");
    const char *text = json_string(json_member(cm, "data"), ACTIVITY_LOG_KEY);
    size_t sl = strlen(ACTIVITY_LOG_SUFFIX);
    if (!ns || !name || !text || strlen(name) <= sl)
        return;
    char ws[NAME_MAX_LEN + 1];
    snprintf(ws, sizeof(ws), "%.*s", (int)(strlen(name) - sl), name);
    char key[2 * NAME_MAX_LEN + 2];
    snprintf(key, sizeof(key), "%s/%s", ns, ws);
    if (strmap_get(&l->entries, key))
        return;
    struct entry *e = entry_new(l, key, ns, ws, NULL);
    if (!e) {
        log_warn("activity record not read", "workspace", key, "error", log_errno_str(-ENOMEM));
        return;
    }
    e->exists = 1;
    const char *why = NULL;
    if (activity_record_parse(text, &e->rec, &why) < 0)
        log_warn("activity record cannot be read; it starts afresh", "workspace", key, "error",
                 why ? why : log_errno_str(-ENOMEM));
}

static int list_page(struct activity_log *l);

static void on_listed(void *data, struct kube_response *resp)
{
    struct activity_log *l = data;
    l->list_req = NULL;
    if (resp->status < 0) {
        log_warn("activity records not listed; they start afresh", "error",
                 resp->transport_error ? resp->transport_error
                 : resp->error.message ? resp->error.message
                                       : log_errno_str(resp->status));
        l->ready = 1;
        return;
    }
    const cJSON *item;
    cJSON_ArrayForEach(item, json_member(resp->body, "items")) read_one(l, item);
    const char *next = json_string(json_member(resp->body, "metadata"), "continue");
    free(l->continue_token);
    l->continue_token = next && next[0] ? strdup(next) : NULL;
    if (l->continue_token && list_page(l) == 0)
        return;
    l->ready = 1;
    log_info("activity records read", "records", LOG_INT((int64_t)strmap_len(&l->entries)));
}

static int list_page(struct activity_log *l)
{
    struct kube_list_options o = {.label_selector = ACTIVITY_LOG_LABEL,
                                  .limit = LIST_PAGE,
                                  .continue_token = l->continue_token};
    return kube_list(l->client, &KUBE_RESOURCE_CONFIGMAPS, l->ns, &o, on_listed, l, &l->list_req);
}

int activity_log_start(struct activity_log *l)
{
    return list_page(l);
}

int activity_log_ready(const struct activity_log *l)
{
    return l->ready;
}

/* ---- writing ---- */

static void write_record(struct entry *e, int64_t now_s);

static void on_written(void *data, struct kube_response *resp)
{
    struct entry *e = data;
    e->req = NULL;
    if (resp->status == 0) {
        e->exists = 1;
    } else if (e->exists && kube_response_not_found(resp)) {
        e->exists = 0; /* deleted by someone: made again */
        e->due = 1;
    } else if (!e->exists && kube_response_already_exists(resp)) {
        e->exists = 1;
        e->due = 1;
    } else {
        log_warn("activity record not written", "workspace", e->key, "error",
                 resp->error.message     ? resp->error.message
                 : resp->transport_error ? resp->transport_error
                                         : log_errno_str(resp->status));
    }
    if (e->due)
        write_record(e, activity_record_end(&e->rec));
}

static cJSON *configmap(const struct entry *e, const char *text)
{
    char name[NAME_MAX_LEN + 16];
    snprintf(name, sizeof(name), "%s%s", e->name, ACTIVITY_LOG_SUFFIX);
    cJSON *cm = cJSON_CreateObject();
    cJSON *meta = cJSON_AddObjectToObject(cm, "metadata");
    cJSON *labels = cJSON_AddObjectToObject(meta, "labels");
    cJSON *data = cJSON_AddObjectToObject(cm, "data");
    cJSON *owners = cJSON_AddArrayToObject(meta, "ownerReferences");
    cJSON *owner = cJSON_CreateObject();
    if (!owners || !owner || !cJSON_AddItemToArray(owners, owner)) {
        cJSON_Delete(owner);
        cJSON_Delete(cm);
        return NULL;
    }
    int ok = labels && data && cJSON_AddStringToObject(cm, "apiVersion", "v1") &&
             cJSON_AddStringToObject(cm, "kind", "ConfigMap") &&
             cJSON_AddStringToObject(meta, "name", name) &&
             cJSON_AddStringToObject(meta, "namespace", e->ns) &&
             cJSON_AddStringToObject(labels, ACTIVITY_LOG_LABEL, ACTIVITY_RECORD_VERSION) &&
             cJSON_AddStringToObject(labels, WORKSPACE_LABEL, e->name) &&
             cJSON_AddStringToObject(labels, MANAGED_BY_LABEL, MANAGED_BY_VALUE) &&
             cJSON_AddStringToObject(owner, "apiVersion", WORKSPACE_API_VERSION) &&
             cJSON_AddStringToObject(owner, "kind", WORKSPACE_KIND) &&
             cJSON_AddStringToObject(owner, "name", e->name) &&
             cJSON_AddStringToObject(owner, "uid", e->uid ? e->uid : "") &&
             cJSON_AddStringToObject(data, ACTIVITY_LOG_KEY, text);
    if (!ok) {
        cJSON_Delete(cm);
        return NULL;
    }
    return cm;
}

static void write_record(struct entry *e, int64_t now_s)
{
    struct activity_log *l = e->log;
    e->due = 0;
    if (e->req) {
        e->due = 1; /* after the one in flight */
        return;
    }
    char *text = NULL;
    if (activity_record_text(&e->rec, now_s, ACTIVITY_LOG_MAX_BYTES, &text) < 0) {
        log_warn("activity record not written", "workspace", e->key, "error",
                 log_errno_str(-ENOMEM));
        return;
    }
    /* What is not written is not kept either. */
    if (e->rec.n > MAX_RUNS) {
        struct activity_record cut = {0};
        if (activity_record_parse(text, &cut, NULL) == 0) {
            activity_record_free(&e->rec);
            e->rec = cut;
        }
    }
    int r;
    if (e->exists) {
        cJSON *patch = cJSON_CreateObject();
        cJSON *data = cJSON_AddObjectToObject(patch, "data");
        char *body = data && cJSON_AddStringToObject(data, ACTIVITY_LOG_KEY, text)
                         ? cJSON_PrintUnformatted(patch)
                         : NULL;
        cJSON_Delete(patch);
        char name[NAME_MAX_LEN + 16];
        snprintf(name, sizeof(name), "%s%s", e->name, ACTIVITY_LOG_SUFFIX);
        r = body ? kube_patch(l->client, &KUBE_RESOURCE_CONFIGMAPS, e->ns, name, NULL,
                              KUBE_PATCH_MERGE, body, on_written, e, &e->req)
                 : -ENOMEM;
        free(body);
    } else if (e->uid) {
        cJSON *cm = configmap(e, text);
        r = cm ? kube_create(l->client, &KUBE_RESOURCE_CONFIGMAPS, e->ns, cm, on_written, e,
                             &e->req)
               : -ENOMEM;
        cJSON_Delete(cm);
    } else {
        r = 0; /* read from a list: its owner is known at the next note */
        e->due = 1;
    }
    free(text);
    if (r < 0)
        log_warn("activity record not written", "workspace", e->key, "error", log_errno_str(r));
    else if (e->req) {
        kube_request_set_priority(e->req, KUBE_PRIORITY_LOW);
        e->written_s = now_s;
    }
}

void activity_log_note(struct activity_log *l, const char *key, const struct workspace *ws,
                       int64_t now_ms, char state, int64_t activity_ms)
{
    if (!l || !l->ready || !ws->ns || !ws->name)
        return;
    struct entry *e = strmap_get(&l->entries, key);
    if (!e && !(e = entry_new(l, key, ws->ns, ws->name, ws->uid))) {
        log_warn("activity not recorded", "workspace", key, "error", log_errno_str(-ENOMEM));
        return;
    }
    if (!e->uid && ws->uid)
        e->uid = strdup(ws->uid);
    int64_t now_s = now_ms / 1000;
    size_t runs = e->rec.n;
    char last = runs ? e->rec.runs[runs - 1].state : 0;
    state = activity_record_note_state(&e->rec, state);
    int64_t at_s = activity_record_note_time(&e->rec, now_s, state, activity_ms / 1000);
    if (activity_record_note(&e->rec, at_s, state) < 0) {
        log_warn("activity not recorded", "workspace", key, "error", log_errno_str(-ENOMEM));
        return;
    }
    int began = e->rec.n > runs || (e->rec.n && e->rec.runs[e->rec.n - 1].state != last);
    int stopped = began && state == 'p' && last && last != 'p';
    if ((began && now_s - e->written_s >= ACTIVITY_LOG_WRITE_S) || stopped || e->due)
        write_record(e, now_s);
}

char activity_log_state(const struct workspace_status *st, const struct activity_observation *obs,
                        int gpu_threshold_percent, int64_t now_ms, int64_t interval_ms,
                        int64_t *ret_activity_ms)
{
    *ret_activity_ms = st->activity ? st->activity->last_activity_ms : 0;
    if (obs && obs->result.ok && obs->result.last_activity_ms > *ret_activity_ms)
        *ret_activity_ms = obs->result.last_activity_ms;
    switch (st->state) {
    case WS_STATE_RUNNING:
        break;
    case WS_STATE_PENDING:
    case WS_STATE_RESUMING:
    case WS_STATE_WAITING_FOR_CAPACITY:
    case WS_STATE_QUEUED:
        /* someone asked and waits (for capacity, or in Kueue's queue); a
         * pre-warm is nobody's wait */
        return st->last_resume->pre_warmed ? 'p' : 'w';
    default:
        return 'p';
    }
    if (!obs || obs->probed_at_ms < st->state_since_ms || !obs->result.ok)
        return 'u';
    const struct probe_result *r = &obs->result;
    if (!r->no_data && strstr(r->source, "gpu") && r->gpu_utilisation >= gpu_threshold_percent)
        return 'g';
    if (r->busy)
        return 'k';
    /* The application's own last activity, as the round saw it (the status
     * keeps it only in minute steps). */
    if (r->last_activity_ms && obs->probed_at_ms - r->last_activity_ms <= interval_ms)
        return 'a';
    const char *src = st->activity->last_activity_source;
    int person = src && (strcmp(src, "jupyter") == 0 || strcmp(src, "code-server") == 0 ||
                         strcmp(src, "annotation") == 0);
    if (person && now_ms - st->activity->last_activity_ms <= 2 * interval_ms)
        return 'a';
    return 'i';
}

void activity_log_forget(struct activity_log *l, const char *key)
{
    if (l)
        entry_free(strmap_remove(&l->entries, key));
}

const struct activity_record *activity_log_record(const struct activity_log *l, const char *key)
{
    const struct entry *e = l ? strmap_get(&l->entries, key) : NULL;
    return e ? &e->rec : NULL;
}

void activity_log_free(struct activity_log *l)
{
    if (!l)
        return;
    if (l->list_req)
        kube_request_cancel(l->list_req);
    void *v;
    for (size_t it = 0; strmap_next(&l->entries, &it, NULL, &v);)
        entry_free(v);
    strmap_free(&l->entries);
    free(l->continue_token);
    free(l->ns);
    free(l);
}
