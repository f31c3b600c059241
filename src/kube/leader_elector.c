#include "kube/leader_elector.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kube/lease.h"
#include "util/clock.h"
#include "util/log.h"

enum elector_op {
    OP_NONE,
    OP_GET,
    OP_CREATE,
    OP_UPDATE,
    OP_RELEASE,
};

struct leader_elector {
    uv_loop_t *loop;
    struct kube_client *client;

    char *ns;
    char *name;
    char *identity;
    char *lease_ref; /* "namespace/name", for logs */
    struct lease_config cfg;
    void (*on_started_leading)(void *data);
    void (*on_stopped_leading)(void *data);
    void (*on_new_leader)(void *data, const char *identity);
    void *data;

    struct lease_state lease;
    cJSON *object;         /* the Lease as last read or written: metadata for the next PUT */
    char *reported_leader; /* the holder last passed to on_new_leader */
    bool leading;          /* on_started_leading called, on_stopped_leading not yet */
    uint64_t answered_ms;  /* loop time of the API server's last answer on the Lease; 0: none */

    /* At most one request at a time. The client may complete a request
     * before the call that starts it returns, so completions are matched by
     * sequence number instead of trusting the returned handle. */
    struct kube_request *req;
    enum elector_op op;
    uint64_t op_seq;
    uint64_t op_done_seq;
    struct lease_record pending; /* the record being written */
    uint64_t pending_delay_ms;   /* next attempt after the write succeeds */

    uv_timer_t attempt_timer;  /* next attempt; on release, the done delivery */
    uv_timer_t deadline_timer; /* renew deadline while leading; release timeout */
    int open_handles;

    bool started;
    bool releasing;
    enum {
        RELEASE_WAITING, /* for the request in flight when release was asked */
        RELEASE_WRITING, /* the release PUT is in flight */
        RELEASE_DONE,    /* done is being delivered */
    } release_phase;
    int release_status;
    leader_elector_done_cb done_cb;
    void *done_data;
    bool closing;
};

static void on_attempt_timer(uv_timer_t *t);
static void on_deadline_timer(uv_timer_t *t);
static void release_continue(struct leader_elector *e);
static void release_finish(struct leader_elector *e);
static void on_release_done_timer(uv_timer_t *t);

static void schedule_attempt(struct leader_elector *e, uint64_t delay_ms)
{
    if (e->closing || e->releasing)
        return;
    uv_timer_start(&e->attempt_timer, on_attempt_timer, delay_ms, 0);
}

/* Reports a changed holder once per change; an empty holder (released, or
 * no lease) is not news: the next holder will be. */
static void report_leader(struct leader_elector *e)
{
    if (!e->lease.have_observed || !lease_record_held(&e->lease.observed))
        return;
    const char *holder = e->lease.observed.holder_identity;
    if (e->reported_leader && strcmp(e->reported_leader, holder) == 0)
        return;
    char *copy = strdup(holder);
    if (!copy)
        return; /* reported again at the next look */
    free(e->reported_leader);
    e->reported_leader = copy;
    log_info("new leader observed", "lease", e->lease_ref, "identity", copy);
    if (e->on_new_leader)
        e->on_new_leader(e->data, copy);
}

static void start_leading(struct leader_elector *e)
{
    if (e->leading || e->releasing)
        return;
    e->leading = true;
    log_info("became leader", "lease", e->lease_ref, "identity", e->identity);
    if (e->on_started_leading)
        e->on_started_leading(e->data);
}

static void stop_leading(struct leader_elector *e, const char *why)
{
    if (!e->releasing) /* while releasing, the timer bounds the release */
        uv_timer_stop(&e->deadline_timer);
    if (!e->leading)
        return;
    e->leading = false;
    if (strcmp(why, "released") == 0)
        log_info("stopped leading", "lease", e->lease_ref, "identity", e->identity, "reason", why);
    else
        log_warn("lost leadership", "lease", e->lease_ref, "identity", e->identity, "reason", why);
    if (e->on_stopped_leading)
        e->on_stopped_leading(e->data);
}

/* Arms the renew deadline from the last successful renewal. */
static void arm_deadline(struct leader_elector *e)
{
    if (!e->lease.leader || e->releasing || e->closing)
        return;
    uint64_t deadline = e->lease.renewed_ms + e->cfg.renew_deadline_ms;
    uint64_t now = uv_now(e->loop);
    uv_timer_start(&e->deadline_timer, on_deadline_timer, deadline > now ? deadline - now : 0, 0);
}

