/*
 * A real Jupyter Server in a pod of the real node, from the tests: its
 * status over the pod IP and cells run in its kernels through
 * tests/tools/jupyter_run.py (kubectl exec). The pods are in the test's
 * namespace (ns, workspaces.h); token is the server's token.
 */
#ifndef HIBERNATOR_IT_JUPYTER_H
#define HIBERNATOR_IT_JUPYTER_H

/* kubectl -n ns get pod <pod> -o jsonpath=<jsonpath>; fails the test when
 * kubectl does. Caller frees. */
char *jupyter_pod_field(const char *pod, const char *jsonpath);

/* GET /api/status over the pod IP, retried for up to 30 s; fails the test
 * when it never answers. Caller frees. */
char *jupyter_status(const char *pod, const char *token);

/* The "started" of a /api/status answer into out. */
void jupyter_started_of(const char *status, char out[64]);

/* Runs code in kernel (NULL: a new one) of the pod's server (container
 * "workspace"), whose runtime files are in runtime_dir; returns the output,
 * its first line the kernel's id. Fails the test when the cell fails.
 * Caller frees. */
char *jupyter_run_cell(const char *pod, const char *token, const char *runtime_dir,
                       const char *kernel, const char *code);

#endif
