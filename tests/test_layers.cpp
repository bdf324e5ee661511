// test_layers.cpp: each backward kernel against central finite differences of its forward, the fast
// gemm against the scalar reference, and LayerNorm forward against PyTorch's nn.LayerNorm fixture.
//
// Finite differences run on the fp32 kernels. The scalar probed is L = sum(out * proj) summed in double,
// so dL/dout = proj. With h = 1e-2 on O(1) inputs, the truncation error h^2 |f'''| / 6 is ~2e-5 and the
// rounding error is ~sqrt(outputs touched) * 2^-24 * |out| / h, below 1e-4 of the gradient's scale for
// these sizes; we assert 1e-3 of the largest gradient element, which a wrong index, a missing term or a
// sign error exceeds by orders of magnitude (checked by breaking kernels once).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "precision/half.h"
#include "core/rng.h"
#include "core/safetensors.h"
#include "core/gemm.h"
#include "core/layers.h"
#include "kernel_refs.h"
#include "core/simd.h"
#include "inference/matvec.h"
#include "precision/precision.h"
#include "test.h"
#include "tuned/gemm_tile.h"

namespace {

std::vector<float> randn(size_t n, uint64_t seed, float scale = 1.0f) {
    Rng rng(seed);
    std::vector<float> v(n);
    for (float& x : v) x = scale * rng.normal();
    return v;
}

// W (a multiple of kQ8Block values) as q8_0 blocks: values q and fp16 scales d (q8_quantize_block).
void q8_quantize(const std::vector<float>& W, std::vector<int8_t>* q, std::vector<uint16_t>* d) {
    q->resize(W.size());
    d->resize(W.size() / kQ8Block);
    for (size_t blk = 0; blk < d->size(); blk++)
        (*d)[blk] = q8_quantize_block(&W[blk * kQ8Block], q->data() + blk * kQ8Block);
}

// Runs f with an OpenMP team of `threads`, then restores the default.
void with_threads(int threads, const std::function<void()>& f) {
#ifdef _OPENMP
    const int all = omp_get_max_threads();
    omp_set_num_threads(threads);
    f();
    omp_set_num_threads(all);
#else
    f();
#endif
}

double dot(const std::vector<float>& a, const std::vector<float>& b) {
    double s = 0;
    for (size_t i = 0; i < a.size(); i++) s += (double)a[i] * b[i];
    return s;
}

// max |numeric - analytic| / max |analytic| over every element of x (or `stride`-spaced samples).
double fd_error(std::vector<float>& x, const std::vector<float>& analytic, const std::function<double()>& loss,
                size_t stride = 1, float h = 1e-2f) {
    double max_diff = 0, max_ref = 0;
    for (size_t i = 0; i < x.size(); i++) max_ref = max_abs(max_ref, analytic[i]);
    for (size_t i = 0; i < x.size(); i += stride) {
        float saved = x[i];
        x[i] = saved + h;
        double lp = loss();
        x[i] = saved - h;
        double lm = loss();
        x[i] = saved;
        double numeric = (lp - lm) / (2.0 * h);
        max_diff = max_abs(max_diff, numeric - analytic[i]);
    }
    return max_ref > 0 ? max_diff / max_ref : max_diff;
}

const double kFdTol = 1e-3;

// A crossentropy kernel over one batch, as gpt2_head calls it: d(mean)/d(row loss) = 1 / the scored rows (0: no
// gradient), dlogits times scale; returns the mean over the scored rows, summed in row order in double.
using CrossEntropy = void (*)(float*, float*, const int*, int, int, int, float, float);
float ce_mean(CrossEntropy fn, float* logits, float* losses, const int* targets, bool grad, int N, int V, int Vp,
              float scale = 1.0f) {
    const int scored = std::max(1, (int)std::count_if(targets, targets + N, [](int t) { return t >= 0; }));
    fn(logits, losses, targets, N, V, Vp, grad / (float)scored, scale);
    double total = 0;
    for (int i = 0; i < N; i++) total += losses[i];
    return (float)(total / scored);
}

}  // namespace

// The logical (rows, cols) matrix X as gemm reads it: row-major, or transposed (stored column-major).
std::vector<float> stored(const std::vector<float>& X, int rows, int cols, bool trans) {
    if (!trans) return X;
    std::vector<float> S(X.size());
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) S[(size_t)c * rows + r] = X[(size_t)r * cols + c];
    return S;
}

// A (M, K) B (K, N) in double, each element summed in k order: gemm_ref's sums, once for all eight layouts.
std::vector<double> product(const std::vector<float>& A, const std::vector<float>& B, int M, int N, int K) {
    std::vector<double> P((size_t)M * N, 0.0);
    for (int i = 0; i < M; i++)
        for (int k = 0; k < K; k++)
            for (int j = 0; j < N; j++) P[(size_t)i * N + j] += (double)A[(size_t)i * K + k] * B[(size_t)k * N + j];
    return P;
}

TEST(gemm_matches_reference_on_odd_shapes) {
    // On 1, 2 and 3 threads (slabs of C of different widths; A packed whole or per block): the same bits
    // from each, since every element is summed in the same order whichever thread computes it. A light run
    // (test.h) takes 1 and 3.
    struct Shape {
        int M, N, K;
    } shapes[] = {{1, 1, 1},     {7, 13, 1},     {37, 45, 300},    {256, 33, 17},
                  {9, 50257, 5}, {130, 70, 513}, {136, 2100, 264}, {1100, 1050, 40}};
    long team_mismatches = 0;
    for (const Shape& s : shapes) {
        const std::vector<float> A = randn((size_t)s.M * s.K, 1), B = randn((size_t)s.K * s.N, 2);
        const std::vector<float> C0 = randn((size_t)s.M * s.N, 3);
        const std::vector<double> P = product(A, B, s.M, s.N, s.K);
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++)
                for (int acc = 0; acc < 2; acc++) {
                    const std::vector<float> As = stored(A, s.M, s.K, ta), Bs = stored(B, s.K, s.N, tb);
                    const int lda = ta ? s.M : s.K, ldb = tb ? s.K : s.N;
                    std::vector<float> C1;
                    for (int threads : test_light() ? std::vector<int>{1, 3} : std::vector<int>{1, 2, 3}) {
                        std::vector<float> C = C0;
                        with_threads(threads, [&] {
                            gemm(s.M, s.N, s.K, As.data(), lda, ta, Bs.data(), ldb, tb, C.data(), s.N, acc);
                        });
                        double max_diff = 0;
                        for (size_t i = 0; i < C.size(); i++)
                            max_diff = max_abs(max_diff, C[i] - (acc ? C0[i] + (float)P[i] : (float)P[i]));
                        // fp32 sums of K products of N(0,1) values: error ~ sqrt(K) * 2^-24 * sqrt(K)
                        CHECK(max_diff <= 1e-6 * (s.K + 10));
                        if (threads == 1) C1 = C;
                        else team_mismatches += memcmp(C.data(), C1.data(), sizeof(float) * C.size()) != 0;
                    }
                }
    }
    CHECK(team_mismatches == 0);
}

