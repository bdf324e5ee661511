// threads.cpp: see threads.h.
#include "platform/threads.h"

#include <cstdlib>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "platform/platform.h"
#include "platform/util.h"

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
    if (!os_cpu_ticks(&busy, &total, &cpus)) return;
    busy_mark_ = busy, total_mark_ = total, self_mark_ = os_self_cpu_s(), mark_time_ = time_now_s();
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
    if (!os_cpu_ticks(&busy, &total, &cpus)) return;
    const double self = os_self_cpu_s();
    if (busy_mark_ >= 0) {
        if (total - total_mark_ < 20) return;  // the window goes on
        const double ticks_per_s = os_ticks_per_s();
        const double wall_ticks = (double)(total - total_mark_) / cpus;
        observe(((double)(busy - busy_mark_) - (self - self_mark_) * ticks_per_s) / wall_ticks, cpus);
    }
    busy_mark_ = busy, total_mark_ = total, self_mark_ = self, mark_time_ = last_end_;
}

void ThreadTuner::observe(double others_cpus, int cpus) {
    const int free_cpus = (int)(cpus - others_cpus + 0.5);
    team_ = free_cpus < 1 ? 1 : free_cpus;
}
