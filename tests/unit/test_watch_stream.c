#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kube/api_error.h"
#include "kube/watch_stream.h"
#include "util/buf.h"

/* A watch of pods as the API server writes it, with a CRLF line and a blank
 * keep-alive line thrown in. */
static const char recorded[] =
    "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{"
    "\"name\":\"ws-alice-1\",\"namespace\":\"team-a\",\"uid\":\"6f1c\",\"resourceVersion\":"
    "\"1001\",\"labels\":{\"hibernator.dev/workspace\":\"alice\"}},\"spec\":{\"containers\":[{"
    "\"name\":\"notebook\",\"image\":\"jupyter/base:1\"}]},\"status\":{\"phase\":\"Pending\"}}}\n"
    "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{"
    "\"name\":\"ws-alice-1\",\"namespace\":\"team-a\",\"resourceVersion\":\"1002\"},"
    "\"status\":{\"phase\":\"Running\",\"message\":\"line\\nbreak \\u00e9\"}}}\r\n"
    "\n"
    "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{"
    "\"resourceVersion\":\"1500\",\"annotations\":{\"k8s.io/initial-events-end\":\"true\"}}}}\n"
    "{\"type\":\"DELETED\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{"
    "\"name\":\"ws-alice-1\",\"namespace\":\"team-a\",\"resourceVersion\":\"1600\"}}}\n"
    "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
    "\"status\":\"Failure\",\"message\":\"too old resource version: 1001 (1700)\","
    "\"reason\":\"Expired\",\"code\":410}}\n";

static const char recorded_events[] = "ADDED ws-alice-1 1001\n"
                                      "MODIFIED ws-alice-1 1002\n"
                                      "BOOKMARK - 1500\n"
                                      "DELETED ws-alice-1 1600\n"
                                      "ERROR 410 Expired\n";

struct recorder {
    struct buf log;
    int events;
    int fail_at; /* 1-based event number whose callback fails; 0: never */
    int steal;   /* keep every object */
    cJSON *kept[64];
    int nkept;
};

static const char *string_at(const cJSON *obj, const char *a, const char *b)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, a), b);
    return cJSON_IsString(v) ? v->valuestring : "-";
}

static int record(void *data, enum watch_event_type type, cJSON *object, int *steal)
{
    struct recorder *rec = data;
    rec->events++;
    if (type == WATCH_EVENT_ERROR) {
        struct kube_api_error e = {0};
        assert_int_equal(kube_api_error_from_status(object, &e), 0);
        assert_int_equal(buf_printf(&rec->log, "ERROR %ld %s\n", e.code, e.reason), 0);
        kube_api_error_clear(&e);
    } else {
        assert_int_equal(buf_printf(&rec->log, "%s %s %s\n", watch_event_type_name(type),
                                    string_at(object, "metadata", "name"),
                                    string_at(object, "metadata", "resourceVersion")),
                         0);
    }
    if (rec->steal && rec->nkept < 64) {
        rec->kept[rec->nkept++] = object;
        *steal = 1;
    }
    if (rec->fail_at == rec->events)
        return -ECANCELED;
    return 0;
}

static void recorder_init(struct recorder *rec)
{
    memset(rec, 0, sizeof(*rec));
    buf_init(&rec->log, 1 << 20);
}

static void recorder_free(struct recorder *rec)
{
    for (int i = 0; i < rec->nkept; i++)
        cJSON_Delete(rec->kept[i]);
    buf_free(&rec->log);
}

#define LIMIT 4096

static void test_whole(void **state)
{
    (void)state;
    struct recorder rec;
    recorder_init(&rec);
    struct watch_stream s;
    watch_stream_init(&s, LIMIT, record, &rec);
    assert_int_equal(watch_stream_feed(&s, recorded, strlen(recorded)), 0);
    assert_string_equal(buf_str(&rec.log), recorded_events);
    assert_int_equal(s.line.len, 0);
    watch_stream_free(&s);
    recorder_free(&rec);
}

