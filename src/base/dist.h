// dist.h: processes training together (data parallel). Built with `make MPI=1` this is OpenMPI: every
// process (rank) of `mpirun -np N` runs the same program and these calls sum buffers across them. In the
// default build there is one process and every call is a no-op. Knows nothing of GPT-2.
#pragma once
#include <cstddef>
#include <cstdint>

// Joins the processes (MPI_Init) on first call; later calls do nothing. Afterwards a fatal() in any rank
// aborts all of them (MPI_Abort) instead of leaving the others blocked in a sum.
void dist_init(int* argc, char*** argv);
int dist_rank();   // 0 .. dist_world() - 1; 0 without MPI
int dist_world();  // 1 without MPI
// Starts summing data[0..n) in place across ranks without waiting (a bucket of gradients); every started
// sum is complete after dist_sum_wait(). The buffers must stay untouched until then.
void dist_sum_start(float* data, size_t n);
void dist_sum_wait();
// Sums data[0..n) in place across ranks, waiting for it.
void dist_sum(double* data, size_t n);
// True when every rank passed the same value (one process: always).
bool dist_agree(uint64_t value);
// Seconds spent inside dist_sum_wait and dist_sum since the previous call (communication not hidden).
double dist_take_wait_seconds();
