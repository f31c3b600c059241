/*
 * lease: leader election decisions on a coordination.k8s.io/v1 Lease, with
 * client-go's semantics.
 *
 * A candidate takes the Lease when it is free (no lease object, or an empty
 * holderIdentity, as a released lease has) or when the record held by another
 * identity has not been seen to change for its leaseDurationSeconds. Expiry is
 * judged on the local monotonic clock from when this process last saw the
 * record change, never from renewTime: the holder's wall clock may be skewed
 * by any amount. The leader renews every retry period; if it has not renewed
 * successfully within the renew deadline it stops leading, so it stops well
 * before a candidate may take over (renew deadline < lease duration).
 *
 * Everything here is pure: no I/O, no clock reads. The caller (the leader
 * elector driver) passes the monotonic time in ms (any origin) and the wall
 * time in Unix ms (only written into acquireTime/renewTime for humans).
 *
 * Ownership: a lease_record owns its strings (free with lease_record_clear());
 * a lease_state owns its observed record (lease_state_clear()); a
 * lease_decision owns the record to write (lease_decision_clear()).
 */
#ifndef HIBERNATOR_KUBE_LEASE_H
#define HIBERNATOR_KUBE_LEASE_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#define LEASE_DEFAULT_DURATION_MS 15000
#define LEASE_DEFAULT_RENEW_DEADLINE_MS 10000
#define LEASE_DEFAULT_RETRY_PERIOD_MS 2000

struct lease_config {
    const char *identity;       /* this process; never empty */
    uint64_t lease_duration_ms; /* written as whole seconds; 0: 15 s */
    uint64_t renew_deadline_ms; /* 0: 10 s */
    uint64_t retry_period_ms;   /* 0: 2 s */
};

/* The Lease's spec, the part leader election reads and writes. */
struct lease_record {
    char *holder_identity; /* NULL or "": nobody holds the lease */
    int64_t lease_duration_seconds;
    char *acquire_time; /* MicroTime text, NULL when absent */
    char *renew_time;   /* MicroTime text, NULL when absent */
    int64_t lease_transitions;
};

/* Frees r's strings and zeroes it. Accepts NULL. */
void lease_record_clear(struct lease_record *r);

/* Copies src into *ret_copy (which is overwritten, not freed).
 * Returns 0 or -ENOMEM. */
int lease_record_copy(const struct lease_record *src, struct lease_record *ret_copy);

/* True when every field is the same (NULL and "" are the same string). */
bool lease_record_equal(const struct lease_record *a, const struct lease_record *b);

/* True when the record names a holder. */
bool lease_record_held(const struct lease_record *r);

/* Reads the spec of a Lease object. Missing or mistyped fields read as
 * absent. Returns 0, -EINVAL when lease is not an object, or -ENOMEM. */
int lease_record_from_json(const cJSON *lease, struct lease_record *ret_record);

/* Builds a Lease spec object from r. Returns a cJSON object the caller owns
 * (cJSON_Delete), or NULL on ENOMEM. */
cJSON *lease_record_to_spec_json(const struct lease_record *r);

/* What this process knows: the record it last saw, when it saw it change, and
 * whether it leads. */
struct lease_state {
    struct lease_record observed;
    bool have_observed;   /* observed holds a record read from or written to the API */
    uint64_t observed_ms; /* monotonic time the record was last seen to change */
    bool leader;
    uint64_t renewed_ms; /* monotonic time of the last successful acquire or renew */
};

/* lease_state_init() makes s empty: nothing observed, not leading (it
 * allocates nothing). lease_state_clear() frees the observed record and
 * empties s the same way; it accepts NULL. */
void lease_state_init(struct lease_state *s);
void lease_state_clear(struct lease_state *s);

/* The outcome of reading the Lease. */
enum lease_read {
    LEASE_READ_FOUND,
    LEASE_READ_NOT_FOUND,
    LEASE_READ_FAILED, /* transport failure or an API error other than 404 */
};

enum lease_action {
    LEASE_WAIT,    /* write nothing; try again after delay_ms */
    LEASE_CREATE,  /* create the Lease with record (POST) */
    LEASE_ACQUIRE, /* take over the Lease: replace it with record (PUT) */
    LEASE_RENEW,   /* still the leader: replace it with record (PUT) */
    LEASE_LOST,    /* was the leader and no longer is: stop leading now */
    LEASE_RELEASE, /* give the Lease up: replace it with record (PUT) */
};

/* "wait", "create", "acquire", "renew", "lost" or "release" ("unknown" for
 * another value); static. */
const char *lease_action_name(enum lease_action action);

struct lease_decision {
    enum lease_action action;
    struct lease_record record; /* what to write for CREATE/ACQUIRE/RENEW/RELEASE */
    uint64_t delay_ms;          /* until the next attempt, once this one is done */
};

/* Frees d's record and zeroes d (LEASE_WAIT, no delay). Accepts NULL. */
void lease_decision_clear(struct lease_decision *d);

/*
 * Decides the next step from what a read of the Lease returned (current is
 * the record read, used only with LEASE_READ_FOUND).
 *
 * Updates *state with what the read showed: a record different from the one
 * observed before restarts the local expiry clock at now_ms; LEASE_LOST
 * clears state->leader. A write the decision asks for changes nothing in
 * *state until lease_state_written() reports that it succeeded.
 *
 * Returns 0 and fills *ret_decision (the caller clears it), or -ENOMEM, or
 * -ERANGE when now_unix_ms cannot be written as a timestamp.
 */
int lease_decide(const struct lease_config *cfg, struct lease_state *state, enum lease_read read,
                 const struct lease_record *current, uint64_t now_ms, int64_t now_unix_ms,
                 struct lease_decision *ret_decision);

/*
 * Decides how to give the Lease up on shutdown, as client-go's
 * ReleaseOnCancel does: when this process leads, LEASE_RELEASE with a record
 * whose holderIdentity is "" and leaseDurationSeconds 1 (transitions kept),
 * so a standby takes over at its next attempt; state->leader is cleared at
 * once. Otherwise LEASE_WAIT (nothing to release). Returns as lease_decide().
 */
int lease_release(const struct lease_config *cfg, struct lease_state *state, int64_t now_unix_ms,
                  struct lease_decision *ret_decision);

/*
 * Records that the API accepted the write of record (what the server
 * returned, or what was sent) at now_ms: it becomes the observed record, and
 * this process leads when it names cfg->identity. Returns 0 or -ENOMEM (then
 * *state is unchanged).
 */
int lease_state_written(const struct lease_config *cfg, struct lease_state *state,
                        const struct lease_record *record, uint64_t now_ms);

#endif