// parallel_if: false runs the region's loops whole on this thread and builds no team (no OpenMP level entered); true
// runs them on a team of 2. Every index once either way, and false called by each thread of a team runs its own.
TEST(parallel_if_builds_a_team_only_when_asked) {
#ifndef _OPENMP
    SKIP("built without OpenMP");
#else
    for (bool threads : {false, true}) {
        std::vector<int> seen(1000, 0);
        int levels = 0, members = 0;
        with_threads(2, [&] {
            parallel_if(threads, [&] {
#pragma omp atomic
                levels += omp_get_level();
#pragma omp atomic
                members++;
#pragma omp for
                for (int i = 0; i < 1000; i++) seen[i]++;
            });
        });
        printf("    %s: %d thread(s) ran the region, at OpenMP level %d\n", threads ? "true" : "false", members,
               levels / members);
        CHECK(std::count(seen.begin(), seen.end(), 1) == 1000);
        CHECK(levels == (threads ? members : 0));
        CHECK(members == (threads ? 2 : 1));
    }
    // called by each thread of a team, on its own data: each call runs its loop whole
    std::vector<int> seen(2 * 1000, 0);
    with_threads(2, [&] {
#pragma omp parallel
        {
            int* mine = seen.data() + 1000 * omp_get_thread_num();
            parallel_if(false, [&] {
#pragma omp for
                for (int i = 0; i < 1000; i++) mine[i]++;
            });
        }
    });
    const long once = (long)std::count(seen.begin(), seen.end(), 1);
    printf("    false, inside a team of 2: %ld of 2 x 1000 indices run once\n", once);
    CHECK(once == 2000);
#endif
}

TEST(gemm_matches_reference_for_a_c_of_4m_floats) {
    // C of >= 4M floats with 256 < K <= 768 takes gemm's one-pass-over-K blocking (the lm_head forward). The
    // double reference covers every 8th column and the last 64: every block of C, an eighth of the cost.
    SKIP_IF_LIGHT();
    const int M = 40, N = 105001, K = 260;
    std::vector<float> A = randn((size_t)M * K, 1), B = randn((size_t)K * N, 2);
    std::vector<float> C((size_t)M * N);
    gemm(M, N, K, A.data(), K, false, B.data(), K, true, C.data(), N, false);
    double max_diff = 0;
    long checked = 0;
    for (int j = 0; j < N; j++) {
        if (j % 8 && j < N - 64) continue;
        for (int i = 0; i < M; i++, checked++) {
            double sum = 0;
            for (int k = 0; k < K; k++) sum += (double)A[(size_t)i * K + k] * B[(size_t)j * K + k];
            max_diff = max_abs(max_diff, C[(size_t)i * N + j] - (float)sum);
        }
    }
    CHECK(checked > (long)M * N / 8);
    CHECK(max_diff <= 1e-6 * (K + 10));
}

// gpt2-core runs the core's plain gemm, ./gpt2 the tuned one (gemm_tuned): both must sum every element in
// core/gemm.h's order, on shapes no tile divides, both blockings (K in blocks of 256; K whole up to 768 when C
// has 4M floats or more), transposes, accumulation, K = 0, and any thread count.
struct GemmShape {
    int M, N, K;
};
static void check_plain_equals_tuned(const std::vector<GemmShape>& shapes) {
    GemmFunction* const tuned = gemm_tuned;
    long mismatches = 0, checked = 0, expected = 0;
    for (const GemmShape& s : shapes) {
        const std::vector<float> A = randn((size_t)s.M * s.K, 1), B = randn((size_t)s.K * s.N, 2);
        const std::vector<float> C0 = randn((size_t)s.M * s.N, 3);
        const bool big = (size_t)s.M * s.N >= GEMM_DEEP_MIN_C;  // slow: two of the eight ways
        expected += (big ? 2 : 8) * 3;
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++)
                for (int acc = 0; acc < 2; acc++) {
                    if (big && !(ta == tb && acc == ta)) continue;
                    std::vector<float> Ct = C0;
                    const int lda = ta ? s.M : s.K, ldb = tb ? s.K : s.N;
                    gemm_packed(s.M, s.N, s.K, A.data(), lda, ta, B.data(), ldb, tb, Ct.data(), s.N, acc, nullptr,
                                nullptr, false);
                    gemm_tuned = nullptr;  // the core's own gemm
                    std::vector<float> Cs = C0;
                    gemm_serial(s.M, s.N, s.K, A.data(), lda, ta, B.data(), ldb, tb, Cs.data(), s.N, acc);
                    mismatches += memcmp(Cs.data(), Ct.data(), sizeof(float) * Cs.size()) != 0;
                    for (int threads : {1, 3}) {
                        std::vector<float> C = C0;
                        with_threads(threads, [&] {
                            gemm(s.M, s.N, s.K, A.data(), lda, ta, B.data(), ldb, tb, C.data(), s.N, acc);
                        });
                        mismatches += memcmp(C.data(), Ct.data(), sizeof(float) * C.size()) != 0;
                    }
                    checked += 3;
                    gemm_tuned = tuned;
                }
    }
    CHECK(tuned == gemm_packed);
    CHECK(checked == expected);
    CHECK(mismatches == 0);
}

TEST(gemm_plain_equals_tuned_bit_for_bit) {
    check_plain_equals_tuned({{1, 1, 1}, {7, 13, 0}, {37, 45, 300}, {65, 129, 256}, {3, 70, 257}, {130, 70, 769},
                              {136, 97, 600}});
}

TEST(gemm_plain_equals_tuned_bit_for_bit_with_k_whole_for_a_c_of_4m_floats) {
    SKIP_IF_LIGHT();
    CHECK((size_t)41 * 102401 >= GEMM_DEEP_MIN_C && gemm_kc(41, 102401, 300) == 300);  // the blocking it is for
    check_plain_equals_tuned({{41, 102401, 300}});
}

TEST(bf16_round_is_nearest_even_and_vector_matches_scalar) {
    CHECK(bf16_round(1.0f) == 0x3F80);
    CHECK(bf16_round(1.0f + 0x1p-8f) == 0x3F80);      // a tie: the even neighbour (down)
    CHECK(bf16_round(1.0f + 3 * 0x1p-8f) == 0x3F82);  // a tie: the even neighbour (up)
    CHECK(bf16_round(1.0f + 0x1p-8f + 0x1p-20f) == 0x3F81);
    CHECK(bf16_round(-2.0f) == 0xC000);
    CHECK(bf16_round(INFINITY) == 0x7F80);
    CHECK(bf16_round(3.4e38f) == 0x7F80);  // past bf16's largest finite value: overflows to inf
    CHECK(std::isnan(bf16_to_float(bf16_round(NAN))));
    uint32_t nan_low = 0x7F800001;  // a NaN whose payload sits only in the bits rounding drops
    float x;
    memcpy(&x, &nan_low, 4);
    CHECK(std::isnan(bf16_rounded(x)));
    Rng rng(7);
    int mismatches = 0;
    for (int i = 0; i < 100000; i++) {
        float v[16];
        for (int l = 0; l < 16; l++) {
            uint32_t u = rng.next_u32();
            memcpy(&v[l], &u, 4);
        }
        vu16 r = vbf16_round(vf_load(v));
        for (int l = 0; l < 16; l++) mismatches += r[l] != bf16_round(v[l]);
    }
    CHECK(mismatches == 0);
}

