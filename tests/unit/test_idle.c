/*
 * idle_evaluate(), idle_policy_resolve() and idle_keep_alive_bound() from
 * tables: each row is a policy, the signals at one instant and the verdict
 * docs/idle.md says follows from them.
 *
 * Times in the rows are written as text: "12:00" or "11:59:59.999" is that
 * time on Wednesday 2027-03-10 (UTC), a full RFC 3339 time is itself. The
 * default policy is the class defaults: idle after 1h, minRunning 10m,
 * warnBefore 5m, GPU threshold 5%, probe interval 60s. Unless a row says
 * otherwise the workspace has been Running since 08:00 and it is 12:00.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/timefmt.h"
#include "util/tz.h"
#include "workspace/idle.h"

#define SEC INT64_C(1000)
#define MINUTE (60 * SEC)
#define HOUR (60 * MINUTE)

static struct tz *berlin;

/* "HH:MM[:SS[.fff]]" on 2027-03-10 (UTC), or a full RFC 3339 time; NULL is 0. */
static int64_t at(const char *s)
{
    if (!s)
        return 0;
    char buf[64];
    if (!strchr(s, 'T'))
        snprintf(buf, sizeof(buf), "2027-03-10T%s%sZ", s, strlen(s) == 5 ? ":00" : "");
    else
        snprintf(buf, sizeof(buf), "%s", s);
    int64_t ms;
    if (timefmt_parse_rfc3339(buf, &ms) < 0)
        fail_msg("bad time in a row: \"%s\"", s);
    return ms;
}

/* ---- the rows ---- */

enum { ZONE_UTC, ZONE_BERLIN, ZONE_NONE };

enum {
    W_NONE,
    W_NIGHT,   /* every day 19:00-08:00 */
    W_GAP,     /* every day 02:30-04:00: in Berlin's skipped hour on 2027-03-28 */
    W_WEEKEND, /* Sat and Sun, all day */
    W_WED,     /* Wednesdays 13:00-14:00 */
    W_THU,     /* Thursdays 13:00-14:00 */
};

static const struct pause_window windows[][1] = {
    [W_NONE] = {{.days = 0, .start_minute = 0, .end_minute = 0}},
    [W_NIGHT] = {{.days = 0, .start_minute = 19 * 60, .end_minute = 8 * 60}},
    [W_GAP] = {{.days = 0, .start_minute = 2 * 60 + 30, .end_minute = 4 * 60}},
    [W_WEEKEND] = {{.days = (1u << 0) | (1u << 6), .start_minute = 0, .end_minute = 0}},
    [W_WED] = {{.days = 1u << 3, .start_minute = 13 * 60, .end_minute = 14 * 60}},
    [W_THU] = {{.days = 1u << 4, .start_minute = 13 * 60, .end_minute = 14 * 60}},
};

struct obs_spec {
    const char *at;    /* when the round started; NULL: no round yet */
    const char *error; /* the round failed with this */
    const char *last;  /* the application's last_activity */
    int busy;
    const char *source; /* default "jupyter" */
    double gpu;
    int no_data;
    const char *work; /* an earlier round saw work running then */
    int work_on_gpu;
};

struct row {
    const char *name;
    /* the policy: class defaults, changed by these */
    int no_sources;
    int no_auto_pause;
    int64_t after, min_running, warn;
    int windows;
    int zone;
    /* the signals */
    const char *now;   /* default 12:00 */
    const char *since; /* running since, default 08:00 */
    struct obs_spec obs;
    const char *recorded; /* status.activity.lastActivityTime */
    const char *recorded_source;
    const char *annotated;
    const char *keep_alive;
    int announced;
    const char *announced_pause_at;
    const char *announced_idle_since;
    /* the verdict; times NULL: 0 */
    enum idle_state state;
    const char *reason;
    const char *last;   /* NULL: not checked */
    const char *source; /* NULL: not checked */
    const char *idle_since;
    const char *pause_at;
    const char *recheck;
    int announce, cancelled, pause_now, probe_now;
    const char *message; /* a part of it; NULL: not checked */
};

