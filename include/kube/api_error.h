/*
 * kube_api_error: a failed API call in the API server's own words.
 *
 * The API server answers failures with a metav1.Status body
 * ({"kind":"Status","code":409,"reason":"Conflict","message":"..."}); watch
 * streams carry the same object in an ERROR event. This module turns either
 * into code + reason + message, falling back to the HTTP status line when the
 * body is not a Status (a proxy's HTML page, an empty body).
 *
 * Messages are made safe to log: one line of valid UTF-8 without control
 * characters, cut to about 1 KiB (a non-Status body to its first ~200 bytes)
 * with "…", and anything shaped like a bearer token or JWT replaced by
 * "[redacted]". A reason that does not look like a StatusReason (a
 * CamelCase word) is replaced by the default reason for the code.
 *
 * Ownership: the strings inside are owned by the struct; release them with
 * kube_api_error_clear(). The fill functions write e only on success and do
 * not free what it held before: pass a zeroed or cleared struct.
 */
#ifndef HIBERNATOR_KUBE_API_ERROR_H
#define HIBERNATOR_KUBE_API_ERROR_H

#include <cjson/cJSON.h>
#include <stddef.h>

struct kube_api_error {
    long code;     /* HTTP status code, e.g. 404, 409, 410 */
    char *reason;  /* metav1.StatusReason, e.g. "NotFound"; never NULL after parse */
    char *message; /* human-readable; never NULL after parse */
};

/* Fills e from an HTTP status code and response body (may be NULL/empty).
 * A Status body's own code wins, as in client-go; the HTTP code is used when
 * the body has none (or 0). Any other body gives the default reason for the
 * HTTP code and a message "HTTP <code>: <start of the body>".
 * Returns 0 or -ENOMEM. */
int kube_api_error_parse(long http_code, const char *body, size_t len, struct kube_api_error *e);

/* Fills e from a Status object (an ERROR watch event's "object"). code is 0
 * when the Status has none. Returns 0, -EINVAL when obj is not a Status
 * ("kind":"Status", or no kind and a "status" of Failure/Success), or -ENOMEM. */
int kube_api_error_from_status(const cJSON *obj, struct kube_api_error *e);

/* The StatusReason the API server uses for a code when the body gave none
 * ("NotFound" for 404, "Conflict" for 409, "Gone" for 410, "InternalError"
 * for an unlisted 5xx, "Unknown" otherwise). Never NULL; static storage. */
const char *kube_api_error_default_reason(long http_code);

/* True for reason Conflict, or a 409 without a reason: re-read and retry.
 * AlreadyExists (also a 409) is not a conflict: retrying will not help. */
int kube_api_error_is_conflict(const struct kube_api_error *e);
/* True for reason Expired or Gone, or a 410 without a reason: the
 * resourceVersion is too old, relist. ("Unknown" counts as no reason.) */
int kube_api_error_is_gone(const struct kube_api_error *e);

/* Frees e's strings and zeroes it, ready to be filled again. Accepts NULL. */
void kube_api_error_clear(struct kube_api_error *e);

#endif
