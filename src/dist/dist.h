// dist.h: processes training together (data parallel). Built with `make MPI=1` this is OpenMPI: every
// process (rank) of `mpirun -np N` runs the same program and these calls sum buffers across them. In the
// default build there is one process and every call is a no-op. Knows nothing of GPT-2.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

// Joins the processes (MPI_Init) on first call; later calls do nothing. Afterwards a fatal() in any rank
// aborts all of them (MPI_Abort) instead of leaving the others blocked in a sum.
void dist_init(int* argc, char*** argv);
int dist_rank();   // 0 .. dist_world() - 1; 0 without MPI
int dist_world();  // 1 without MPI
// Starts summing data[0..n) in place across ranks without waiting (a bucket of gradients); every started
// sum is complete after dist_sum_wait(). The buffers must stay untouched until then. One sum is in flight
// at a time: this waits for the previous one (MPI holds a temporary the size of each while it runs).
void dist_sum_start(float* data, size_t n);
void dist_sum_wait();
// ZeRO-1's split of n values across the ranks: rank r owns [bounds[r], bounds[r + 1]), contiguous, in rank
// order, each start a multiple of 64 values (8-bit moments' blocks; n need not divide: the last slice takes
// the rest).
std::vector<size_t> dist_slices(size_t n);
// Starts summing data[0..n) across ranks keeping only each rank's segment: counts[r] values for rank r, in
// rank order (they add up to n). After dist_sum_wait() this rank's segment, at data + counts[0] + ... +
// counts[rank - 1], holds the sum; the rest of data[0..n) is unspecified. n < 2^31. Waits for the sums
// started before it first (MPI may need a temporary of n values while it runs).
void dist_sum_scatter_start(float* data, size_t n, const std::vector<size_t>& counts);
// Every rank's slice (bounds as dist_slices) of data copied to every other rank, in place.
void dist_gather_slices(float* data, const std::vector<size_t>& bounds);
// Rank 0 receives every rank's slice of data (elements of elem_size 1, 2 or 4 bytes; bounds as dist_slices):
// rank 0 passes the whole buffer, the others their slice alone.
void dist_gather_to_root(void* data, size_t elem_size, const std::vector<size_t>& bounds);
// Sums data[0..n) in place across ranks, waiting for it.
void dist_sum(double* data, size_t n);
// True when every rank passed the same value (one process: always).
bool dist_agree(uint64_t value);
// Seconds spent inside dist_sum_wait and dist_sum since the previous call (communication not hidden).
double dist_take_wait_seconds();
