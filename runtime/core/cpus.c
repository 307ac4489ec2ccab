/* cpus.c: how many CPUs this program may use, and how many nodes `auto` means.
 *
 * The CPUs a program may use are fewer than the machine's when it is confined:
 * its affinity mask (taskset, a batch system's binding), its cgroup's CPU quota
 * (a container: v2 cpu.max, v1 cpu.cfs_quota_us over cpu.cfs_period_us, rounded
 * up), and Slurm's SLURM_CPUS_PER_TASK. Each caps the others. `auto` (ETC_NODES,
 * etcrun -n) also leaves out the CPUs other jobs are using at start-up (runnable
 * tasks in /proc/loadavg, ourselves excluded), as LLPC picks a process count from
 * the load (seed 003); never fewer than one node. etcpre/cpus.py is the same rule
 * for etcrun; a test keeps the two equal. */
#include <ctype.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/rts.h"

/* Reads a file's first line; 0 if it cannot. */
static int read_line(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int ok = fgets(buf, (int)cap, f) != NULL;
    fclose(f);
    return ok;
}

/* ceil(quota / period) for a positive quota, else 0 (no limit). */
static long quota_cpus(long long quota, long long period)
{
    if (quota <= 0 || period <= 0)
        return 0;
    return (long)((quota + period - 1) / period);
}

/* The quota of one cgroup directory (v2, then v1), 0 for none. */
static long dir_quota(const char *dir)
{
    char path[PATH_MAX], line[128];
    snprintf(path, sizeof path, "%s/cpu.max", dir);
    if (read_line(path, line, sizeof line)) {
        long long quota, period;
        if (strncmp(line, "max", 3) == 0)
            return 0;
        if (sscanf(line, "%lld %lld", &quota, &period) == 2)
            return quota_cpus(quota, period);
        return 0;
    }
    snprintf(path, sizeof path, "%s/cpu.cfs_quota_us", dir);
    long long quota = 0, period = 0;
    if (!read_line(path, line, sizeof line) || sscanf(line, "%lld", &quota) != 1)
        return 0;
    snprintf(path, sizeof path, "%s/cpu.cfs_period_us", dir);
    if (!read_line(path, line, sizeof line) || sscanf(line, "%lld", &period) != 1)
        return 0;
    return quota_cpus(quota, period);
}

/* The smallest quota on the way from our cgroup up to the hierarchy's root (a
 * parent's limit holds for its children), 0 for none. ETC_CGROUP_DIR names the
 * directory to read instead (tests give fake files there). */
static long cgroup_quota(void)
{
    const char *given = getenv("ETC_CGROUP_DIR");
    if (given && *given)
        return dir_quota(given);
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (!f)
        return 0;
    char line[PATH_MAX], dir[PATH_MAX] = "";
    const char *root = NULL;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char *path = strrchr(line, ':');
        if (!path)
            continue;
        if (strncmp(line, "0::", 3) == 0 && !root) { /* v2 */
            root = "/sys/fs/cgroup";
            snprintf(dir, sizeof dir, "%s", path + 1);
        } else if (strstr(line, ":cpu,") || strstr(line, ":cpu:") || strstr(line, ",cpu:")) {
            root = "/sys/fs/cgroup/cpu,cpuacct"; /* v1's usual mount */
            snprintf(dir, sizeof dir, "%s", path + 1);
            if (access(root, F_OK) != 0)
                root = "/sys/fs/cgroup/cpu";
            break;
        }
    }
    fclose(f);
    if (!root)
        return 0;
    long best = 0;
    for (;;) {
        char full[2 * PATH_MAX];
        snprintf(full, sizeof full, "%s%s", root, dir);
        long q = dir_quota(full);
        if (q > 0 && (best == 0 || q < best))
            best = q;
        char *slash = strrchr(dir, '/');
        if (!slash || dir[0] == 0)
            break;
        *slash = 0; /* the parent ("" is the root) */
    }
    return best;
}

int etc_usable_cpus(void)
{
    static int cached;
    if (cached)
        return cached;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        n = CPU_COUNT(&set);
    long quota = cgroup_quota();
    if (quota > 0 && quota < n)
        n = quota;
    const char *slurm = getenv("SLURM_CPUS_PER_TASK");
    if (slurm && *slurm) {
        char *end;
        long s = strtol(slurm, &end, 10);
        if (*end == 0 && s > 0 && s < n)
            n = s;
    }
    cached = n > 0 ? (int)(n < ETC_MAX_NODES ? n : ETC_MAX_NODES) : 1;
    return cached;
}

/* /proc/loadavg's fourth field is "runnable/total", ourselves included, counted
 * at the moment of the read (ETC_LOADAVG names another file, for tests). */
int etc_runnable_tasks(void)
{
    const char *path = getenv("ETC_LOADAVG");
    char line[256];
    if (!read_line(path && *path ? path : "/proc/loadavg", line, sizeof line))
        return 0;
    double l1, l5, l15;
    int running, total;
    if (sscanf(line, "%lf %lf %lf %d/%d", &l1, &l5, &l15, &running, &total) != 5)
        return 0;
    return running > 0 ? running : 0;
}

/* The tasks other jobs have runnable now. */
static int others_runnable(void)
{
    int running = etc_runnable_tasks();
    return running > 1 ? running - 1 : 0;
}

/* `auto`: the usable CPUs less the busy ones, never fewer than one node */
static int auto_of(int usable, int busy)
{
    return usable - busy > 0 ? usable - busy : 1;
}

int etc_auto_nodes(void)
{
    return auto_of(etc_usable_cpus(), others_runnable());
}

/* etcrun asks a remote host what `auto` means there by running the program itself
 * with ETC_QUERY=auto-nodes (the one etc artefact every host has): it answers on
 * stdout and exits without starting a node. */
int etc_cpus_answer_query(const char *query)
{
    if (strcmp(query, "auto-nodes") != 0) {
        fprintf(stderr, "etc: error: ETC_QUERY='%s' is not a question this program "
                        "answers (auto-nodes)\n", query);
        return 2;
    }
    int usable = etc_usable_cpus(), busy = others_runnable();
    printf("etc-auto-nodes %d usable %d busy %d\n", auto_of(usable, busy), usable, busy);
    return fflush(stdout) == 0 ? 0 : 1;
}