static void test_every_split(void **state)
{
    (void)state;
    size_t len = strlen(recorded);
    for (size_t cut = 0; cut <= len; cut++) {
        struct recorder rec;
        recorder_init(&rec);
        struct watch_stream s;
        watch_stream_init(&s, LIMIT, record, &rec);
        assert_int_equal(watch_stream_feed(&s, recorded, cut), 0);
        assert_int_equal(watch_stream_feed(&s, recorded + cut, len - cut), 0);
        if (strcmp(buf_str(&rec.log), recorded_events) != 0)
            fail_msg("split at %zu gave:\n%s", cut, buf_str(&rec.log));
        watch_stream_free(&s);
        recorder_free(&rec);
    }
}

static void test_byte_at_a_time(void **state)
{
    (void)state;
    struct recorder rec;
    recorder_init(&rec);
    struct watch_stream s;
    watch_stream_init(&s, LIMIT, record, &rec);
    size_t len = strlen(recorded);
    for (size_t i = 0; i < len; i++) {
        /* A heap copy of exactly one byte, so a read past it shows up under ASan. */
        char *b = malloc(1);
        assert_non_null(b);
        *b = recorded[i];
        assert_int_equal(watch_stream_feed(&s, b, 1), 0);
        free(b);
    }
    assert_string_equal(buf_str(&rec.log), recorded_events);
    watch_stream_free(&s);
    recorder_free(&rec);
}

static void test_empty_feeds(void **state)
{
    (void)state;
    struct recorder rec;
    recorder_init(&rec);
    struct watch_stream s;
    watch_stream_init(&s, LIMIT, record, &rec);
    assert_int_equal(watch_stream_feed(&s, NULL, 0), 0);
    assert_int_equal(watch_stream_feed(&s, "\n\r\n  \n", 6), 0);
    assert_int_equal(rec.events, 0);
    /* A final line without its newline is not an event yet. */
    static const char partial[] = "{\"type\":\"ADDED\",\"object\":{}}";
    assert_int_equal(watch_stream_feed(&s, partial, strlen(partial)), 0);
    assert_int_equal(rec.events, 0);
    assert_int_equal(watch_stream_feed(&s, "\n", 1), 0);
    assert_int_equal(rec.events, 1);
    watch_stream_free(&s);
    recorder_free(&rec);
}

static char *event_line(size_t total)
{
    /* {"type":"ADDED","object":{"p":"xxx"}} padded to exactly total bytes. */
    static const char head[] = "{\"type\":\"ADDED\",\"object\":{\"p\":\"";
    static const char tail[] = "\"}}";
    size_t fixed = strlen(head) + strlen(tail);
    assert_true(total >= fixed);
    char *line = malloc(total + 1);
    assert_non_null(line);
    memcpy(line, head, strlen(head));
    memset(line + strlen(head), 'x', total - fixed);
    memcpy(line + total - strlen(tail), tail, strlen(tail));
    line[total] = '\0';
    return line;
}