/* Builds the object to send: the last one read (keeping its metadata, above
 * all resourceVersion) with spec replaced, or a new Lease for a create. */
static cJSON *build_lease_object(struct leader_elector *e, const struct lease_record *record,
                                 bool create)
{
    cJSON *spec = lease_record_to_spec_json(record);
    if (!spec)
        return NULL;
    cJSON *obj;
    if (create) {
        obj = cJSON_CreateObject();
        cJSON *meta = obj ? cJSON_AddObjectToObject(obj, "metadata") : NULL;
        if (!meta || !cJSON_AddStringToObject(obj, "apiVersion", "coordination.k8s.io/v1") ||
            !cJSON_AddStringToObject(obj, "kind", "Lease") ||
            !cJSON_AddStringToObject(meta, "name", e->name) ||
            !cJSON_AddStringToObject(meta, "namespace", e->ns)) {
            cJSON_Delete(obj);
            cJSON_Delete(spec);
            return NULL;
        }
    } else {
        obj = cJSON_Duplicate(e->object, 1);
        if (!obj) {
            cJSON_Delete(spec);
            return NULL;
        }
        cJSON_DeleteItemFromObjectCaseSensitive(obj, "spec");
    }
    cJSON_AddItemToObject(obj, "spec", spec);
    return obj;
}

static void on_response(void *data, struct kube_response *resp);

/* Starts op. A request that cannot start is retried through a timer (or
 * ends the release), so no path here recurses into another request. */
static void start_request(struct leader_elector *e, enum elector_op op, const cJSON *obj)
{
    uint64_t seq = ++e->op_seq;
    e->op = op;
    struct kube_request *req = NULL;
    int err = -EINVAL;
    switch (op) {
    case OP_GET:
        err = kube_get(e->client, &KUBE_RESOURCE_LEASES, e->ns, e->name, on_response, e, &req);
        break;
    case OP_CREATE:
        err = kube_create(e->client, &KUBE_RESOURCE_LEASES, e->ns, obj, on_response, e, &req);
        break;
    case OP_UPDATE:
    case OP_RELEASE:
        err = kube_replace(e->client, &KUBE_RESOURCE_LEASES, e->ns, e->name, NULL, obj, on_response,
                           e, &req);
        break;
    case OP_NONE:
        break;
    }
    if (e->op_done_seq == seq)
        return; /* already completed; req is gone */
    /* Renewals must not wait behind a burst of the controller's own writes:
     * a leader that misses its renew deadline exits. */
    kube_request_set_priority(req, KUBE_PRIORITY_CRITICAL);
    if (!req) {
        e->op = OP_NONE;
        e->op_done_seq = seq;
        log_warn("lease request could not start", "lease", e->lease_ref, "error",
                 log_errno_str(err));
        if (op == OP_RELEASE) {
            e->release_status = err;
            release_continue(e);
        } else if (e->releasing) {
            release_continue(e);
        } else {
            schedule_attempt(e, e->cfg.retry_period_ms);
        }
        return;
    }
    e->req = req;
}

/* Writes what decision asks for, or waits. Takes decision's record. */
static void act(struct leader_elector *e, struct lease_decision *d)
{
    report_leader(e);

    switch (d->action) {
    case LEASE_WAIT:
        schedule_attempt(e, d->delay_ms);
        return;
    case LEASE_LOST:
        stop_leading(e, "renewal failed or lease taken");
        schedule_attempt(e, d->delay_ms);
        return;
    case LEASE_RELEASE:
        return; /* only from leader_elector_release() */
    case LEASE_CREATE:
    case LEASE_ACQUIRE:
    case LEASE_RENEW:
        break;
    }

    bool create = d->action == LEASE_CREATE;
    if (!create && !e->object) {
        /* Nothing to take the resourceVersion from: read first. */
        start_request(e, OP_GET, NULL);
        return;
    }
    cJSON *obj = build_lease_object(e, &d->record, create);
    if (!obj) {
        schedule_attempt(e, e->cfg.retry_period_ms);
        return;
    }
    lease_record_clear(&e->pending);
    e->pending = d->record;
    d->record = (struct lease_record){0};
    e->pending_delay_ms = d->delay_ms;
    start_request(e, create ? OP_CREATE : OP_UPDATE, obj);
    cJSON_Delete(obj);
}

