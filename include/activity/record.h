/*
 * activity_record: what the controller saw of one workspace's use over
 * time, as a run-length encoded timeline small enough to keep a week of it
 * in a few KiB (docs/idle.md, "The activity record"), and the input of a
 * what-if: the same timeline replayed through decide() under other
 * policies (workspace/replay.h).
 *
 * The timeline is contiguous from its start: each run is one state and its
 * length in seconds, the next run begins where it ends.
 *
 *   p  paused: no pod runs (nothing can be seen)
 *   w  a person asked for a resume and waits for it (a person is there)
 *   a  running, a person's activity seen (the application's last activity
 *      moved, or the last-activity annotation)
 *   k  running, a kernel (or a terminal) busy
 *   g  running, the GPU busy (at or above the class's threshold)
 *   i  running, idle
 *   u  running, unknown (no probe yet, or it failed)
 *
 * Its text, what a ConfigMap keeps: "v1 <start, Unix seconds> " and the
 * runs as <state><seconds>, space-separated: "v1 1799020800 p30600 w120
 * a3480 k300 a7200 i1800 p…". activity_record_text() drops whole runs from
 * the front (and moves the start) to stay within a byte limit.
 *
 * Ownership: struct activity_record owns its runs; activity_record_free()
 * releases them. Pure: no I/O, no clock.
 */
#ifndef HIBERNATOR_ACTIVITY_RECORD_H
#define HIBERNATOR_ACTIVITY_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "util/must_use.h"

#define ACTIVITY_RECORD_VERSION "v1"
/* A run longer than this (about 68 years) is cut: none is. */
#define ACTIVITY_RUN_MAX_S INT32_MAX

struct activity_run {
    char state;       /* one of "pwakgiu" */
    uint32_t seconds; /* > 0 */
};

struct activity_record {
    int64_t start_s; /* Unix seconds the first run begins at; 0: empty */
    struct activity_run *runs;
    size_t n, cap;
};

/* Whether c is one of the states above. */
int activity_state_valid(char c);

/* Records that from at_s on (Unix seconds) the state is state: the last run
 * grows up to at_s, and a new one begins when the state changed. A time
 * before the record's end changes nothing (time never goes back); the
 * first call sets the start. Returns 0, -EINVAL (an unknown state) or
 * -ENOMEM (the record is unchanged). */
MUST_USE int activity_record_note(struct activity_record *r, int64_t at_s, char state);

/* When to note state at now_s (Unix seconds) given the last activity
 * activity_s (0: none known): a person's run ('a') lasts until their last
 * activity, not until the round that saw it, and the idle ('i') that
 * follows it begins there, where an idle clock begins; never before the
 * record's end nor after now_s. Other states are noted at now_s. */
int64_t activity_record_note_time(const struct activity_record *r, int64_t now_s, char state,
                                  int64_t activity_s);

/* The state to note for state: a running pod not yet probed ('u') right
 * after a wait for a resume ('w' after 'p') is still that wait: the person
 * who asked for the resume waits until the first probe round of the ready
 * pod says what they do. (The resume's own wait may be shorter than the
 * record's second, and the unprobed run is a whole round: without this the
 * record would show the person a round late.) A workspace's first start is
 * not a resume: its idle clock begins when it runs, as the controller's
 * does. Other states are noted as they are. */
char activity_record_note_state(const struct activity_record *r, char state);

/* The instant the last run ends, as far as noted (the start when empty). */
int64_t activity_record_end(const struct activity_record *r);

/* Writes the text of r, its last run ended at until_s (no later than it
 * began: then as noted), keeping only the newest runs that fit in max_bytes
 * (at least 64) with the terminating NUL. Returns 0 with *ret_text (the
 * caller frees) or -ENOMEM / -EINVAL. */
MUST_USE int activity_record_text(const struct activity_record *r, int64_t until_s,
                                  size_t max_bytes, char **ret_text);

/* Reads a text written by activity_record_text() into *r (which must be
 * empty). Returns 0, -ENOMEM, or -EINVAL with *ret_err (when not NULL;
 * static text) saying what is wrong: the version, the start, a run's state
 * or length. */
MUST_USE int activity_record_parse(const char *text, struct activity_record *r,
                                   const char **ret_err);

/* Releases r's runs and empties it; accepts an empty record. */
void activity_record_free(struct activity_record *r);

#endif
