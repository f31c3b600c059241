#include "decide_internal.h"

/* 5b: never two pods, not even for a moment: a new one waits until the
 * leaving one is gone. */
void decide_wait_for_leaving(struct decider *d, const char *leaving)
{
    struct workspace_status *st = d->st;
    st->state = decide_resume_in_progress(st) ? WS_STATE_RESUMING : WS_STATE_PENDING;
    decide_set_string(d, &st->node_name, NULL);
    decide_condition(d, WS_COND_READY, COND_FALSE, WS_REASON_POD_TERMINATING,
                     "waiting for pod %s to stop before starting a new one", leaving);
}

/* Rule 5a with onCapacityTimeout FallBack: the waiting pod (pinned to one
 * product, holding no GPU) goes at once; once it is gone, decide_create_pod()
 * starts one from files and the checkpoint that may run on any product the
 * class allows, the class's own preferred. status.accelerator.fallback
 * carries the decision to that pass. */
static void fall_back(struct decider *d, const struct workspace_pod *p, const char *timeout,
                      const char *sched)
{
    char products[PRODUCTS_TEXT];
    decide_allowed_products(d->cls, ", ", products, sizeof(products));
    const char *wanted = decide_pod_product(d, p);
    if (!wanted)
        wanted = d->cls->product;
    decide_own_delete_pod(d, p, 0);
    d->st->accelerator_fallback = 1;
    decide_condition(d, WS_COND_CAPACITY_AVAILABLE, COND_FALSE, WS_REASON_CAPACITY_TIMEOUT,
                     "no %s free within %s (capacity timeout); falling back to any of %s: %s",
                     wanted, timeout, products, sched);
    char occ[OCCASION_SIZE];
    if (!d->old->accelerator_fallback)
        decide_transition_event(
            d, decide_pod_occasion(p->name, occ), "Warning", WS_EVENT_CAPACITY_FALLBACK,
            "no %s free within %s (capacity timeout): %s; replacing pod %s with one from files "
            "and the application's checkpoint that may run on any of %s",
            wanted, timeout, sched, p->name, products);
    decide_wait_for_leaving(d, p->name);
}

/* The scheduler holds a pod back while its home claim is not bound yet
 * ("pod has unbound immediate PersistentVolumeClaims"): the claim binds,
 * no capacity is missing. No capacity clock runs meanwhile. Returns 1 when
 * that is the pod's wait, with the status saying so. */
static int waiting_for_home(struct decider *d, const struct workspace_pod *p)
{
    const struct workspace_pvc *pvc = d->in->pvc;
    struct workspace_status *st = d->st;
    if ((pvc && decide_streq(pvc->phase, "Bound")) || !p->unschedulable_message ||
        !strstr(p->unschedulable_message, "PersistentVolumeClaim"))
        return 0;
    const char *claim = pvc && pvc->name ? pvc->name : st->home_claim_name;
    st->state = decide_resume_in_progress(st) ? WS_STATE_RESUMING : WS_STATE_PENDING;
    st->waiting_for_capacity_since_ms = 0;
    workspace_status_remove_condition(st, WS_COND_CAPACITY_AVAILABLE);
    decide_condition(d, WS_COND_READY, COND_FALSE, WS_REASON_WAITING_FOR_HOME,
                     "pod %s waits for its home claim %s to be bound (claim %s)", p->name,
                     claim ? claim : "(unnamed)",
                     pvc && pvc->phase ? pvc->phase : "not created yet");
    return 1;
}