static void decide_and_act(struct leader_elector *e, enum lease_read read,
                           const struct lease_record *current)
{
    struct lease_decision d;
    int r = lease_decide(&e->cfg, &e->lease, read, current, uv_now(e->loop), clock_unix_ms(), &d);
    if (r < 0) {
        log_warn("lease decision failed", "lease", e->lease_ref, "error", log_errno_str(r));
        if (!e->releasing)
            schedule_attempt(e, e->cfg.retry_period_ms);
        return;
    }
    if (e->releasing) {
        /* Learn from the read (a loss, a new holder) but write nothing. */
        report_leader(e);
        if (d.action == LEASE_LOST)
            stop_leading(e, "renewal failed or lease taken");
    } else {
        act(e, &d);
    }
    lease_decision_clear(&d);
}

static void on_attempt_timer(uv_timer_t *t)
{
    struct leader_elector *e = t->data;
    if (e->closing || e->releasing || e->op != OP_NONE)
        return;
    if (e->lease.leader && e->object) {
        /* Renew optimistically from what we last wrote; a conflict sends
         * us back to reading. */
        decide_and_act(e, LEASE_READ_FOUND, &e->lease.observed);
        return;
    }
    start_request(e, OP_GET, NULL);
}

static void on_deadline_timer(uv_timer_t *t)
{
    struct leader_elector *e = t->data;
    if (e->closing)
        return;
    if (e->releasing) {
        /* The release did not finish in time. */
        if (e->req) {
            kube_request_cancel(e->req);
            e->req = NULL;
            e->op_done_seq = e->op_seq;
            e->op = OP_NONE;
        }
        if (e->release_phase != RELEASE_DONE) {
            log_warn("lease release timed out", "lease", e->lease_ref);
            e->release_status = -ETIMEDOUT;
            release_finish(e);
        }
        return;
    }
    if (!e->lease.leader)
        return;
    /* A renewal hanging past the deadline counts as failed. */
    if (e->req) {
        kube_request_cancel(e->req);
        e->req = NULL;
        e->op_done_seq = e->op_seq;
        e->op = OP_NONE;
    }
    decide_and_act(e, LEASE_READ_FAILED, NULL);
    if (e->lease.leader)
        arm_deadline(e);
}

static void handle_read(struct leader_elector *e, struct kube_response *resp)
{
    if ((resp->status == 0 && cJSON_IsObject(resp->body)) || resp->http_code == 404)
        e->answered_ms = uv_now(e->loop);
    if (resp->status == 0 && cJSON_IsObject(resp->body)) {
        struct lease_record rec;
        int r = lease_record_from_json(resp->body, &rec);
        if (r == 0) {
            cJSON_Delete(e->object);
            e->object = resp->body;
            resp->body = NULL;
            decide_and_act(e, LEASE_READ_FOUND, &rec);
            lease_record_clear(&rec);
            return;
        }
    } else if (resp->http_code == 404) {
        cJSON_Delete(e->object);
        e->object = NULL;
        decide_and_act(e, LEASE_READ_NOT_FOUND, NULL);
        return;
    }
    log_warn("lease read failed", "lease", e->lease_ref, "code", LOG_INT(resp->http_code), "error",
             resp->error.message
                 ? resp->error.message
                 : (resp->transport_error ? resp->transport_error : log_errno_str(resp->status)));
    decide_and_act(e, LEASE_READ_FAILED, NULL);
}

