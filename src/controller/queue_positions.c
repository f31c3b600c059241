#include "controller/queue_positions.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json.h"
#include "util/log.h"
#include "util/strmap.h"

/* A queue nobody asked for in this long is forgotten. */
#define QUEUE_FORGET_MS (60 * 1000)
/* The most a visibility answer may take: QUEUE_POSITIONS_MAX items. */
#define ANSWER_MAX_BYTES (4 * 1024 * 1024)

struct place {
    char *pod_name;
    int64_t position, pending;
};

/* One LocalQueue and what its last answer said. */
struct local_queue {
    struct queue_positions *q;
    char *ns, *name;
    int64_t wanted_ms;
    struct kube_request *req;
    char **uids; /* the pods of the last answer, keys of by_uid */
    size_t n;
    int failing; /* the last read failed (said once) */
};

struct queue_positions {
    uv_loop_t *loop;
    struct kube_client *client;
    queue_positions_changed_cb changed;
    void *data;
    struct strmap queues; /* "ns/name" -> struct local_queue * */
    struct strmap by_uid; /* pod uid -> struct place * */
    uv_timer_t timer;
    int timer_on;
};

int queue_positions_parse(const cJSON *body, struct queue_position *out, size_t max, size_t *ret_n)
{
    const char *kind = json_string(body, "kind");
    const cJSON *items = json_member(body, "items");
    if (!kind || strcmp(kind, "PendingWorkloadsSummary") != 0 || (items && !cJSON_IsArray(items)))
        return -EINVAL;
    size_t n = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, items)
    {
        if (n >= max)
            break;
        const cJSON *ref, *pod = NULL;
        cJSON_ArrayForEach(ref, json_member(json_member(it, "metadata"), "ownerReferences"))
        {
            const char *k = json_string(ref, "kind");
            if (k && strcmp(k, "Pod") == 0)
                pod = ref;
        }
        const cJSON *pos = json_member(it, "positionInLocalQueue");
        if (!pod || !json_string(pod, "uid") || !cJSON_IsNumber(pos) || pos->valuedouble < 0)
            continue; /* not a pod's, or no place */
        out[n++] = (struct queue_position){.pod_uid = json_string(pod, "uid"),
                                           .pod_name = json_string(pod, "name"),
                                           .position = json_int(it, "positionInLocalQueue") + 1};
    }
    *ret_n = n;
    return 0;
}

static void place_free(struct place *p)
{
    if (p) {
        free(p->pod_name);
        free(p);
    }
}

static void tell(struct local_queue *lq, const char *pod_name)
{
    if (pod_name && lq->q->changed)
        lq->q->changed(lq->q->data, lq->ns, pod_name);
}

/* The queue's last answer is forgotten; its pods are told when tell_them. */
static void forget_answer(struct local_queue *lq, int tell_them)
{
    for (size_t i = 0; i < lq->n; i++) {
        struct place *p = strmap_remove(&lq->q->by_uid, lq->uids[i]);
        if (p && tell_them)
            tell(lq, p->pod_name);
        place_free(p);
        free(lq->uids[i]);
    }
    free(lq->uids);
    lq->uids = NULL;
    lq->n = 0;
}

/* The new answer in place of the old; the pods whose place changed told. */
static void take_answer(struct local_queue *lq, const struct queue_position *pos, size_t n)
{
    struct queue_positions *q = lq->q;
    char **uids = n ? calloc(n, sizeof(*uids)) : NULL;
    struct place **places = n ? calloc(n, sizeof(*places)) : NULL;
    int ok = !n || (uids && places);
    for (size_t i = 0; ok && i < n; i++) {
        places[i] = calloc(1, sizeof(**places));
        ok = places[i] && (uids[i] = strdup(pos[i].pod_uid)) &&
             json_dup_optional(pos[i].pod_name, &places[i]->pod_name) == 0;
        if (ok) {
            places[i]->position = pos[i].position;
            places[i]->pending = (int64_t)n;
        }
    }
    if (!ok) {
        for (size_t i = 0; i < n; i++) {
            free(uids ? uids[i] : NULL);
            place_free(places ? places[i] : NULL);
        }
        free(uids);
        free(places);
        log_warn("out of memory; queue positions not kept", "queue", lq->name);
        return;
    }
    /* Those new in the list, or moved: told. */
    for (size_t k = 0; k < n; k++) {
        const struct place *old = strmap_get(&q->by_uid, uids[k]);
        if (!old || old->position != places[k]->position || old->pending != places[k]->pending)
            tell(lq, places[k]->pod_name);
    }
    /* Those gone from it: told too. */
    for (size_t i = 0; i < lq->n; i++) {
        struct place *old = strmap_remove(&q->by_uid, lq->uids[i]);
        int kept = 0;
        for (size_t k = 0; old && k < n; k++)
            kept |= strcmp(uids[k], lq->uids[i]) == 0;
        if (old && !kept)
            tell(lq, old->pod_name);
        place_free(old);
        free(lq->uids[i]);
    }
    free(lq->uids);
    lq->uids = uids;
    lq->n = 0;
    for (size_t i = 0; i < n; i++) {
        void *prev = NULL;
        int known = 0;
        for (size_t k = 0; k < i; k++)
            known |= strcmp(uids[k], uids[i]) == 0;
        if (known || strmap_put(&q->by_uid, uids[i], places[i], &prev) < 0) {
            place_free(places[i]);
            free(uids[i]);
            continue;
        }
        place_free(prev);
        uids[lq->n++] = uids[i];
    }
    free(places);
}