static void test_line_limit(void **state)
{
    (void)state;
    const size_t max = 128;

    /* Exactly at the limit: fine whole, split or in a CRLF line. */
    char *line = event_line(max);
    for (size_t cut = 0; cut <= max; cut++) {
        struct recorder rec;
        recorder_init(&rec);
        struct watch_stream s;
        watch_stream_init(&s, max, record, &rec);
        assert_int_equal(watch_stream_feed(&s, line, cut), 0);
        assert_int_equal(watch_stream_feed(&s, line + cut, max - cut), 0);
        assert_int_equal(watch_stream_feed(&s, "\n", 1), 0);
        assert_int_equal(rec.events, 1);
        assert_true(s.line.cap <= max + 1);
        watch_stream_free(&s);
        recorder_free(&rec);
    }
    free(line);

    /* One byte over: -ENOBUFS however it arrives, and the buffer never grows
     * past the limit. Events before it are still delivered. */
    line = event_line(max + 1);
    static const char before[] = "{\"type\":\"DELETED\",\"object\":{}}\n";
    for (size_t cut = 0; cut <= max + 1; cut++) {
        struct recorder rec;
        recorder_init(&rec);
        struct watch_stream s;
        watch_stream_init(&s, max, record, &rec);
        assert_int_equal(watch_stream_feed(&s, before, strlen(before)), 0);
        int r = watch_stream_feed(&s, line, cut);
        if (r == 0)
            r = watch_stream_feed(&s, line + cut, max + 1 - cut);
        if (r == 0)
            r = watch_stream_feed(&s, "\n", 1);
        assert_int_equal(r, -ENOBUFS);
        assert_int_equal(rec.events, 1);
        assert_true(s.line.cap <= max + 1);
        watch_stream_free(&s);
        recorder_free(&rec);
    }

    /* Whole in one chunk with its newline, after another event in the same chunk. */
    struct recorder rec;
    recorder_init(&rec);
    struct watch_stream s;
    watch_stream_init(&s, max, record, &rec);
    struct buf chunk;
    buf_init(&chunk, 1024);
    assert_int_equal(buf_printf(&chunk, "%s%s\n", before, line), 0);
    assert_int_equal(watch_stream_feed(&s, chunk.data, chunk.len), -ENOBUFS);
    assert_int_equal(rec.events, 1);
    assert_true(s.line.cap <= max + 1);
    buf_free(&chunk);
    watch_stream_free(&s);
    recorder_free(&rec);
    free(line);

    /* A flood without any newline stops at the limit. */
    recorder_init(&rec);
    watch_stream_init(&s, max, record, &rec);
    int r = 0;
    size_t fed = 0;
    while (r == 0 && fed < 100 * max) {
        r = watch_stream_feed(&s, "xxxxxxxxxx", 10);
        fed += 10;
        assert_true(s.line.len <= max);
        assert_true(s.line.cap <= max + 1);
    }
    assert_int_equal(r, -ENOBUFS);
    assert_true(fed <= max + 10);
    watch_stream_free(&s);
    recorder_free(&rec);
}

static void test_bad_lines(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "not json",
        "{\"type\":\"ADDED\",\"object\":{}",
        "{\"type\":\"SYNC\",\"object\":{}}",
        "{\"type\":\"added\",\"object\":{}}",
        "{\"type\":\"ADDED\",\"object\":\"pod\"}",
        "{\"type\":\"ADDED\",\"object\":[]}",
        "{\"type\":\"ADDED\",\"object\":null}",
        "{\"type\":\"ADDED\"}",
        "{\"object\":{}}",
        "{\"type\":7,\"object\":{}}",
        "[{\"type\":\"ADDED\",\"object\":{}}]",
        "\"ADDED\"",
        "{\"type\":\"ADDED\",\"object\":{}} {\"type\":\"ADDED\",\"object\":{}}",
        "{\"type\":\"ADDED\",\"object\":{}}x",
        "<html>",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct recorder rec;
        recorder_init(&rec);
        struct watch_stream s;
        watch_stream_init(&s, LIMIT, record, &rec);
        struct buf chunk;
        buf_init(&chunk, 4096);
        assert_int_equal(buf_printf(&chunk,
                                    "{\"type\":\"ADDED\",\"object\":{}}\n%s\n"
                                    "{\"type\":\"ADDED\",\"object\":{}}\n",
                                    bad[i]),
                         0);
        int r = watch_stream_feed(&s, chunk.data, chunk.len);
        if (r != -EBADMSG || rec.events != 1)
            fail_msg("\"%s\": r=%d events=%d", bad[i], r, rec.events);
        buf_free(&chunk);
        watch_stream_free(&s);
        recorder_free(&rec);
    }

    /* Trailing blanks after the object are fine. */
    struct recorder rec;
    recorder_init(&rec);
    struct watch_stream s;
    watch_stream_init(&s, LIMIT, record, &rec);
    static const char spaced[] = "  {\"type\":\"ADDED\",\"object\":{}} \t \r\n";
    assert_int_equal(watch_stream_feed(&s, spaced, strlen(spaced)), 0);
    assert_int_equal(rec.events, 1);
    watch_stream_free(&s);
    recorder_free(&rec);
}

