#include "node/checkpoint_image.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

void oci_digest(const void *data, size_t len, char out[OCI_DIGEST_SIZE])
{
    unsigned char md[32];
    unsigned int n = 0;
    EVP_Digest(data, len, md, &n, EVP_sha256(), NULL);
    memcpy(out, "sha256:", 7);
    for (unsigned i = 0; i < 32; i++)
        snprintf(out + 7 + 2 * i, 3, "%02x", md[i]);
}

int oci_digest_valid(const char *s)
{
    if (!s || strncmp(s, "sha256:", 7) != 0 || strlen(s) != 7 + 64)
        return 0;
    for (const char *p = s + 7; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return 0;
    return 1;
}

/* A word that goes into JSON as it is: printable, no quote or backslash. */
static int plain_word(const char *s)
{
    if (!s || !*s)
        return 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p >= 0x7f || *p == '"' || *p == '\\')
            return 0;
    return 1;
}

static int document(struct oci_document *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int document(struct oci_document *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&d->text, fmt, ap);
    va_end(ap);
    if (n < 0) {
        d->text = NULL;
        return -ENOMEM;
    }
    d->len = (size_t)n;
    oci_digest(d->text, d->len, d->digest);
    return 0;
}

int checkpoint_image_build(const char *layer_digest, int64_t layer_size, const char *container,
                           const char *architecture, const char *os, struct checkpoint_image *ret)
{
    memset(ret, 0, sizeof(*ret));
    if (!oci_digest_valid(layer_digest) || layer_size < 0 || !plain_word(container) ||
        !plain_word(architecture) || !plain_word(os))
        return -EINVAL;
    int e = document(&ret->config,
                     "{\"architecture\":\"%s\",\"os\":\"%s\",\"config\":{},"
                     "\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"%s\"]}}",
                     architecture, os, layer_digest);
    if (e == 0)
        e = document(&ret->manifest,
                     "{\"schemaVersion\":2,\"mediaType\":\"" OCI_MEDIA_MANIFEST "\","
                     "\"config\":{\"mediaType\":\"" OCI_MEDIA_CONFIG "\",\"digest\":\"%s\","
                     "\"size\":%zu},"
                     "\"layers\":[{\"mediaType\":\"" OCI_MEDIA_LAYER_TAR "\",\"digest\":\"%s\","
                     "\"size\":%lld}]}",
                     ret->config.digest, ret->config.len, layer_digest, (long long)layer_size);
    if (e == 0)
        e = document(&ret->index,
                     "{\"schemaVersion\":2,\"mediaType\":\"" OCI_MEDIA_INDEX "\","
                     "\"manifests\":[{\"mediaType\":\"" OCI_MEDIA_MANIFEST "\",\"digest\":\"%s\","
                     "\"size\":%zu,\"platform\":{\"architecture\":\"%s\",\"os\":\"%s\"}}],"
                     "\"annotations\":{\"" CHECKPOINT_IMAGE_ANNOTATION "\":\"%s\"}}",
                     ret->manifest.digest, ret->manifest.len, architecture, os, container);
    if (e != 0)
        checkpoint_image_free(ret);
    return e;
}

void checkpoint_image_free(struct checkpoint_image *img)
{
    if (!img)
        return;
    free(img->config.text);
    free(img->manifest.text);
    free(img->index.text);
    memset(img, 0, sizeof(*img));
}

const char *oci_architecture(void)
{
    static const struct {
        const char *machine, *word;
    } words[] = {
        {"x86_64", "amd64"}, {"aarch64", "arm64"},   {"ppc64le", "ppc64le"},
        {"s390x", "s390x"},  {"riscv64", "riscv64"},
    };
    struct utsname u;
    if (uname(&u) != 0)
        return NULL;
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
        if (strcmp(u.machine, words[i].machine) == 0)
            return words[i].word;
    return NULL;
}
