/*
 * Feeds arbitrary bytes to the TZif reader: it must refuse cleanly (an error
 * naming the zone, no crash, no leak) or return a zone whose every lookup
 * stays in range, across the years a pause window can name.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "util/tz.h"
#include "workspace/pause_window.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tz *z = NULL;
    char *err = NULL;
    if (tz_parse("fuzz", data, size, &z, &err) < 0) {
        if (!err)
            abort(); /* -ENOMEM only; the fuzzer does not fail allocations */
        free(err);
        return 0;
    }
    static const int64_t instants[] = {INT64_C(-2208988800), 0,
                                       INT64_C(1711846800),  INT64_C(1729990800),
                                       INT64_C(2147483647),  INT64_C(4102444800)};
    for (size_t i = 0; i < sizeof(instants) / sizeof(instants[0]); i++) {
        struct tz_civil c;
        if (tz_civil_at(z, instants[i], &c) == 0 &&
            (c.month < 1 || c.month > 12 || c.hour < 0 || c.hour > 23 || c.wday < 0 || c.wday > 6))
            abort();
        int64_t back;
        (void)tz_local_to_utc(z, 2026, 3, 29, 2, 30, &back);
    }
    struct pause_schedule s = {.n_windows = 1, .windows = {{0, 19 * 60, 8 * 60}}};
    int allowed;
    int64_t change;
    (void)pause_schedule_next(&s, z, INT64_C(1764500000000), &allowed, &change);
    tz_free(z);
    return 0;
}
