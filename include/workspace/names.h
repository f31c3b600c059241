/*
 * names: the object names the controller derives from a workspace's name,
 * made to fit their Kubernetes limits (docs/api.md, "Names").
 *
 * A derived name is "<base><suffix>" when that fits its limit. Otherwise it
 * is the base cut short, a dash, the first NAMES_HASH_LEN hex digits of the
 * SHA-256 of the whole "<base><suffix>", and the suffix:
 * "<base cut>-<hash><suffix>". The cut never ends on anything but a letter or
 * a digit, so a base that is a DNS-1123 subdomain or a label value gives a
 * result of the same syntax; the suffix is kept whole, so a counter in it
 * stays readable. The result depends on its inputs only: the same after a
 * restart, and two long bases that differ anywhere give different names.
 * Names that fit are left as they are, so objects named before a name had to
 * be cut are still found.
 *
 * Pure, no allocation: results go to the caller's buffer of NAMES_SIZE bytes.
 * Functions return the result's length, or -EINVAL when the base is empty or
 * longer than NAMES_MAX_OBJECT, or the suffix leaves no room for a base.
 */
#ifndef HIBERNATOR_WORKSPACE_NAMES_H
#define HIBERNATOR_WORKSPACE_NAMES_H

#include <stddef.h>
#include <stdint.h>

/* Most object names: a DNS-1123 subdomain. */
#define NAMES_MAX_OBJECT 253
/* A label value; also a pod's name, which becomes its hostname (a DNS label),
 * and a snapshot trigger's name, which GKE writes into a label value. */
#define NAMES_MAX_LABEL 63
#define NAMES_HASH_LEN 8
/* A buffer for any derived name, with its NUL. */
#define NAMES_SIZE (NAMES_MAX_OBJECT + 1)

/* "<base><suffix>" in at most limit characters (at most NAMES_MAX_OBJECT),
 * cut and hashed as above when longer. */
int names_fit(const char *base, const char *suffix, size_t limit, char out[NAMES_SIZE]);

/* The pod of a pod generation: "<workspace>-<n>", at most NAMES_MAX_LABEL. */
int names_pod(const char *workspace, int64_t pod_generation, char out[NAMES_SIZE]);

/* The n of a pod name names_pod() gives, or of "<workspace>-<n>" of any
 * length (as pods were named before names were cut); -1 for any other name. */
int64_t names_pod_generation(const char *workspace, const char *pod_name);

/* The home claim: "<workspace>-home", at most NAMES_MAX_OBJECT (a workspace
 * name of at most 63 characters is never cut). */
int names_home_claim(const char *workspace, char out[NAMES_SIZE]);

/* A snapshot attempt's handle, the GKE trigger's name:
 * "<workspace>-p<pauses>-<attempt>", at most NAMES_MAX_LABEL since GKE labels
 * the PodSnapshot with it (gke-pod-snapshot-triggered-by). */
int names_snapshot_handle(const char *workspace, int64_t pauses, int64_t attempt,
                          char out[NAMES_SIZE]);

/* The GKE PodSnapshotPolicy: "<workspace>-snapshots", at most
 * NAMES_MAX_OBJECT (never cut for a workspace name of at most 63). */
int names_snapshot_policy(const char *workspace, char out[NAMES_SIZE]);

#endif
