#include "kube/watch_stream.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

static const char *const type_names[] = {
    [WATCH_EVENT_ADDED] = "ADDED",     [WATCH_EVENT_MODIFIED] = "MODIFIED",
    [WATCH_EVENT_DELETED] = "DELETED", [WATCH_EVENT_BOOKMARK] = "BOOKMARK",
    [WATCH_EVENT_ERROR] = "ERROR",
};

#define TYPE_COUNT (sizeof(type_names) / sizeof(type_names[0]))

const char *watch_event_type_name(enum watch_event_type type)
{
    if ((size_t)type < TYPE_COUNT)
        return type_names[type];
    return "UNKNOWN";
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static bool all_space(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (!is_space(s[i]))
            return false;
    return true;
}

int watch_event_parse(const char *line, size_t len, enum watch_event_type *ret_type,
                      cJSON **ret_object)
{
    if (!line || len == 0)
        return -EBADMSG;

    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(line, len, &end, 0);
    if (!root)
        return -EBADMSG;

    int r = -EBADMSG;
    /* One event per line: anything after the object means the framing is
     * not what we think it is. */
    if (!cJSON_IsObject(root) || !end || end < line || end > line + len ||
        !all_space(end, (size_t)(line + len - end)))
        goto out;

    const cJSON *type = cJSON_GetObjectItemCaseSensitive(root, "type");
    if (!cJSON_IsString(type))
        goto out;
    size_t t;
    for (t = 0; t < TYPE_COUNT; t++)
        if (strcmp(type->valuestring, type_names[t]) == 0)
            break;
    if (t == TYPE_COUNT)
        goto out;

    cJSON *object = cJSON_GetObjectItemCaseSensitive(root, "object");
    if (!cJSON_IsObject(object))
        goto out;

    cJSON_DetachItemViaPointer(root, object);
    *ret_type = (enum watch_event_type)t;
    *ret_object = object;
    r = 0;
out:
    cJSON_Delete(root);
    return r;
}

void watch_stream_init(struct watch_stream *s, size_t max_line, watch_event_cb on_event, void *data)
{
    buf_init(&s->line, max_line);
    s->on_event = on_event;
    s->data = data;
}

/* Parses one complete line (newline already removed) and hands the event
 * over. Blank lines, which some proxies insert as keep-alives, are skipped. */
static int dispatch_line(struct watch_stream *s, const char *line, size_t len)
{
    if (len > 0 && line[len - 1] == '\r')
        len--;
    if (all_space(line, len))
        return 0;

    enum watch_event_type type;
    cJSON *object;
    int r = watch_event_parse(line, len, &type, &object);
    if (r < 0)
        return r;

    int steal = 0;
    r = s->on_event ? s->on_event(s->data, type, object, &steal) : 0;
    if (!steal)
        cJSON_Delete(object);
    return r < 0 ? r : 0;
}

/*
 * Between calls the buffer holds at most the start of one line and never a
 * newline, so only the new bytes need scanning: each byte is looked at once
 * however the stream is chunked. Lines that arrive whole inside a chunk are
 * parsed where they lie, without a copy; only a line split across chunks goes
 * through the buffer. The limit applies to every line the same way (its
 * length without the newline), so the outcome does not depend on where the
 * chunks were split.
 */
int watch_stream_feed(struct watch_stream *s, const char *bytes, size_t len)
{
    const char *p = bytes;
    const char *end = bytes + len;
    int r = 0;

    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) {
            r = buf_append(&s->line, p, (size_t)(end - p));
            if (r < 0)
                goto fail;
            return 0;
        }

        size_t n = (size_t)(nl - p);
        if (s->line.len > 0) {
            r = buf_append(&s->line, p, n);
            if (r < 0)
                goto fail;
            r = dispatch_line(s, s->line.data, s->line.len);
            buf_reset(&s->line);
        } else if (n > s->line.max) {
            r = -ENOBUFS;
        } else {
            r = dispatch_line(s, p, n);
        }
        if (r < 0)
            goto fail;
        p = nl + 1;
    }
    return 0;

fail:
    /* The rest of this chunk is lost with the error, so a partial line kept
     * from before would only be joined to the wrong bytes later. */
    buf_reset(&s->line);
    return r;
}

void watch_stream_reset(struct watch_stream *s)
{
    if (!s)
        return;
    buf_free(&s->line);
}

void watch_stream_free(struct watch_stream *s)
{
    if (!s)
        return;
    buf_free(&s->line);
}
