/*
 * describe: the text of `kubectl workspace describe NAME`.
 *
 * Sections: the spec in brief (class, image, paused, home, keep-alive,
 * idle-after), the state and where it runs, activity, conditions, the last
 * pause and the last resume as timelines, the snapshot, accounting, the
 * pause history (status.history, when the controller keeps one) and the
 * workspace's Events, oldest first as kubectl sorts them (by
 * series.lastObservedTime, else lastTimestamp, else eventTime; a finer
 * eventTime within the same second breaks ties).
 *
 * Pure: the objects and "now" are arguments. Text from the cluster is
 * printed with control characters made harmless (table.h).
 */
#ifndef HIBERNATOR_CLI_DESCRIBE_H
#define HIBERNATOR_CLI_DESCRIBE_H

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>

/* Most recent Events shown. */
#define DESCRIBE_MAX_EVENTS 25

/* events: a core/v1 EventList of the namespace, or NULL when it could not
 * be read (the section then says so). Events of other objects are skipped.
 * Returns 0 or -ENOMEM. */
int describe_print(const cJSON *ws, const cJSON *events, int64_t now_ms, FILE *out);

#endif