static const struct row rows[] = {
    /* rule 1 */
    {.name = "no source: nothing is paused, nothing to re-check",
     .no_sources = 1,
     .annotated = "09:00",
     .state = IDLE_STATE_UNKNOWN,
     .reason = "NoActivitySource",
     .last = "09:00",
     .source = "annotation",
     .message = "no activity probe"},
    {.name = "no source, even with a failed round in hand",
     .no_sources = 1,
     .obs = {.at = "11:59:30", .error = "jupyter: connection refused"},
     .state = IDLE_STATE_UNKNOWN,
     .reason = "NoActivitySource"},
    /* rule 2 */
    {.name = "no round yet",
     .state = IDLE_STATE_UNKNOWN,
     .reason = "Probing",
     .last = "08:00",
     .source = "start",
     .recheck = "12:01"},
    {.name = "a round from before running since is ignored",
     .obs = {.at = "07:59:50", .last = "07:00"},
     .state = IDLE_STATE_UNKNOWN,
     .reason = "Probing",
     .last = "08:00",
     .source = "start",
     .recheck = "12:01"},
    {.name = "a recorded activity from before running since is ignored",
     .recorded = "07:30",
     .recorded_source = "jupyter",
     .state = IDLE_STATE_UNKNOWN,
     .reason = "Probing",
     .last = "08:00",
     .source = "start",
     .recheck = "12:01"},
    /* rule 3 */
    {.name = "failed round",
     .obs = {.at = "11:59:30", .error = "jupyter: connection refused"},
     .state = IDLE_STATE_UNKNOWN,
     .reason = "ProbeFailed",
     .recheck = "12:01",
     .message = "jupyter: connection refused"},
    {.name = "failed round at the pause time: no pause, the announcement is withdrawn",
     .now = "12:05",
     .obs = {.at = "12:05", .error = "jupyter: HTTP 503"},
     .recorded = "11:00",
     .recorded_source = "jupyter",
     .announced = 1,
     .announced_pause_at = "12:05",
     .announced_idle_since = "11:00",
     .state = IDLE_STATE_UNKNOWN,
     .reason = "ProbeFailed",
     .recheck = "12:06",
     .cancelled = 1,
     .message = "not pausing"},
    /* rule 4: activity */
    {.name = "jupyter last_activity",
     .obs = {.at = "11:59:30", .last = "11:50"},
     .state = IDLE_STATE_ACTIVE,
     .reason = "Active",
     .last = "11:50",
     .source = "jupyter",
     .idle_since = "11:50",
     .recheck = "12:45",
     .message = "in use (jupyter); paused after 1h without activity"},
    {.name = "activity under a minute ago shows no idle-since",
     .obs = {.at = "11:59:30", .last = "11:58:45"},
     .state = IDLE_STATE_ACTIVE,
     .reason = "Active",
     .last = "11:58:45",
     .source = "jupyter",
     .recheck = "12:53:45"},
    {.name = "work seen by an earlier round counts until then, though this round is quiet",
     .obs = {.at = "11:59:30", .last = "10:00", .work = "11:40", .work_on_gpu = 1},
     .state = IDLE_STATE_ACTIVE,
     .reason = "Active",
     .last = "11:40",
     .source = "gpu",
     .idle_since = "11:40",
     .recheck = "12:35"},
    {.name = "work from before running since does not count",
     .since = "11:45",
     .obs = {.at = "11:59:30", .last = "10:00", .work = "11:40"},
     .state = IDLE_STATE_ACTIVE,
     .reason = "Active",
     .last = "11:45",
     .source = "start",
     .idle_since = "11:45",
     .recheck = "12:40"},
    {.name = "a busy kernel is activity at the time of the round",
     .obs = {.at = "11:59:30", .last = "10:00", .busy = 1},
     .state = IDLE_STATE_ACTIVE,
     .reason = "Active",
     .last = "11:59:30",
     .source = "jupyter",
     .recheck = "12:54:30"},
    {.name = "GPU at the threshold is activity",
     .obs = {.at = "11:59:30", .last = "10:00", .source = "jupyter+gpu", .gpu = 5.0},
     .state = IDLE_STATE_ACTIVE,
     .reason = "Active",
     .last = "11:59:30",
     .source = "gpu",
     .recheck = "12:54:30"},
    {.name = "GPU below the threshold is not (and the late announcement warns in full)",
     .obs = {.at = "11:59:30", .last = "10:00", .source = "jupyter+gpu", .gpu = 4.9},
     .state = IDLE_STATE_PAUSE_SCHEDULED,
     .reason = "PauseScheduled",
     .last = "10:00",
     .source = "jupyter",
     .idle_since = "10:00",
     .pause_at = "12:05",
     .recheck = "12:05",
     .announce = 1,
     .message = "pausing at 2027-03-10T12:05:00Z"},
    {.name = "GPU without samples is not activity, whatever the figure",
     .obs = {.at = "11:59:30", .source = "gpu", .gpu = 80, .no_data = 1},
     .state = IDLE_STATE_PAUSE_SCHEDULED,
     .reason = "PauseScheduled",
     .last = "08:00",
     .source = "start",
     .idle_since = "08:00",
     .pause_at = "12:05",
     .recheck = "12:05",
     .announce = 1},
    {.name = "a server clock ahead of ours is capped at the round's start",
     .obs = {.at = "11:59:30", .last = "12:10"},
     .state = IDLE_STATE_ACTIVE,
     .reason = "Active",
     .last = "11:59:30",
     .source = "jupyter",
     .recheck = "12:54:30"},
    {.name = "code-server heartbeat",
     .obs = {.at = "11:59:30", .last = "11:30", .source = "code-server"},
     .state = IDLE_STATE_ACTIVE,
     .reason = "Active",
     .last = "11:30",
     .source = "code-server",
     .idle_since = "11:30",
     .recheck = "12:25"},
    {.name = "the recorded activity still counts",
     .obs = {.at = "11:59:30", .last = "10:00"},
     .recorded = "11:40",
     .recorded_source = "gpu",
     .state = IDLE_STATE_ACTIVE,
     .reason = "Active",
     .last = "11:40",
     .source = "gpu",
     .idle_since = "11:40",
     .recheck = "12:35"},
    /* rule 4: minRunning */
    {.name = "just started: minRunning holds",
     .after = 5 * MINUTE,
     .min_running = 10 * MINUTE,
     .warn = MINUTE,
     .since = "11:58",
     .obs = {.at = "11:59:30", .last = "11:00"},
     .state = IDLE_STATE_ACTIVE,
     .reason = "MinRunning",
     .last = "11:58",
     .source = "start",
     .idle_since = "11:58",
     .recheck = "12:07",
     .message = "not paused before 2027-03-10T12:08:00Z"},
    {.name = "minRunning over",
     .after = 5 * MINUTE,
     .min_running = 10 * MINUTE,
     .warn = MINUTE,
     .since = "11:50",
     .obs = {.at = "11:59:30", .last = "11:00"},
     .state = IDLE_STATE_PAUSE_SCHEDULED,
     .reason = "PauseScheduled",
     .last = "11:50",
     .source = "start",
     .idle_since = "11:50",
     .pause_at = "12:01",
     .recheck = "12:01",
     .announce = 1},
    {.name = "minRunning shorter than the idle time changes nothing",
     .since = "11:58",
     .obs = {.at = "11:59:30"},
     .state = IDLE_STATE_ACTIVE,
     .reason = "Active",
     .last = "11:58",
     .source = "start",
     .idle_since = "11:58",
     .recheck = "12:53"},
    /* explicit signals */
    {.name = "keep-alive in the future holds until it ends",
     .obs = {.at = "11:59:30", .last = "10:00"},
     .keep_alive = "13:00",
     .state = IDLE_STATE_ACTIVE,
     .reason = "KeepAlive",
     .last = "12:00",
     .source = "keepAlive",
     .recheck = "13:00",
     .message = "kept alive until 2027-03-10T13:00:00Z"},
    {.name = "a long keep-alive: nothing changes before it ends",
     .obs = {.at = "11:59:30", .last = "10:00"},
     .keep_alive = "20:00",
     .state = IDLE_STATE_ACTIVE,
     .reason = "KeepAlive",
     .last = "12:00",
     .source = "keepAlive",
     .recheck = "20:00"},
    {.name = "keep-alive in the past counts as activity at that time",
     .obs = {.at = "11:59:30", .last = "11:00"},
     .keep_alive = "11:30",
     .state = IDLE_STATE_ACTIVE,
     .reason = "Active",
     .last = "11:30",
     .source = "keepAlive",
     .idle_since = "11:30",
     .recheck = "12:25"},
    {.name = "keep-alive that ended long ago: idle",
     .obs = {.at = "11:59:30", .last = "09:00"},
     .keep_alive = "10:00",
     .state = IDLE_STATE_PAUSE_SCHEDULED,
     .reason = "PauseScheduled",
     .last = "10:00",
     .source = "keepAlive",
     .idle_since = "10:00",
     .pause_at = "12:05",
     .recheck = "12:05",
     .announce = 1},
    {.name = "an annotation in the future counts as now",
     .obs = {.at = "11:59:30", .last = "10:00"},
     .annotated = "12:30",
     .state = IDLE_STATE_ACTIVE,
     .reason = "Active",
     .last = "12:00",
     .source = "annotation",
     .recheck = "12:55"},
    {.name = "an annotation in the past",
     .obs = {.at = "11:59:30", .last = "10:00"},
     .annotated = "11:40",
     .state = IDLE_STATE_ACTIVE,
     .reason = "Active",
     .last = "11:40",
     .source = "annotation",
     .idle_since = "11:40",
     .recheck = "12:35"},
    /* rule 5: the announcement */
    {.name = "a millisecond before eligible - warnBefore: re-check exactly then",
     .now = "11:59:59.999",
     .obs = {.at = "11:59:30", .last = "11:05"},
     .state = IDLE_STATE_ACTIVE,
     .reason = "Active",
     .last = "11:05",
     .idle_since = "11:05",
     .recheck = "12:00"},
    {.name = "announced exactly at eligible - warnBefore",
     .obs = {.at = "11:59:30", .last = "11:05"},
     .state = IDLE_STATE_PAUSE_SCHEDULED,
     .reason = "PauseScheduled",
     .last = "11:05",
     .source = "jupyter",
     .idle_since = "11:05",
     .pause_at = "12:05",
     .recheck = "12:05",
     .announce = 1,
     .message = "no activity since 2027-03-10T11:05:00Z (jupyter); pausing at "
                "2027-03-10T12:05:00Z unless there is activity"},
    {.name = "a late announcement still warns for warnBefore",
     .obs = {.at = "11:59:30", .last = "09:00"},
     .state = IDLE_STATE_PAUSE_SCHEDULED,
     .reason = "PauseScheduled",
     .idle_since = "09:00",
     .pause_at = "12:05",
     .recheck = "12:05",
     .announce = 1},
    {.name = "announced: stands, no second announcement",
     .now = "12:02",
     .obs = {.at = "12:01:30", .last = "11:05"},
     .recorded = "11:05",
     .recorded_source = "jupyter",
     .announced = 1,
     .announced_pause_at = "12:05",
     .announced_idle_since = "11:05",
     .state = IDLE_STATE_PAUSE_SCHEDULED,
     .reason = "PauseScheduled",
     .idle_since = "11:05",
     .pause_at = "12:05",
     .recheck = "12:05"},
    {.name = "announced on a last activity with milliseconds, read back in whole seconds",
     .now = "12:02",
     .obs = {.at = "12:01:30.250", .last = "11:05:00.500"},
     .recorded = "11:05",
     .recorded_source = "jupyter",
     .announced = 1,
     .announced_pause_at = "12:05",
     .announced_idle_since = "11:05",
     .state = IDLE_STATE_PAUSE_SCHEDULED,
     .reason = "PauseScheduled",
     .idle_since = "11:05",
     .pause_at = "12:05:00.500",
     .recheck = "12:05:00.500"},
    {.name = "activity a second after the announced idle-since cancels",
     .now = "12:02",
     .obs = {.at = "12:01:30.250", .last = "11:05:01"},
     .recorded = "11:05",
     .recorded_source = "jupyter",
     .announced = 1,
     .announced_pause_at = "12:05",
     .announced_idle_since = "11:05",
     .state = IDLE_STATE_PAUSE_SCHEDULED,
     .reason = "PauseScheduled",
     .idle_since = "11:05:01",
     .pause_at = "12:07",
     .recheck = "12:07",
     .announce = 1,
     .cancelled = 1},
    {.name = "the announced time never moves earlier",
     .obs = {.at = "11:59:30", .last = "11:00"},
     .recorded = "11:00",
     .recorded_source = "jupyter",
     .announced = 1,
     .announced_pause_at = "12:10",
     .announced_idle_since = "11:00",
     .state = IDLE_STATE_PAUSE_SCHEDULED,
     .reason = "PauseScheduled",
     .idle_since = "11:00",
     .pause_at = "12:10",
     .recheck = "12:10"},
    {.name = "the announced time never moves earlier, even when the policy shrinks",
     .after = 30 * MINUTE,
     .obs = {.at = "11:59:30", .last = "11:00"},
     .recorded = "11:00",
     .recorded_source = "jupyter",
     .announced = 1,
     .announced_pause_at = "12:03",
     .announced_idle_since = "11:00",
     .state = IDLE_STATE_PAUSE_SCHEDULED,
     .reason = "PauseScheduled",
     .pause_at = "12:03",
     .idle_since = "11:00",
     .recheck = "12:03"},
    {.name = "announced, then the idle time grows: the pause moves later, no new warning",
     .after = 2 * HOUR,
     .obs = {.at = "11:59:30", .last = "11:00"},
     .recorded = "11:00",
     .recorded_source = "jupyter",
     .announced = 1,
     .announced_pause_at = "12:05",
     .announced_idle_since = "11:00",
     .state = IDLE_STATE_PAUSE_SCHEDULED,
     .reason = "PauseScheduled",
     .idle_since = "11:00",
     .pause_at = "13:00",
     .recheck = "13:00"},
    {.name = "announced, then the idle time grows and autoPause goes off: active again",
     .after = 2 * HOUR,
     .no_auto_pause = 1,
     .obs = {.at = "11:59:30", .last = "11:00"},
     .recorded = "11:00",
     .recorded_source = "jupyter",
     .announced = 1,
     .announced_pause_at = "12:05",
     .announced_idle_since = "11:00",
     .state = IDLE_STATE_ACTIVE,
     .reason = "Active",
     .idle_since = "11:00",
     .recheck = "12:55",
     .cancelled = 1},
    {.name = "announced, then the idle time grows and the zone is gone: active again",
     .after = 2 * HOUR,
     .windows = W_NIGHT,
     .zone = ZONE_NONE,
     .obs = {.at = "11:59:30", .last = "11:00"},
     .recorded = "11:00",
     .recorded_source = "jupyter",
     .announced = 1,
     .announced_pause_at = "12:05",
     .announced_idle_since = "11:00",
     .state = IDLE_STATE_ACTIVE,
     .reason = "Active",
     .idle_since = "11:00",
     .recheck = "12:55",
     .cancelled = 1},
    /* rule 6 */
    {.name = "activity after the announced idle-since cancels",
     .obs = {.at = "11:59:30", .last = "11:58"},
     .recorded = "11:00",
     .recorded_source = "jupyter",
     .announced = 1,
     .announced_pause_at = "12:05",
     .announced_idle_since = "11:00",
     .state = IDLE_STATE_ACTIVE,
     .reason = "Active",
     .last = "11:58",
     .idle_since = "11:58",
     .recheck = "12:53",
     .cancelled = 1},
    {.name = "an annotation after the announced idle-since cancels",
     .obs = {.at = "11:59:30", .last = "11:00"},
     .annotated = "11:59",
     .recorded = "11:00",
     .recorded_source = "jupyter",
     .announced = 1,
     .announced_pause_at = "12:05",
     .announced_idle_since = "11:00",
     .state = IDLE_STATE_ACTIVE,
     .reason = "Active",
     .last = "11:59",
     .source = "annotation",
     .recheck = "12:54",
     .cancelled = 1},
    /* rule 7 */
    {.name = "pause time, the last round older than it: probe first",
     .now = "12:05",
     .obs = {.at = "12:04:30", .last = "11:00"},
     .recorded = "11:00",
     .recorded_source = "jupyter",
     .announced = 1,
     .announced_pause_at = "12:05",
     .announced_idle_since = "11:00",
     .state = IDLE_STATE_PAUSE_SCHEDULED,
     .reason = "PauseScheduled",
     .idle_since = "11:00",
     .pause_at = "12:05",
     .probe_now = 1},
    {.name = "pause time, a round started at it found nothing: pause",
     .now = "12:05:00.300",
     .obs = {.at = "12:05", .last = "11:00"},
     .recorded = "11:00",
     .recorded_source = "jupyter",
     .announced = 1,
     .announced_pause_at = "12:05",
     .announced_idle_since = "11:00",
     .state = IDLE_STATE_PAUSE_SCHEDULED,
     .reason = "PauseScheduled",
     .last = "11:00",
     .source = "jupyter",
     .idle_since = "11:00",
     .pause_at = "12:05",
     .pause_now = 1},
    {.name = "pause time, a round started after it found nothing: pause",
     .now = "12:05:03",
     .obs = {.at = "12:05:02", .last = "11:00"},
     .recorded = "11:00",
     .recorded_source = "jupyter",
     .announced = 1,
     .announced_pause_at = "12:05",
     .announced_idle_since = "11:00",
     .state = IDLE_STATE_PAUSE_SCHEDULED,
     .reason = "PauseScheduled",
     .idle_since = "11:00",
     .pause_at = "12:05",
     .pause_now = 1},
    {.name = "pause time, the confirming round finds a busy kernel: cancelled",
     .now = "12:05:03",
     .obs = {.at = "12:05:02", .last = "11:00", .busy = 1},
     .recorded = "11:00",
     .recorded_source = "jupyter",
     .announced = 1,
     .announced_pause_at = "12:05",
     .announced_idle_since = "11:00",
     .state = IDLE_STATE_ACTIVE,
     .reason = "Active",
     .last = "12:05:02",
     .recheck = "13:00:02",
     .cancelled = 1},
    /* rule 5: autoPause false */
    {.name = "autoPause false: idle, never paused",
     .no_auto_pause = 1,
     .obs = {.at = "11:59:30", .last = "10:00"},
     .state = IDLE_STATE_IDLE,
     .reason = "AutoPauseDisabled",
     .idle_since = "10:00",
     .message = "automatic pausing is disabled"},
    {.name = "autoPause false at what would be the pause time",
     .no_auto_pause = 1,
     .now = "12:05:03",
     .obs = {.at = "12:05:02", .last = "11:00"},
     .recorded = "11:00",
     .recorded_source = "jupyter",
     .announced = 1,
     .announced_pause_at = "12:05",
     .announced_idle_since = "11:00",
     .state = IDLE_STATE_IDLE,
     .reason = "AutoPauseDisabled",
     .idle_since = "11:00",
     .cancelled = 1},
    /* rule 5: pause windows */
    {.name = "UTC 19:00-08:00: the pause waits for the window",
     .windows = W_NIGHT,
     .obs = {.at = "11:59:30", .last = "10:00"},
     .state = IDLE_STATE_IDLE,
     .reason = "OutsidePauseWindow",
     .idle_since = "10:00",
     .pause_at = "19:00",
     .recheck = "18:55",
     .message = "pausing at 2027-03-10T19:00:00Z, when the next pause window opens"},
    {.name = "UTC 19:00-08:00: announced warnBefore ahead of the window",
     .windows = W_NIGHT,
     .now = "18:55",
     .obs = {.at = "18:54:30", .last = "10:00"},
     .state = IDLE_STATE_PAUSE_SCHEDULED,
     .reason = "PauseScheduled",
     .idle_since = "10:00",
     .pause_at = "19:00",
     .recheck = "19:00",
     .announce = 1},
    {.name = "UTC 19:00-08:00: a late announcement inside the window",
     .windows = W_NIGHT,
     .now = "20:00",
     .obs = {.at = "19:59:30", .last = "10:00"},
     .idle_since = "10:00",
     .state = IDLE_STATE_PAUSE_SCHEDULED,
     .reason = "PauseScheduled",
     .pause_at = "20:05",
     .recheck = "20:05",
     .announce = 1},
    {.name = "UTC 19:00-08:00: the full warning would end after the window closes",
     .windows = W_NIGHT,
     .since = "2027-03-09T20:00:00Z",
     .now = "07:57",
     .obs = {.at = "07:56:30", .last = "06:58"},
     .state = IDLE_STATE_IDLE,
     .reason = "OutsidePauseWindow",
     .idle_since = "06:58",
     .pause_at = "19:00",
     .recheck = "18:55"},
    {.name = "Europe/Berlin 19:00-08:00 in winter: 18:00 UTC",
     .windows = W_NIGHT,
     .zone = ZONE_BERLIN,
     .obs = {.at = "11:59:30", .last = "10:00"},
     .idle_since = "10:00",
     .state = IDLE_STATE_IDLE,
     .reason = "OutsidePauseWindow",
     .pause_at = "18:00",
     .recheck = "17:55"},
    {.name = "Europe/Berlin, the night clocks go forward: the window closes at 06:00 UTC",
     .windows = W_NIGHT,
     .zone = ZONE_BERLIN,
     .since = "2027-03-27T12:00:00Z",
     .now = "2027-03-28T06:30:00Z",
     .obs = {.at = "2027-03-28T06:29:30Z", .last = "2027-03-28T05:30:00Z"},
     .state = IDLE_STATE_IDLE,
     .reason = "OutsidePauseWindow",
     .idle_since = "2027-03-28T05:30:00Z",
     .pause_at = "2027-03-28T17:00:00Z",
     .recheck = "2027-03-28T16:55:00Z"},
    {.name = "Europe/Berlin, a window starting in the skipped hour opens at 03:00 CEST",
     .windows = W_GAP,
     .zone = ZONE_BERLIN,
     .since = "2027-03-27T20:00:00Z",
     .now = "2027-03-28T00:30:00Z",
     .obs = {.at = "2027-03-28T00:29:30Z", .last = "2027-03-27T23:00:00Z"},
     .idle_since = "2027-03-27T23:00:00Z",
     .state = IDLE_STATE_IDLE,
     .reason = "OutsidePauseWindow",
     .pause_at = "2027-03-28T01:00:00Z",
     .recheck = "2027-03-28T00:55:00Z"},
    {.name = "Europe/Berlin weekends: Saturday 00:00 local",
     .windows = W_WEEKEND,
     .zone = ZONE_BERLIN,
     .obs = {.at = "11:59:30", .last = "10:00"},
     .idle_since = "10:00",
     .state = IDLE_STATE_IDLE,
     .reason = "OutsidePauseWindow",
     .pause_at = "2027-03-12T23:00:00Z",
     .recheck = "2027-03-12T22:55:00Z"},
    {.name = "a Wednesday window, on a Wednesday",
     .windows = W_WED,
     .obs = {.at = "11:59:30", .last = "10:00"},
     .idle_since = "10:00",
     .state = IDLE_STATE_IDLE,
     .reason = "OutsidePauseWindow",
     .pause_at = "13:00",
     .recheck = "12:55"},
    {.name = "a Thursday window, on a Wednesday",
     .windows = W_THU,
     .obs = {.at = "11:59:30", .last = "10:00"},
     .idle_since = "10:00",
     .state = IDLE_STATE_IDLE,
     .reason = "OutsidePauseWindow",
     .pause_at = "2027-03-11T13:00:00Z",
     .recheck = "2027-03-11T12:55:00Z"},
    {.name = "windows, the zone not loaded: no pause",
     .windows = W_NIGHT,
     .zone = ZONE_NONE,
     .now = "20:00",
     .obs = {.at = "19:59:30", .last = "10:00"},
     .announced = 1,
     .announced_pause_at = "20:05",
     .announced_idle_since = "10:00",
     .recorded = "10:00",
     .recorded_source = "jupyter",
     .state = IDLE_STATE_UNKNOWN,
     .reason = "TimeZoneUnavailable",
     .idle_since = "10:00",
     .cancelled = 1,
     .message = "Europe/Berlin"},
    {.name = "no windows: the zone is not needed",
     .zone = ZONE_NONE,
     .obs = {.at = "11:59:30", .last = "10:00"},
     .idle_since = "10:00",
     .state = IDLE_STATE_PAUSE_SCHEDULED,
     .reason = "PauseScheduled",
     .pause_at = "12:05",
     .recheck = "12:05",
     .announce = 1},
};

