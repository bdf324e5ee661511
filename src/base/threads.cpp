// threads.cpp: see threads.h.
#include "base/threads.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sched.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "base/util.h"

namespace {

// Ticks the CPUs in this process's affinity mask spent busy (everything but idle and iowait; steal is
// busy: a hypervisor's neighbour) and in all, since boot, and how many CPUs that is; false where
// /proc/stat or the mask cannot be read.
bool cpu_ticks(long long* busy, long long* total, int* cpus) {
    cpu_set_t mask;
    if (sched_getaffinity(0, sizeof(mask), &mask) != 0) return false;
    FILE* f = fopen("/proc/stat", "r");
    if (!f) return false;
    char line[512];
    *busy = *total = 0;
    *cpus = 0;
    while (fgets(line, sizeof(line), f)) {
        int cpu = -1, used = 0;
        long long v[8] = {0};
        if (strncmp(line, "cpu", 3) != 0 || line[3] < '0' || line[3] > '9') continue;  // the per-CPU lines
        if (sscanf(line, "cpu%d %n", &cpu, &used) != 1 || cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &mask))
            continue;
        if (sscanf(line + used, "%lld %lld %lld %lld %lld %lld %lld %lld", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                   &v[6], &v[7]) < 5)
            continue;
        long long sum = 0;
        for (long long x : v) sum += x;
        *total += sum;
        *busy += sum - v[3] - v[4];
        (*cpus)++;
    }
    fclose(f);
    return *cpus > 0;
}

// CPU seconds this process has used, all threads, user and system.
double self_cpu_s() {
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
    return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + 1e-6 * (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

}  // namespace

void ThreadTuner::begin() {
    active_ = false;
#ifdef _OPENMP
    threads_ = omp_get_max_threads();
    if (threads_ == 1 || getenv("OMP_NUM_THREADS")) return;  // the user's (or the caller's) choice
    all_ = threads_;
    active_ = true;
    threads_ = team_ > 0 && team_ < all_ ? team_ : all_;
    omp_set_num_threads(threads_);
    // After a pause (other work, or none) the window starts afresh: it should tell what the rounds met.
    if (time_now_s() - last_end_ > kPause) mark();
#endif
}

void ThreadTuner::mark() {
    long long busy, total;
    int cpus;
    if (!cpu_ticks(&busy, &total, &cpus)) return;
    busy_mark_ = busy, total_mark_ = total, self_mark_ = self_cpu_s(), mark_time_ = time_now_s();
}

void ThreadTuner::end() {
    if (!active_) return;
#ifdef _OPENMP
    omp_set_num_threads(all_);
#endif
    last_end_ = time_now_s();
    if (busy_mark_ >= 0 && last_end_ - mark_time_ < kMinWindow) return;  // not worth reading /proc/stat yet
    long long busy, total;
    int cpus;
    if (!cpu_ticks(&busy, &total, &cpus)) return;
    const double self = self_cpu_s();
    if (busy_mark_ >= 0) {
        if (total - total_mark_ < 20) return;  // the window goes on
        const double ticks_per_s = (double)sysconf(_SC_CLK_TCK);
        const double wall_ticks = (double)(total - total_mark_) / cpus;
        observe(((double)(busy - busy_mark_) - (self - self_mark_) * ticks_per_s) / wall_ticks, cpus);
    }
    busy_mark_ = busy, total_mark_ = total, self_mark_ = self, mark_time_ = last_end_;
}

void ThreadTuner::observe(double others_cpus, int cpus) {
    const int free_cpus = (int)(cpus - others_cpus + 0.5);
    team_ = free_cpus < 1 ? 1 : free_cpus;
}
