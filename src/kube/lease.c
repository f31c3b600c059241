#include "kube/lease.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/timefmt.h"

struct lease_times {
    uint64_t duration_ms;
    uint64_t renew_deadline_ms;
    uint64_t retry_period_ms;
};

static struct lease_times lease_times(const struct lease_config *cfg)
{
    return (struct lease_times){
        .duration_ms = cfg->lease_duration_ms ? cfg->lease_duration_ms : LEASE_DEFAULT_DURATION_MS,
        .renew_deadline_ms =
            cfg->renew_deadline_ms ? cfg->renew_deadline_ms : LEASE_DEFAULT_RENEW_DEADLINE_MS,
        .retry_period_ms =
            cfg->retry_period_ms ? cfg->retry_period_ms : LEASE_DEFAULT_RETRY_PERIOD_MS,
    };
}

static const char *str_or_empty(const char *s)
{
    return s ? s : "";
}

static int dup_or_null(const char *s, char **ret)
{
    if (!s) {
        *ret = NULL;
        return 0;
    }
    *ret = strdup(s);
    return *ret ? 0 : -ENOMEM;
}

void lease_record_clear(struct lease_record *r)
{
    if (!r)
        return;
    free(r->holder_identity);
    free(r->acquire_time);
    free(r->renew_time);
    *r = (struct lease_record){0};
}

int lease_record_copy(const struct lease_record *src, struct lease_record *ret_copy)
{
    struct lease_record c = {
        .lease_duration_seconds = src->lease_duration_seconds,
        .lease_transitions = src->lease_transitions,
    };
    if (dup_or_null(src->holder_identity, &c.holder_identity) < 0 ||
        dup_or_null(src->acquire_time, &c.acquire_time) < 0 ||
        dup_or_null(src->renew_time, &c.renew_time) < 0) {
        lease_record_clear(&c);
        return -ENOMEM;
    }
    *ret_copy = c;
    return 0;
}

bool lease_record_equal(const struct lease_record *a, const struct lease_record *b)
{
    return a->lease_duration_seconds == b->lease_duration_seconds &&
           a->lease_transitions == b->lease_transitions &&
           strcmp(str_or_empty(a->holder_identity), str_or_empty(b->holder_identity)) == 0 &&
           strcmp(str_or_empty(a->acquire_time), str_or_empty(b->acquire_time)) == 0 &&
           strcmp(str_or_empty(a->renew_time), str_or_empty(b->renew_time)) == 0;
}

bool lease_record_held(const struct lease_record *r)
{
    return r->holder_identity && r->holder_identity[0] != '\0';
}

/* JSON numbers are doubles; anything that is not a whole number in int64's
 * exactly representable range reads as 0 rather than as undefined behaviour. */
static int64_t json_int(const cJSON *obj, const char *name)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, name);
    if (!cJSON_IsNumber(item))
        return 0;
    double v = item->valuedouble;
    if (!isfinite(v) || v > 9007199254740992.0 || v < -9007199254740992.0)
        return 0;
    return (int64_t)v;
}

static const char *json_str(const cJSON *obj, const char *name)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, name);
    return cJSON_IsString(item) ? item->valuestring : NULL;
}

int lease_record_from_json(const cJSON *lease, struct lease_record *ret_record)
{
    if (!cJSON_IsObject(lease))
        return -EINVAL;
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(lease, "spec");
    if (!cJSON_IsObject(spec)) {
        *ret_record = (struct lease_record){0};
        return 0;
    }
    struct lease_record r = {
        .holder_identity = (char *)json_str(spec, "holderIdentity"),
        .lease_duration_seconds = json_int(spec, "leaseDurationSeconds"),
        .acquire_time = (char *)json_str(spec, "acquireTime"),
        .renew_time = (char *)json_str(spec, "renewTime"),
        .lease_transitions = json_int(spec, "leaseTransitions"),
    };
    return lease_record_copy(&r, ret_record);
}

