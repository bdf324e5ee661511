// adamw_bf16.cpp: see adamw_bf16.h. The moments' storage; their update is the kernel adamw_chunk_bf16
// (adamw_bf16_chunk.cpp), compiled for the kernels' instruction set.
#include "precision/adamw_bf16.h"

#include "precision/bf16.h"
#include "core/layout.h"

void AdamWBf16::allocate(size_t n) {
    buffer_assign_zero(&m, n);
    buffer_assign_zero(&v, n);
}

size_t AdamWBf16::size() const { return m.size(); }

void AdamWBf16::update(float* w, const float* g, size_t s, size_t n, const AdamWStep& k, size_t index) {
    adamw_chunk_bf16(w, g, m.data() + s, v.data() + s, n, k, index);
}

float AdamWBf16::value(int k, size_t s) const { return bf16_to_float((k ? v : m)[s]); }

void adamw_use_bf16(AdamW* opt) { opt->moments = std::make_unique<AdamWBf16>(); }

AdamWBf16* adamw_bf16(const AdamW& opt) { return dynamic_cast<AdamWBf16*>(opt.moments.get()); }
