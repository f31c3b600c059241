/*
 * Feeds a watch response to watch_stream in chunks and checks that chunking
 * does not matter: the same bytes fed whole must give the same events and the
 * same result. The same bytes are also read as an error response body, whose
 * message must come out as one bounded line of valid UTF-8.
 *
 * Input layout: byte 0 holds n (low 3 bits) and the line limit (high 5 bits,
 * 32 + 64 * k bytes, small enough for the fuzzer to reach the edges), then n
 * chunk sizes (0 = the rest), then the stream. Chunk sizes repeat in turn
 * until the stream is used up.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube/api_error.h"
#include "kube/watch_stream.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct trace {
    size_t max_line;
    uint64_t hash;
    unsigned events;
};

/* Messages must stay one bounded line of valid UTF-8 whatever the body. */
static void check_message(const char *m)
{
    const unsigned char *p = (const unsigned char *)m;
    size_t len = strlen(m);
    if (len > 4 * 1024)
        abort();
    for (size_t i = 0; i < len;) {
        unsigned char c = p[i];
        size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (n == 0 || i + n > len || c < 0x20 || c == 0x7f)
            abort();
        for (size_t j = 1; j < n; j++)
            if ((p[i + j] & 0xc0) != 0x80)
                abort();
        i += n;
    }
}

static void mix(struct trace *t, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        t->hash = (t->hash ^ b[i]) * 1099511628211ULL;
}

static int on_event(void *data, enum watch_event_type type, cJSON *object, int *steal)
{
    struct trace *t = data;
    t->events++;
    const char *name = watch_event_type_name(type);
    mix(t, name, strlen(name));

    char *text = cJSON_PrintUnformatted(object);
    if (text) {
        mix(t, text, strlen(text));
        cJSON_free(text);
    }
    const cJSON *rv = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(object, "metadata"), "resourceVersion");
    if (cJSON_IsString(rv))
        mix(t, rv->valuestring, strlen(rv->valuestring));

    if (type == WATCH_EVENT_ERROR) {
        struct kube_api_error e = {0};
        if (kube_api_error_from_status(object, &e) == 0) {
            mix(t, e.reason, strlen(e.reason));
            mix(t, e.message, strlen(e.message));
            mix(t, &e.code, sizeof(e.code));
            check_message(e.message);
            t->hash += (uint64_t)kube_api_error_is_gone(&e);
            kube_api_error_clear(&e);
        }
    }

    /* Every other event is kept and freed here, the rest left to the stream. */
    if (t->events % 2 == 0) {
        *steal = 1;
        cJSON_Delete(object);
    }
    /* Stop now and then, the way a watcher drops a stream on ERROR. */
    if (type == WATCH_EVENT_ERROR && t->events % 3 == 0)
        return -ECANCELED;
    return 0;
}

/* The same bytes as an error response body, the other half of reading what
 * the API server sends back. */
static void parse_as_error_body(const uint8_t *p, size_t n, long code)
{
    char *copy = malloc(n ? n : 1);
    if (!copy)
        return;
    if (n)
        memcpy(copy, p, n);
    struct kube_api_error e = {0};
    if (kube_api_error_parse(code, copy, n, &e) == 0) {
        if (!e.reason || !e.message || e.reason[0] == '\0')
            abort();
        check_message(e.message);
        check_message(e.reason);
        (void)kube_api_error_is_conflict(&e);
        (void)kube_api_error_is_gone(&e);
        kube_api_error_clear(&e);
    }
    free(copy);
}

static int run_whole(const uint8_t *p, size_t n, struct trace *t)
{
    struct watch_stream s;
    watch_stream_init(&s, t->max_line, on_event, t);
    /* A heap copy of exactly n bytes, so a read past the end is caught. */
    char *copy = malloc(n ? n : 1);
    if (!copy)
        return -ENOMEM;
    if (n)
        memcpy(copy, p, n);
    int r = watch_stream_feed(&s, copy, n);
    free(copy);
    watch_stream_free(&s);
    return r;
}

static int run_chunked(const uint8_t *sizes, size_t nsizes, const uint8_t *p, size_t n,
                       struct trace *t)
{
    struct watch_stream s;
    watch_stream_init(&s, t->max_line, on_event, t);
    int r = 0;
    size_t off = 0;
    for (size_t k = 0; off < n && r == 0; k++) {
        size_t len = nsizes ? sizes[k % nsizes] : 0;
        if (len == 0 || len > n - off)
            len = n - off;
        char *chunk = malloc(len);
        if (!chunk) {
            r = -ENOMEM;
            break;
        }
        memcpy(chunk, p + off, len);
        r = watch_stream_feed(&s, chunk, len);
        free(chunk);
        off += len;
        if (s.line.len > t->max_line || s.line.cap > t->max_line + 1)
            abort();
    }
    watch_stream_free(&s);
    return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    size_t nsizes = data[0] & 7;
    if (size < 1 + nsizes)
        return 0;
    const uint8_t *sizes = data + 1;
    const uint8_t *stream = data + 1 + nsizes;
    size_t n = size - 1 - nsizes;

    size_t max_line = 32 + 64 * (size_t)(data[0] >> 3);
    struct trace whole = {max_line, 14695981039346656037ULL, 0};
    struct trace chunked = whole;
    int r_whole = run_whole(stream, n, &whole);
    int r_chunked = run_chunked(sizes, nsizes, stream, n, &chunked);
    parse_as_error_body(stream, n, 400 + (long)(data[0] >> 3));
    if (r_whole == -ENOMEM || r_chunked == -ENOMEM)
        return 0;
    if (r_whole != r_chunked || whole.events != chunked.events || whole.hash != chunked.hash)
        abort();
    return 0;
}
