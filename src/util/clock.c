#include "util/clock.h"

#include <time.h>

int64_t clock_unix_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t clock_unix_ms_cb(void *data)
{
    (void)data;
    return clock_unix_ms();
}