namespace {

// bf16's gemm on its current path (vdpbf16ps or AMX tiles) against gemm_bf16_ref: on 1, 2 and 3
// threads with the same bits from each, B given as its bf16 rounding with the same bits again, and within
// the fp32 bar, which the unrounded product misses by far. Prints `path`'s worst error against the bar.
void check_gemm_bf16(const char* path) {
    struct Shape {
        int M, N, K;
    } shapes[] = {{1, 1, 1},      {7, 13, 1},       {37, 45, 300}, {256, 33, 17},    {9, 50257, 5},
                  {130, 70, 513}, {64, 96, 64},     {17, 49, 33},  {136, 2100, 264}, {1100, 1050, 40},
                  {48, 40, 1000}, {40, 105001, 260}};  // the last: gemm's one pass over K (the lm_head's)
    double worst = 0, fp32_gap = INFINITY;
    long b16_mismatches = 0, team_mismatches = 0;
    for (const Shape& s : shapes) {
        if (test_light() && (double)s.M * s.N * s.K > 5e6) continue;  // the native run has them
        const std::vector<float> A = randn((size_t)s.M * s.K, 1), B = randn((size_t)s.K * s.N, 2);
        const std::vector<float> C0 = randn((size_t)s.M * s.N, 3), Bt = stored(B, s.K, s.N, true);
        for (int acc = 0; acc < 2; acc++) {
            const bool lm_head = s.N > 100000;  // one layout of the big one, the lm_head's: B transposed, C written
            if (lm_head && acc) continue;
            // the references once for the four layouts (each sums every element in k order whatever the layout),
            // from the one whose rows run along k
            std::vector<float> Cref = C0, C32 = C0;
            gemm_bf16_ref(s.M, s.N, s.K, A.data(), s.K, false, Bt.data(), s.K, true, Cref.data(), s.N, acc);
            gemm_ref(s.M, s.N, s.K, A.data(), s.K, false, Bt.data(), s.K, true, C32.data(), s.N, acc);
            for (int ta = 0; ta < 2; ta++)
                for (int tb = 0; tb < 2; tb++) {
                    if (lm_head && (ta || !tb)) continue;
                    const std::vector<float> As = stored(A, s.M, s.K, ta);
                    const std::vector<float>& Bs = tb ? Bt : B;  // the references' transpose, not a second one
                    const int lda = ta ? s.M : s.K, ldb = tb ? s.K : s.N;
                    std::vector<float> C1;
                    for (int threads : {1, 2, 3}) {
                        std::vector<float> C = C0;
                        with_threads(threads, [&] {
                            gemm(s.M, s.N, s.K, As.data(), lda, ta, Bs.data(), ldb, tb, C.data(), s.N, acc,
                                 bf16_gemm_operands());
                        });
                        double max_diff = 0;
                        for (size_t i = 0; i < C.size(); i++) max_diff = max_abs(max_diff, C[i] - Cref[i]);
                        // Same operands, exact products: only fp32 summation differs, as in the fp32 test.
                        CHECK(max_diff <= 1e-6 * (s.K + 10));
                        worst = std::fmax(worst, max_diff / (1e-6 * (s.K + 10)));
                        if (threads == 1) C1 = C;
                        else team_mismatches += memcmp(C.data(), C1.data(), sizeof(float) * C.size()) != 0;
                    }
                    // B given as its bf16 rounding (the model's weight copy): the very same result
                    std::vector<uint16_t> B16(Bs.size());
                    bf16_round_array(B16.data(), Bs.data(), Bs.size());
                    std::vector<float> C16 = C0;
                    WeightCopy copy;
                    copy.bf16 = B16.data();
                    gemm(s.M, s.N, s.K, As.data(), lda, ta, Bs.data(), ldb, tb, C16.data(), s.N, acc,
                         bf16_gemm_operands(), &copy);
                    b16_mismatches += memcmp(C16.data(), C1.data(), sizeof(float) * C1.size()) != 0;
                }
            double gap = 0;
            for (size_t i = 0; i < C32.size(); i++) gap = max_abs(gap, C32[i] - Cref[i]);
            if (s.K >= 64) fp32_gap = std::fmin(fp32_gap, gap / (1e-6 * (s.K + 10)));
        }
    }
    // The bar must tell bf16 rounding from none: fp32 operands land far outside it (2^-9 relative per
    // operand, ~sqrt(K) of them adding up).
    CHECK(fp32_gap > 20);
    CHECK(b16_mismatches == 0);
    CHECK(team_mismatches == 0);
    printf("  %s: worst bf16 gemm / bar %.3f; smallest fp32-vs-bf16 gap / bar %.0f\n", path, worst, fp32_gap);
}

}  // namespace

TEST(gemm_bf16_matches_its_reference_on_odd_shapes) {
    if (!bf16_supported()) SKIP("this CPU has no AVX512_BF16");
    bf16_amx_use(false);
    check_gemm_bf16("vdpbf16ps");
    bf16_amx_use(true);
}

TEST(gemm_bf16_on_amx_tiles_matches_its_reference) {
    if (!bf16_amx()) SKIP("this CPU has no AMX-BF16 (or the system did not grant its tiles)");
    check_gemm_bf16("AMX tiles");
}

TEST(matvec_bf16_matches_its_reference) {
    if (!bf16_supported()) SKIP("this CPU has no AVX512_BF16");
    for (int IC : {1, 31, 70, 768, 3072}) {  // rows a whole number of vectors, and ending in a part of one
        const int OC = IC == 31 ? 38 : IC == 70 ? 39 : 37;  // the last group of four rows: 1, 2 or 3 of them
        std::vector<float> x = randn(IC, 1), W = randn((size_t)OC * IC, 2), b = randn(OC, 3);
        std::vector<uint16_t> W16(W.size());
        bf16_round_array(W16.data(), W.data(), W.size());
        std::vector<float> out(OC), ref(OC), fp32(OC);
        matvec_bf16(out.data(), x.data(), W16.data(), b.data(), 1, IC, OC);
        matvec_bf16_ref(ref.data(), x.data(), W16.data(), b.data(), IC, OC);
        matmul_forward(fp32.data(), x.data(), W.data(), b.data(), 1, IC, OC);  // the unrounded product
        double diff = 0, gap = 0;
        for (int j = 0; j < OC; j++) {
            diff = max_abs(diff, out[j] - ref[j]);
            gap = max_abs(gap, fp32[j] - ref[j]);
        }
        CHECK(diff <= 1e-6 * (IC + 10));  // as gemm_bf16: only the fp32 summation order differs
        if (IC >= 70) CHECK(gap > 20 * 1e-6 * (IC + 10));
    }
}

TEST(q8_blocks_round_as_ggml_does) {
    // d = max|x| / 127 = 1 here, so q = round(x) with halves away from zero, as ggml's reference rounds
    float x[kQ8Block] = {127, 63.5f, -63.5f, 1.5f, -0.49f, 0.5f, 0.49999997f, -0.49999997f, 126.5f, -126.5f, -2.5f};
    int8_t q[kQ8Block];
    CHECK(q8_quantize_block(x, q) == 0x3C00);  // 1.0 in fp16
    const int want[] = {127, 64, -64, 2, 0, 1, 0, 0, 127, -127, -3};
    for (int j = 0; j < 11; j++) CHECK(q[j] == want[j]);
    for (int j = 11; j < kQ8Block; j++) CHECK(q[j] == 0);
    float tiny[kQ8Block] = {1e-38f, -3e-39f};  // 1 / d is past float's range
    CHECK(q8_quantize_block(tiny, q) == 0 && q[0] == 0 && q[1] == 0);
    float zero[kQ8Block] = {};
    CHECK(q8_quantize_block(zero, q) == 0 && q[0] == 0);  // an all-zero block: scale 0
    float huge[kQ8Block] = {1e7f};
    CHECK(std::isinf(fp16_to_float(q8_quantize_block(huge, q))));  // past 65504 * 127: the caller's to refuse
}