static void test_steal(void **state)
{
    (void)state;
    struct recorder rec;
    recorder_init(&rec);
    rec.steal = 1;
    struct watch_stream s;
    watch_stream_init(&s, LIMIT, record, &rec);
    assert_int_equal(watch_stream_feed(&s, recorded, strlen(recorded)), 0);
    watch_stream_free(&s);
    /* The stolen objects outlive the stream; ASan would flag a double free. */
    assert_int_equal(rec.nkept, 5);
    assert_string_equal(string_at(rec.kept[0], "metadata", "name"), "ws-alice-1");
    assert_string_equal(string_at(rec.kept[1], "status", "phase"), "Running");
    assert_string_equal(string_at(rec.kept[2], "metadata", "resourceVersion"), "1500");
    assert_string_equal(string_at(rec.kept[3], "metadata", "resourceVersion"), "1600");
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(rec.kept[4], "reason")->valuestring,
                        "Expired");
    recorder_free(&rec);
}

static void test_callback_error(void **state)
{
    (void)state;
    size_t len = strlen(recorded);
    for (int fail_at = 1; fail_at <= 5; fail_at++) {
        for (int steal = 0; steal <= 1; steal++) {
            struct recorder rec;
            recorder_init(&rec);
            rec.fail_at = fail_at;
            rec.steal = steal;
            struct watch_stream s;
            watch_stream_init(&s, LIMIT, record, &rec);
            assert_int_equal(watch_stream_feed(&s, recorded, len), -ECANCELED);
            assert_int_equal(rec.events, fail_at);
            assert_int_equal(s.line.len, 0);
            watch_stream_free(&s);
            recorder_free(&rec);
        }
    }

    /* Same through the buffered path: a line completed by a later chunk. */
    struct recorder rec;
    recorder_init(&rec);
    rec.fail_at = 1;
    struct watch_stream s;
    watch_stream_init(&s, LIMIT, record, &rec);
    assert_int_equal(watch_stream_feed(&s, recorded, 10), 0);
    assert_int_equal(watch_stream_feed(&s, recorded + 10, len - 10), -ECANCELED);
    assert_int_equal(rec.events, 1);
    watch_stream_free(&s);
    recorder_free(&rec);
}

static void test_reset(void **state)
{
    (void)state;
    struct recorder rec;
    recorder_init(&rec);
    struct watch_stream s;
    watch_stream_init(&s, LIMIT, record, &rec);
    /* Half a line from a dropped connection must not be glued to the next one. */
    assert_int_equal(watch_stream_feed(&s, "{\"type\":\"ADD", 12), 0);
    watch_stream_reset(&s);
    assert_int_equal(s.line.len, 0);
    assert_int_equal(watch_stream_feed(&s, recorded, strlen(recorded)), 0);
    assert_string_equal(buf_str(&rec.log), recorded_events);
    watch_stream_free(&s);
    watch_stream_free(&s);
    watch_stream_free(NULL);
    watch_stream_reset(NULL);
    recorder_free(&rec);
}

static void test_no_callback(void **state)
{
    (void)state;
    struct watch_stream s;
    watch_stream_init(&s, LIMIT, NULL, NULL);
    assert_int_equal(watch_stream_feed(&s, recorded, strlen(recorded)), 0);
    watch_stream_free(&s);
}

static void test_many_lines_one_chunk(void **state)
{
    (void)state;
    const int n = 20000;
    struct buf chunk;
    buf_init(&chunk, 8 << 20);
    for (int i = 0; i < n; i++)
        assert_int_equal(buf_printf(&chunk,
                                    "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":"
                                    "\"p%d\",\"resourceVersion\":\"%d\"}}}\n",
                                    i, i),
                         0);
    struct recorder rec;
    recorder_init(&rec);
    rec.log.max = 8 << 20;
    struct watch_stream s;
    /* The limit is per line, not per chunk. */
    watch_stream_init(&s, 256, record, &rec);
    assert_int_equal(watch_stream_feed(&s, chunk.data, chunk.len), 0);
    assert_int_equal(rec.events, n);
    assert_true(s.line.cap <= 257);
    watch_stream_free(&s);
    recorder_free(&rec);
    buf_free(&chunk);
}