static void handle_write(struct leader_elector *e, enum elector_op op, struct kube_response *resp)
{
    if (resp->status == 0 || (resp->status == -EIO && resp->http_code == 409))
        e->answered_ms = uv_now(e->loop);
    if (resp->status == 0) {
        struct lease_record from_server = {0};
        bool parsed =
            cJSON_IsObject(resp->body) && lease_record_from_json(resp->body, &from_server) == 0;
        const struct lease_record *written = parsed ? &from_server : &e->pending;
        int r = lease_state_written(&e->cfg, &e->lease, written, uv_now(e->loop));
        lease_record_clear(&from_server);
        if (cJSON_IsObject(resp->body)) {
            cJSON_Delete(e->object);
            e->object = resp->body;
            resp->body = NULL;
        } else {
            /* Without the new resourceVersion the next PUT would conflict. */
            cJSON_Delete(e->object);
            e->object = NULL;
        }
        if (r < 0) {
            /* The server took it but we could not record it: read back. */
            cJSON_Delete(e->object);
            e->object = NULL;
            schedule_attempt(e, 0);
            return;
        }
        if (op == OP_RELEASE) {
            log_info("lease released", "lease", e->lease_ref, "identity", e->identity);
            return;
        }
        report_leader(e);
        if (e->lease.leader) {
            start_leading(e);
            arm_deadline(e);
        }
        schedule_attempt(e, e->pending_delay_ms);
        return;
    }

    bool conflict = kube_response_conflict(resp) || kube_response_already_exists(resp);
    if (op == OP_RELEASE) {
        e->release_status = conflict ? 0 : resp->status;
        if (conflict)
            log_info("lease changed before release; nothing to release", "lease", e->lease_ref);
        else
            log_warn("lease release failed", "lease", e->lease_ref, "code",
                     LOG_INT(resp->http_code));
        return;
    }
    if (conflict) {
        /* Someone else wrote since our read (or created it first): read
         * again now rather than after a retry period. */
        log_info("lease write conflict, reading again", "lease", e->lease_ref);
        cJSON_Delete(e->object);
        e->object = NULL;
        schedule_attempt(e, 0);
        return;
    }
    log_warn("lease write failed", "lease", e->lease_ref, "code", LOG_INT(resp->http_code), "error",
             resp->error.message
                 ? resp->error.message
                 : (resp->transport_error ? resp->transport_error : log_errno_str(resp->status)));
    /* The deadline timer ends a leadership that cannot be renewed; a
     * candidate simply tries again. */
    schedule_attempt(e, e->cfg.retry_period_ms);
}

static void on_response(void *data, struct kube_response *resp)
{
    struct leader_elector *e = data;
    enum elector_op op = e->op;
    e->req = NULL;
    e->op = OP_NONE;
    e->op_done_seq = e->op_seq;
    if (e->closing)
        return;

    if (op == OP_GET)
        handle_read(e, resp);
    else
        handle_write(e, op, resp);

    if (e->releasing)
        release_continue(e);
}

static void on_release_done_timer(uv_timer_t *t)
{
    struct leader_elector *e = t->data;
    leader_elector_done_cb cb = e->done_cb;
    e->done_cb = NULL;
    if (cb && !e->closing)
        cb(e->done_data, e->release_status);
}

/* Delivers done from the loop, never from inside the caller's call. */
static void release_finish(struct leader_elector *e)
{
    e->release_phase = RELEASE_DONE;
    uv_timer_stop(&e->deadline_timer);
    uv_timer_start(&e->attempt_timer, on_release_done_timer, 0, 0);
}

/* Moves a release on: waits for the request in flight, then writes the
 * release if we still lead, then reports done. */
static void release_continue(struct leader_elector *e)
{
    if (e->closing || e->req || e->release_phase == RELEASE_DONE)
        return;
    if (e->release_phase == RELEASE_WRITING) {
        release_finish(e); /* answered, or could not be sent */
        return;
    }

    struct lease_decision d;
    int r = lease_release(&e->cfg, &e->lease, clock_unix_ms(), &d);
    if (r < 0) {
        e->release_status = r;
        release_finish(e);
        return;
    }
    /* Leader work stops before the lease is given up, so the standby never
     * overlaps with us. */
    stop_leading(e, "released");
    if (d.action != LEASE_RELEASE || !e->object) {
        lease_decision_clear(&d); /* not leading: nothing to give up */
        release_finish(e);
        return;
    }
    cJSON *obj = build_lease_object(e, &d.record, false);
    lease_decision_clear(&d);
    if (!obj) {
        e->release_status = -ENOMEM;
        release_finish(e);
        return;
    }
    e->release_phase = RELEASE_WRITING;
    start_request(e, OP_RELEASE, obj);
    cJSON_Delete(obj);
}

void leader_elector_release(struct leader_elector *e, leader_elector_done_cb done, void *data)
{
    if (e->releasing || e->closing) {
        if (done)
            done(data, -EALREADY);
        return;
    }
    e->releasing = true;
    e->release_phase = RELEASE_WAITING;
    e->done_cb = done;
    e->done_data = data;
    e->release_status = 0;
    uv_timer_stop(&e->attempt_timer);
    uv_timer_stop(&e->deadline_timer);
    /* Bounds the whole release, including a request already in flight. */
    uv_timer_start(&e->deadline_timer, on_deadline_timer, e->cfg.renew_deadline_ms, 0);
    if (e->req)
        return; /* on_response continues */
    release_continue(e);
}