TEST(matvec_q8_matches_its_reference_and_fp32) {
    for (int IC : {32, 96, 768, 1056, 3072}) {  // 1056: 33 blocks, the last alone after two chunks of 16
        const int OC = IC == 1056 ? 39 : 37;        // the last group of rows 3, else 1
        std::vector<float> x = randn(IC, 1), W = randn((size_t)OC * IC, 2, 0.02f), b = randn(OC, 3);
        for (int i = 0; i < IC; i++) W[5 * IC + i] *= 1e-3f;  // row 5's scales are fp16 subnormals
        std::vector<int8_t> q;
        std::vector<uint16_t> d;
        q8_quantize(W, &q, &d);
        std::vector<float> deq(W.size());  // the values the blocks stand for: fp32 matvec's operands
        for (size_t i = 0; i < W.size(); i++) deq[i] = fp16_to_float(d[i / kQ8Block]) * q[i];
        std::vector<float> out(OC), ref(OC), fp32(OC);
        double diff = 0, diff_fp32 = 0, scale = 0;
        with_threads(2, [&] { matvec_q8(out.data(), x.data(), q.data(), d.data(), b.data(), 1, IC, OC); });
        matvec_q8_ref(ref.data(), x.data(), q.data(), d.data(), b.data(), IC, OC);
        matmul_forward(fp32.data(), x.data(), deq.data(), b.data(), 1, IC, OC);
        for (int j = 0; j < OC; j++) {
            diff = max_abs(diff, out[j] - ref[j]);
            diff_fp32 = max_abs(diff_fp32, out[j] - fp32[j]);
            scale = max_abs(scale, ref[j]);
        }
        printf("    IC %d: max |q8 - ref| / max |ref| = %.2e, max |q8 - fp32 on its values| / max |ref| = %.2e\n", IC,
               diff / scale, diff_fp32 / scale);
        // fp32 sums of IC exact products in another order than the double reference's
        CHECK(diff <= 1e-6 * scale && diff_fp32 <= 1e-6 * scale);
        std::vector<float> nob(OC), nob_ref(OC);  // row 5 alone, without the bias that would hide it
        matvec_q8(nob.data(), x.data(), q.data(), d.data(), nullptr, 1, IC, OC);
        matvec_q8_ref(nob_ref.data(), x.data(), q.data(), d.data(), nullptr, IC, OC);
        CHECK(nob_ref[5] != 0 && std::fabs(nob[5] - nob_ref[5]) <= 1e-5 * std::fabs(nob_ref[5]));
    }
}

TEST(matvec_q8q8_rounds_x_to_q8_blocks_and_matches_its_reference) {
    // int8 inference as llama.cpp: x rounded to q8_0 blocks, each block's product in integers. Against the
    // double reference on the same rounding; against fp32 x (matvec_q8) it must differ, by x's rounding alone.
    for (int IC : {32, 96, 768, 3072}) {
        const int OC = 37;
        std::vector<float> x = randn(IC, 1), W = randn((size_t)OC * IC, 2, 0.02f), b = randn(OC, 3);
        for (int i = 0; i < IC; i++) W[5 * IC + i] *= 1e-3f;  // row 5's scales are fp16 subnormals
        for (int i = 0; i < kQ8Block; i++) x[i] *= 1e-3f;    // x's first block's too
        std::vector<int8_t> q;
        std::vector<uint16_t> d;
        q8_quantize(W, &q, &d);
        std::vector<float> out(OC), ref(OC), nob(OC), nob_ref(OC), nob_fp32_x(OC);
        with_threads(2, [&] { matvec_q8q8(out.data(), x.data(), q.data(), d.data(), b.data(), 1, IC, OC); });
        matvec_q8q8_ref(ref.data(), x.data(), q.data(), d.data(), b.data(), IC, OC);
        matvec_q8q8(nob.data(), x.data(), q.data(), d.data(), nullptr, 1, IC, OC);  // without the bias that hides row 5
        matvec_q8q8_ref(nob_ref.data(), x.data(), q.data(), d.data(), nullptr, IC, OC);
        matvec_q8_ref(nob_fp32_x.data(), x.data(), q.data(), d.data(), nullptr, IC, OC);
        double diff = 0, scale = 0, rounding = 0, nob_scale = 0;
        for (int j = 0; j < OC; j++) {
            diff = max_abs(diff, out[j] - ref[j]);
            scale = max_abs(scale, ref[j]);
            rounding = max_abs(rounding, nob_ref[j] - nob_fp32_x[j]);
            nob_scale = max_abs(nob_scale, nob_ref[j]);
        }
        printf("    IC %d: max |q8q8 - ref| / max |ref| = %.2e; x's rounding moves W x by %.2e of its max\n", IC,
               diff / scale, rounding / nob_scale);
        CHECK(diff <= 1e-6 * scale);  // exact block sums, then fp32 in another order
        CHECK(rounding > 1e-5 * nob_scale && rounding <= 1e-2 * nob_scale);  // x's step: 1/254 of a block's max
        CHECK(nob_ref[5] != 0 && std::fabs(nob[5] - nob_ref[5]) <= 1e-5 * std::fabs(nob_ref[5]));
    }
    // a block q8_0 cannot hold, past its range or NaN: every output NaN (llama.cpp's fp16 scale overflows there)
    const int IC = 64, OC = 5;
    std::vector<float> x = randn(IC, 1), W = randn((size_t)OC * IC, 2, 0.02f), out(OC);
    std::vector<int8_t> q;
    std::vector<uint16_t> d;
    q8_quantize(W, &q, &d);
    for (float bad : {1e7f, NAN, -INFINITY}) {  // 1e7 / 127 is past fp16's 65504
        x[40] = bad;
        matvec_q8q8(out.data(), x.data(), q.data(), d.data(), nullptr, 1, IC, OC);
        CHECK(std::all_of(out.begin(), out.end(), [](float v) { return std::isnan(v); }));
    }
}

// q8_gemm_operands, the gemm of prefill and eval in int8 inference: x W^T against the q8_0 weights' product
// (double) on x's blocks rounded as decoding rounds them, K in one pass and several (kc 256), panels of A
// and B cut short, A packed once for all of B (126 rows: not whole panels of 4), a C of 4M floats (K in
// one pass of 320); a row with a block q8_0 cannot hold is NaN; and its one row is decoding's matvec_q8q8.
struct MatmulShape {
    int N, IC, OC;
};
static void check_int8_gemm(const std::vector<MatmulShape>& shapes) {
    for (const MatmulShape& s : shapes) {
        std::vector<float> W = randn((size_t)s.OC * s.IC, 1, 0.02f), x = randn((size_t)s.N * s.IC, 2);
        std::vector<float> b = randn(s.OC, 4);
        x[(size_t)2 * s.IC + 7] = 1e7f;  // row 2 has a block q8_0 cannot hold
        std::vector<int8_t> q;
        std::vector<uint16_t> d;
        q8_quantize(W, &q, &d);
        WeightCopy copy;
        copy.q8 = q.data(), copy.q8_d = d.data(), copy.fp32_dropped = true, copy.q8_inputs = true;
        const Weight held(nullptr, q8_gemm_operands(), &copy);
        std::vector<float> out((size_t)s.N * s.OC), row(s.OC), xr(x);  // xr: x as q8_0 blocks stand for it
        for (size_t blk = 0; blk < x.size() / kQ8Block; blk++) {
            int8_t xq[kQ8Block];
            float xd;
            if (q8_round_input_block(&x[blk * kQ8Block], xq, &xd))
                for (int j = 0; j < kQ8Block; j++) xr[blk * kQ8Block + j] = xd * xq[j];
        }
        with_threads(2, [&] { matmul_forward(out.data(), x.data(), held, b.data(), s.N, s.IC, s.OC); });
        double worst = 0;
        for (int i = 0; i < s.N; i += s.N * s.OC > 100000 ? 41 : 1) {  // the big ones: rows 0, 41, 82 (+ 123)
            if (i == 2) continue;
            matvec_q8_ref(row.data(), xr.data() + (size_t)i * s.IC, q.data(), d.data(), b.data(), s.IC, s.OC);
            double diff = 0, scale = 0;
            for (int j = 0; j < s.OC; j++) {
                diff = max_abs(diff, out[(size_t)i * s.OC + j] - row[j]);
                scale = max_abs(scale, row[j]);
            }
            worst = std::max(worst, diff / scale);
        }
        printf("    N %d IC %d: max over rows of max |gemm - ref on the rounded x| / max |ref| = %.2e\n", s.N, s.IC,
               worst);
        CHECK(worst <= 1e-6);
        CHECK(std::all_of(out.begin() + 2 * s.OC, out.begin() + 3 * s.OC, [](float v) { return std::isnan(v); }));
        std::vector<float> want(s.OC);  // one row: decoding's matvec_q8q8, through matmul_forward's hook
        matmul_forward(row.data(), x.data(), held, b.data(), 1, s.IC, s.OC);
        matvec_q8q8(want.data(), x.data(), q.data(), d.data(), b.data(), 1, s.IC, s.OC);
        CHECK(row == want);
        double diff = 0, scale = 0;
        for (int j = 0; j < s.OC; j++) diff = max_abs(diff, row[j] - out[j]), scale = max_abs(scale, out[j]);
        CHECK(diff <= 1e-6 * scale);
    }
}

