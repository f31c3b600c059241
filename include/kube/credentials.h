/*
 * kube_credentials: the bearer token or client certificate for each request,
 * kept fresh without blocking the event loop.
 *
 * - static token: used as is;
 * - token file: re-read (uv_fs, asynchronously) when older than a minute or
 *   after a 401, so service-account token rotation works; when a re-read
 *   fails the last good token (or the inline token) is used meanwhile;
 * - exec plugin: run with uv_spawn (no shell, its own session and
 *   environment: the parent's plus the config's env entries and
 *   KUBERNETES_EXEC_INFO), stdout bounded to 1 MiB, killed after 30 s,
 *   cached until 10 s before status.expirationTimestamp (forever when it
 *   has none) or a 401;
 * - none of these (no user, or a client certificate from the config, which
 *   the HTTP layer uses directly): a credential with every field NULL.
 *
 * Precedence as client-go: token file, then inline token, then exec plugin.
 *
 * Failures reach the callback as a negative errno and a message naming the
 * file or plugin: -ENOENT/-EACCES (file or command missing or not allowed),
 * -EFBIG (output or file too large), -ETIMEDOUT (plugin killed after the
 * timeout), -EIO (plugin exited non-zero or was killed by a signal; the
 * message quotes the first line of its stderr), -EBADMSG (output is not a
 * valid ExecCredential), -ECANCELED (the object was freed).
 *
 * Ownership: kube_credentials_new() copies what it needs from the config; the
 * object is released with kube_credentials_free(). The kube_credential passed
 * to a callback is owned by the credentials object and valid only during the
 * callback.
 */
#ifndef HIBERNATOR_KUBE_CREDENTIALS_H
#define HIBERNATOR_KUBE_CREDENTIALS_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "kube/config.h"

struct kube_credential {
    const char *token;    /* bearer token or NULL */
    const char *cert_pem; /* client certificate from an exec plugin, or NULL */
    size_t cert_pem_len;
    const char *key_pem;
    size_t key_pem_len;
};

struct kube_credentials;

/* status is 0 or a negative errno; err explains a failure (never holds a secret). */
typedef void (*kube_credentials_cb)(void *data, int status, const struct kube_credential *cred,
                                    const char *err);

/* Credentials for the user config names, on loop (borrowed: it must outlive
 * them). Nothing is read or run before kube_credentials_get(). Returns 0 and
 * *ret_credentials (the caller's), -EINVAL (a NULL argument, or an exec
 * plugin without command or apiVersion) or -ENOMEM. */
int kube_credentials_new(uv_loop_t *loop, const struct kube_config *config,
                         struct kube_credentials **ret_credentials);

/* Calls cb with a current credential: at once (before returning) when
 * cached or when a refresh cannot even start, later when a token file must
 * be read or a plugin run. Concurrent requests share one refresh. cb may
 * call get, invalidate or free on c. */
void kube_credentials_get(struct kube_credentials *c, kube_credentials_cb cb, void *data);

/* How long an exec plugin may run before it is killed (default 30 s). Tests
 * shorten it; a deployment has no reason to. Applies to later runs. */
void kube_credentials_set_exec_timeout(struct kube_credentials *c, uint64_t timeout_ms);

/* Forgets the cached credential (after a 401) so the next get refreshes it. */
void kube_credentials_invalidate(struct kube_credentials *c);

/* Releases everything; pending callbacks are called with -ECANCELED first.
 * A running plugin is killed (with anything it started); its handles close
 * on the loop, so run the loop afterwards to let it finish. Accepts NULL. */
void kube_credentials_free(struct kube_credentials *c);

#endif
