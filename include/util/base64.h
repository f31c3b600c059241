/*
 * base64 over OpenSSL's EVP encoder, for every place that reads or writes
 * it (kubeconfig data fields, a Secret's token, KUBERNETES_EXEC_INFO).
 *
 * Ownership: the caller frees what these return; a decoded buffer may hold
 * a credential, so free it with secret_free(data, len + 1).
 */
#ifndef HIBERNATOR_UTIL_BASE64_H
#define HIBERNATOR_UTIL_BASE64_H

#include <stddef.h>

#include "util/must_use.h"

/* The base64 text of len bytes at data, NUL-terminated, without line
 * breaks. Returns NULL out of memory or for more than INT32_MAX / 2 bytes. */
char *base64_encode(const void *data, size_t len);

/* Decodes in_len characters of base64, tolerating line breaks or their
 * absence. Returns 0 and *ret_data (NUL-terminated, *ret_len bytes before
 * the NUL), -EINVAL for text that is not base64 or decodes to nothing, or
 * -ENOMEM. Nothing is written on failure. */
MUST_USE int base64_decode(const char *in, size_t in_len, char **ret_data, size_t *ret_len);

#endif
