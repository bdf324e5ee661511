// threads.cpp: see threads.h.
#include "base/threads.h"

#include <algorithm>
#include <cstdlib>

#include "base/util.h"

#ifdef _OPENMP
#include <omp.h>
#endif

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

void ThreadTuner::end(double units) {
    if (!active_) return;
#ifdef _OPENMP
    omp_set_num_threads(all_);
#endif
    const double dt = (time_now_s() - t0_) / std::max(units, 1e-9);
    if (rounds_ == 1) return;  // first-touch page faults and cold caches: not representative
    double& known = per_unit_[current_];
    if (current_ != choice_) {  // a trial: switch if clearly faster, else try again later and less often
        known = dt;
        if (dt < 0.95 * per_unit_[choice_]) choice_ = current_, gap_ = 4;
        else gap_ = std::min(gap_ * 2, 128L);
        next_trial_ = rounds_ + gap_;
        return;
    }
    // The machine got busier (or idler): a round 30% off the usual prompts a trial at once.
    if (known > 0 && (dt > 1.3 * known || dt < known / 1.3)) next_trial_ = rounds_ + 1, gap_ = 4;
    known = known > 0 ? 0.7 * known + 0.3 * dt : dt;
}
