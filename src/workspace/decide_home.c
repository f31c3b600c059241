#include "decide_internal.h"

/* ---- rule 3: the home claim ---- */

/* A lost home the class wants a person to acknowledge, not yet acknowledged:
 * nothing starts on a new, empty home. */
int decide_home_awaits_acknowledgement(const struct decider *d)
{
    const struct workspace_home *h = d->st->home;
    return h->lost_ms && !h->acknowledged_ms && d->cls &&
           d->cls->home_on_loss == HOME_ON_LOSS_WAIT_FOR_ACKNOWLEDGEMENT;
}

static const char *home_loss_plan(const struct decider *d)
{
    switch (d->cls->home_on_loss) {
    case HOME_ON_LOSS_RECREATE:
        return "a new, empty claim is made (class onLoss Recreate)";
    case HOME_ON_LOSS_RECREATE_ON_RESUME:
        return "a new, empty claim is made when the workspace resumes (class onLoss "
               "RecreateOnResume)";
    case HOME_ON_LOSS_WAIT_FOR_ACKNOWLEDGEMENT:
        break;
    }
    return "nothing starts on a new, empty home until the Workspace is "
           "annotated " ACKNOWLEDGE_HOME_LOSS_ANNOTATION "=<the lost claim's uid> (class onLoss "
           "WaitForAcknowledgement)";
}

/* Which claim holds home (status.home), whether it was lost, and whether a
 * claim is to be made. docs/state-machine.md, "A lost home". */
void decide_home(struct decider *d, const char *claim)
{
    struct workspace_status *st = d->st;
    struct workspace_home *h = st->home;
    const struct workspace_pvc *pvc = d->in->pvc;
    const char *uid = pvc && pvc->uid && pvc->uid[0] ? pvc->uid : NULL;
    char occ[OCCASION_SIZE], at[TIMEFMT_RFC3339_SIZE];
    /* The claim cache never un-sees a claim: one recorded and now absent,
     * or present under another uid, was deleted. */
    if (h->claim_uid && (!pvc || (uid && !decide_streq(uid, h->claim_uid)))) {
        decide_set_string(d, &h->lost_claim_uid, h->claim_uid);
        h->lost_ms = d->now;
        h->acknowledged_ms = 0;
        decide_set_string(d, &h->fresh_pod, NULL);
        decide_set_string(d, &h->claim_uid, NULL);
        h->since_ms = 0;
        snprintf(occ, sizeof(occ), "home-%s", h->lost_claim_uid);
        decide_transition_event(
            d, occ, "Warning", WS_EVENT_HOME_LOST,
            "claim %s (uid %s), which held the workspace's home, is gone: its files "
            "and the application's checkpoint are lost; %s",
            claim, h->lost_claim_uid, home_loss_plan(d));
    }
    if (uid && !h->claim_uid && !pvc->deletion_ms) {
        decide_set_string(d, &h->claim_uid, uid);
        h->since_ms = pvc->created_ms && pvc->created_ms <= d->now ? pvc->created_ms : d->now;
    }
    if (h->lost_ms && !h->acknowledged_ms && h->lost_claim_uid &&
        decide_streq(d->ws->acknowledged_home_loss, h->lost_claim_uid)) {
        h->acknowledged_ms = d->now;
        snprintf(occ, sizeof(occ), "home-ack-%s", h->lost_claim_uid);
        decide_transition_event(
            d, occ, "Normal", WS_EVENT_HOME_LOSS_ACKNOWLEDGED,
            "the loss of claim %s (uid %s) is acknowledged: the workspace starts on "
            "a new, empty home",
            claim, h->lost_claim_uid);
    }
    int make = !pvc;
    if (make && h->lost_ms) {
        switch (d->cls->home_on_loss) {
        case HOME_ON_LOSS_RECREATE:
            break;
        case HOME_ON_LOSS_RECREATE_ON_RESUME:
            make = !d->ws->paused;
            break;
        case HOME_ON_LOSS_WAIT_FOR_ACKNOWLEDGEMENT:
            make = h->acknowledged_ms != 0;
            break;
        }
    }
    if (make)
        decide_push(d, ACTION_CREATE_PVC, claim);
    if (!h->lost_ms) {
        workspace_status_remove_condition(st, WS_COND_HOME);
        return;
    }
    timefmt_rfc3339_text(h->lost_ms, at);
    if (decide_home_awaits_acknowledgement(d))
        decide_condition(
            d, WS_COND_HOME, COND_FALSE, WS_REASON_LOST,
            "claim %s (uid %s), which held the workspace's home, was gone at %s: its files "
            "are lost; nothing starts on a new, empty home until the Workspace is "
            "annotated " ACKNOWLEDGE_HOME_LOSS_ANNOTATION "=%s",
            claim, h->lost_claim_uid, at, h->lost_claim_uid);
    else if (h->claim_uid)
        decide_condition(
            d, WS_COND_HOME, COND_TRUE, WS_REASON_RECREATED,
            "claim %s (uid %s) holds the home since the claim before it (uid %s) was gone "
            "at %s; it started empty",
            claim, h->claim_uid, h->lost_claim_uid, at);
    else
        decide_condition(
            d, WS_COND_HOME, COND_FALSE, WS_REASON_LOST,
            "claim %s (uid %s), which held the workspace's home, was gone at %s: its files "
            "are lost; %s",
            claim, h->lost_claim_uid, at,
            h->acknowledged_ms ? "the loss is acknowledged: a new, empty claim is made"
                               : home_loss_plan(d));
}
