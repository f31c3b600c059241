#include "workspace/names.h"

#include <errno.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <string.h>

/* Suffixes are short and made here: "-p<int64>-<int64>" is the longest. */
#define MAX_SUFFIX 64

static int is_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

int names_fit(const char *base, const char *suffix, size_t limit, char out[NAMES_SIZE])
{
    size_t nb = strlen(base), ns = strlen(suffix);
    if (nb == 0 || nb > NAMES_MAX_OBJECT || ns > MAX_SUFFIX || limit > NAMES_MAX_OBJECT ||
        limit < ns + 1 + NAMES_HASH_LEN + 1)
        return -EINVAL;
    if (nb + ns <= limit) {
        memcpy(out, base, nb);
        memcpy(out + nb, suffix, ns + 1);
        return (int)(nb + ns);
    }
    /* The hash covers the whole name, so bases that share the kept part
     * still differ. */
    char whole[NAMES_MAX_OBJECT + MAX_SUFFIX + 1];
    memcpy(whole, base, nb);
    memcpy(whole + nb, suffix, ns);
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)whole, nb + ns, md);

    size_t keep = limit - ns - 1 - NAMES_HASH_LEN;
    while (keep > 0 && !is_alnum(base[keep - 1]))
        keep--;
    size_t n = 0;
    memcpy(out, base, keep);
    n += keep;
    if (keep)
        out[n++] = '-';
    for (size_t i = 0; i < NAMES_HASH_LEN / 2; i++) {
        static const char hex[] = "0123456789abcdef";
        out[n++] = hex[md[i] >> 4];
        out[n++] = hex[md[i] & 0x0f];
    }
    memcpy(out + n, suffix, ns + 1);
    return (int)(n + ns);
}

int names_pod(const char *workspace, int64_t pod_generation, char out[NAMES_SIZE])
{
    char suffix[MAX_SUFFIX];
    snprintf(suffix, sizeof(suffix), "-%lld", (long long)pod_generation);
    return names_fit(workspace, suffix, NAMES_MAX_LABEL, out);
}

/* The decimal number that s is exactly, or -1. */
static int64_t parse_count(const char *s)
{
    if (!*s)
        return -1;
    int64_t n = 0;
    for (; *s; s++) {
        int d = *s - '0';
        if (d < 0 || d > 9 || n > (INT64_MAX - d) / 10)
            return -1;
        n = n * 10 + d;
    }
    return n;
}

int64_t names_pod_generation(const char *workspace, const char *pod_name)
{
    const char *dash = strrchr(pod_name, '-');
    int64_t n = dash ? parse_count(dash + 1) : -1;
    char built[NAMES_SIZE];
    if (n >= 0 && names_pod(workspace, n, built) >= 0 && strcmp(built, pod_name) == 0)
        return n;
    size_t len = strlen(workspace);
    if (strncmp(pod_name, workspace, len) != 0 || pod_name[len] != '-')
        return -1;
    return parse_count(pod_name + len + 1);
}

int names_home_claim(const char *workspace, char out[NAMES_SIZE])
{
    return names_fit(workspace, "-home", NAMES_MAX_OBJECT, out);
}

int names_snapshot_handle(const char *workspace, int64_t pauses, int64_t attempt,
                          char out[NAMES_SIZE])
{
    char suffix[MAX_SUFFIX];
    snprintf(suffix, sizeof(suffix), "-p%lld-%lld", (long long)pauses, (long long)attempt);
    return names_fit(workspace, suffix, NAMES_MAX_LABEL, out);
}

int names_snapshot_policy(const char *workspace, char out[NAMES_SIZE])
{
    return names_fit(workspace, "-snapshots", NAMES_MAX_OBJECT, out);
}