static void fmt(int64_t ms, char *out, size_t size)
{
    if (ms == 0)
        snprintf(out, size, "0");
    else if (timefmt_format_rfc3339(ms, out, size) < 0)
        snprintf(out, size, "%lld", (long long)ms);
    else if (ms % SEC)
        snprintf(out + strlen(out) - 1, size - strlen(out) + 1, "+%03lldms", (long long)(ms % SEC));
}

/* Every difference of every row is reported, then the table fails. */
static int mismatches;

static void mismatch(const char *fmt_, ...) __attribute__((format(printf, 1, 2)));

static void mismatch(const char *fmt_, ...)
{
    va_list ap;
    va_start(ap, fmt_);
    vfprintf(stderr, fmt_, ap);
    va_end(ap);
    fputc('\n', stderr);
    mismatches++;
}

static void expect_time(const struct row *r, const char *what, int64_t got, const char *want)
{
    if (got == at(want))
        return;
    char g[48], w[48];
    fmt(got, g, sizeof(g));
    fmt(at(want), w, sizeof(w));
    mismatch("%s: %s %s, want %s", r->name, what, g, w);
}

static void expect_flag(const struct row *r, const char *what, int got, int want)
{
    if (!!got != !!want)
        mismatch("%s: %s %d, want %d", r->name, what, got, want);
}

