// buffer.h: how the core sets up its large buffers (parameters, gradients, AdamW state, activations).
#pragma once
#include <cstddef>
#include <vector>

// Seam: asks for huge pages (2 MiB, where the system offers them) over [data, data + bytes) and faults
// them in on all threads (./gpt2: platform/util.h's buffer_prefault_huge); null in the core alone.
inline void (*buffer_prefault)(const void* data, size_t bytes) = nullptr;

// Makes *v n zeros, the way a large buffer is best set up: the old storage freed first, then the new one
// prefaulted (buffer_prefault) before it is zeroed. Faulting 4 KiB pages one at a time was most of a first
// training step (8.1 s against 0.9 s at 124M on a 2-core VM); huge pages keep it near a steady one. Same
// result as v->assign(n, T()).
template <typename T>
void buffer_assign_zero(std::vector<T>* v, size_t n) {
    std::vector<T>().swap(*v);
    v->reserve(n);  // allocated, not yet touched
    if (buffer_prefault) buffer_prefault(v->data(), n * sizeof(T));
    v->assign(n, T());
}
