/*
 * watch_stream: turns the bytes of a watch response into events.
 *
 * The API server writes one JSON object per line
 * ({"type":"ADDED","object":{...}}\n). HTTP chunks split lines anywhere, so
 * bytes are buffered until a newline; a line longer than the limit is an
 * error (-ENOBUFS), never unbounded growth. Each complete line is parsed once.
 *
 * Ownership: the caller owns the struct. The object handed to on_event is
 * owned by the stream and freed when the callback returns, unless the
 * callback sets *steal = 1 and so takes it.
 *
 * Lines may end in "\r\n"; blank lines are skipped. Work is linear in the
 * bytes fed however they are chunked: between feeds the buffer holds only the
 * unfinished line, and lines that arrive whole are parsed in place.
 */
#ifndef HIBERNATOR_KUBE_WATCH_STREAM_H
#define HIBERNATOR_KUBE_WATCH_STREAM_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "util/buf.h"

enum watch_event_type {
    WATCH_EVENT_ADDED,
    WATCH_EVENT_MODIFIED,
    WATCH_EVENT_DELETED,
    WATCH_EVENT_BOOKMARK,
    WATCH_EVENT_ERROR,
};

/* Called once per event. object is the event's "object" (for ERROR, a Status:
 * see kube_api_error_from_status). Set *steal to 1 to take ownership of
 * object (then free it with cJSON_Delete). Return 0 to go on, or a negative
 * errno to stop feeding (returned by watch_stream_feed). The callback must
 * not reset or free the stream; to drop the connection, return an error. */
typedef int (*watch_event_cb)(void *data, enum watch_event_type type, cJSON *object, int *steal);

struct watch_stream {
    struct buf line;
    watch_event_cb on_event;
    void *data;
};

/* max_line bounds one event's JSON text (a line without its "\n"). */
void watch_stream_init(struct watch_stream *s, size_t max_line, watch_event_cb on_event,
                       void *data);

/* Feeds bytes as they arrive. Returns 0; -ENOBUFS when a line exceeds the
 * limit; -EBADMSG when a complete line is not a watch event; -ENOMEM; or the
 * callback's error. Events before the failing line have been delivered. After
 * any error the rest of the bytes and the partial line are dropped: close the
 * connection and start a new watch. */
int watch_stream_feed(struct watch_stream *s, const char *bytes, size_t len);

/* Parses one complete line (without the newline) into type and object.
 * On success *ret_object is owned by the caller. Returns 0 or -EBADMSG. */
int watch_event_parse(const char *line, size_t len, enum watch_event_type *ret_type,
                      cJSON **ret_object);

/* Name of a type, e.g. "ADDED". */
const char *watch_event_type_name(enum watch_event_type type);

/* Drops any partial line (for a new connection) and frees the buffer. */
void watch_stream_reset(struct watch_stream *s);
/* The same as watch_stream_reset(): frees the buffer, the struct stays the
 * caller's and may be fed again. Both accept NULL. */
void watch_stream_free(struct watch_stream *s);

#endif