static void run_row(const struct row *r)
{
    struct pause_schedule schedule = {0};
    if (r->windows != W_NONE) {
        schedule.windows[0] = windows[r->windows][0];
        schedule.n_windows = 1;
    }
    struct idle_policy p = {
        .auto_pause = !r->no_auto_pause,
        .has_sources = !r->no_sources,
        .after_ms = r->after ? r->after : HOUR,
        .min_running_ms = r->min_running ? r->min_running : 10 * MINUTE,
        .warn_before_ms = r->warn ? r->warn : 5 * MINUTE,
        .max_keep_alive_ms = 12 * HOUR,
        .gpu_threshold_percent = 5,
        .probe_interval_ms = MINUTE,
        .schedule = &schedule,
        .time_zone = r->zone == ZONE_UTC ? "UTC" : "Europe/Berlin",
    };
    struct activity_observation obs = {.probed_at_ms = at(r->obs.at)};
    if (r->obs.error) {
        probe_result_fail(&obs.result, "jupyter", "x");
        snprintf(obs.result.error, sizeof(obs.result.error), "%s", r->obs.error);
    } else {
        probe_result_init(&obs.result, r->obs.source ? r->obs.source : "jupyter");
        obs.result.last_activity_ms = at(r->obs.last);
        obs.result.busy = r->obs.busy;
        obs.result.gpu_utilisation = r->obs.gpu;
        obs.result.no_data = r->obs.no_data;
        obs.last_work_ms = r->obs.work ? at(r->obs.work) : 0;
        obs.work_on_gpu = r->obs.work_on_gpu;
    }
    struct idle_input in = {
        .policy = &p,
        .zone = r->zone == ZONE_UTC      ? tz_utc()
                : r->zone == ZONE_BERLIN ? berlin
                                         : NULL,
        .now_ms = at(r->now ? r->now : "12:00"),
        .running_since_ms = at(r->since ? r->since : "08:00"),
        .obs = r->obs.at ? &obs : NULL,
        .recorded_activity_ms = at(r->recorded),
        .recorded_source = r->recorded_source,
        .annotated_activity_ms = at(r->annotated),
        .keep_alive_until_ms = at(r->keep_alive),
        .announced = r->announced,
        .announced_pause_at_ms = at(r->announced_pause_at),
        .announced_idle_since_ms = at(r->announced_idle_since),
    };
    struct idle_verdict v;
    memset(&v, 0xa5, sizeof(v)); /* everything must be written */
    idle_evaluate(&in, &v);

    if (v.state != r->state)
        mismatch("%s: state %d (%s), want %d (%s)", r->name, v.state, v.reason, r->state,
                 r->reason);
    if (!v.reason || strcmp(v.reason, r->reason) != 0)
        mismatch("%s: reason %s, want %s", r->name, v.reason, r->reason);
    if (r->last)
        expect_time(r, "last activity", v.last_activity_ms, r->last);
    if (r->source && (!v.source || strcmp(v.source, r->source) != 0))
        mismatch("%s: source %s, want %s", r->name, v.source, r->source);
    expect_time(r, "idle since", v.idle_since_ms, r->idle_since);
    expect_time(r, "pause at", v.pause_at_ms, r->pause_at);
    expect_time(r, "re-check at", v.recheck_at_ms, r->recheck);
    expect_flag(r, "announce", v.announce, r->announce);
    expect_flag(r, "cancelled", v.cancelled, r->cancelled);
    expect_flag(r, "pause_now", v.pause_now, r->pause_now);
    expect_flag(r, "probe_now", v.probe_now, r->probe_now);
    if (!memchr(v.message, '\0', sizeof(v.message)) || !v.message[0])
        fail_msg("%s: no message", r->name);
    if (r->message && !strstr(v.message, r->message))
        mismatch("%s: message \"%s\", want a part \"%s\"", r->name, v.message, r->message);

    /* Invariants of every verdict. */
    if (v.pause_now) {
        assert_int_equal(v.state, IDLE_STATE_PAUSE_SCHEDULED);
        assert_true(r->obs.at && !r->obs.error && obs.probed_at_ms >= v.pause_at_ms);
        assert_true(in.now_ms >= v.pause_at_ms);
        assert_false(v.probe_now);
    }
    if (v.announce)
        assert_true(v.pause_at_ms >= in.now_ms + p.warn_before_ms);
    if (v.recheck_at_ms)
        assert_true(v.recheck_at_ms > in.now_ms);
    assert_true(v.last_activity_ms >= in.running_since_ms);
    assert_true(v.last_activity_ms <= in.now_ms);
}

