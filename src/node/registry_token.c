#include "node/registry_token.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int is_token_char(char c)
{
    /* RFC 9110's tchar (strchr() would find the terminator too) */
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static const char *skip_space(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

int registry_challenge_parse(const char *value, struct registry_challenge *out)
{
    memset(out, 0, sizeof(*out));
    const char *p = skip_space(value ? value : "");
    const char *scheme = p;
    while (is_token_char(*p))
        p++;
    size_t slen = (size_t)(p - scheme);
    if (slen == 0)
        return -EINVAL;
    out->bearer = slen == 6 && strncasecmp(scheme, "Bearer", 6) == 0;
    while (*(p = skip_space(p))) {
        const char *name = p;
        while (is_token_char(*p))
            p++;
        size_t nlen = (size_t)(p - name);
        p = skip_space(p);
        if (nlen == 0 || *p != '=')
            return -EINVAL;
        p = skip_space(p + 1);
        char val[REGISTRY_CHALLENGE_FIELD];
        size_t vlen = 0;
        if (*p == '"') {
            for (p++; *p && *p != '"'; p++) {
                if (*p == '\\' && p[1])
                    p++;
                if (vlen + 1 >= sizeof(val))
                    return -EINVAL;
                val[vlen++] = *p;
            }
            if (*p != '"')
                return -EINVAL;
            p++;
        } else {
            for (; is_token_char(*p) || *p == '/' || *p == ':' || *p == '='; p++) {
                if (vlen + 1 >= sizeof(val))
                    return -EINVAL;
                val[vlen++] = *p;
            }
        }
        val[vlen] = '\0';
        char *dst = NULL;
        if (nlen == 5 && strncasecmp(name, "realm", 5) == 0)
            dst = out->realm;
        else if (nlen == 7 && strncasecmp(name, "service", 7) == 0)
            dst = out->service;
        else if (nlen == 5 && strncasecmp(name, "scope", 5) == 0)
            dst = out->scope;
        if (dst)
            memcpy(dst, val, vlen + 1);
        p = skip_space(p);
        if (*p == ',')
            p++;
        else if (*p)
            return -EINVAL;
    }
    return 0;
}

/* Appends s percent-encoded (all but RFC 3986's unreserved) to b. */
static int encode(char **b, size_t *len, size_t *cap, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (; *s; s++) {
        if (*len + 4 > *cap) {
            size_t ncap = *cap * 2 + 64;
            char *n = realloc(*b, ncap);
            if (!n)
                return -ENOMEM;
            *b = n;
            *cap = ncap;
        }
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '.' || c == '_' || c == '~') {
            (*b)[(*len)++] = (char)c;
        } else {
            (*b)[(*len)++] = '%';
            (*b)[(*len)++] = hex[c >> 4];
            (*b)[(*len)++] = hex[c & 15];
        }
    }
    (*b)[*len] = '\0';
    return 0;
}

int registry_token_url(const struct registry_challenge *c, const char *fallback_scope,
                       char **ret_url)
{
    *ret_url = NULL;
    if (strncmp(c->realm, "https://", 8) != 0 || !c->realm[8])
        return -EINVAL;
    const char *scope = c->scope[0] ? c->scope : fallback_scope;
    size_t cap = strlen(c->realm) + 64, len = strlen(c->realm);
    char *b = malloc(cap);
    if (!b)
        return -ENOMEM;
    memcpy(b, c->realm, len + 1);
    char sep = strchr(c->realm, '?') ? '&' : '?';
    int e = 0;
    const char *names[] = {"service=", "scope="};
    const char *values[] = {c->service[0] ? c->service : NULL, scope && scope[0] ? scope : NULL};
    for (int i = 0; i < 2 && e == 0; i++) {
        if (!values[i])
            continue;
        char head[16];
        snprintf(head, sizeof(head), "%c%s", sep, names[i]);
        sep = '&';
        size_t hl = strlen(head);
        if (len + hl + 1 > cap) {
            char *n = realloc(b, cap = len + hl + 64);
            if (!n) {
                e = -ENOMEM;
                break;
            }
            b = n;
        }
        memcpy(b + len, head, hl + 1);
        len += hl;
        e = encode(&b, &len, &cap, values[i]);
    }
    if (e < 0) {
        free(b);
        return e;
    }
    *ret_url = b;
    return 0;
}

int registry_token_from_json(const char *body, size_t len, char **ret_token)
{
    *ret_token = NULL;
    cJSON *root = cJSON_ParseWithLength(body, len);
    if (!root)
        return -EINVAL;
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(root, "token");
    if (!cJSON_IsString(t) || !t->valuestring[0])
        t = cJSON_GetObjectItemCaseSensitive(root, "access_token");
    int e = -EINVAL;
    if (cJSON_IsString(t) && t->valuestring[0]) {
        *ret_token = strdup(t->valuestring);
        e = *ret_token ? 0 : -ENOMEM;
    }
    /* The answer held the token: wipe the parsed copy before freeing. */
    if (cJSON_IsString(t))
        memset(t->valuestring, 0, strlen(t->valuestring));
    cJSON_Delete(root);
    return e;
}
