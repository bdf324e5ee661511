// adamw_bf16.h: AdamW's moments in bf16 (train --optimizer-state bf16: half the memory), kept for the
// core's AdamW as its AdamWMoments (core/optimizer.h), rounded stochastically: a value is rounded up with
// the probability of its distance from the bf16 below, so it is right on average. Round to nearest would
// lose every update smaller than half a bf16 step, which beta2 = 0.95..0.999 makes of most of them: v would
// stop moving. The random bits come from a hash of the step and the parameter's index, so a run does not
// depend on threads, slices or a resume. The weights themselves stay fp32 (the master copy).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/optimizer.h"
#include "core/isa.h"

// The moments of AdamW's range, from its start, in bf16.
struct AdamWBf16 : AdamWMoments {
    std::vector<uint16_t> m, v;
    void allocate(size_t n) override;
    size_t size() const override;
    void update(float* w, const float* g, size_t s, size_t n, const AdamWStep& k, size_t index) override;
    float value(int k, size_t s) const override;
};

// Makes opt keep its moments in bf16 (before adamw_prepare).
void adamw_use_bf16(AdamW* opt);
// opt's bf16 moments, or null when they are fp32.
AdamWBf16* adamw_bf16(const AdamW& opt);
// What a save or a gather of opt's moments copies, whichever their form: the bytes of m (k 0) or v (k 1)
// from the start of opt's range, and the size of one value (4 for fp32, 2 for bf16).
void* adamw_moments_data(const AdamW& opt, int k);
size_t adamw_moments_elem(const AdamW& opt);

KERNELS_BEGIN

// adamw_chunk (core/optimizer.h) with m and v in bf16: read widened to fp32, written back rounded
// stochastically, with random bits from a hash of (step s.t, index + i), index being the first element's
// parameter index.
void adamw_chunk_bf16(float* w, const float* g, uint16_t* m, uint16_t* v, size_t n, const AdamWStep& s, size_t index);

KERNELS_END