static void test_evaluate_table(void **state)
{
    (void)state;
    mismatches = 0;
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
        run_row(&rows[i]);
    if (mismatches)
        fail_msg("%d differences (above)", mismatches);
}

/* The whole warning window, minute by minute: exactly one announcement,
 * the same pause time throughout, and a pause only at that time. */
static void test_evaluate_walk(void **state)
{
    (void)state;
    struct pause_schedule none = {0};
    struct idle_policy p = {
        .auto_pause = 1,
        .has_sources = 1,
        .after_ms = HOUR,
        .min_running_ms = 10 * MINUTE,
        .warn_before_ms = 5 * MINUTE,
        .max_keep_alive_ms = 12 * HOUR,
        .gpu_threshold_percent = 5,
        .probe_interval_ms = MINUTE,
        .schedule = &none,
        .time_zone = "UTC",
    };
    int64_t last = at("11:00"), pause_at = 0, idle_since = 0;
    int announced = 0, announcements = 0, pauses = 0;
    for (int64_t now = at("11:50"); now <= at("12:10"); now += 30 * SEC) {
        struct activity_observation obs = {.probed_at_ms = now};
        probe_result_init(&obs.result, "jupyter");
        obs.result.last_activity_ms = last;
        struct idle_input in = {
            .policy = &p,
            .zone = tz_utc(),
            .now_ms = now,
            .running_since_ms = at("08:00"),
            .obs = &obs,
            .recorded_activity_ms = last,
            .recorded_source = "jupyter",
            .announced = announced,
            .announced_pause_at_ms = pause_at,
            .announced_idle_since_ms = idle_since,
        };
        struct idle_verdict v;
        idle_evaluate(&in, &v);
        if (now < at("11:55")) {
            assert_int_equal(v.state, IDLE_STATE_ACTIVE);
            assert_int_equal(v.recheck_at_ms, at("11:55"));
            continue;
        }
        assert_int_equal(v.state, IDLE_STATE_PAUSE_SCHEDULED);
        assert_int_equal(v.pause_at_ms, at("12:00"));
        announcements += v.announce;
        pauses += v.pause_now;
        assert_int_equal(v.pause_now, now >= at("12:00"));
        assert_false(v.probe_now);
        announced = 1;
        pause_at = v.pause_at_ms;
        idle_since = v.idle_since_ms;
        assert_int_equal(idle_since, last);
    }
    assert_int_equal(announcements, 1);
    assert_true(pauses > 0);
}

