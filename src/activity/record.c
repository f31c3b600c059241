#include "activity/record.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STATES "pwakgiu"
/* "p4294967295 " */
#define RUN_TEXT_MAX 12

int activity_state_valid(char c)
{
    return c && strchr(STATES, c) != NULL;
}

int64_t activity_record_end(const struct activity_record *r)
{
    int64_t end = r->start_s;
    for (size_t i = 0; i < r->n; i++)
        end += r->runs[i].seconds;
    return end;
}

static int push(struct activity_record *r, char state, uint32_t seconds)
{
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 16;
        struct activity_run *grown = realloc(r->runs, cap * sizeof(*grown));
        if (!grown)
            return -ENOMEM;
        r->runs = grown;
        r->cap = cap;
    }
    r->runs[r->n++] = (struct activity_run){state, seconds};
    return 0;
}

/* The last run grows to end at at_s (a run of length 0 stays open). */
static void grow_to(struct activity_record *r, int64_t at_s)
{
    if (!r->n)
        return;
    int64_t end = activity_record_end(r);
    struct activity_run *last = &r->runs[r->n - 1];
    if (at_s > end) {
        int64_t s = (int64_t)last->seconds + (at_s - end);
        last->seconds = s > ACTIVITY_RUN_MAX_S ? ACTIVITY_RUN_MAX_S : (uint32_t)s;
    }
}

int activity_record_note(struct activity_record *r, int64_t at_s, char state)
{
    if (!activity_state_valid(state))
        return -EINVAL;
    if (!r->n && !r->start_s) {
        r->start_s = at_s;
        return push(r, state, 0);
    }
    if (at_s < activity_record_end(r))
        return 0;
    grow_to(r, at_s);
    struct activity_run *last = &r->runs[r->n - 1];
    if (last->state == state)
        return 0;
    /* A run that never lasted a second is replaced, not kept. */
    if (last->seconds == 0) {
        last->state = state;
        if (r->n > 1 && r->runs[r->n - 2].state == state) {
            r->n--;
        }
        return 0;
    }
    return push(r, state, 0);
}

int64_t activity_record_note_time(const struct activity_record *r, int64_t now_s, char state,
                                  int64_t activity_s)
{
    char last = r->n ? r->runs[r->n - 1].state : 0;
    if (activity_s <= 0 || activity_s > now_s || !(state == 'a' || (state == 'i' && last == 'a')))
        return now_s;
    int64_t end = activity_record_end(r);
    return r->n && activity_s < end ? end : activity_s;
}

char activity_record_note_state(const struct activity_record *r, char state)
{
    char last = r->n ? r->runs[r->n - 1].state : 0;
    char before = r->n > 1 ? r->runs[r->n - 2].state : 0;
    return state == 'u' && last == 'w' && before == 'p' ? 'w' : state;
}

int activity_record_text(const struct activity_record *r, int64_t until_s, size_t max_bytes,
                         char **ret_text)
{
    if (max_bytes < 64)
        return -EINVAL;
    /* The runs as they end at until_s. */
    int64_t end = activity_record_end(r);
    int64_t extra = r->n && until_s > end ? until_s - end : 0;
    char head[40];
    /* Whole runs from the newest back while they fit beside the header. */
    size_t first = r->n, used = 0;
    int64_t start = r->start_s;
    for (size_t i = r->n; i-- > 0;) {
        int64_t s = (int64_t)r->runs[i].seconds + (i == r->n - 1 ? extra : 0);
        char run[RUN_TEXT_MAX + 2];
        int len = snprintf(run, sizeof(run), " %c%lld", r->runs[i].state, (long long)s);
        if (len < 0)
            return -EINVAL;
        if (used + (size_t)len + sizeof(head) + 1 > max_bytes)
            break;
        used += (size_t)len;
        first = i;
    }
    for (size_t i = 0; i < first; i++)
        start += r->runs[i].seconds;
    int hl = snprintf(head, sizeof(head), "%s %lld", ACTIVITY_RECORD_VERSION, (long long)start);
    if (hl < 0)
        return -EINVAL;
    char *text = malloc((size_t)hl + used + 1);
    if (!text)
        return -ENOMEM;
    size_t at = (size_t)hl;
    memcpy(text, head, at);
    for (size_t i = first; i < r->n; i++) {
        int64_t s = (int64_t)r->runs[i].seconds + (i == r->n - 1 ? extra : 0);
        int len = snprintf(text + at, used + 1 - (at - (size_t)hl), " %c%lld", r->runs[i].state,
                           (long long)s);
        at += (size_t)len;
    }
    text[at] = '\0';
    *ret_text = text;
    return 0;
}

static int fail(const char **ret_err, const char *why)
{
    if (ret_err)
        *ret_err = why;
    return -EINVAL;
}

int activity_record_parse(const char *text, struct activity_record *r, const char **ret_err)
{
    size_t vl = strlen(ACTIVITY_RECORD_VERSION);
    if (!text || strncmp(text, ACTIVITY_RECORD_VERSION, vl) != 0 || text[vl] != ' ')
        return fail(ret_err, "not an activity record of version " ACTIVITY_RECORD_VERSION);
    const char *p = text + vl + 1;
    char *end;
    long long start = strtoll(p, &end, 10);
    if (end == p || start <= 0)
        return fail(ret_err, "the start is not a positive number of seconds");
    r->start_s = start;
    p = end;
    while (*p) {
        if (*p != ' ') {
            activity_record_free(r);
            return fail(ret_err, "runs must be separated by one space");
        }
        p++;
        char state = *p;
        if (!activity_state_valid(state)) {
            activity_record_free(r);
            return fail(ret_err, "a run's state is not one of p, w, a, k, g, i, u");
        }
        p++;
        if (*p < '0' || *p > '9') {
            activity_record_free(r);
            return fail(ret_err, "a run's length is not a number of seconds");
        }
        unsigned long long s = strtoull(p, &end, 10);
        if (s > ACTIVITY_RUN_MAX_S) {
            activity_record_free(r);
            return fail(ret_err, "a run is longer than the record allows");
        }
        p = end;
        if (push(r, state, (uint32_t)s) < 0) {
            activity_record_free(r);
            return -ENOMEM;
        }
    }
    return 0;
}

void activity_record_free(struct activity_record *r)
{
    free(r->runs);
    *r = (struct activity_record){0};
}
