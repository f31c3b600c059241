#include "util/secret.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

void secret_free(void *p, size_t len)
{
    if (!p)
        return;
    OPENSSL_cleanse(p, len);
    free(p);
}

void secret_free_str(char *s)
{
    if (s)
        secret_free(s, strlen(s));
}

void secret_buf_free(struct buf *b)
{
    if (b->data)
        OPENSSL_cleanse(b->data, b->cap);
    buf_free(b);
}
