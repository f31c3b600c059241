/*
 * registry: pushes a checkpoint image to an OCI registry and deletes it, over
 * the OCI distribution API (blob upload in one PUT, manifests by digest, the
 * index by tag). Credentials: HTTP Basic, or, for a registry that answers
 * 401 with a Bearer challenge, a token from its realm (the distribution
 * token authentication, node/registry_token.h), asked for with the Basic
 * credentials and kept for the rest of the push or delete.
 *
 * Blocking: every call here runs on libuv's thread pool (uv_queue_work),
 * never on the event loop. Each call uses its own libcurl easy handle.
 * Answers are read up to REGISTRY_MAX_BODY bytes (error texts only; the
 * layer goes up, never down).
 *
 * Ownership: strings returned through ret_* are malloc'd, the caller's.
 * Error texts name the registry, the repository and the HTTP status, never
 * the credentials.
 */
#ifndef HIBERNATOR_NODE_REGISTRY_H
#define HIBERNATOR_NODE_REGISTRY_H

#include <stdint.h>

#include "node/checkpoint_image.h"

#define REGISTRY_MAX_BODY (64 * 1024)

struct registry_access {
    const char *ca_file;   /* PEM bundle to trust; NULL: the system's */
    const char *basic;     /* "user:password" for HTTP Basic; NULL: anonymous */
    long timeout_s;        /* per request (the layer's PUT too); 0: none */
    long low_speed_bytes;  /* abort a transfer slower than this ... */
    long low_speed_time_s; /* ... for this long (0: never) */
};

/* A repository "host[:port]/path" split: ret_host "host[:port]", ret_path
 * "path". Returns 0, -EINVAL (no '/', an empty host or path), -ENOMEM. */
int registry_split(const char *repository, char **ret_host, char **ret_path);

/* The "user:password" for host from a Docker config file's JSON text
 * (kubernetes.io/dockerconfigjson: {"auths":{HOST:{"auth":base64} or
 * {"username","password"}}}). Returns 1 and *ret_basic, 0 when the file
 * names no credentials for host, or -EINVAL/-ENOMEM (*ret_err says what,
 * without the credentials; ret_err may be NULL). */
int registry_credentials(const char *dockerconfig_json, const char *host, char **ret_basic,
                         char **ret_err);

struct registry_pushed {
    char index_digest[OCI_DIGEST_SIZE]; /* what a restore pod names: REPOSITORY@this */
    int64_t layer_bytes;
    double hash_seconds, upload_seconds; /* reading and hashing the archive; the pushes */
    int layer_existed;                   /* the registry had the layer already */
};

/*
 * Pushes archive (the kubelet's checkpoint tar) as the checkpoint image of
 * container to repository ("host[:port]/path") under tag, for architecture
 * on linux, then reads it back: the tag must name the index pushed (its
 * Docker-Content-Digest), the layer must have the archive's size. A layer
 * the registry has already is not sent again.
 * Returns 0 and *ret, or a negative errno and *ret_err (the step, the
 * registry's answer; NULL when out of memory).
 */
int registry_push_checkpoint(const struct registry_access *a, const char *repository,
                             const char *tag, const char *archive, const char *container,
                             const char *architecture, struct registry_pushed *ret, char **ret_err);

/* Deletes the manifest digest (the index) from repository; its blobs are
 * the registry's garbage collection's. Not found counts as done. Returns 0
 * or a negative errno and *ret_err. */
int registry_delete(const struct registry_access *a, const char *repository, const char *digest,
                    char **ret_err);

#endif
