// adamw_8bit.cpp: see adamw_8bit.h. The moments' storage; their update is the kernel adamw_chunk_8bit
// (adamw_8bit_chunk.cpp), compiled for the kernels' instruction set.
#include "precision/adamw_8bit.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "core/layout.h"

void AdamW8bit::allocate(size_t n) {
    buffer_assign_zero(&m, n);
    buffer_assign_zero(&v, n);
    buffer_assign_zero(&m_step, (n + kBlock - 1) / kBlock);
    buffer_assign_zero(&v_step, (n + kBlock - 1) / kBlock);
}

size_t AdamW8bit::size() const { return m.size(); }

void AdamW8bit::update(float* w, const float* g, size_t s, size_t n, const AdamWStep& k, size_t index) {
    assert(s % kBlock == 0 && n % kBlock == 0 && "whole blocks (adamw_8bit_refusal checked the model)");
    adamw_chunk_8bit(w, g, m.data() + s, v.data() + s, m_step.data() + s / kBlock, v_step.data() + s / kBlock, n, k,
                     index);
}

float AdamW8bit::value(int k, size_t s) const {
    return k ? v_code_value(v[s]) * v_step[s / kBlock] : m_code_value(m[s]) * m_step[s / kBlock];
}

void AdamW8bit::store(int k, size_t s, const float* x, size_t n) {
    for (size_t b = 0; b < n; b += kBlock) {
        const size_t e = std::min(n, b + kBlock);
        float largest = 0;
        for (size_t i = b; i < e; i++) largest = std::max(largest, std::fabs(x[i]));
        float inv;
        (k ? v_step : m_step)[(s + b) / kBlock] = block_step(largest, &inv);
        for (size_t i = b; i < e; i++) (k ? v : m)[s + i] = k ? v_code(x[i] * inv, 0x8000) : m_code(x[i] * inv, 0x8000);
    }
}

std::string adamw_8bit_refusal(const GPT2Config& cfg) {
    if (cfg.channels % (int)AdamW8bit::kBlock == 0) return "";
    return "n_embd " + std::to_string(cfg.channels) + " is not a multiple of 64 (its tensors would share blocks)";
}

void adamw_use_8bit(AdamW* opt) { opt->moments = std::make_unique<AdamW8bit>(); }

AdamW8bit* adamw_8bit(const AdamW& opt) { return dynamic_cast<AdamW8bit*>(opt.moments.get()); }

std::vector<MomentsArray> adamw_moments_arrays(const AdamW& opt) {
    const auto arr = [](const char* name, const char* dtype, const void* data, size_t elem, size_t per) {
        return MomentsArray{name, dtype, const_cast<void*>(data), elem, per};
    };
    if (const AdamW8bit* q = adamw_8bit(opt))
        return {arr("adamw.m", "U8", q->m.data(), 1, 1), arr("adamw.v", "U8", q->v.data(), 1, 1),
                arr("adamw.m_step", "F32", q->m_step.data(), 4, AdamW8bit::kBlock),
                arr("adamw.v_step", "F32", q->v_step.data(), 4, AdamW8bit::kBlock)};
    if (const AdamWBf16* h = adamw_bf16(opt))
        return {arr("adamw.m", "BF16", h->m.data(), 2, 1), arr("adamw.v", "BF16", h->v.data(), 2, 1)};
    return {arr("adamw.m", "F32", opt.m.data(), 4, 1), arr("adamw.v", "F32", opt.v.data(), 4, 1)};
}

double adamw_moments_bytes(const AdamW& opt) {
    double bytes = 0;
    for (const MomentsArray& a : adamw_moments_arrays(opt)) bytes += (double)a.elem / a.per;
    return bytes;
}

const char* adamw_form(const AdamW& opt) { return adamw_8bit(opt) ? "8bit" : adamw_bf16(opt) ? "bf16" : "fp32"; }

void adamw_use_form(AdamW* opt, const std::string& form) {
    assert((form == "fp32" || form == "bf16" || form == "8bit") && "--optimizer-state's values");
    if (form == "bf16") adamw_use_bf16(opt);
    if (form == "8bit") adamw_use_8bit(opt);
}
