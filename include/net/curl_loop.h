/*
 * curl_loop: a libcurl multi handle driven by a libuv loop.
 *
 * The pattern of curl's docs/examples/multi-uv.c: curl tells us which
 * sockets to watch (a uv_poll each) and when to call it back (one uv_timer);
 * finished transfers are reported through a callback. Every HTTP client in
 * the program (the API client, the activity prober) is a thin layer over one
 * of these, so the tricky parts live in one place:
 *
 * - Callbacks are never synchronous: curl_loop_add() returns before anything
 *   can be reported, and done callbacks run from the loop.
 * - libcurl forbids touching the multi handle from inside its own callbacks
 *   (a write callback, say). curl_loop_add(), curl_loop_remove() and
 *   curl_loop_close() may nevertheless be called from anywhere, including a
 *   write or done callback: what libcurl would refuse is deferred until it
 *   has returned, and never reaches the caller's memory meanwhile.
 * - Closing with transfers in flight is safe: no callback of any kind
 *   follows curl_loop_close().
 *
 * Ownership: curl_loop_add() takes the easy handle and the header list. The
 * easy handle is cleaned up after its done callback returns, when it is
 * removed, or when the loop is closed; the header list is wiped (it may carry
 * credentials) and freed after the easy handle. The caller keeps whatever
 * else it gave the easy handle (URL copies are curl's own; CURLOPT_POSTFIELDS
 * is not copied, so prefer CURLOPT_COPYPOSTFIELDS) alive until then.
 */
#ifndef HIBERNATOR_NET_CURL_LOOP_H
#define HIBERNATOR_NET_CURL_LOOP_H

#include "util/must_use.h"
#include <curl/curl.h>
#include <uv.h>

struct curl_loop;

/* Receives response body bytes. Return 0 to go on; anything else aborts the
 * transfer (its done callback then sees CURLE_WRITE_ERROR). */
typedef int (*curl_loop_write_cb)(void *data, const char *bytes, size_t len);

/* A transfer ended. easy may be read (curl_easy_getinfo) during the call and
 * is cleaned up after it; error is libcurl's words for code ("" when code is
 * CURLE_OK). The callback may add, remove or close freely. */
typedef void (*curl_loop_done_cb)(void *data, CURL *easy, CURLcode code, const char *error);

/* Returns 0, or -ENOMEM (also when libcurl cannot be initialised). */
int curl_loop_new(uv_loop_t *loop, struct curl_loop **ret_cl);

/* Cancels every transfer (no callbacks follow) and frees the loop once libuv
 * has closed its handles: run the uv loop afterwards. Accepts NULL. */
void curl_loop_close(struct curl_loop *cl);

/* The multi handle, for multi-wide options (CURLMOPT_MAXCONNECTS, ...).
 * Never set the socket or timer functions, and never add or remove handles
 * on it directly. */
CURLM *curl_loop_multi(struct curl_loop *cl);

/*
 * Starts a transfer. curl_loop sets CURLOPT_PRIVATE, CURLOPT_WRITEFUNCTION,
 * CURLOPT_WRITEDATA, CURLOPT_ERRORBUFFER and CURLOPT_NOSIGNAL on easy; the
 * caller sets everything else first (headers must be the list passed here,
 * or none). on_write may be NULL to discard the body. done is called exactly
 * once unless the transfer is removed or the loop closed.
 *
 * Returns 0 and takes easy and headers, or -ENOMEM/-EINVAL and takes
 * nothing (the caller still owns both; no callback).
 */
MUST_USE int curl_loop_add(struct curl_loop *cl, CURL *easy, struct curl_slist *headers,
                           curl_loop_write_cb on_write, curl_loop_done_cb done, void *data);

/* Stops a transfer started with curl_loop_add() whose done callback has not
 * started yet: no callback of any kind follows, and the easy handle is
 * cleaned up (at once, or once libcurl has returned when called from inside
 * one of its callbacks). The caller may free its data on return. */
void curl_loop_remove(struct curl_loop *cl, CURL *easy);

/* Wipes every header (they may carry credentials) and frees the list, as
 * curl_loop does with the lists it is given; for lists never handed over.
 * Accepts NULL. */
void curl_loop_free_headers(struct curl_slist *headers);

/* Transfers added and not yet finished or removed. */
unsigned curl_loop_running(const struct curl_loop *cl);

/* A negative errno for a transfer error, for callers that report errno
 * values: -ETIMEDOUT, -ECONNREFUSED, -EHOSTUNREACH (name not resolved),
 * -EPROTO (TLS), -ENOMEM, -ECONNRESET (connection broken), -EIO otherwise. */
int curl_loop_errno(CURLcode code);

#endif