// int8's two kernels sum in one fp32 order on every instruction set that has FMA (AVX2's vpmaddubsw,
// AVX512-VNNI's vpdpbusd): block after block in k order, acc = fma(the block's exact integer sum, w's scale x
// x's scale, acc); the gemm sums each pass of GEMM_KC values from zero and adds it to C. Bit for bit against
// that order: the mat-vec over 33 blocks (two chunks of 16, then one alone) and 39 rows (the last group of
// 3), the gemm over 6 rows, 100 columns (panels of 48, 48 and 4) and 800 values (passes of 256, 256, 256, 32).
TEST(int8_kernels_sum_in_one_order_bit_for_bit) {
#if !(defined(__AVX2__) && defined(__FMA__))
    SKIP("built without FMA: the kernels' plain loops multiply and add apart (the bounds are the other tests')");
#else
    const auto round_x = [](const std::vector<float>& x, std::vector<int8_t>* xq, std::vector<float>* xd) {
        xq->resize(x.size()), xd->resize(x.size() / kQ8Block);
        for (size_t b = 0; b < xd->size(); b++)
            CHECK(q8_round_input_block(&x[b * kQ8Block], &(*xq)[b * kQ8Block], &(*xd)[b]));
    };
    // Row j of W (q, d) times x's rounded blocks [b0, b1), in the kernels' order.
    const auto chain = [](const int8_t* q, const uint16_t* d, const int8_t* xq, const float* xd, int b0, int b1) {
        float acc = 0;
        for (int b = b0; b < b1; b++) {
            int dot = 0;
            for (int i = b * kQ8Block; i < (b + 1) * kQ8Block; i++) dot += q[i] * xq[i];
            acc = std::fma((float)dot, fp16_to_float(d[b]) * xd[b], acc);
        }
        return acc;
    };
    {
        const int IC = 1056, OC = 39, nb = IC / kQ8Block;
        std::vector<float> x = randn(IC, 5), W = randn((size_t)OC * IC, 6, 0.02f), out(OC);
        std::vector<int8_t> q, xq;
        std::vector<uint16_t> d;
        std::vector<float> xd;
        q8_quantize(W, &q, &d);
        round_x(x, &xq, &xd);
        with_threads(2, [&] { matvec_q8q8(out.data(), x.data(), q.data(), d.data(), nullptr, 1, IC, OC); });
        int equal = 0;
        for (int j = 0; j < OC; j++)
            equal += out[j] == chain(&q[(size_t)j * IC], &d[(size_t)j * nb], xq.data(), xd.data(), 0, nb);
        printf("    mat-vec: %d of %d outputs equal the order's\n", equal, OC);
        CHECK(equal == OC);
    }
    {
        const int N = 6, IC = 800, OC = 100, nb = IC / kQ8Block, kb = GEMM_KC / kQ8Block;
        std::vector<float> x = randn((size_t)N * IC, 7), W = randn((size_t)OC * IC, 8, 0.02f), out((size_t)N * OC);
        std::vector<int8_t> q, xq;
        std::vector<uint16_t> d;
        std::vector<float> xd;
        q8_quantize(W, &q, &d);
        round_x(x, &xq, &xd);
        WeightCopy copy;
        copy.q8 = q.data(), copy.q8_d = d.data(), copy.fp32_dropped = true, copy.q8_inputs = true;
        const Weight held(nullptr, q8_gemm_operands(), &copy);
        with_threads(2, [&] { matmul_forward(out.data(), x.data(), held, nullptr, N, IC, OC); });
        int equal = 0;
        for (int i = 0; i < N; i++)
            for (int j = 0; j < OC; j++) {
                float c = 0;
                for (int b0 = 0; b0 < nb; b0 += kb) {
                    const float pass = chain(&q[(size_t)j * IC], &d[(size_t)j * nb], &xq[(size_t)i * IC],
                                             &xd[(size_t)i * nb], b0, std::min(nb, b0 + kb));
                    c = b0 == 0 ? pass : c + pass;
                }
                equal += out[(size_t)i * OC + j] == c;
            }
        printf("    gemm: %d of %d outputs equal the order's\n", equal, N * OC);
        CHECK(equal == N * OC);
    }
#endif
}

TEST(int8_inference_gemm_rounds_each_row_as_decoding_does) {
    check_int8_gemm({{5, 96, 37}, {70, 800, 100}, {3, 3072, 50}, {126, 256, 2100}});
}

TEST(int8_inference_gemm_rounds_each_row_as_decoding_does_for_a_c_of_4m_floats) {
    SKIP_IF_LIGHT();
    check_int8_gemm({{84, 320, 50000}});
}

TEST(matmul_forward_decodes_one_row_from_the_q8_copy) {
    // one row of a Weight with a q8 copy runs matvec_q8 through the hook main sets (core/layers.h's
    // matmul_rows): the copy here is of other values than the fp32 ones, so reading either shows
    const int IC = 96, OC = 37;
    std::vector<float> x = randn(IC, 1), W = randn((size_t)OC * IC, 2, 0.02f), b = randn(OC, 3);
    std::vector<float> other = randn(W.size(), 4, 0.02f);
    std::vector<int8_t> q;
    std::vector<uint16_t> d;
    q8_quantize(other, &q, &d);
    WeightCopy copy;
    copy.q8 = q.data(), copy.q8_d = d.data();
    const Weight w(W.data(), nullptr, &copy);
    std::vector<float> out(OC), want(OC);
    matmul_forward(out.data(), x.data(), w, b.data(), 1, IC, OC);
    matvec_q8(want.data(), x.data(), q.data(), d.data(), b.data(), 1, IC, OC);
    CHECK(out == want);
}

// A Weight holding only its q8 blocks or bf16 values (no fp32 values: a LoRA base's, gpt2_set_precision's
// drop_fp32) in the forward (x W^T), the backward's dinp = dout W and (bf16) decoding's one row, against
// the same products on the values the copy stands for: bit for bit. Panels cut short (OC 37, 100), K in
// one pass and several, a C of 4M floats (gemm's one-pass-over-K blocking, the lm_head's), a row of
// fp16-subnormal scales.
static void check_copy_alone(const std::vector<MatmulShape>& shapes) {
    for (const MatmulShape& s : shapes)
        for (const bool q8 : {true, false}) {
            std::vector<float> W = randn((size_t)s.OC * s.IC, 1, 0.02f), x = randn((size_t)s.N * s.IC, 2);
            std::vector<float> dout = randn((size_t)s.N * s.OC, 3), b = randn(s.OC, 4);
            for (int i = 0; i < s.IC; i++) W[(size_t)3 * s.IC + i] *= 1e-3f;
            std::vector<int8_t> q(W.size());
            std::vector<uint16_t> d(W.size() / kQ8Block), w16(W.size());
            WeightCopy copy;
            copy.fp32_dropped = true;
            if (q8) {
                q8_quantize(W, &q, &d);
                for (size_t i = 0; i < W.size(); i++) W[i] = fp16_to_float(d[i / kQ8Block]) * q[i];
                copy.q8 = q.data(), copy.q8_d = d.data();
            } else {
                for (size_t i = 0; i < W.size(); i++) w16[i] = bf16_round(W[i]), W[i] = bf16_to_float(w16[i]);
                copy.bf16 = w16.data();
            }
            const Weight held(nullptr, copy_gemm_operands(), &copy);
            std::vector<float> out((size_t)s.N * s.OC), want(out.size()), dinp(x.size()), dinp_want(x.size());
            matmul_forward(out.data(), x.data(), held, b.data(), s.N, s.IC, s.OC);
            matmul_forward(want.data(), x.data(), W.data(), b.data(), s.N, s.IC, s.OC);
            matmul_backward(dinp.data(), nullptr, nullptr, dout.data(), x.data(), held, s.N, s.IC, s.OC);
            matmul_backward(dinp_want.data(), nullptr, nullptr, dout.data(), x.data(), W.data(), s.N, s.IC, s.OC);
            CHECK(out == want);
            CHECK(dinp == dinp_want);
            if (q8) continue;
            matvec_rows(out.data(), x.data(), held, b.data(), 1, s.IC, s.OC);  // one row: fp32 on the bf16 values
            matmul_forward(want.data(), x.data(), W.data(), b.data(), 1, s.IC, s.OC);
            CHECK(std::equal(want.begin(), want.begin() + s.OC, out.begin()));
        }
}

