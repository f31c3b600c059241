/*
 * What a benchmark reports about its own process: CPU seconds and memory
 * from the kernel's accounting.
 */
#ifndef HIBERNATOR_BENCH_PROCESS_STATS_H
#define HIBERNATOR_BENCH_PROCESS_STATS_H

/* User + system CPU seconds of this process so far. */
double process_cpu_s(void);

/* A "<field>: <n> kB" line of /proc/self/status ("VmRSS", "VmHWM"), in KiB;
 * -1 when absent. */
long process_status_kib(const char *field);

#endif
