// threads.h: the OpenMP team size of a piece of work repeated in rounds (training steps, decoded tokens),
// chosen by timing the rounds. On an idle machine a team of all CPUs wins. When another process holds a
// CPU, every barrier of that team waits for a descheduled thread (and libgomp's waiting threads spin on
// the CPU the straggler needs), so one thread is faster: measured on 2 cores with one busy process, 1.5x
// per training step and 2x per decoded token. Waiting passively instead fixes the loaded case but costs
// 10-20% on an idle machine, where every region then starts with a wake-up. So the tuner keeps libgomp's
// defaults and now and then times a round on the other team size, keeping the faster. The kernels sum in the
// same order for any team size (gemm.h), so switching changes no result. A slower round shows the machine
// got busier; that it got idle again one thread cannot feel, so while on one thread the tuner reads the
// machine's idle time (/proc/stat) and tries all threads once a CPU sits idle. It never overrides the user: with
// OMP_NUM_THREADS set, or a team of one set by the caller, rounds run as set.
#pragma once

class ThreadTuner {
public:
    // Before a round: sets the team size for it.
    void begin();
    // After it: records its time per unit of work (units: tokens, say) and restores the full team.
    void end(double units = 1);
    // end() with the round's seconds per unit given (the tests' clock).
    void end_with(double seconds_per_unit);
    int threads() const { return threads_; }  // the last round's team size

private:
    int all_ = 1;                       // the full team (omp_get_max_threads() outside rounds)
    bool active_ = false;               // this round is tuned
    int current_ = 0;                   // this round's choice: 0 all threads, 1 one thread
    int choice_ = 0;                    // the faster one so far
    double per_unit_[2] = {0, 0};       // smoothed seconds per unit of each choice; 0: not measured
    long rounds_ = 0, next_trial_ = 3;  // round 1 warms up, round 2 times all threads, round 3 one
    long gap_ = 4;                      // rounds until the next trial of the other choice
    int off_ = 0;                       // rounds in a row 30% off the usual time
    int threads_ = 1;
    double t0_ = 0;
    long long idle_mark_ = -1, total_mark_ = 0;  // /proc/stat jiffies when one thread's rounds began
};
