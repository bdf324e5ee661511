// threads.cpp: see threads.h.
#include "base/threads.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "base/util.h"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace {

// Jiffies all CPUs spent idle (idle + iowait), and in all, since boot; false where /proc/stat is missing.
bool cpu_jiffies(long long* idle, long long* total) {
    FILE* f = fopen("/proc/stat", "r");
    if (!f) return false;
    long long v[8] = {0};
    const int n = fscanf(f, "cpu %lld %lld %lld %lld %lld %lld %lld %lld", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                         &v[6], &v[7]);
    fclose(f);
    if (n < 5) return false;
    *idle = v[3] + v[4];
    *total = 0;
    for (long long x : v) *total += x;
    return true;
}

}  // namespace

void ThreadTuner::begin() {
    t0_ = time_now_s();
    active_ = false;
#ifdef _OPENMP
    threads_ = omp_get_max_threads();
    if (threads_ == 1 || getenv("OMP_NUM_THREADS")) return;  // the user's (or the caller's) choice
    all_ = threads_;
    active_ = true;
    rounds_++;
    current_ = rounds_ == next_trial_ ? 1 - choice_ : choice_;
    threads_ = current_ ? 1 : all_;
    omp_set_num_threads(threads_);
#endif
}

void ThreadTuner::end(double units) { end_with((time_now_s() - t0_) / std::max(units, 1e-9)); }

void ThreadTuner::end_with(double dt) {
    if (!active_) return;
#ifdef _OPENMP
    omp_set_num_threads(all_);
#endif
    if (rounds_ == 1) return;  // first-touch page faults and cold caches: not representative
    // On one thread: once a quarter of the machine's CPU time (over at least 20 jiffies) went idle, the
    // other CPUs are free again.
    long long idle, total;
    if (choice_ == 1 && current_ == 1 && cpu_jiffies(&idle, &total)) {
        if (idle_mark_ < 0) idle_mark_ = idle, total_mark_ = total;
        if (total - total_mark_ >= 20) {
            if (4 * (idle - idle_mark_) > total - total_mark_) next_trial_ = rounds_ + 1, gap_ = 4;
            idle_mark_ = idle, total_mark_ = total;
        }
    } else {
        idle_mark_ = -1;
    }
    double& known = per_unit_[current_];
    if (current_ != choice_) {  // a trial: switch if clearly faster, else try again later and less often
        known = dt;
        if (dt < 0.95 * per_unit_[choice_]) choice_ = current_, gap_ = 4;
        else gap_ = std::min(gap_ * 2, 128L);
        next_trial_ = rounds_ + gap_;
        return;
    }
    // The machine got busier (or idler): two rounds in a row 30% off the usual (one alone is often noise
    // on a shared machine) make the new usual, and prompt a trial at once.
    off_ = known > 0 && (dt > 1.3 * known || dt < known / 1.3) ? off_ + 1 : 0;
    if (off_ >= 2) {
        known = dt, off_ = 0;
        next_trial_ = rounds_ + 1, gap_ = 4;
        return;
    }
    if (off_ == 0) known = known > 0 ? 0.7 * known + 0.3 * dt : dt;
}
