// dispatch.cpp: see dispatch.h and core/isa.h. kernels_isa() in every build; in the dispatching one
// (GPT2_DISPATCH: ARCH=portable on x86-64) also the global kernel functions, each calling the copy compiled
// for the instruction set chosen once, at its first call. This file itself is compiled for the x86-64 baseline.
#include "dispatch/dispatch.h"

#include <cassert>
#include <cstdlib>
#include <string>

#include "core/optimizer.h"
#include "core/gemm.h"
#include "core/isa.h"
#include "core/layers.h"
#include "inference/kv_attention.h"
#include "inference/matvec.h"
#include "precision/bf16.h"
#include "precision/adamw_bf16.h"
#include "precision/adamw_8bit.h"
#include "precision/precision.h"
#include "tuned/gemm_tile.h"

#ifdef GPT2_DISPATCH

namespace {

enum Isa { kBaseline, kAvx2, kAvx512 };
const char* const kIsaName[] = {"baseline", "avx2", "avx512"};

// The best set this CPU runs: AVX-512 as -march=x86-64-v4 assumes it (F, BW, CD, DQ, VL), else AVX2 with
// FMA and what else -march=x86-64-v3 assumes, else the baseline. (__builtin_cpu_supports also checks that
// the OS saves the vector registers.)
Isa detect() {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512cd") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
        return kAvx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi") &&
        __builtin_cpu_supports("bmi2"))
        return kAvx2;
    return kBaseline;
}

// The set GPT2_ISA asks for, or the best this CPU runs when it is unset. A GPT2_ISA naming a set this CPU
// cannot run, or none at all, is said in *error, and the best set returned.
Isa isa_wanted(std::string* error) {
    const Isa best = detect();
    const std::string forced = getenv("GPT2_ISA") ? getenv("GPT2_ISA") : "";
    if (forced.empty()) return best;
    for (int i = 0; i <= best; i++)
        if (forced == kIsaName[i]) return (Isa)i;
    bool too_high = false;
    for (int i = best + 1; i <= kAvx512; i++) too_high = too_high || forced == kIsaName[i];
    if (too_high)
        *error = "bad value for GPT2_ISA: this CPU cannot run the " + forced + " kernels, expected one of baseline" +
                 (best >= kAvx2 ? ", avx2" : "") + ", got '" + forced + "'";
    else
        *error = "bad value for GPT2_ISA: expected avx512, avx2 or baseline (or unset: the best this CPU runs), got '" +
                 forced + "'";
    return best;
}

Isa chosen() {
    static const Isa isa = [] {
        std::string error;
        const Isa wanted = isa_wanted(&error);
        assert(error.empty() && "a bad GPT2_ISA: the program reports kernels_isa_error() before it runs a kernel");
        return wanted;
    }();
    return isa;
}

template <typename F>
F pick(F baseline, F avx2, F avx512) {
    const Isa isa = chosen();
    return isa == kAvx512 ? avx512 : isa == kAvx2 ? avx2 : baseline;
}

}  // namespace

const char* kernels_isa() { return kIsaName[chosen()]; }

std::string kernels_isa_error() {
    std::string error;
    isa_wanted(&error);
    return error;
}

const char* kernels_isa_how() {
    const char* forced = getenv("GPT2_ISA");
    return forced && *forced ? "forced by GPT2_ISA" : "chosen at run time";
}

// KERNEL(ret, name, params, args): declares the three copies of `name` (their type is the global
// declaration's) and defines the global one as a call to the chosen copy.
#define KERNEL(ret, name, params, args)                                                                   \
    namespace isa_baseline {                                                                              \
    decltype(::name) name;                                                                                \
    }                                                                                                     \
    namespace isa_avx2 {                                                                                  \
    decltype(::name) name;                                                                                \
    }                                                                                                     \
    namespace isa_avx512 {                                                                                \
    decltype(::name) name;                                                                                \
    }                                                                                                     \
    ret name params {                                                                                     \
        static decltype(::name)* const f = pick(&isa_baseline::name, &isa_avx2::name, &isa_avx512::name); \
        return f args;                                                                                    \
    }

KERNEL(void, encoder_forward, (float* out, const int* tokens, const float* wte, const float* wpe, int B, int T, int C),
       (out, tokens, wte, wpe, B, T, C))