void decide_waiting_for_capacity(struct decider *d)
{
    const struct workspace_pod *p = d->keep;
    struct workspace_status *st = d->st;
    const struct workspace_class *c = d->cls;
    const char *sched = p->unschedulable_message && p->unschedulable_message[0]
                            ? p->unschedulable_message
                            : "the scheduler found no node for the pod";
    if (waiting_for_home(d, p))
        return;
    if (!st->waiting_for_capacity_since_ms)
        st->waiting_for_capacity_since_ms = d->now;
    int64_t since = st->waiting_for_capacity_since_ms;
    int64_t left = since + c->capacity_timeout_ms - d->now;
    if (left > 0) {
        st->state = WS_STATE_WAITING_FOR_CAPACITY;
        decide_condition(d, WS_COND_CAPACITY_AVAILABLE, COND_FALSE, WS_REASON_UNSCHEDULABLE, "%s",
                         sched);
        decide_condition(d, WS_COND_READY, COND_FALSE, WS_REASON_WAITING_FOR_CAPACITY,
                         "pod %s is waiting for capacity", p->name);
        d->out->requeue_after_ms = left < c->capacity_timeout_ms ? left : c->capacity_timeout_ms;
        return;
    }

    char timeout[32], occ[OCCASION_SIZE];
    decide_format_duration(c->capacity_timeout_ms, timeout, sizeof(timeout));
    const char *old_reason = decide_condition_reason(d->old, WS_COND_CAPACITY_AVAILABLE);
    /* A fallback pod is never replaced again: it waits like any other. */
    if (decide_falls_back(c) && !p->capacity_fallback) {
        fall_back(d, p, timeout, sched);
        return;
    }
    if (c->on_capacity_timeout == CAPACITY_TIMEOUT_FAIL) {
        st->state = WS_STATE_FAILED;
        decide_condition(d, WS_COND_CAPACITY_AVAILABLE, COND_FALSE, WS_REASON_CAPACITY_TIMEOUT,
                         "no capacity after %s: %s", timeout, sched);
        decide_condition(d, WS_COND_READY, COND_FALSE, WS_REASON_CAPACITY_TIMEOUT,
                         "no capacity after %s", timeout);
        /* A pending pod would take a GPU whenever one frees up, long after
         * the user was told the workspace failed. */
        decide_own_delete_pod(d, p, 0);
        if (!(d->old->state == WS_STATE_FAILED &&
              decide_streq(old_reason, WS_REASON_CAPACITY_TIMEOUT)))
            decide_transition_event(d, decide_pod_occasion(p->name, occ), "Warning",
                                    WS_EVENT_CAPACITY_TIMEOUT, "no capacity after %s: %s", timeout,
                                    sched);
        return;
    }
    char t[TIMEFMT_RFC3339_SIZE] = "";
    timefmt_format_rfc3339(since, t, sizeof(t));
    st->state = WS_STATE_WAITING_FOR_CAPACITY;
    decide_condition(d, WS_COND_CAPACITY_AVAILABLE, COND_FALSE, WS_REASON_CAPACITY_TIMEOUT,
                     "still waiting for capacity after %s (since %s): %s", timeout, t, sched);
    decide_condition(d, WS_COND_READY, COND_FALSE, WS_REASON_WAITING_FOR_CAPACITY,
                     "pod %s is waiting for capacity", p->name);
    if (!decide_streq(old_reason, WS_REASON_CAPACITY_TIMEOUT))
        decide_transition_event(d, decide_pod_occasion(p->name, occ), "Warning",
                                WS_EVENT_CAPACITY_TIMEOUT,
                                "still waiting for capacity after %s: %s", timeout, sched);
}

/* The wait for capacity ran out (fall_back() decided, or the pass that did
 * was lost before its status write). */
int decide_fallback_due(const struct decider *d)
{
    const struct workspace_status *st = d->st;
    if (!decide_falls_back(d->cls))
        return 0;
    return st->accelerator_fallback ||
           (st->waiting_for_capacity_since_ms &&
            d->now >= st->waiting_for_capacity_since_ms + d->cls->capacity_timeout_ms);
}

/* The pod went to a Kueue queue and Kueue has not admitted it (its
 * scheduling gate is on): the workspace waits its turn, and says where. No
 * capacity clock runs: the quota is Kueue's to grant, and the scheduler has
 * not been asked yet (docs/kueue.md). */
void decide_queued(struct decider *d)
{
    const struct workspace_pod *p = d->keep;
    struct workspace_status *st = d->st;
    const struct queue_view *q = d->in->queue;
    st->state = WS_STATE_QUEUED;
    st->waiting_for_capacity_since_ms = 0;
    workspace_status_remove_condition(st, WS_COND_CAPACITY_AVAILABLE);
    char place[96] = "", since[TIMEFMT_RFC3339_SIZE + 16] = "";
    if (q && q->position > 0 && q->pending >= q->position)
        snprintf(place, sizeof(place), ", number %lld of %lld waiting there",
                 (long long)q->position, (long long)q->pending);
    else if (q && q->position > 0)
        snprintf(place, sizeof(place), ", number %lld waiting there", (long long)q->position);
    int64_t from = q && q->since_ms ? q->since_ms : p->created_ms;
    const char *why = q && q->message && q->message[0] ? q->message : NULL;
    struct workspace_queue_status *sq = st->queue;
    decide_set_string(d, &sq->name, p->queue);
    sq->position = q && q->position > 0 ? q->position : 0;
    sq->pending = q && q->pending >= sq->position ? q->pending : 0;
    sq->since_ms = from;
    /* Kueue's words as any status message: one line, at most
     * WORKSPACE_MESSAGE_MAX bytes (the CRD's maxLength). */
    char *said = why ? strdup(why) : NULL;
    if (why && !said) {
        decide_failed(d, -ENOMEM);
        return;
    }
    if (said)
        workspace_message_one_line(said);
    decide_set_string(d, &sq->message, said);
    free(said);
    if (from) {
        char t[TIMEFMT_RFC3339_SIZE];
        timefmt_format_rfc3339(from, t, sizeof(t));
        snprintf(since, sizeof(since), " since %s", t);
    }
    decide_condition(d, WS_COND_READY, COND_FALSE, WS_REASON_WAITING_FOR_ADMISSION,
                     "pod %s waits in Kueue queue %s%s%s: %s", p->name,
                     p->queue ? p->queue : "(unnamed)", place, since,
                     why ? why : "not admitted yet");
}

/* status.queue says where a Queued workspace waits; in any other state it
 * is absent. */
void decide_clear_queue(struct decider *d)
{
    struct workspace_queue_status *sq = d->st->queue;
    if (d->st->state == WS_STATE_QUEUED)
        return;
    decide_set_string(d, &sq->name, NULL);
    decide_set_string(d, &sq->message, NULL);
    sq->position = sq->pending = sq->since_ms = 0;
}