TEST(matmuls_of_a_weight_its_copy_alone_holds_equal_fp32_on_the_copys_values) {
    check_copy_alone({{5, 96, 37}, {70, 800, 100}});
}

TEST(matmuls_of_a_weight_its_copy_alone_holds_equal_fp32_on_the_copys_values_for_a_c_of_4m_floats) {
    SKIP_IF_LIGHT();
    check_copy_alone({{84, 320, 50000}});
}

TEST(encoder_backward_matches_finite_differences) {
    const int B = 2, T = 5, C = 6, V = 7;
    std::vector<int> tokens = {1, 3, 3, 0, 6, 3, 2, 1, 1, 5};  // repeats: rows of dwte collide
    std::vector<float> wte = randn(V * C, 1), wpe = randn(T * C, 2), proj = randn(B * T * C, 3);
    std::vector<float> out(B * T * C), dwte(V * C, 0.0f), dwpe(T * C, 0.0f);
    auto loss = [&] {
        encoder_forward(out.data(), tokens.data(), wte.data(), wpe.data(), B, T, C);
        return dot(out, proj);
    };
    encoder_backward(dwte.data(), dwpe.data(), proj.data(), tokens.data(), B, T, C);
    CHECK(fd_error(wte, dwte, loss) < kFdTol);
    CHECK(fd_error(wpe, dwpe, loss) < kFdTol);
}

TEST(layernorm_backward_matches_finite_differences) {
    const int N = 6, C = 10;
    std::vector<float> x = randn(N * C, 1), w = randn(C, 2), b = randn(C, 3), proj = randn(N * C, 4);
    for (int i = 0; i < N * C; i++) x[i] += (float)(i / C);  // rows with different means
    std::vector<float> out(N * C), mean(N), rstd(N), dx(N * C, 0.0f), dw(C, 0.0f), db(C, 0.0f);
    auto loss = [&] {
        layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C);
        return dot(out, proj);
    };
    loss();
    layernorm_backward(dx.data(), dw.data(), db.data(), proj.data(), x.data(), w.data(), mean.data(), rstd.data(), N,
                       C);
    CHECK(fd_error(x, dx, loss, 1, 1e-3f) < kFdTol);
    CHECK(fd_error(w, dw, loss) < kFdTol);
    CHECK(fd_error(b, db, loss) < kFdTol);
}

TEST(layernorm_forward_matches_pytorch_fixture) {
    SafeTensors st;
    safetensors_load(&st, test_path("fixtures/layernorm.safetensors"));
    std::vector<float> x = safetensors_read_f32(st, *st.find("x")), w = safetensors_read_f32(st, *st.find("weight"));
    std::vector<float> b = safetensors_read_f32(st, *st.find("bias")), ref = safetensors_read_f32(st, *st.find("out"));
    const int C = (int)w.size(), N = (int)(x.size() / C);
    std::vector<float> out(x.size()), mean(N), rstd(N);
    layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C);
    double max_diff = 0, max_ref = 0;
    for (size_t i = 0; i < out.size(); i++) {
        max_diff = max_abs(max_diff, out[i] - ref[i]);
        max_ref = max_abs(max_ref, ref[i]);
    }
    // The fixture is nn.LayerNorm in float64 rounded to fp32; rows have means up to 50 and scales down to
    // 1e-3, where a one-pass fp32 variance would be off by percent.
    CHECK(max_diff / max_ref <= 1e-6);
}

TEST(matmul_backward_matches_finite_differences) {
    const int N = 5, IC = 7, OC = 9;
    std::vector<float> x = randn(N * IC, 1), w = randn(OC * IC, 2), b = randn(OC, 3), proj = randn(N * OC, 4);
    std::vector<float> out(N * OC), dx(N * IC, 0.0f), dw(OC * IC, 0.0f), db(OC, 0.0f);
    auto loss = [&] {
        matmul_forward(out.data(), x.data(), w.data(), b.data(), N, IC, OC);
        return dot(out, proj);
    };
    matmul_backward(dx.data(), dw.data(), db.data(), proj.data(), x.data(), w.data(), N, IC, OC);
    CHECK(fd_error(x, dx, loss) < kFdTol);
    CHECK(fd_error(w, dw, loss) < kFdTol);
    CHECK(fd_error(b, db, loss) < kFdTol);
}

TEST(attention_backward_matches_finite_differences) {
    const int B = 2, T = 5, C = 8, NH = 2;
    std::vector<float> qkv = randn(B * T * 3 * C, 1), proj = randn(B * T * C, 2);
    std::vector<float> out(B * T * C), lse(B * NH * T), dqkv(qkv.size(), 0.0f);
    auto loss = [&] {
        attention_forward(out.data(), lse.data(), qkv.data(), B, T, C, NH);
        return dot(out, proj);
    };
    loss();
    attention_backward(dqkv.data(), proj.data(), qkv.data(), lse.data(), B, T, C, NH);
    CHECK(fd_error(qkv, dqkv, loss, 1, 1e-3f) < kFdTol);
    // causality: the last position's key and value cannot influence earlier outputs
    std::vector<float> before = out;
    for (int i = C; i < 3 * C; i++) qkv[(T - 1) * 3 * C + i] += 1.0f;
    loss();
    for (int t = 0; t < T - 1; t++)
        for (int c = 0; c < C; c++) CHECK(out[t * C + c] == before[t * C + c]);
}

TEST(gelu_backward_matches_finite_differences) {
    const size_t n = 40;
    std::vector<float> x = randn(n, 1, 2.0f), proj = randn(n, 2), out(n), dx(n, 0.0f);
    auto loss = [&] {
        gelu_forward(out.data(), x.data(), n);
        return dot(out, proj);
    };
    gelu_backward(dx.data(), x.data(), proj.data(), n);
    CHECK(fd_error(x, dx, loss, 1, 1e-3f) < kFdTol);
    // known values of the tanh approximation
    float probe[3] = {-1.0f, 0.0f, 1.0f}, got[3];
    gelu_forward(got, probe, 3);
    CHECK_NEAR(got[0], -0.15880801f, 1e-6);
    CHECK_NEAR(got[1], 0.0f, 0.0);
    CHECK_NEAR(got[2], 0.84119199f, 1e-6);
}