KERNEL(void, encoder_backward, (float* dwte, float* dwpe, const float* dout, const int* tokens, int B, int T, int C),
       (dwte, dwpe, dout, tokens, B, T, C))
KERNEL(void, layernorm_forward,
       (float* out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias, int N, int C),
       (out, mean, rstd, inp, weight, bias, N, C))
KERNEL(void, layernorm_backward,
       (float* dinp, float* dweight, float* dbias, const float* dout, const float* inp, const float* weight,
        const float* mean, const float* rstd, int N, int C),
       (dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C))
KERNEL(void, matmul_forward,
       (float* out, const float* inp, const Weight& weight, const float* bias, int N, int IC, int OC, bool rows),
       (out, inp, weight, bias, N, IC, OC, rows))
KERNEL(void, matmul_backward,
       (float* dinp, float* dweight, float* dbias, const float* dout, const float* inp, const Weight& weight, int N,
        int IC, int OC, bool add),
       (dinp, dweight, dbias, dout, inp, weight, N, IC, OC, add))
KERNEL(void, matvec_rows, (float* out, const float* x, const Weight& w, const float* b, int N, int IC, int OC),
       (out, x, w, b, N, IC, OC))
KERNEL(void, matvec_bf16, (float* out, const float* x, const uint16_t* W16, const float* b, int N, int IC, int OC),
       (out, x, W16, b, N, IC, OC))
KERNEL(void, matvec_bf16_ref, (float* out, const float* x, const uint16_t* W16, const float* b, int IC, int OC),
       (out, x, W16, b, IC, OC))
KERNEL(void, matvec_q8,
       (float* out, const float* x, const int8_t* q, const uint16_t* d, const float* b, int N, int IC, int OC),
       (out, x, q, d, b, N, IC, OC))
KERNEL(void, matvec_q8_ref,
       (float* out, const float* x, const int8_t* q, const uint16_t* d, const float* b, int IC, int OC),
       (out, x, q, d, b, IC, OC))
KERNEL(void, matvec_q8q8,
       (float* out, const float* x, const int8_t* q, const uint16_t* d, const float* b, int N, int IC, int OC,
        const uint32_t* tiles),
       (out, x, q, d, b, N, IC, OC, tiles))
KERNEL(size_t, matvec_q8_tiles_words, (int IC, int OC), (IC, OC))
KERNEL(bool, matvec_q8_tiles, (uint32_t* dst, const int8_t* q, const uint16_t* d, int IC, int OC), (dst, q, d, IC, OC))
KERNEL(void, matvec_q8q8_ref,
       (float* out, const float* x, const int8_t* q, const uint16_t* d, const float* b, int IC, int OC),
       (out, x, q, d, b, IC, OC))
KERNEL(void, attention_forward,
       (float* out, float* lse, const float* qkv, int B, int T, int C, int NH, const GemmOperands* ops),
       (out, lse, qkv, B, T, C, NH, ops))
KERNEL(void, attention_forward_cached,
       (float* out, float* lse, const float* qkv, float* kcache, size_t k_row, float* vcache, int n, int p0, int C,
        int NH, const GemmOperands* ops),
       (out, lse, qkv, kcache, k_row, vcache, n, p0, C, NH, ops))
KERNEL(void, attention_forward_cached_rows,
       (float* out, float* lse, const float* qkv, float* const* kcache, const size_t* k_row, float* const* vcache,
        const int* p0, int n, int C, int NH),
       (out, lse, qkv, kcache, k_row, vcache, p0, n, C, NH))
KERNEL(void, attention_backward,
       (float* dqkv, const float* dout, const float* qkv, const float* lse, int B, int T, int C, int NH,
        const GemmOperands* ops),
       (dqkv, dout, qkv, lse, B, T, C, NH, ops))
KERNEL(void, gelu_forward, (float* out, const float* inp, size_t n), (out, inp, n))
KERNEL(void, gelu_backward, (float* dinp, const float* inp, const float* dout, size_t n), (dinp, inp, dout, n))
KERNEL(void, residual_forward, (float* out, const float* a, const float* b, size_t n), (out, a, b, n))
KERNEL(void, crossentropy_fused,
       (float* logits, float* losses, const int* targets, int N, int V, int Vp, float dloss, float scale),
       (logits, losses, targets, N, V, Vp, dloss, scale))
