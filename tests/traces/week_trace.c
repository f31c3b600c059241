#include "week_trace.h"

/* splitmix64: small, seeded, the same on every machine. */
struct rng {
    uint64_t state;
};

static uint64_t next_random(struct rng *r)
{
    uint64_t z = (r->state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* A time within [lo, hi) minutes. */
static int64_t minutes_between(struct rng *r, int lo, int hi)
{
    return (int64_t)(lo + (int)(next_random(r) % (uint64_t)(hi - lo))) * WEEK_MINUTE;
}

static void add(struct week_trace *t, int64_t start, int64_t end, unsigned use)
{
    if (t->n < WEEK_MAX_SPANS && end > start)
        t->spans[t->n++] = (struct replay_span){start, end, use};
}

/* A day at the office: present from arrival to lunch and from lunch to
 * leaving, with short cells while present. */
static void office_day(struct rng *r, struct week_trace *t, int64_t day, int64_t leave_at)
{
    int64_t arrive = day + minutes_between(r, t->usual_minute - 15, t->usual_minute + 16);
    int64_t lunch = day + minutes_between(r, 11 * 60 + 45, 12 * 60 + 15);
    int64_t back = lunch + minutes_between(r, 45, 75);
    int64_t leave = leave_at ? leave_at : day + minutes_between(r, 17 * 60, 18 * 60 + 30);
    add(t, arrive, lunch, REPLAY_PERSON);
    add(t, back, leave, REPLAY_PERSON);
    for (int64_t at = arrive + minutes_between(r, 10, 60); at < leave;
         at += minutes_between(r, 30, 120)) {
        if (at >= lunch && at < back)
            continue;
        add(t, at, at + minutes_between(r, 2, 10), REPLAY_KERNEL | REPLAY_GPU);
    }
}

static enum week_kind kind_of(int i)
{
    if (i < 70)
        return WEEK_OFFICE;
    if (i < 80)
        return WEEK_TRAIN;
    if (i < 90)
        return WEEK_OVERNIGHT;
    if (i < 95)
        return WEEK_ABANDONED;
    return WEEK_LATE;
}

static void make_trace(struct rng *r, struct week_trace *t, int i)
{
    t->n = 0;
    t->usual_minute = 8 * 60 + 15 * (int)(next_random(r) % 9);
    t->kind = kind_of(i);
    for (int d = 0; d < 5; d++) {
        int64_t day = WEEK_MONDAY + d * WEEK_DAY;
        if (t->kind == WEEK_ABANDONED) {
            if (d < 2)
                add(t, day + 9 * WEEK_HOUR, day + 11 * WEEK_HOUR + minutes_between(r, 0, 60),
                    REPLAY_PERSON);
            continue;
        }
        int late = t->kind == WEEK_LATE && d == 3;
        office_day(r, t, day, late ? day + 23 * WEEK_HOUR : 0);
        if (t->kind == WEEK_TRAIN && (d == 0 || d == 2)) {
            int64_t start = day + minutes_between(r, 15 * 60 + 45, 16 * 60 + 15);
            add(t, start, start + 10 * WEEK_HOUR, REPLAY_GPU);
        }
        if (t->kind == WEEK_OVERNIGHT && (d == 1 || d == 3))
            add(t, day + 18 * WEEK_HOUR, day + 30 * WEEK_HOUR, REPLAY_KERNEL);
    }
}

void week_traces_make(uint64_t seed, struct week_trace traces[WEEK_WORKSPACES])
{
    struct rng r = {seed};
    for (int i = 0; i < WEEK_WORKSPACES; i++)
        make_trace(&r, &traces[i], i);
}

const char *week_kind_name(enum week_kind kind)
{
    switch (kind) {
    case WEEK_OFFICE:
        return "office";
    case WEEK_TRAIN:
        return "train";
    case WEEK_OVERNIGHT:
        return "overnight";
    case WEEK_ABANDONED:
        return "abandoned";
    case WEEK_LATE:
        return "late";
    }
    return "?";
}

int week_first_of(enum week_kind kind)
{
    for (int i = 0; i < WEEK_WORKSPACES; i++)
        if (kind_of(i) == kind)
            return i;
    return 0;
}
