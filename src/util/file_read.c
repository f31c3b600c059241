#include "util/file_read.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>

#include <openssl/crypto.h>

#include "util/buf.h"
#include "util/secret.h"

#define CHUNK (16 * 1024)

struct file_read {
    uv_loop_t *loop;
    uv_fs_t req;
    uv_file fd;
    int status;
    bool cancelled;
    file_read_cb cb;
    void *data;
    struct buf bytes;
    char chunk[CHUNK];
};

static void finish(struct file_read *r)
{
    if (!r->cancelled) {
        if (r->status == 0)
            r->cb(r->data, 0, r->bytes.data ? r->bytes.data : "", r->bytes.len);
        else
            r->cb(r->data, r->status, NULL, 0);
    }
    secret_buf_free(&r->bytes);
    free(r);
}

static void on_close(uv_fs_t *req)
{
    struct file_read *r = req->data;
    if (req->result < 0 && r->status == 0)
        r->status = (int)req->result;
    uv_fs_req_cleanup(req);
    finish(r);
}

static void close_file(struct file_read *r)
{
    int k = uv_fs_close(r->loop, &r->req, r->fd, on_close);
    if (k < 0) {
        uv_fs_req_cleanup(&r->req);
        if (r->status == 0)
            r->status = k;
        finish(r);
    }
}

static void read_next(struct file_read *r);

static void on_read(uv_fs_t *req)
{
    struct file_read *r = req->data;
    ssize_t n = req->result;
    uv_fs_req_cleanup(req);
    if (n < 0) {
        r->status = (int)n;
    } else if (n > 0 && !r->cancelled) {
        int k = buf_append(&r->bytes, r->chunk, (size_t)n);
        OPENSSL_cleanse(r->chunk, (size_t)n);
        if (k == 0) {
            read_next(r);
            return;
        }
        r->status = k == -ENOBUFS ? -EFBIG : k;
    }
    close_file(r);
}

static void read_next(struct file_read *r)
{
    uv_buf_t b = uv_buf_init(r->chunk, sizeof(r->chunk));
    int k = uv_fs_read(r->loop, &r->req, r->fd, &b, 1, -1, on_read);
    if (k < 0) {
        uv_fs_req_cleanup(&r->req);
        r->status = k;
        close_file(r);
    }
}

static void on_open(uv_fs_t *req)
{
    struct file_read *r = req->data;
    ssize_t fd = req->result;
    uv_fs_req_cleanup(req);
    if (fd < 0) {
        r->status = (int)fd;
        finish(r);
        return;
    }
    r->fd = (uv_file)fd;
    if (r->cancelled)
        close_file(r);
    else
        read_next(r);
}

int file_read_start(uv_loop_t *loop, const char *path, size_t max, file_read_cb cb, void *data,
                    struct file_read **ret_read)
{
    if (!loop || !path || !cb)
        return -EINVAL;
    struct file_read *r = calloc(1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    r->loop = loop;
    r->fd = -1;
    r->cb = cb;
    r->data = data;
    r->req.data = r;
    buf_init(&r->bytes, max);
    /* Sized up front so that growing by realloc leaves no copies of a
     * secret that fits in one chunk. */
    if (buf_printf(&r->bytes, "%*s", (int)(max < CHUNK ? max : CHUNK), "") < 0) {
        free(r);
        return -ENOMEM;
    }
    buf_reset(&r->bytes);
    /* O_NONBLOCK: a FIFO put where a file was expected cannot hold a
     * thread-pool thread in open() forever. */
    int k =
        uv_fs_open(loop, &r->req, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0, on_open);
    if (k < 0) {
        uv_fs_req_cleanup(&r->req);
        buf_free(&r->bytes);
        free(r);
        return k;
    }
    if (ret_read)
        *ret_read = r;
    return 0;
}

void file_read_cancel(struct file_read *r)
{
    if (r)
        r->cancelled = true;
}