TEST(crossentropy_matches_finite_differences_and_ignores_padding) {
    const int N = 4, V = 11, Vp = 16;
    std::vector<float> logits = randn(N * Vp, 1, 3.0f), losses(N), glosses(N);
    std::vector<int> targets = {0, 10, 5, 5};
    for (int i = 0; i < N; i++)
        for (int v = V; v < Vp; v++) logits[i * Vp + v] = 1e4f;  // would dominate if it leaked into softmax
    const std::vector<float> saved = logits;
    auto loss = [&] {  // without the gradient the logits are only read
        return (double)ce_mean(crossentropy_fused, logits.data(), losses.data(), targets.data(), false, N, V, Vp);
    };
    double l = loss();
    CHECK(logits == saved);
    double expected = 0;
    for (int i = 0; i < N; i++) {
        double z = 0;
        for (int v = 0; v < V; v++) z += std::exp((double)logits[i * Vp + v]);
        expected += std::log(z) - logits[i * Vp + targets[i]];
    }
    CHECK_NEAR(l, expected / N, 1e-5);
    // with the gradient: the same losses, and the buffer turned into d(mean loss)/dlogits
    std::vector<float> dlogits = logits;
    float lg = ce_mean(crossentropy_fused, dlogits.data(), glosses.data(), targets.data(), true, N, V, Vp);
    CHECK(lg == (float)l && glosses == losses);
    for (int i = 0; i < N; i++)
        for (int v = V; v < Vp; v++) CHECK(dlogits[i * Vp + v] == 0.0f);
    // the loss is a mean in float; finite differences on the real columns only
    std::vector<float> real(N * V), dreal(N * V);
    for (int i = 0; i < N; i++)
        for (int v = 0; v < V; v++) real[i * V + v] = logits[i * Vp + v], dreal[i * V + v] = dlogits[i * Vp + v];
    auto loss_real = [&] {
        for (int i = 0; i < N; i++)
            for (int v = 0; v < V; v++) logits[i * Vp + v] = real[i * V + v];
        return loss();
    };
    CHECK(fd_error(real, dreal, loss_real, 1, 1e-2f) < kFdTol);
    // a micro-batch's share scales the gradient after it is rounded, as a second pass would, and nothing else
    for (CrossEntropy fn : {crossentropy_fused, crossentropy_fused_ref}) {
        std::vector<float> one = saved, scaled = saved, ls(N);
        ce_mean(fn, one.data(), ls.data(), targets.data(), true, N, V, Vp);
        CHECK(ce_mean(fn, scaled.data(), ls.data(), targets.data(), true, N, V, Vp, 0.25f) == (float)l);
        for (int i = 0; i < N * Vp; i++) CHECK(scaled[i] == one[i] * 0.25f);
        CHECK(fn != crossentropy_fused || one == dlogits);
    }
}

namespace {

// max |a - b| / max |b|
double rel_error(const std::vector<float>& a, const std::vector<float>& b) {
    double max_diff = 0, max_ref = 0;
    for (size_t i = 0; i < a.size(); i++) {
        max_diff = max_abs(max_diff, (double)a[i] - b[i]);
        max_ref = max_abs(max_ref, (double)b[i]);
    }
    return max_ref > 0 ? max_diff / max_ref : max_diff;
}

}  // namespace

TEST(gelu_fast_matches_reference) {
    // odd length (vector tail), inputs over the range where tanh saturates and beyond
    for (size_t n : {(size_t)1, (size_t)15, (size_t)1001}) {
        std::vector<float> x = randn(n, 5, 4.0f), d = randn(n, 6);
        if (n > 3) x[0] = -30.0f, x[1] = 30.0f, x[2] = 0.0f;
        std::vector<float> out(n), ref(n), dx(n, 5.0f), dref(n);
        gelu_forward(out.data(), x.data(), n);
        gelu_forward_ref(ref.data(), x.data(), n);
        CHECK(rel_error(out, ref) <= 1e-6);
        for (size_t i = 0; i < n; i++) CHECK(std::fabs(out[i] - ref[i]) <= 2e-7 * std::fabs(x[i]) + 1e-30);
        gelu_backward(dx.data(), x.data(), d.data(), n);  // overwrites the 5.0 fill
        gelu_backward_ref(dref.data(), x.data(), d.data(), n);
        CHECK(rel_error(dx, dref) <= 1e-6);
    }
}

TEST(crossentropy_fast_matches_reference_at_gpt2_vocab) {
    const int N = 3, V = 50257, Vp = 50304;
    std::vector<float> logits = randn((size_t)N * Vp, 7, 4.0f);
    logits[5] = 80.0f;  // a dominant logit: other probabilities underflow
    std::vector<int> targets = {0, 50256, 123};
    for (bool grad : {false, true}) {
        std::vector<float> out = logits, ref = logits, losses(N), lref(N);
        float mean = ce_mean(crossentropy_fused, out.data(), losses.data(), targets.data(), grad, N, V, Vp);
        float mref = ce_mean(crossentropy_fused_ref, ref.data(), lref.data(), targets.data(), grad, N, V, Vp);
        CHECK_NEAR(mean, mref, 1e-6);
        for (int i = 0; i < N; i++) CHECK_NEAR(losses[i], lref[i], 1e-6);
        if (!grad) {
            CHECK(out == logits && ref == logits);
            continue;
        }
        CHECK(rel_error(out, ref) <= 1e-6);
        for (int i = 0; i < N; i++)
            for (int v = V; v < Vp; v++) CHECK(out[(size_t)i * Vp + v] == 0.0f && ref[(size_t)i * Vp + v] == 0.0f);
        // the reference itself: (softmax - onehot) / N in double, to fp32 rounding
        std::vector<double> exact((size_t)N * Vp, 0.0);
        for (int i = 0; i < N; i++) {
            const float* z = logits.data() + (size_t)i * Vp;
            double zmax = *std::max_element(z, z + V), sum = 0;
            for (int v = 0; v < V; v++) sum += std::exp((double)z[v] - zmax);
            for (int v = 0; v < V; v++) exact[(size_t)i * Vp + v] = std::exp((double)z[v] - zmax) / sum / N;
            exact[(size_t)i * Vp + targets[i]] -= 1.0 / N;
        }
        double max_diff = 0;
        for (size_t k = 0; k < exact.size(); k++) max_diff = max_abs(max_diff, ref[k] - exact[k]);
        CHECK(max_diff <= 1e-6 / N);
    }
}

// simd.h's sum of exponentials adds x[i]'s term into double lane i % 16, the lanes in order, then the tail's
// terms: the same number with any register width (this build's: kLanes floats).
TEST(exp_sum_adds_in_sixteen_lanes_whatever_the_register) {
    for (int n : {5, 16, 37, 1000, 50257}) {
        std::vector<float> x = randn(n, 9, 30.0f), stored = x;  // terms near e^-45 to e^45: sums round
        std::vector<double> terms(n);  // scale 0.5: x * 0.5 - 1 is the same with or without a fused multiply-add
        for (int i = 0; i < n; i++) terms[i] = vn_exp(vf_load_partial<vn>(&x[i], 1) * 0.5f - 1.0f)[0];
        double lanes[16] = {}, want = 0;
        const int whole = n / 16 * 16;
        for (int i = 0; i < whole; i++) lanes[i % 16] += terms[i];
        for (int l = 0; l < 8; l++) want += lanes[l] + lanes[l + 8];
        for (int i = whole; i < n; i++) want += terms[i];
        CHECK(vf_exp_sum<false>(x.data(), n, 0.5f, 1.0f) == want);
        CHECK(vf_exp_sum<true>(stored.data(), n, 0.5f, 1.0f) == want);
        for (int i = 0; i < n; i++) CHECK(stored[i] == (float)terms[i]);
    }
}

