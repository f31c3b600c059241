/*
 * registry_token: the client side of the distribution token authentication
 * (distribution's docs/spec/auth/token.md, which Docker Hub, GHCR, Harbor,
 * Quay and the cloud registries follow): a registry that answers 401 with
 *
 *   WWW-Authenticate: Bearer realm="https://auth.example/token",
 *                     service="registry.example",scope="repository:a/b:pull,push"
 *
 * is asked again with a token the realm issues for that service and scope
 * (GET realm?service=...&scope=..., with the registry's Basic credentials
 * when there are any; the answer's JSON "token", or "access_token").
 *
 * Pure: parsing and building text; the requests are node/registry.c's.
 * Ownership: ret_* strings are malloc'd, the caller's (a token is a
 * secret: secret_free_str()).
 */
#ifndef HIBERNATOR_NODE_REGISTRY_TOKEN_H
#define HIBERNATOR_NODE_REGISTRY_TOKEN_H

#include <stddef.h>

#define REGISTRY_CHALLENGE_FIELD 1024

struct registry_challenge {
    int bearer; /* the scheme is Bearer (else Basic or another) */
    char realm[REGISTRY_CHALLENGE_FIELD];
    char service[REGISTRY_CHALLENGE_FIELD];
    char scope[REGISTRY_CHALLENGE_FIELD];
};

/* A WWW-Authenticate header's value (scheme, then auth-params:
 * name=value or name="value" with \-escapes, separated by commas).
 * Returns 0 and *out, or -EINVAL (not a challenge; a parameter too long). */
int registry_challenge_parse(const char *value, struct registry_challenge *out);

/* The realm's URL for the challenge: realm, then ?service=..&scope=..
 * (those present; scope: the challenge's, else fallback_scope),
 * percent-encoded. Returns 0 and *ret_url, -EINVAL (the realm is not
 * https://: the credentials would go in clear), -ENOMEM. */
int registry_token_url(const struct registry_challenge *c, const char *fallback_scope,
                       char **ret_url);

/* The token of a token server's answer (JSON "token", else
 * "access_token"). Returns 0 and *ret_token, -EINVAL (no token), -ENOMEM. */
int registry_token_from_json(const char *body, size_t len, char **ret_token);

#endif
