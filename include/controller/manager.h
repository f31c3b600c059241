/*
 * manager: the running controller: one loop, one API client, leader
 * election, and the informers the controller reads from.
 *
 * manager_run() blocks in uv_run() until SIGTERM/SIGINT (then it releases
 * the Lease and returns 0) or until leadership is lost (returns 1, so the
 * process restarts with a clean slate, as client-go controllers do).
 */
#ifndef HIBERNATOR_CONTROLLER_MANAGER_H
#define HIBERNATOR_CONTROLLER_MANAGER_H

#include "controller/options.h"

/* Runs the controller as o says (borrowed for the whole run). Returns the
 * process's exit status: as above, or 1 (logged) when it cannot start: the
 * kubeconfig does not load, or the API client, the health and metrics
 * servers, leader election or the controllers cannot be made. */
int manager_run(const struct controller_options *options);

#endif