cJSON *lease_record_to_spec_json(const struct lease_record *r)
{
    cJSON *spec = cJSON_CreateObject();
    if (!spec)
        return NULL;
    /* An empty holderIdentity is written, not omitted, as client-go does on
     * release: readers see the lease as free. */
    if (!cJSON_AddStringToObject(spec, "holderIdentity", str_or_empty(r->holder_identity)) ||
        !cJSON_AddNumberToObject(spec, "leaseDurationSeconds", (double)r->lease_duration_seconds) ||
        (r->acquire_time && !cJSON_AddStringToObject(spec, "acquireTime", r->acquire_time)) ||
        (r->renew_time && !cJSON_AddStringToObject(spec, "renewTime", r->renew_time)) ||
        !cJSON_AddNumberToObject(spec, "leaseTransitions", (double)r->lease_transitions)) {
        cJSON_Delete(spec);
        return NULL;
    }
    return spec;
}

void lease_state_init(struct lease_state *s)
{
    *s = (struct lease_state){0};
}

void lease_state_clear(struct lease_state *s)
{
    if (!s)
        return;
    lease_record_clear(&s->observed);
    lease_state_init(s);
}

const char *lease_action_name(enum lease_action action)
{
    switch (action) {
    case LEASE_WAIT:
        return "wait";
    case LEASE_CREATE:
        return "create";
    case LEASE_ACQUIRE:
        return "acquire";
    case LEASE_RENEW:
        return "renew";
    case LEASE_LOST:
        return "lost";
    case LEASE_RELEASE:
        return "release";
    }
    return "unknown";
}

void lease_decision_clear(struct lease_decision *d)
{
    if (!d)
        return;
    lease_record_clear(&d->record);
    *d = (struct lease_decision){0};
}

/* Restarts the local expiry clock when the record differs from the one seen
 * before: any change at all, whatever its timestamps say, proves the holder
 * (or someone) is alive now. */
static int observe(struct lease_state *s, enum lease_read read, const struct lease_record *current,
                   uint64_t now_ms)
{
    if (read == LEASE_READ_FAILED)
        return 0;
    if (read == LEASE_READ_NOT_FOUND) {
        if (s->have_observed) {
            lease_record_clear(&s->observed);
            s->have_observed = false;
            s->observed_ms = now_ms;
        }
        return 0;
    }
    if (s->have_observed && lease_record_equal(&s->observed, current))
        return 0;

    struct lease_record copy;
    int r = lease_record_copy(current, &copy);
    if (r < 0)
        return r;
    lease_record_clear(&s->observed);
    s->observed = copy;
    s->have_observed = true;
    s->observed_ms = now_ms;
    return 0;
}

/* Fills the record to write. acquire_time NULL means "now". */
static int build_record(const char *holder, int64_t duration_s, const char *acquire_time,
                        int64_t transitions, int64_t now_unix_ms, struct lease_record *ret)
{
    char now[TIMEFMT_RFC3339_MICRO_SIZE];
    int r = timefmt_format_rfc3339_micro(now_unix_ms, now, sizeof(now));
    if (r < 0)
        return r;
    struct lease_record src = {
        .holder_identity = (char *)holder,
        .lease_duration_seconds = duration_s,
        .acquire_time = (char *)(acquire_time ? acquire_time : now),
        .renew_time = now,
        .lease_transitions = transitions,
    };
    return lease_record_copy(&src, ret);
}

