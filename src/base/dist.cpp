// dist.cpp: see dist.h. The MPI half compiles only with GPT2_MPI (make MPI=1).
#include "base/dist.h"

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "base/util.h"

#ifdef GPT2_MPI
#include <mpi.h>

namespace {

int g_rank = 0, g_world = 1;
bool g_started = false;
std::vector<MPI_Request> g_pending;
double g_wait_s = 0;

void finalize_at_exit() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
}

}  // namespace

void dist_init(int* argc, char*** argv) {
    if (g_started) return;
    g_started = true;
    int provided = 0;
    MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);  // OpenMP threads never call MPI
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_world);
    atexit(finalize_at_exit);
    // Registered first, so it runs after every other cleanup: the rank's own outputs are tidied, then all
    // ranks stop (a rank blocked in a sum would otherwise wait for this one forever).
    static FatalCleanup abort_all([] {
        if (g_world > 1) MPI_Abort(MPI_COMM_WORLD, 1);
    });
}

int dist_rank() { return g_rank; }
int dist_world() { return g_world; }

void dist_sum_start(float* data, size_t n) {
    if (g_world == 1 || n == 0) return;
    for (size_t done = 0; done < n;) {  // MPI counts are int
        const int count = (int)std::min(n - done, (size_t)1 << 30);
        g_pending.emplace_back();
        MPI_Iallreduce(MPI_IN_PLACE, data + done, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &g_pending.back());
        done += (size_t)count;
    }
}

void dist_sum_wait() {
    if (g_pending.empty()) return;
    const double t0 = time_now_s();
    MPI_Waitall((int)g_pending.size(), g_pending.data(), MPI_STATUSES_IGNORE);
    g_pending.clear();
    g_wait_s += time_now_s() - t0;
}

void dist_sum(double* data, size_t n) {
    if (g_world == 1) return;
    const double t0 = time_now_s();
    MPI_Allreduce(MPI_IN_PLACE, data, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    g_wait_s += time_now_s() - t0;
}

bool dist_agree(uint64_t value) {
    if (g_world == 1) return true;
    uint64_t lo = value, hi = value;
    MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    return lo == hi;
}

double dist_take_wait_seconds() {
    const double s = g_wait_s;
    g_wait_s = 0;
    return s;
}

#else  // one process

void dist_init(int*, char***) {}
int dist_rank() { return 0; }
int dist_world() { return 1; }
void dist_sum_start(float*, size_t) {}
void dist_sum_wait() {}
void dist_sum(double*, size_t) {}
bool dist_agree(uint64_t) { return true; }
double dist_take_wait_seconds() { return 0; }

#endif
