// threads.h: the OpenMP team size of work repeated in rounds (training steps, decoded tokens), chosen from
// how much CPU other processes take. On an idle machine a team of all CPUs wins. When another process holds
// a CPU, every barrier of that team waits for a descheduled thread (and libgomp's waiting threads spin on
// the CPU the straggler needs): on 2 cores with one busy process, all threads are slower per training step
// and per decoded token than one thread (busy_124m, tests/bench_results.md). Waiting passively instead fixes
// the loaded case but costs time idle, where every region then starts with a wake-up; timing trials of the
// other team size cost a slow round each. So the tuner measures the load itself. Over windows of at least
// 20 clock ticks (a new one after a pause between rounds) it reads the busy time of this process's CPUs
// (/proc/stat, per CPU in sched_getaffinity's mask; niced processes' too: from another session, so another
// autogroup, they take a CPU as equals) and subtracts its own (getrusage). The next rounds run
// on the CPUs the others left free, rounded: on 2 CPUs with one busy process, one thread; idle, both. The
// kernels sum in the same order for any team size (gemm.h), so switching changes no result. It never
// overrides the user: with OMP_NUM_THREADS set, or a team of one set by the caller, rounds run as set;
// where /proc/stat cannot be read, on all threads.
#pragma once

class ThreadTuner {
public:
    // Before a round: sets the team size for it.
    void begin();
    // After it: restores the full team and, once a window is long enough, measures the load.
    void end();
    // A window's load: CPUs that other processes kept busy, of `cpus` (end()'s measurement; the tests' input).
    void observe(double others_cpus, int cpus);
    int threads() const { return threads_; }  // the last round's team size

private:
    static constexpr double kPause = 0.25;      // seconds between rounds that start a new window
    static constexpr double kMinWindow = 0.05;  // seconds before a window's ticks are read
    void mark();                                // starts a window now
    int all_ = 1;                               // the full team (omp_get_max_threads() outside rounds)
    bool active_ = false;                       // this round is tuned
    int team_ = 0;                              // the team for the next rounds; 0: all
    int threads_ = 1;
    long long busy_mark_ = -1, total_mark_ = 0;  // /proc/stat CPU ticks at the window's start
    double self_mark_ = 0;                       // this process's CPU seconds at the window's start
    double mark_time_ = 0;                       // when the window started
    double last_end_ = -1e9;                     // when the last round ended
};
