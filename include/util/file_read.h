/*
 * file_read: reading a whole small file (a token, a zone) on the event
 * loop. uv_fs_open, uv_fs_read and uv_fs_close run on libuv's thread pool,
 * so no call blocks the loop, and what is read is bounded by a limit the
 * caller sets.
 *
 * Ownership: the reader copies path and owns everything it allocates. The
 * bytes it hands to the callback are the reader's, valid during the call
 * only; once the callback returns they are wiped (as util/secret.h does)
 * and freed, so a credential read this way leaves no copy behind except
 * those the caller makes. The struct file_read returned by
 * file_read_start() is the reader's too: the caller may use it only for
 * file_read_cancel(), and only until the callback has run.
 */
#ifndef HIBERNATOR_UTIL_FILE_READ_H
#define HIBERNATOR_UTIL_FILE_READ_H

#include <stddef.h>
#include <uv.h>

struct file_read;

/* status is 0 with the file's len bytes at bytes (followed by a NUL that
 * is not counted; the file itself may hold NULs), or a negative errno with
 * bytes NULL and len 0:
 *   -EFBIG   the file holds more than the limit,
 *   -ENOMEM,
 *   other    what opening, reading or closing the file gave (-ENOENT,
 *            -EACCES, -EISDIR, ...). */
typedef void (*file_read_cb)(void *data, int status, const char *bytes, size_t len);

/* Reads the file at path, at most max bytes of it. Returns 0, after which
 * cb runs exactly once, from the loop and never from within
 * file_read_start(), unless the read is cancelled first; *ret_read (when
 * ret_read is not NULL) then names the read for file_read_cancel(). Or
 * returns -EINVAL (NULL loop, path or cb), -ENOMEM, or an error libuv gave
 * at once; cb never runs then and *ret_read is not written. */
int file_read_start(uv_loop_t *loop, const char *path, size_t max, file_read_cb cb, void *data,
                    struct file_read **ret_read);

/* Makes sure cb never runs: for an owner that goes away mid-read. A uv_fs
 * request cannot be taken back, so the read in flight finishes on its own,
 * closes its file and frees itself; the loop must run until then (before,
 * uv_loop_close() says -EBUSY). NULL is ignored. Not from within cb or
 * after it has run: r is gone by then. */
void file_read_cancel(struct file_read *r);

#endif