/* ---- the policy ---- */

static void test_policy_resolve(void **state)
{
    (void)state;
    struct workspace_class c = {0};
    c.activity.application = ACTIVITY_APP_JUPYTER;
    c.activity.interval_ms = 30 * SEC;
    c.idle = (struct idle_class_policy){
        .auto_pause = 1,
        .after_ms = HOUR,
        .min_after_ms = 15 * MINUTE,
        .max_after_ms = 2 * HOUR,
        .min_running_ms = 10 * MINUTE,
        .warn_before_ms = 5 * MINUTE,
        .max_keep_alive_ms = 12 * HOUR,
        .gpu_threshold_percent = 7,
    };
    struct workspace ws = {0};
    struct idle_policy p;
    char problem[IDLE_PROBLEM_SIZE];

    /* no workspace, or no override: the class's */
    memset(problem, 'x', sizeof(problem));
    assert_int_equal(idle_policy_resolve(&c, NULL, &p, problem, sizeof(problem)), 0);
    assert_string_equal(problem, "");
    assert_int_equal(p.after_ms, HOUR);
    assert_true(p.auto_pause);
    assert_true(p.has_sources);
    assert_int_equal(p.min_running_ms, 10 * MINUTE);
    assert_int_equal(p.warn_before_ms, 5 * MINUTE);
    assert_int_equal(p.max_keep_alive_ms, 12 * HOUR);
    assert_int_equal(p.gpu_threshold_percent, 7);
    assert_int_equal(p.probe_interval_ms, 30 * SEC);
    assert_ptr_equal(p.schedule, &c.idle.schedule);
    assert_string_equal(p.time_zone, "UTC");
    assert_int_equal(idle_policy_resolve(&c, &ws, &p, problem, sizeof(problem)), 0);
    assert_int_equal(p.after_ms, HOUR);

    static const struct {
        int64_t want;
        int rc;
        int64_t after;
        const char *problem;
    } cases[] = {
        {30 * MINUTE, 0, 30 * MINUTE, ""},
        {15 * MINUTE, 0, 15 * MINUTE, ""},
        {2 * HOUR, 0, 2 * HOUR, ""},
        {3 * HOUR, 1, 2 * HOUR,
         "spec.idle.after: 3h is longer than the class maximum 2h; 2h applies"},
        {2 * HOUR + 1, 1, 2 * HOUR,
         "spec.idle.after: 2h1ms is longer than the class maximum 2h; 2h applies"},
        {5 * MINUTE, 1, 15 * MINUTE,
         "spec.idle.after: 5m is shorter than the class minimum 15m; 15m applies"},
        {15 * MINUTE - SEC, 1, 15 * MINUTE,
         "spec.idle.after: 14m59s is shorter than the class minimum 15m; 15m applies"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ws.idle_after_ms = cases[i].want;
        int rc = idle_policy_resolve(&c, &ws, &p, problem, sizeof(problem));
        if (rc != cases[i].rc || p.after_ms != cases[i].after ||
            strcmp(problem, cases[i].problem) != 0)
            fail_msg("after %lld: rc %d after %lld problem \"%s\"", (long long)cases[i].want, rc,
                     (long long)p.after_ms, problem);
        /* the rest of the policy is the class's either way */
        assert_int_equal(p.warn_before_ms, 5 * MINUTE);
    }

    /* a short buffer is cut, never overrun */
    char small[16];
    ws.idle_after_ms = 3 * HOUR;
    assert_int_equal(idle_policy_resolve(&c, &ws, &p, small, sizeof(small)), 1);
    assert_string_equal(small, "spec.idle.after");
    assert_int_equal(p.after_ms, 2 * HOUR);

    /* sources */
    c.activity.application = ACTIVITY_APP_NONE;
    assert_int_equal(idle_policy_resolve(&c, NULL, &p, problem, sizeof(problem)), 0);
    assert_false(p.has_sources);
    c.activity.prometheus_url = "http://prometheus:9090";
    idle_policy_resolve(&c, NULL, &p, problem, sizeof(problem));
    assert_true(p.has_sources);
    c.activity.prometheus_url = NULL;
    c.activity.application = ACTIVITY_APP_CODE_SERVER;
    idle_policy_resolve(&c, NULL, &p, problem, sizeof(problem));
    assert_true(p.has_sources);

    c.idle.auto_pause = 0;
    c.idle.time_zone = "Europe/Berlin";
    idle_policy_resolve(&c, NULL, &p, problem, sizeof(problem));
    assert_false(p.auto_pause);
    assert_string_equal(p.time_zone, "Europe/Berlin");
}

static void test_keep_alive_bound(void **state)
{
    (void)state;
    static const struct {
        const char *requested, *seen;
        const char *want;
    } cases[] = {
        {NULL, "12:00", NULL},
        {"13:00", "12:00", "13:00"},
        {"2027-03-11T00:00:00Z", "12:00", "2027-03-11T00:00:00Z"}, /* exactly 12h */
        {"2027-03-11T00:00:01Z", "12:00", "2027-03-11T00:00:00Z"},
        {"2027-03-20T00:00:00Z", "12:00", "2027-03-11T00:00:00Z"},
        {"09:00", "12:00", "09:00"}, /* in the past: as it is */
        {"2027-03-20T00:00:00Z", NULL, "2027-03-20T00:00:00Z"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int64_t got = idle_keep_alive_bound(at(cases[i].requested), at(cases[i].seen), 12 * HOUR);
        if (got != at(cases[i].want))
            fail_msg("case %zu: %lld, want %lld", i, (long long)got, (long long)at(cases[i].want));
    }
    assert_int_equal(idle_keep_alive_bound(-5, at("12:00"), HOUR), 0);
}

static void test_probe_result_word(void **state)
{
    (void)state;
    struct probe_result r;
    probe_result_fail(&r, "jupyter", "HTTP %d", 401);
    assert_string_equal(idle_probe_result_word(&r, 5), "Failed");
    probe_result_init(&r, "jupyter");
    r.last_activity_ms = at("11:00");
    assert_string_equal(idle_probe_result_word(&r, 5), "Idle");
    r.busy = 1;
    assert_string_equal(idle_probe_result_word(&r, 5), "Active");
    probe_result_init(&r, "jupyter+gpu");
    r.gpu_utilisation = 5;
    assert_string_equal(idle_probe_result_word(&r, 5), "Active");
    r.gpu_utilisation = 4.5;
    assert_string_equal(idle_probe_result_word(&r, 5), "Idle");
    r.gpu_utilisation = 90;
    r.no_data = 1;
    assert_string_equal(idle_probe_result_word(&r, 5), "Idle");
}

static int load_berlin(void **state)
{
    (void)state;
    FILE *f = fopen(TZ_DEFAULT_DIR "/Europe/Berlin", "rb");
    if (!f)
        return -1;
    static unsigned char data[TZ_FILE_MAX];
    size_t len = fread(data, 1, sizeof(data), f);
    fclose(f);
    char *err = NULL;
    int r = tz_parse("Europe/Berlin", data, len, &berlin, &err);
    if (r < 0)
        fprintf(stderr, "tz_parse: %d %s\n", r, err ? err : "");
    free(err);
    return r < 0 ? -1 : 0;
}

static int free_berlin(void **state)
{
    (void)state;
    tz_free(berlin);
    berlin = NULL;
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_evaluate_table),    cmocka_unit_test(test_evaluate_walk),
        cmocka_unit_test(test_policy_resolve),    cmocka_unit_test(test_keep_alive_bound),
        cmocka_unit_test(test_probe_result_word),
    };
    return cmocka_run_group_tests(tests, load_berlin, free_berlin);
}