int leader_elector_new(uv_loop_t *loop, struct kube_client *client,
                       const struct leader_elector_config *cfg, struct leader_elector **ret_elector)
{
    if (!loop || !client || !cfg || !cfg->lease_namespace || !cfg->lease_namespace[0] ||
        !cfg->lease_name || !cfg->lease_name[0] || !cfg->identity || !cfg->identity[0])
        return -EINVAL;

    uint64_t duration = cfg->lease_duration_ms ? cfg->lease_duration_ms : LEASE_DEFAULT_DURATION_MS;
    uint64_t deadline =
        cfg->renew_deadline_ms ? cfg->renew_deadline_ms : LEASE_DEFAULT_RENEW_DEADLINE_MS;
    uint64_t retry = cfg->retry_period_ms ? cfg->retry_period_ms : LEASE_DEFAULT_RETRY_PERIOD_MS;
    /* client-go's own checks: a leader must give up before a candidate may
     * take over, and must get more than one try before it gives up. */
    if (duration < 1000 || deadline >= duration || retry >= deadline)
        return -EINVAL;

    struct leader_elector *e = calloc(1, sizeof(*e));
    if (!e)
        return -ENOMEM;
    e->ns = strdup(cfg->lease_namespace);
    e->name = strdup(cfg->lease_name);
    e->identity = strdup(cfg->identity);
    size_t ref_len = strlen(cfg->lease_namespace) + strlen(cfg->lease_name) + 2;
    e->lease_ref = malloc(ref_len);
    if (!e->ns || !e->name || !e->identity || !e->lease_ref) {
        free(e->ns);
        free(e->name);
        free(e->identity);
        free(e->lease_ref);
        free(e);
        return -ENOMEM;
    }
    snprintf(e->lease_ref, ref_len, "%s/%s", cfg->lease_namespace, cfg->lease_name);

    e->loop = loop;
    e->client = client;
    e->cfg = (struct lease_config){
        .identity = e->identity,
        .lease_duration_ms = duration,
        .renew_deadline_ms = deadline,
        .retry_period_ms = retry,
    };
    e->on_started_leading = cfg->on_started_leading;
    e->on_stopped_leading = cfg->on_stopped_leading;
    e->on_new_leader = cfg->on_new_leader;
    e->data = cfg->data;
    lease_state_init(&e->lease);

    uv_timer_init(loop, &e->attempt_timer);
    uv_timer_init(loop, &e->deadline_timer);
    e->attempt_timer.data = e;
    e->deadline_timer.data = e;
    e->open_handles = 2;
    *ret_elector = e;
    return 0;
}

int leader_elector_start(struct leader_elector *e)
{
    if (e->started || e->releasing || e->closing)
        return -EALREADY;
    e->started = true;
    schedule_attempt(e, 0);
    return 0;
}

bool leader_elector_is_leader(const struct leader_elector *e)
{
    return e->leading;
}

bool leader_elector_answered_within(const struct leader_elector *e, uint64_t ms)
{
    return e->answered_ms != 0 && uv_now(e->loop) - e->answered_ms <= ms;
}

const char *leader_elector_leader(const struct leader_elector *e)
{
    if (!e->lease.have_observed || !e->lease.observed.holder_identity)
        return "";
    return e->lease.observed.holder_identity;
}

static void on_close(uv_handle_t *h)
{
    struct leader_elector *e = h->data;
    if (--e->open_handles > 0)
        return;
    lease_state_clear(&e->lease);
    lease_record_clear(&e->pending);
    cJSON_Delete(e->object);
    free(e->reported_leader);
    free(e->ns);
    free(e->name);
    free(e->identity);
    free(e->lease_ref);
    free(e);
}

void leader_elector_close(struct leader_elector *e)
{
    if (!e || e->closing)
        return;
    e->closing = true;
    if (e->req) {
        kube_request_cancel(e->req);
        e->req = NULL;
    }
    uv_close((uv_handle_t *)&e->attempt_timer, on_close);
    uv_close((uv_handle_t *)&e->deadline_timer, on_close);
}
