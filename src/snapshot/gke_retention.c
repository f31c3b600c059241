#include "snapshot/gke_retention.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#define MINUTE_MS ((int64_t)60000)
#define HOUR_MIN ((int64_t)60)
#define DAY_MIN ((int64_t)1440)

int gke_retention_format(int64_t ms, char out[GKE_RETENTION_SIZE])
{
    if (ms < 0)
        return -EINVAL;
    /* Rounded up without overflow: ms is at most INT64_MAX. */
    int64_t min = ms / MINUTE_MS + (ms % MINUTE_MS != 0);
    if (min >= GKE_RETENTION_MAX_DAYS * DAY_MIN)
        snprintf(out, GKE_RETENTION_SIZE, "%dd", GKE_RETENTION_MAX_DAYS);
    else if (min > 0 && min % DAY_MIN == 0)
        snprintf(out, GKE_RETENTION_SIZE, "%" PRId64 "d", min / DAY_MIN);
    else if (min > 0 && min % HOUR_MIN == 0)
        snprintf(out, GKE_RETENTION_SIZE, "%" PRId64 "h", min / HOUR_MIN);
    else
        snprintf(out, GKE_RETENTION_SIZE, "%" PRId64 "min", min);
    return 0;
}