KERNEL(void, gemm,
       (int M, int N, int K, const float* A, int lda, bool transA, const float* B, int ldb, bool transB, float* C,
        int ldc, bool accumulate, const GemmOperands* ops, const void* B_copy),
       (M, N, K, A, lda, transA, B, ldb, transB, C, ldc, accumulate, ops, B_copy))
KERNEL(void, gemm_serial,
       (int M, int N, int K, const float* A, int lda, bool transA, const float* B, int ldb, bool transB, float* C,
        int ldc, bool accumulate, const GemmOperands* ops),
       (M, N, K, A, lda, transA, B, ldb, transB, C, ldc, accumulate, ops))
KERNEL(void, gemm_packed,
       (int M, int N, int K, const float* A, int lda, bool transA, const float* B, int ldb, bool transB, float* C,
        int ldc, bool accumulate, const GemmOperands* ops, const void* B_copy, bool serial),
       (M, N, K, A, lda, transA, B, ldb, transB, C, ldc, accumulate, ops, B_copy, serial))
KERNEL(void, gemm_ref,
       (int M, int N, int K, const float* A, int lda, bool transA, const float* B, int ldb, bool transB, float* C,
        int ldc, bool accumulate),
       (M, N, K, A, lda, transA, B, ldb, transB, C, ldc, accumulate))
KERNEL(void, gemm_bf16_ref,
       (int M, int N, int K, const float* A, int lda, bool transA, const float* B, int ldb, bool transB, float* C,
        int ldc, bool accumulate),
       (M, N, K, A, lda, transA, B, ldb, transB, C, ldc, accumulate))
KERNEL(void, adamw_chunk, (float* w, const float* g, float* m, float* v, size_t n, const AdamWStep& s),
       (w, g, m, v, n, s))
KERNEL(void, adamw_chunk_bf16,
       (float* w, const float* g, uint16_t* m, uint16_t* v, size_t n, const AdamWStep& s, size_t index),
       (w, g, m, v, n, s, index))
KERNEL(void, adamw_chunk_8bit,
       (float* w, const float* g, uint8_t* m, uint8_t* v, float* m_step, float* v_step, size_t n, const AdamWStep& s,
        size_t index),
       (w, g, m, v, m_step, v_step, n, s, index))
KERNEL(double, sum_squares, (const float* x, size_t n), (x, n))
KERNEL(double, fma_peak_loop, (long iters, float* sink), (iters, sink))
KERNEL(void, bf16_round_array, (uint16_t * dst, const float* src, size_t n), (dst, src, n))
KERNEL(const GemmOperands*, bf16_gemm_operands, (), ())
KERNEL(const GemmOperands*, copy_gemm_operands, (), ())
KERNEL(const GemmOperands*, q8_gemm_operands, (), ())

namespace isa_avx512 {
decltype(::bf16_supported) bf16_supported;
}
// vdpbf16ps is an AVX-512 instruction: only the AVX-512 set may use it, so a run forced to a lower set
// behaves as on a CPU without it.
bool bf16_supported() { return chosen() == kAvx512 && isa_avx512::bf16_supported(); }
namespace isa_avx512 {
decltype(::bf16_amx) bf16_amx;
}
bool bf16_amx() { return chosen() == kAvx512 && isa_avx512::bf16_amx(); }
KERNEL(void, bf16_amx_use, (bool on), (on))

#else  // one kernel set, chosen by the compiler's target

std::string kernels_isa_error() {
    const char* forced = getenv("GPT2_ISA");
    if (!forced || !*forced) return "";
    return std::string("bad value for GPT2_ISA: this build has one kernel set; expected GPT2_ISA unset, or a build "
                       "with ARCH=portable (make ARCH=portable), got '") +
           forced + "'";
}

const char* kernels_isa() {
#if defined(__AVX512F__)
    return "avx512";
#elif defined(__AVX2__) && defined(__FMA__)
    return "avx2";
#elif defined(__x86_64__)
    return "baseline";
#elif defined(__aarch64__)
    return "neon";  // the gemm's micro-kernel; the other kernels' generic vectors become NEON too
#else
    return "generic vectors";
#endif
}

const char* kernels_isa_how() { return "fixed at build time"; }

#endif