static void test_long_line_in_pieces(void **state)
{
    (void)state;
    /* A big object trickling in: every byte must be looked at once, not once
     * per chunk. */
    const size_t total = 256 * 1024;
    char *line = event_line(total);
    struct recorder rec;
    recorder_init(&rec);
    struct watch_stream s;
    watch_stream_init(&s, total, record, &rec);
    for (size_t off = 0; off < total; off += 7) {
        size_t n = total - off < 7 ? total - off : 7;
        assert_int_equal(watch_stream_feed(&s, line + off, n), 0);
    }
    assert_int_equal(watch_stream_feed(&s, "\r\n", 2), -ENOBUFS);
    assert_int_equal(rec.events, 0);
    watch_stream_reset(&s);

    /* With room for the CR it goes through. */
    watch_stream_init(&s, total + 1, record, &rec);
    for (size_t off = 0; off < total; off += 7) {
        size_t n = total - off < 7 ? total - off : 7;
        assert_int_equal(watch_stream_feed(&s, line + off, n), 0);
    }
    assert_int_equal(watch_stream_feed(&s, "\r\n", 2), 0);
    assert_int_equal(rec.events, 1);
    watch_stream_free(&s);
    recorder_free(&rec);
    free(line);
}

static void test_event_parse(void **state)
{
    (void)state;
    static const struct {
        const char *type;
        enum watch_event_type want;
    } types[] = {
        {"ADDED", WATCH_EVENT_ADDED},     {"MODIFIED", WATCH_EVENT_MODIFIED},
        {"DELETED", WATCH_EVENT_DELETED}, {"BOOKMARK", WATCH_EVENT_BOOKMARK},
        {"ERROR", WATCH_EVENT_ERROR},
    };
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        char line[128];
        int n =
            snprintf(line, sizeof(line), "{\"object\":{\"a\":1},\"type\":\"%s\"}", types[i].type);
        enum watch_event_type type;
        cJSON *object = NULL;
        assert_int_equal(watch_event_parse(line, (size_t)n, &type, &object), 0);
        assert_int_equal(type, types[i].want);
        assert_string_equal(watch_event_type_name(type), types[i].type);
        assert_int_equal(cJSON_GetObjectItemCaseSensitive(object, "a")->valueint, 1);
        cJSON_Delete(object);
    }

    /* Outputs untouched on failure. */
    enum watch_event_type type = WATCH_EVENT_BOOKMARK;
    cJSON *object = (cJSON *)&type;
    assert_int_equal(watch_event_parse("{}", 2, &type, &object), -EBADMSG);
    assert_int_equal(watch_event_parse("", 0, &type, &object), -EBADMSG);
    assert_int_equal(watch_event_parse(NULL, 5, &type, &object), -EBADMSG);
    assert_int_equal(type, WATCH_EVENT_BOOKMARK);
    assert_ptr_equal(object, (cJSON *)&type);

    /* Only len bytes are the line. */
    static const char two[] = "{\"type\":\"DELETED\",\"object\":{}}garbage";
    assert_int_equal(watch_event_parse(two, strlen(two) - 7, &type, &object), 0);
    assert_int_equal(type, WATCH_EVENT_DELETED);
    cJSON_Delete(object);

    assert_string_equal(watch_event_type_name((enum watch_event_type)42), "UNKNOWN");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_whole),
        cmocka_unit_test(test_every_split),
        cmocka_unit_test(test_byte_at_a_time),
        cmocka_unit_test(test_empty_feeds),
        cmocka_unit_test(test_line_limit),
        cmocka_unit_test(test_bad_lines),
        cmocka_unit_test(test_steal),
        cmocka_unit_test(test_callback_error),
        cmocka_unit_test(test_reset),
        cmocka_unit_test(test_no_callback),
        cmocka_unit_test(test_many_lines_one_chunk),
        cmocka_unit_test(test_long_line_in_pieces),
        cmocka_unit_test(test_event_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
