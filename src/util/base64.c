#include "util/base64.h"

#include <errno.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdint.h>
#include <stdlib.h>

#include "util/secret.h"

char *base64_encode(const void *data, size_t len)
{
    if (len > (size_t)INT32_MAX / 2)
        return NULL;
    char *out = malloc(4 * ((len + 2) / 3) + 1);
    if (out)
        EVP_EncodeBlock((unsigned char *)out, data, (int)len);
    return out;
}

int base64_decode(const char *in, size_t in_len, char **ret_data, size_t *ret_len)
{
    if (in_len > INT_MAX)
        return -EINVAL;
    /* Decoding never yields more than 3 bytes per 4 characters. */
    size_t cap = in_len / 4 * 3 + 3 + 1;
    unsigned char *out = malloc(cap);
    EVP_ENCODE_CTX *ctx = EVP_ENCODE_CTX_new();
    int r = -ENOMEM, n1 = 0, n2 = 0;
    if (!out || !ctx)
        goto out;
    EVP_DecodeInit(ctx);
    r = -EINVAL;
    if (EVP_DecodeUpdate(ctx, out, &n1, (const unsigned char *)in, (int)in_len) < 0)
        goto out;
    if (EVP_DecodeFinal(ctx, out + n1, &n2) < 0)
        goto out;
    if (n1 + n2 <= 0)
        goto out;
    out[n1 + n2] = '\0';
    *ret_data = (char *)out;
    *ret_len = (size_t)(n1 + n2);
    out = NULL;
    r = 0;
out:
    if (out)
        secret_free(out, cap);
    EVP_ENCODE_CTX_free(ctx);
    return r;
}
