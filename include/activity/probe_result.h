/*
 * probe_result: what one activity source (or several, merged) says about a
 * workspace at one moment.
 *
 * A probe that could not answer is reported as a failure (ok == 0) and never
 * as "idle": the controller must not pause a workspace because a probe broke,
 * so a failure stays visible through every merge.
 *
 * Ownership: the struct is plain data with fixed-size fields and no heap
 * pointers; copy it by assignment, nothing needs freeing. The parsers in
 * activity/jupyter.h, activity/code_server.h and activity/prometheus.h fill a
 * caller-owned struct and never keep a pointer to it or to the body.
 */
#ifndef HIBERNATOR_ACTIVITY_PROBE_RESULT_H
#define HIBERNATOR_ACTIVITY_PROBE_RESULT_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#define PROBE_ERROR_SIZE 256
#define PROBE_SOURCE_SIZE 32
#define PROBE_KERNELS_MAX 8

/* Longest response body a parser accepts. Far above anything a single
 * workspace produces; the HTTP side should cap its buffer at the same size. */
#define PROBE_BODY_MAX (1024 * 1024)

/* Bytes of a response body quoted in an error message at most (before
 * sanitising, see text_excerpt() in util/text.h). The body is never quoted
 * whole. */
#define PROBE_EXCERPT_MAX 64

struct probe_result {
    int ok;                         /* 0: the probe failed, see error */
    char error[PROBE_ERROR_SIZE];   /* NUL-terminated; "" when ok */
    int64_t last_activity_ms;       /* Unix ms; 0 unknown */
    int busy;                       /* work is running now */
    int connections;                /* clients attached (browsers, editors) */
    char source[PROBE_SOURCE_SIZE]; /* "jupyter", "code-server", "gpu"; merged: "jupyter+gpu" */
    double gpu_utilisation;         /* percent, 0..100; maximum over the pod's GPUs */
    int no_data;                    /* a source answered but had no samples (the GPU) */
    /* When the application's process started by its own account (Jupyter
     * Server's "started"), 0: it does not say. The same value after a
     * restore is the same process: its session came back. */
    int64_t app_started_ms;
    /* The kernels the application lists (Jupyter's /api/kernels), each as
     * the first 32 bits of SHA-256 of its id, ascending: the
     * PROBE_KERNELS_MAX smallest. n_kernels: how many it listed; -1: it
     * does not say (another source, or a kernel without an id). A restored
     * session lists the kernels it listed before its snapshot. */
    uint32_t kernels[PROBE_KERNELS_MAX];
    int n_kernels;
};

/* Resets *r to a successful, empty result from source (truncated to fit). */
void probe_result_init(struct probe_result *r, const char *source);

/* Resets *r to a failed result from source; error becomes "source: message"
 * so it still names its source after a merge. The message must not contain
 * secrets: it ends up in logs and in the workspace status. Truncated to
 * PROBE_ERROR_SIZE - 1 bytes. */
void probe_result_fail(struct probe_result *r, const char *source, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * Folds src into dst, so several sources give one answer:
 *   ok               only if both are ok: one failed source fails the whole
 *                    result, so a broken probe can never read as "idle";
 *   error            the failed sources' errors (each already starts with
 *                    its source) joined with "; ", truncated to fit;
 *   busy             if either is busy;
 *   last_activity_ms the later of the two (0 counts as unknown);
 *   connections      the sum (saturating);
 *   gpu_utilisation  the maximum;
 *   no_data          if either had none (only the GPU source can say so:
 *                    "no GPU samples" must survive a merge with Jupyter's);
 *   source           the distinct source names joined with '+'.
 * A zeroed dst (empty source) is the empty merge: src is copied into it, so
 * "struct probe_result all = {0};" followed by merges works.
 */
void probe_result_merge(struct probe_result *dst, const struct probe_result *src);

/* For the source parsers: parses body as one JSON value (trailing whitespace
 * allowed). On success *ret_root is a cJSON tree owned by the caller
 * (cJSON_Delete). On failure fills *r via probe_result_fail() naming source
 * and endpoint and returns -EBADMSG (not JSON, or trailing bytes) or
 * -EMSGSIZE (longer than PROBE_BODY_MAX). cJSON does not tell an allocation
 * failure from bad input, so that too reads as -EBADMSG. */
int probe_parse_json(const char *body, size_t len, const char *source, const char *endpoint,
                     struct probe_result *r, cJSON **ret_root);

#endif