static void on_answer(void *data, struct kube_response *resp)
{
    struct local_queue *lq = data;
    lq->req = NULL;
    if (resp->status < 0) {
        /* Kueue down, no visibility API, or not allowed: no places, said
         * once until a read succeeds. */
        if (!lq->failing)
            log_warn("cannot read a Kueue queue's pending workloads", "queue", lq->name,
                     "namespace", lq->ns, "error", kube_response_error_text(resp));
        lq->failing = 1;
        forget_answer(lq, 1);
        return;
    }
    lq->failing = 0;
    cJSON *body = resp->raw ? cJSON_ParseWithLength(resp->raw, resp->raw_len) : NULL;
    static struct queue_position pos[QUEUE_POSITIONS_MAX];
    size_t n = 0;
    if (!body || queue_positions_parse(body, pos, QUEUE_POSITIONS_MAX, &n) < 0) {
        log_warn("a Kueue queue's pending workloads cannot be read", "queue", lq->name, "namespace",
                 lq->ns);
        forget_answer(lq, 1);
    } else {
        take_answer(lq, pos, n);
    }
    cJSON_Delete(body);
}

static void fetch(struct local_queue *lq)
{
    if (lq->req)
        return;
    char path[700];
    snprintf(path, sizeof(path),
             "/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/%s/localqueues/%s/"
             "pendingworkloads?limit=%d",
             lq->ns, lq->name, QUEUE_POSITIONS_MAX);
    if (kube_get_path(lq->q->client, path, ANSWER_MAX_BYTES, on_answer, lq, &lq->req) < 0)
        lq->req = NULL;
}

static void local_queue_free(struct local_queue *lq)
{
    kube_request_cancel(lq->req);
    forget_answer(lq, 0);
    free(lq->ns);
    free(lq->name);
    free(lq);
}

static void on_timer(uv_timer_t *t)
{
    struct queue_positions *q = t->data;
    int64_t now = (int64_t)uv_now(q->loop);
    const char *key;
    void *v;
    for (size_t i = 0; strmap_next(&q->queues, &i, &key, &v);) {
        struct local_queue *lq = v;
        if (now - lq->wanted_ms > QUEUE_FORGET_MS) {
            strmap_remove(&q->queues, key);
            local_queue_free(lq);
            i = 0; /* the map changed under the walk */
            continue;
        }
        fetch(lq);
    }
    if (!strmap_len(&q->queues)) {
        uv_timer_stop(&q->timer);
        q->timer_on = 0;
    }
}

int queue_positions_new(uv_loop_t *loop, struct kube_client *client,
                        queue_positions_changed_cb changed, void *data,
                        struct queue_positions **ret)
{
    struct queue_positions *q = calloc(1, sizeof(*q));
    if (!q)
        return -ENOMEM;
    q->loop = loop;
    q->client = client;
    q->changed = changed;
    q->data = data;
    strmap_init(&q->queues);
    strmap_init(&q->by_uid);
    uv_timer_init(loop, &q->timer);
    q->timer.data = q;
    *ret = q;
    return 0;
}

void queue_positions_want(struct queue_positions *q, const char *ns, const char *queue)
{
    if (!q || !ns || !queue)
        return;
    char key[512];
    snprintf(key, sizeof(key), "%s/%s", ns, queue);
    struct local_queue *lq = strmap_get(&q->queues, key);
    if (!lq) {
        lq = calloc(1, sizeof(*lq));
        if (!lq || !(lq->ns = strdup(ns)) || !(lq->name = strdup(queue)) ||
            strmap_put(&q->queues, key, lq, NULL) < 0) {
            if (lq) {
                free(lq->ns);
                free(lq->name);
                free(lq);
            }
            return;
        }
        lq->q = q;
        fetch(lq);
    }
    lq->wanted_ms = (int64_t)uv_now(q->loop);
    if (!q->timer_on) {
        uv_timer_start(&q->timer, on_timer, QUEUE_POSITIONS_REFRESH_MS, QUEUE_POSITIONS_REFRESH_MS);
        q->timer_on = 1;
    }
}

int queue_positions_get(const struct queue_positions *q, const char *pod_uid, int64_t *ret_position,
                        int64_t *ret_pending)
{
    const struct place *p = q && pod_uid ? strmap_get(&q->by_uid, pod_uid) : NULL;
    if (!p)
        return 0;
    *ret_position = p->position;
    *ret_pending = p->pending;
    return 1;
}

static void on_closed(uv_handle_t *h)
{
    free(h->data);
}

void queue_positions_free(struct queue_positions *q)
{
    if (!q)
        return;
    const char *key;
    void *v;
    for (size_t i = 0; strmap_next(&q->queues, &i, &key, &v);)
        local_queue_free(v);
    strmap_free(&q->queues);
    strmap_free(&q->by_uid);
    uv_close((uv_handle_t *)&q->timer, on_closed);
}
