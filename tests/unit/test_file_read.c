/* file_read: whole small files read on the event loop, with a limit. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "util/file_read.h"

struct result {
    int calls;
    int status;
    char *bytes; /* a copy: the reader's bytes live only during the call */
    size_t len;
};

static void on_read(void *data, int status, const char *bytes, size_t len)
{
    struct result *r = data;
    r->calls++;
    r->status = status;
    r->len = len;
    if (status < 0) {
        assert_null(bytes);
        assert_int_equal(len, 0);
        return;
    }
    assert_non_null(bytes);
    assert_int_equal(bytes[len], '\0');
    r->bytes = malloc(len + 1);
    assert_non_null(r->bytes);
    memcpy(r->bytes, bytes, len + 1);
}

struct fixture {
    char dir[64];
    char path[128];
};

static int setup(void **state)
{
    struct fixture *fx = calloc(1, sizeof(*fx));
    if (!fx)
        return -1;
    strcpy(fx->dir, "/tmp/test_file_read.XXXXXX");
    if (!mkdtemp(fx->dir))
        return -1;
    snprintf(fx->path, sizeof(fx->path), "%s/f", fx->dir);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *fx = *state;
    unlink(fx->path);
    rmdir(fx->dir);
    free(fx);
    return 0;
}

static void write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

/* Reads path with limit max; the callback runs once, from the loop. */
static struct result read_with_limit(const char *path, size_t max)
{
    uv_loop_t loop;
    struct result r = {0};
    assert_int_equal(uv_loop_init(&loop), 0);
    assert_int_equal(file_read_start(&loop, path, max, on_read, &r, NULL), 0);
    assert_int_equal(r.calls, 0); /* never from within file_read_start() */
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(r.calls, 1);
    assert_int_equal(uv_loop_close(&loop), 0);
    return r;
}

static void test_reads_whole_file(void **state)
{
    struct fixture *fx = *state;
    /* Several chunks' worth, with NULs: every byte arrives, in order. */
    size_t n = 100 * 1024 + 7;
    unsigned char *data = malloc(n);
    assert_non_null(data);
    for (size_t i = 0; i < n; i++)
        data[i] = (unsigned char)(i * 7 + i / 251);
    write_file(fx->path, data, n);
    struct result r = read_with_limit(fx->path, n);
    assert_int_equal(r.status, 0);
    assert_int_equal(r.len, n);
    assert_memory_equal(r.bytes, data, n);
    free(r.bytes);
    free(data);
}

static void test_missing_file(void **state)
{
    struct fixture *fx = *state;
    struct result r = read_with_limit(fx->path, 1024);
    assert_int_equal(r.status, -ENOENT);
    r = read_with_limit(fx->dir, 1024);
    assert_int_equal(r.status, -EISDIR);
}

static void test_empty_file(void **state)
{
    struct fixture *fx = *state;
    write_file(fx->path, "", 0);
    struct result r = read_with_limit(fx->path, 1024);
    assert_int_equal(r.status, 0);
    assert_int_equal(r.len, 0);
    assert_string_equal(r.bytes, "");
    free(r.bytes);
    /* A limit of 0 allows exactly that. */
    r = read_with_limit(fx->path, 0);
    assert_int_equal(r.status, 0);
    free(r.bytes);
}

static void test_limit(void **state)
{
    struct fixture *fx = *state;
    static const size_t sizes[] = {10, 16 * 1024, 40 * 1024};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        size_t n = sizes[i];
        char *data = malloc(n);
        assert_non_null(data);
        memset(data, 'x', n);
        write_file(fx->path, data, n);
        /* Exactly at the limit: read. */
        struct result r = read_with_limit(fx->path, n);
        assert_int_equal(r.status, 0);
        assert_int_equal(r.len, n);
        free(r.bytes);
        /* One byte over: -EFBIG, no bytes. */
        r = read_with_limit(fx->path, n - 1);
        assert_int_equal(r.status, -EFBIG);
        assert_null(r.bytes);
        free(data);
    }
}

/* An owner that goes away mid-read: the callback never runs, and the read
 * still closes its file and frees itself (ASan and uv_loop_close say so). */
static void test_cancel(void **state)
{
    struct fixture *fx = *state;
    size_t n = 200 * 1024;
    char *data = calloc(1, n);
    assert_non_null(data);
    write_file(fx->path, data, n);
    free(data);

    /* Each round lets the read get further before it is cancelled: before
     * the open, after it, and after some of the reads. */
    for (int steps = 0; steps < 6; steps++) {
        uv_loop_t loop;
        struct result r = {0};
        struct file_read *fr = NULL;
        assert_int_equal(uv_loop_init(&loop), 0);
        assert_int_equal(file_read_start(&loop, fx->path, n, on_read, &r, &fr), 0);
        assert_non_null(fr);
        for (int i = 0; i < steps && r.calls == 0; i++)
            uv_run(&loop, UV_RUN_ONCE);
        assert_int_equal(r.calls, 0);
        file_read_cancel(fr);
        assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
        assert_int_equal(r.calls, 0);
        assert_int_equal(uv_loop_close(&loop), 0);
    }
    file_read_cancel(NULL);

    /* Cancelled on a missing file: nothing to close, nothing called. */
    uv_loop_t loop;
    struct result r = {0};
    struct file_read *fr = NULL;
    char missing[160];
    snprintf(missing, sizeof(missing), "%s/missing", fx->dir);
    assert_int_equal(uv_loop_init(&loop), 0);
    assert_int_equal(file_read_start(&loop, missing, n, on_read, &r, &fr), 0);
    file_read_cancel(fr);
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(r.calls, 0);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* The file is opened without waiting for a writer: a FIFO where a file
 * was expected reads as empty instead of holding a thread-pool thread. */
static void test_fifo_does_not_hang(void **state)
{
    struct fixture *fx = *state;
    assert_int_equal(mkfifo(fx->path, 0600), 0);
    struct result r = read_with_limit(fx->path, 1024);
    assert_int_equal(r.status, 0);
    assert_int_equal(r.len, 0);
    free(r.bytes);
}

static void test_bad_arguments(void **state)
{
    (void)state;
    uv_loop_t loop;
    struct result r = {0};
    struct file_read *fr = NULL;
    assert_int_equal(uv_loop_init(&loop), 0);
    assert_int_equal(file_read_start(NULL, "/x", 1, on_read, &r, &fr), -EINVAL);
    assert_int_equal(file_read_start(&loop, NULL, 1, on_read, &r, &fr), -EINVAL);
    assert_int_equal(file_read_start(&loop, "/x", 1, NULL, &r, &fr), -EINVAL);
    assert_null(fr);
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(r.calls, 0);
    assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_reads_whole_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_empty_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fifo_does_not_hang, setup, teardown),
        cmocka_unit_test(test_bad_arguments),
    };
    return cmocka_run_group_tests_name("file_read", tests, NULL, NULL);
}