static int64_t duration_seconds(const struct lease_times *t)
{
    int64_t s = (int64_t)(t->duration_ms / 1000);
    return s > 0 ? s : 1;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

/* Time left before the renew deadline passes, 0 when it has. */
static uint64_t renew_time_left(const struct lease_state *s, const struct lease_times *t,
                                uint64_t now_ms)
{
    uint64_t deadline = s->renewed_ms + t->renew_deadline_ms;
    return now_ms < deadline ? deadline - now_ms : 0;
}

/* The leader's turn: keep the Lease, or give it up before another could
 * take it. */
static int decide_as_leader(const struct lease_config *cfg, struct lease_state *state,
                            enum lease_read read, const struct lease_record *current,
                            const struct lease_times *t, uint64_t now_ms, int64_t now_unix_ms,
                            struct lease_decision *ret_decision)
{
    struct lease_decision d = {.action = LEASE_WAIT, .delay_ms = t->retry_period_ms};
    int r;
    uint64_t left = renew_time_left(state, t, now_ms);
    bool ours = read == LEASE_READ_FOUND &&
                strcmp(str_or_empty(current->holder_identity), cfg->identity) == 0;
    /* Past the deadline, or someone else's name on the record (or an
     * empty one): leading any longer could overlap a new leader. */
    if (left == 0 || (read == LEASE_READ_FOUND && !ours)) {
        state->leader = false;
        d.action = LEASE_LOST;
        *ret_decision = d;
        return 0;
    }
    if (read == LEASE_READ_FAILED) {
        /* Look again in time to notice the deadline when it passes. */
        d.delay_ms = min_u64(t->retry_period_ms, left);
        *ret_decision = d;
        return 0;
    }
    if (read == LEASE_READ_NOT_FOUND) {
        /* Deleted under us: recreate it at once, nobody else holds it. */
        r = build_record(cfg->identity, duration_seconds(t), NULL, 0, now_unix_ms, &d.record);
        if (r < 0)
            return r;
        d.action = LEASE_CREATE;
        *ret_decision = d;
        return 0;
    }
    r = build_record(cfg->identity, duration_seconds(t), current->acquire_time,
                     current->lease_transitions, now_unix_ms, &d.record);
    if (r < 0)
        return r;
    d.action = LEASE_RENEW;
    *ret_decision = d;
    return 0;
}

int lease_decide(const struct lease_config *cfg, struct lease_state *state, enum lease_read read,
                 const struct lease_record *current, uint64_t now_ms, int64_t now_unix_ms,
                 struct lease_decision *ret_decision)
{
    struct lease_times t = lease_times(cfg);
    struct lease_decision d = {.action = LEASE_WAIT, .delay_ms = t.retry_period_ms};
    int r;

    if (read == LEASE_READ_FOUND && !current)
        return -EINVAL;
    r = observe(state, read, current, now_ms);
    if (r < 0)
        return r;

    if (state->leader)
        return decide_as_leader(cfg, state, read, current, &t, now_ms, now_unix_ms, ret_decision);

    switch (read) {
    case LEASE_READ_FAILED:
        *ret_decision = d;
        return 0;
    case LEASE_READ_NOT_FOUND:
        r = build_record(cfg->identity, duration_seconds(&t), NULL, 0, now_unix_ms, &d.record);
        if (r < 0)
            return r;
        d.action = LEASE_CREATE;
        *ret_decision = d;
        return 0;
    case LEASE_READ_FOUND:
        break;
    }

    int64_t transitions = current->lease_transitions;
    if (lease_record_held(current)) {
        if (strcmp(current->holder_identity, cfg->identity) == 0) {
            /* Our own name from before a restart or a lost renewal: nobody
             * took it since, so taking it back is no change of holder. */
        } else {
            /* Judged on the record's own duration, as the holder announced it. */
            int64_t secs = current->lease_duration_seconds;
            uint64_t valid_ms = secs > 0 ? (uint64_t)secs * 1000 : 0;
            uint64_t expires = state->observed_ms + valid_ms;
            if (now_ms < expires) {
                d.delay_ms = min_u64(t.retry_period_ms, expires - now_ms);
                *ret_decision = d;
                return 0;
            }
            transitions++;
        }
    } else {
        transitions++;
    }

    r = build_record(cfg->identity, duration_seconds(&t), NULL, transitions, now_unix_ms,
                     &d.record);
    if (r < 0)
        return r;
    d.action = LEASE_ACQUIRE;
    *ret_decision = d;
    return 0;
}

int lease_release(const struct lease_config *cfg, struct lease_state *state, int64_t now_unix_ms,
                  struct lease_decision *ret_decision)
{
    struct lease_times t = lease_times(cfg);
    struct lease_decision d = {.action = LEASE_WAIT, .delay_ms = t.retry_period_ms};

    if (!state->leader || !state->have_observed) {
        *ret_decision = d;
        return 0;
    }
    int r = build_record("", 1, NULL, state->observed.lease_transitions, now_unix_ms, &d.record);
    if (r < 0)
        return r;
    state->leader = false;
    d.action = LEASE_RELEASE;
    *ret_decision = d;
    return 0;
}

int lease_state_written(const struct lease_config *cfg, struct lease_state *state,
                        const struct lease_record *record, uint64_t now_ms)
{
    struct lease_record copy;
    int r = lease_record_copy(record, &copy);
    if (r < 0)
        return r;
    lease_record_clear(&state->observed);
    state->observed = copy;
    state->have_observed = true;
    state->observed_ms = now_ms;
    state->leader = strcmp(str_or_empty(record->holder_identity), cfg->identity) == 0;
    if (state->leader)
        state->renewed_ms = now_ms;
    return 0;
}
