// dist.cpp: see dist.h. The MPI half compiles only with GPT2_MPI (make MPI=1).
#include "dist/dist.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "platform/util.h"

std::vector<size_t> dist_slices(size_t n) {
    const int world = dist_world();
    std::vector<size_t> bounds;
    for (int r = 0; r < world; r++) bounds.push_back(std::min(n, (size_t)((double)n * r / world) / 64 * 64));
    bounds.push_back(n);
    return bounds;
}

#ifdef GPT2_MPI
#include <mpi.h>

namespace {

int g_rank = 0, g_world = 1;
bool g_started = false;
std::vector<MPI_Request> g_pending;
struct Move {  // a scattered sum lands at the front of its buffer: moved to its segment after the wait
    float* to;
    const float* from;
    size_t n;
};
std::vector<Move> g_moves;
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
    dist_sum_wait();  // one in flight, as dist_sum_scatter_start
    for (size_t done = 0; done < n;) {  // MPI counts are int
        const int count = (int)std::min(n - done, (size_t)1 << 30);
        g_pending.emplace_back();
        MPI_Iallreduce(MPI_IN_PLACE, data + done, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &g_pending.back());
        done += (size_t)count;
    }
}

void dist_sum_scatter_start(float* data, size_t n, const std::vector<size_t>& counts) {
    if (g_world == 1 || n == 0) return;
    if (n >= (size_t)1 << 31) fatal("a gradient bucket of %zu values: expected fewer than 2^31 for MPI", n);
    std::vector<int> c(counts.begin(), counts.end());
    size_t at = 0;
    for (int r = 0; r < g_rank; r++) at += counts[r];
    // One in flight: OpenMPI's non-blocking sums hold temporaries the size of their buffers, so the
    // previous one ends first and the temporaries stay one bucket's size, not the whole gradient's.
    dist_sum_wait();
    g_pending.emplace_back();
    // In place, this rank's summed segment arrives at the front of data (MPI's in-place reduce-scatter).
    MPI_Ireduce_scatter(MPI_IN_PLACE, data, c.data(), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &g_pending.back());
    if (at > 0 && counts[g_rank] > 0) g_moves.push_back({data + at, data, counts[g_rank]});
}

void dist_sum_wait() {
    if (g_pending.empty()) return;
    const double t0 = time_now_s();
    MPI_Waitall((int)g_pending.size(), g_pending.data(), MPI_STATUSES_IGNORE);
    g_pending.clear();
    g_wait_s += time_now_s() - t0;
    for (const Move& m : g_moves) memmove(m.to, m.from, sizeof(float) * m.n);
    g_moves.clear();
}

namespace {

// MPI's int counts and displacements of bounds' slices.
void slice_counts(const std::vector<size_t>& bounds, std::vector<int>* counts, std::vector<int>* displs) {
    if (bounds.back() >= (size_t)1 << 31) fatal("ZeRO-1 over %zu parameters: expected fewer than 2^31", bounds.back());
    for (int r = 0; r < g_world; r++) {
        counts->push_back((int)(bounds[r + 1] - bounds[r]));
        displs->push_back((int)bounds[r]);
    }
}

}  // namespace

void dist_gather_slices(float* data, const std::vector<size_t>& bounds) {
    if (g_world == 1) return;
    std::vector<int> counts, displs;
    slice_counts(bounds, &counts, &displs);
    const double t0 = time_now_s();
    MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data, counts.data(), displs.data(), MPI_FLOAT, MPI_COMM_WORLD);
    g_wait_s += time_now_s() - t0;
}

void dist_gather_to_root(void* data, size_t elem_size, const std::vector<size_t>& bounds) {
    if (g_world == 1) return;
    std::vector<int> counts, displs;
    slice_counts(bounds, &counts, &displs);
    const MPI_Datatype type = elem_size == 1 ? MPI_UINT8_T : elem_size == 2 ? MPI_UINT16_T : MPI_FLOAT;
    if (g_rank == 0)
        MPI_Gatherv(MPI_IN_PLACE, 0, type, data, counts.data(), displs.data(), type, 0, MPI_COMM_WORLD);
    else
        MPI_Gatherv(data, counts[g_rank], type, nullptr, nullptr, nullptr, type, 0, MPI_COMM_WORLD);
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

void dist_sum_scatter_start(float*, size_t, const std::vector<size_t>&) {}
void dist_gather_slices(float*, const std::vector<size_t>&) {}
void dist_gather_to_root(void*, size_t, const std::vector<size_t>&) {}

void dist_init(int*, char***) {}
int dist_rank() { return 0; }
int dist_world() { return 1; }
void dist_sum_start(float*, size_t) {}
void dist_sum_wait() {}
void dist_sum(double*, size_t) {}
bool dist_agree(uint64_t) { return true; }
double dist_take_wait_seconds() { return 0; }

#endif