TEST(backward_kernels_overwrite_activation_gradients) {
    // The kernels layers.h marks `=` must not depend on what their activation gradient held before.
    const int B = 2, T = 5, C = 8, NH = 2, N = B * T, OC = 6;
    std::vector<float> qkv = randn(N * 3 * C, 1), dout = randn(N * C, 2), att(B * NH * T), out(N * C);
    attention_forward(out.data(), att.data(), qkv.data(), B, T, C, NH);
    std::vector<float> d0(qkv.size(), 0.0f), d1(qkv.size(), 9.0f);
    attention_backward(d0.data(), dout.data(), qkv.data(), att.data(), B, T, C, NH);
    attention_backward(d1.data(), dout.data(), qkv.data(), att.data(), B, T, C, NH);
    CHECK(d0 == d1);
    std::vector<float> w = randn(OC * C, 3), dy = randn(N * OC, 4), dw(OC * C, 0.0f);
    std::vector<float> x0(N * C, 0.0f), x1(N * C, -3.0f);
    matmul_backward(x0.data(), dw.data(), nullptr, dy.data(), out.data(), w.data(), N, C, OC);
    matmul_backward(x1.data(), dw.data(), nullptr, dy.data(), out.data(), w.data(), N, C, OC);
    CHECK(x0 == x1);
    // gpt2_backward turns fch_gelu's gradient into fch's in place (layout.h): as into a buffer of its own
    std::vector<float> fch = randn(N * C + 3, 5, 3.0f), into(fch.size()), dgelu = randn(fch.size(), 6);
    std::vector<float> in_place = dgelu;
    gelu_backward(into.data(), fch.data(), dgelu.data(), fch.size());
    gelu_backward(in_place.data(), fch.data(), in_place.data(), fch.size());
    CHECK(into == in_place);
}

TEST(attention_fast_matches_reference) {
    // T not a multiple of the query block, heads of 8 and of 64 channels
    struct Shape {
        int B, T, C, NH;
    } shapes[] = {{1, 1, 8, 1}, {2, 5, 24, 3}, {1, 70, 16, 2}, {2, 130, 128, 2}};
    for (const Shape& s : shapes) {
        const int N = s.B * s.T;
        std::vector<float> qkv = randn((size_t)N * 3 * s.C, 11, 2.0f), dout = randn((size_t)N * s.C, 12);
        std::vector<float> out((size_t)N * s.C), oref(out.size()), lse((size_t)s.B * s.NH * s.T), lref(lse.size());
        attention_forward(out.data(), lse.data(), qkv.data(), s.B, s.T, s.C, s.NH);
        attention_forward_ref(oref.data(), lref.data(), qkv.data(), s.B, s.T, s.C, s.NH);
        CHECK(rel_error(out, oref) <= 2e-6);
        CHECK(rel_error(lse, lref) <= 2e-6);
        std::vector<float> d(qkv.size(), 4.0f), dref(qkv.size());
        attention_backward(d.data(), dout.data(), qkv.data(), lse.data(), s.B, s.T, s.C, s.NH);
        attention_backward_ref(dref.data(), dout.data(), qkv.data(), lref.data(), s.B, s.T, s.C, s.NH);
        CHECK(rel_error(d, dref) <= 2e-6);
    }
}

TEST(attention_bf16_stays_close_to_fp32) {
    // Attention's products through the bf16 gemm: the result moves by bf16's rounding (u = 2^-8), not more.
    if (!bf16_supported()) SKIP("this CPU has no AVX512_BF16");
    const int B = 2, T = 130, C = 128, NH = 2, N = B * T;
    std::vector<float> qkv = randn((size_t)N * 3 * C, 11, 2.0f), dout = randn((size_t)N * C, 12);
    std::vector<float> out((size_t)N * C), oref(out.size()), lse((size_t)B * NH * T), lref(lse.size());
    attention_forward(out.data(), lse.data(), qkv.data(), B, T, C, NH, bf16_gemm_operands());
    attention_forward_ref(oref.data(), lref.data(), qkv.data(), B, T, C, NH);
    std::vector<float> d(qkv.size()), dref(qkv.size());
    attention_backward(d.data(), dout.data(), qkv.data(), lse.data(), B, T, C, NH, bf16_gemm_operands());
    attention_backward_ref(dref.data(), dout.data(), qkv.data(), lref.data(), B, T, C, NH);
    const double e_out = rel_error(out, oref), e_lse = rel_error(lse, lref), e_d = rel_error(d, dref);
    printf("  bf16 attention vs fp32 reference: out %.2e, lse %.2e, dqkv %.2e\n", e_out, e_lse, e_d);
    CHECK(e_out > 1e-4);  // it did round
    CHECK(e_out < 3e-2 && e_lse < 3e-2 && e_d < 3e-2);
}

// Targets of -1 (a loss mask's prompt and padding rows) are not scored: loss 0 and a zero dlogits row, the mean
// and its gradient over the scored rows only (1/N_scored), the fast kernel against its reference and both against
// float64; a call with no scored row gives 0 and zero gradients rather than 0/0.
TEST(crossentropy_masked_targets_match_reference_and_float64) {
    const int N = 5, V = 50257, Vp = 50304;
    const std::vector<float> logits = randn((size_t)N * Vp, 11, 4.0f);
    const std::vector<int> targets = {-1, 50256, -1, 7, 123};
    const int scored = 3;
    for (bool grad : {false, true}) {
        std::vector<float> out = logits, ref = logits, losses(N, 9.0f), lref(N, 9.0f);
        float mean = ce_mean(crossentropy_fused, out.data(), losses.data(), targets.data(), grad, N, V, Vp);
        float mref = ce_mean(crossentropy_fused_ref, ref.data(), lref.data(), targets.data(), grad, N, V, Vp);
        std::vector<double> exact((size_t)N * Vp, 0.0);
        double exact_mean = 0;
        for (int i = 0; i < N; i++) {
            if (targets[i] < 0) continue;
            const float* z = logits.data() + (size_t)i * Vp;
            double zmax = *std::max_element(z, z + V), sum = 0;
            for (int v = 0; v < V; v++) sum += std::exp((double)z[v] - zmax);
            exact_mean += (std::log(sum) - ((double)z[targets[i]] - zmax)) / scored;
            for (int v = 0; v < V; v++) exact[(size_t)i * Vp + v] = std::exp((double)z[v] - zmax) / sum / scored;
            exact[(size_t)i * Vp + targets[i]] -= 1.0 / scored;
        }
        CHECK_NEAR(mean, mref, 1e-6);
        CHECK_NEAR(mean, exact_mean, 1e-5);
        for (int i = 0; i < N; i++) CHECK(targets[i] >= 0 || (losses[i] == 0.0f && lref[i] == 0.0f));
        if (!grad) continue;
        CHECK(rel_error(out, ref) <= 1e-6);
        double max_diff = 0;
        for (size_t k = 0; k < exact.size(); k++) max_diff = max_abs(max_diff, out[k] - exact[k]);
        CHECK(max_diff <= 1e-6 / scored);
        for (int i = 0; i < N; i++)
            for (int v = 0; v < Vp && targets[i] < 0; v++)
                CHECK(out[(size_t)i * Vp + v] == 0.0f && ref[(size_t)i * Vp + v] == 0.0f);
    }
    // unmasked rows give what a call on them alone gives, bit for bit
    std::vector<float> all = logits, some(logits.begin() + (size_t)3 * Vp, logits.end()), la(N), ls(2);
    const std::vector<int> tail = {7, 123}, masked = {-1, -1, -1, 7, 123};
    CHECK(ce_mean(crossentropy_fused, all.data(), la.data(), masked.data(), true, N, V, Vp) ==
          ce_mean(crossentropy_fused, some.data(), ls.data(), tail.data(), true, 2, V, Vp));
    CHECK(std::equal(some.begin(), some.end(), all.begin() + (size_t)3 * Vp));
    // nothing scored: 0, zero gradients, no NaN
    const std::vector<int> none(N, -1);
    for (CrossEntropy fn : {crossentropy_fused, crossentropy_fused_ref}) {
        std::vector<float> z = logits, l(N, 9.0f);
        CHECK(ce_mean(fn, z.data(), l.data(), none.data(), true, N, V, Vp) == 0.0f);
        CHECK(std::all_of(z.begin(), z.end(), [](float x) { return x == 0.0f; }));
        CHECK(std::all_of(l.begin(), l.end(), [](float x) { return x == 0.0f; }));
    }
}
