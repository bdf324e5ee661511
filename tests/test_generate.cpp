// test_generate.cpp: the KV-cache path against the full forward pass, sequences decoded together against each
// alone, the sampler's warpers on hand-made distributions, and the seeding contract of generation.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <vector>

#include "formats/checkpoint.h"
#include "formats/train_state.h"
#include "inference/generate.h"
#include "inference/infer.h"
#include "inference/kv_attention.h"
#include "inference/matvec.h"
#include "core/model.h"
#include "precision/precision.h"
#include "inference/sampler.h"
#include "platform/hash.h"
#include "platform/util.h"
#include "core/layers.h"
#include "core/rng.h"
#include "test.h"

namespace {

const char* kTrained = "tests/fixtures/trained_tiny";

std::vector<float> logits_of(const std::vector<double>& probs) {
    std::vector<float> z;
    for (double p : probs) z.push_back((float)std::log(p));
    return z;
}

}  // namespace

TEST(kv_cache_logits_equal_full_forward) {
    const char* models[] = {"tests/fixtures/ref_tiny/model", kTrained};
    for (const char* path : models) {
        GPT2 model;
        checkpoint_load(&model, path);
        const int T = 24, V = model.cfg.vocab_size, Vp = model.cfg.padded_vocab_size;
        std::vector<int> tokens(T);
        for (int t = 0; t < T; t++) tokens[t] = (t * 37 + 11) % V;
        gpt2_forward(&model, tokens.data(), nullptr, 1, T);
        // prompt of 7 in one batched pass, then one token at a time
        InferState st;
        infer_init(&st, model, T, 7);
        std::vector<float> kv((size_t)T * Vp);
        infer_forward(&st, model, tokens.data(), 7, kv.data(), true);
        for (int t = 7; t < T; t++) infer_forward(&st, model, &tokens[t], 1, kv.data() + (size_t)t * Vp, false);
        double max_diff = 0, max_ref = 0;
        for (int t = 0; t < T; t++)
            for (int v = 0; v < V; v++) {
                double ref = model.act.logits[(size_t)t * Vp + v];
                max_diff = max_abs(max_diff, kv[(size_t)t * Vp + v] - ref);
                max_ref = max_abs(max_ref, ref);
            }
        // Not bitwise: the batched prefill runs gemm over 7 rows, decoding a one-row matvec, and the two
        // sum the same products in different orders; attention is the same kernel on both paths. So the
        // logits agree to fp32 rounding accumulated through the layers (a few 1e-7 relative here); 1e-5 is
        // the trainer's parity bar, far below any difference a wrong cache position or mask would make.
        printf("    kv cache vs full forward (%s): max |diff| / max |ref| = %.2e\n", path, max_diff / max_ref);
        CHECK(max_diff / max_ref <= 1e-5);
        CHECK(st.len == T);
    }
}

TEST(kv_attention_equals_attention_forward_bit_for_bit) {
    // HS 64 over 300 positions: a last vector of 12 keys, sums over the keys past gemm_kc's 256; HS 320: sums over
    // the channels past it; HS 84: decoding's output summed for 64 channels, 16 and 4 more, over 300 keys. Prefills
    // after cached rows, one of 65 rows (blocks of 64 and 1). The calls fill the caches themselves, from NaN: a
    // position read before its call wrote it would show.
    struct Case {
        int T, C, NH;
        std::vector<std::vector<int>> prefill;  // (p0, n) calls
    };
    const Case cases[] = {{300, 128, 2, {{0, 100}, {100, 65}, {165, 135}}},
                          {70, 640, 2, {{0, 3}, {3, 67}}},
                          {300, 168, 2, {{0, 100}, {100, 65}, {165, 135}}}};
    for (const Case& k : cases) {
        const int T = k.T, C = k.C, NH = k.NH;
        const size_t row = 3 * C, k_row = kv_key_row(T);
        Rng rng(5);
        std::vector<float> qkv(T * row), out((size_t)T * C), lse((size_t)NH * T);
        for (float& x : qkv) x = 4 * rng.uniform() - 2;
        attention_forward(out.data(), lse.data(), qkv.data(), 1, T, C, NH);
        std::vector<float> keys(C * k_row, NAN), values((size_t)T * C);  // the caches as they should end
        for (int t = 0; t < T; t++)
            for (int c = 0; c < C; c++)
                keys[c * k_row + t] = qkv[t * row + C + c], values[(size_t)t * C + c] = qkv[t * row + 2 * C + c];
        for (int prefill = 0; prefill < 2; prefill++) {  // decoding, one position at a time; then the prefills
            std::vector<float> kcache(C * k_row, NAN), vcache((size_t)T * C, NAN);
            std::vector<std::vector<int>> calls = k.prefill;
            if (!prefill) {
                calls.clear();
                for (int t = 0; t < T; t++) calls.push_back({t, 1});
            }
            std::vector<float> o((size_t)T * C), l((size_t)NH * T), lt;
            for (const std::vector<int>& pn : calls) {
                const int p0 = pn[0], n = pn[1];
                lt.assign((size_t)NH * n, 0.0f);
                attention_forward_cached(o.data() + (size_t)p0 * C, lt.data(), qkv.data() + p0 * row, kcache.data(),
                                         k_row, vcache.data(), n, p0, C, NH);
                for (int h = 0; h < NH; h++)
                    for (int i = 0; i < n; i++) l[(size_t)h * T + p0 + i] = lt[(size_t)h * n + i];
            }
            int equal = 0, cached = 0;
            for (size_t i = 0; i < o.size(); i++) equal += o[i] == out[i];
            for (size_t i = 0; i < l.size(); i++) equal += l[i] == lse[i];
            for (size_t i = 0; i < keys.size(); i++)
                cached += kcache[i] == keys[i] || (std::isnan(kcache[i]) && std::isnan(keys[i]));
            for (size_t i = 0; i < values.size(); i++) cached += vcache[i] == values[i];
            printf("    HS %d, %s: %d of %zu outputs and log-sum-exps equal attention_forward's; %d of %zu cached "
                   "keys and values in place\n", C / NH, prefill ? "prefills after cached rows" : "decoding", equal,
                   o.size() + l.size(), cached, keys.size() + values.size());
            CHECK(equal == (int)(o.size() + l.size()));
            CHECK(cached == (int)(keys.size() + values.size()));
        }
    }
}

TEST(kv_attention_of_rows_together_equals_each_row_alone) {
    // 5 sequences' new rows at positions 0, 1, 63, 64 and 130 (a last vector of keys of 1, 2, 16, 1 and 3), over
    // caches of their own sizes, attended together and each alone: outputs, log-sum-exps and caches bit for bit;
    // HS 84 (64, 16 and 4 channels)
    const int C = 168, NH = 2, n = 5, p0[n] = {0, 1, 63, 64, 130};
    Rng rng(9);
    std::vector<float> qkv((size_t)n * 3 * C), out((size_t)n * C), lse((size_t)n * NH), row_out(C), row_lse(NH);
    for (float& x : qkv) x = 4 * rng.uniform() - 2;
    std::vector<std::vector<float>> k(n), v(n), k1(n), v1(n);
    std::vector<float*> kp(n), vp(n);
    std::vector<size_t> k_row(n);
    for (int i = 0; i < n; i++) {
        k_row[i] = kv_key_row(p0[i] + 1 + 7 * i);
        k[i].resize(C * k_row[i]), v[i].resize((size_t)(p0[i] + 1 + 7 * i) * C);
        for (float& x : k[i]) x = 4 * rng.uniform() - 2;
        for (float& x : v[i]) x = 4 * rng.uniform() - 2;
        k1[i] = k[i], v1[i] = v[i], kp[i] = k[i].data(), vp[i] = v[i].data();
    }
    attention_forward_cached_rows(out.data(), lse.data(), qkv.data(), kp.data(), k_row.data(), vp.data(), p0, n, C, NH);
    int equal = 0, total = 0;
    for (int i = 0; i < n; i++) {
        attention_forward_cached(row_out.data(), row_lse.data(), &qkv[(size_t)i * 3 * C], k1[i].data(), k_row[i],
                                 v1[i].data(), 1, p0[i], C, NH);
        equal += memcmp(row_out.data(), &out[(size_t)i * C], sizeof(float) * C) == 0;
        equal += memcmp(row_lse.data(), &lse[(size_t)i * NH], sizeof(float) * NH) == 0;
        equal += k1[i] == k[i] && v1[i] == v[i];
        total += 3;
    }
    printf("    %d of %d rows' outputs, log-sum-exps and caches equal the row's alone\n", equal, total);
    CHECK(equal == total);
}

TEST(int8_decode_equals_its_full_forward_and_stays_near_fp32) {
    // weight-only int8 (a frozen base's: fp32 inputs) and int8 inference as llama.cpp (inputs rounded to q8_0
    // blocks): in each, the full forward's gemm and decoding's mat-vecs give the same logits
    GPT2 fp32;
    checkpoint_load(&fp32, kTrained);
    const int T = 24, V = fp32.cfg.vocab_size, Vp = fp32.cfg.padded_vocab_size;
    std::vector<int> tokens(T + 1);
    for (int t = 0; t <= T; t++) tokens[t] = (t * 37 + 11) % V;
    const float loss32 = gpt2_forward(&fp32, tokens.data(), tokens.data() + 1, 1, T);
    float losses[2];
    for (const bool round_inputs : {false, true}) {
        GPT2 model;
        checkpoint_load(&model, kTrained);
        const int quantized = gpt2_set_precision(&model, Precision::kInt8);
        CHECK(quantized == 2 + 4 * model.cfg.num_layers);  // rows of 32 and 128: every matrix
        if (round_inputs) gpt2_round_inputs_q8(&model);
        const float loss = losses[round_inputs] = gpt2_forward(&model, tokens.data(), tokens.data() + 1, 1, T);
        gpt2_forward(&model, tokens.data(), nullptr, 1, T);
        InferState st;
        infer_init(&st, model, T, 1);
        std::vector<float> kv((size_t)T * Vp);
        for (int t = 0; t < T; t++) infer_forward(&st, model, &tokens[t], 1, kv.data() + (size_t)t * Vp, false);
        double max_diff = 0, max_ref = 0;
        for (int t = 0; t < T; t++)
            for (int v = 0; v < V; v++) {
                max_diff = max_abs(max_diff, kv[(size_t)t * Vp + v] - model.act.logits[(size_t)t * Vp + v]);
                max_ref = max_abs(max_ref, model.act.logits[(size_t)t * Vp + v]);
            }
        printf("    int8%s decode vs its full forward: max |diff| / max |ref| = %.2e; loss int8 %.6f, fp32 %.6f\n",
               round_inputs ? " (inputs rounded)" : "", max_diff / max_ref, loss, loss32);
        CHECK(max_diff / max_ref <= 1e-5);  // as the fp32 cache test: summation order only
        // q8_0's error is at most 0.56 of a block's step (127ths of its largest weight): small beside fp32
        CHECK(std::fabs(loss - loss32) <= 0.01 * loss32 && loss != loss32);
    }
    CHECK(losses[0] != losses[1]);  // the inputs' rounding shows
}

TEST(a_frozen_base_held_as_it_loads_equals_one_held_after) {
    // train's LoRA base in int8 or bf16: each tensor fingerprinted and quantized (rounded) as it is read, into
    // parameters left unset until then, gives the copies, the kept fp32 values, the loss and the fingerprint of
    // the whole load followed by gpt2_set_precision
    GPT2 fp32;
    checkpoint_load(&fp32, kTrained);
    const int T = 16, V = fp32.cfg.vocab_size;
    std::vector<int> tokens(T + 1);
    for (int t = 0; t <= T; t++) tokens[t] = (t * 37 + 11) % V;
    for (const Precision prec : {Precision::kInt8, Precision::kBf16}) {
        GPT2 after, as;
        checkpoint_load(&after, kTrained);
        const int kept = gpt2_set_precision(&after, prec, true);
        CheckpointInfo info;
        size_t next = 0;  // the offset the next tensor should start at
        uint64_t hash = kFnv1aInit;
        checkpoint_load(&as, kTrained, 0, &info, [&](const TensorInfo& t) {
            CHECK(t.offset == next);
            next = t.offset + t.numel();
            hash = fnv1a(as.params.data() + t.offset, t.numel() * sizeof(float), hash);
            gpt2_set_precision_tensor(&as, t, prec, true);
        });
        CHECK(info.by_tensor && next == as.num_params);
        CHECK(hash_hex(hash) == train_state_params_hash(fp32));  // the fingerprint a LoRA run records
        const PrecisionCopies &a = *gpt2_precision_copies(after), &b = *gpt2_precision_copies(as);
        const int wte_wpe = prec == Precision::kInt8 ? 2 : 0;  // quantized, but kept in fp32 for the embedding
        CHECK(b.kept == kept && kept == wte_wpe + 4 * as.cfg.num_layers);
        // every page of the dropped matrices given back but the partial ones at each end, which depend on where
        // the allocator put the buffer (the two loads' buffers may sit apart differently: Windows' heap)
        double dropped = 0, ends = 0;  // bytes of the dropped matrices; two pages a matrix
        for (const TensorInfo& t : as.param_table)
            if (b.at.count(t.offset) && b.at.at(t.offset).fp32_dropped) dropped += 4.0 * t.numel(), ends += 2 * 4096;
        for (const size_t given : {a.fp32_given_back, b.fp32_given_back})
            CHECK(given > 0 && given <= dropped && given + ends >= dropped);
        CHECK(a.params8 == b.params8 && a.params8_d == b.params8_d && a.params16 == b.params16);
        bool same_copies = a.at.size() == b.at.size();
        for (const auto& [offset, copy] : a.at)
            same_copies = same_copies && b.at.count(offset) && b.at.at(offset).fp32_dropped == copy.fp32_dropped;
        CHECK(same_copies);
        for (const TensorInfo& t : as.param_table)
            if (!a.at.count(t.offset) || !a.at.at(t.offset).fp32_dropped)
                CHECK(memcmp(as.params.data() + t.offset, after.params.data() + t.offset, t.numel() * 4) == 0);
        const float la = gpt2_forward(&after, tokens.data(), tokens.data() + 1, 1, T);
        CHECK(gpt2_forward(&as, tokens.data(), tokens.data() + 1, 1, T) == la);
    }
}

namespace {

// A precision of decoding: fp32, bf16, weight-only int8 (fp32 inputs), int8 with inputs rounded to q8_0 blocks.
enum class Decoding { kFp32, kBf16, kInt8, kInt8Inputs, kInt8Tiles };
const char* decoding_name(Decoding d) {
    const char* names[] = {"fp32", "bf16", "int8", "int8 (inputs rounded)", "int8 (inputs rounded, tiles kept)"};
    return names[(int)d];
}
void set_decoding(GPT2* model, Decoding d) {
    if (d == Decoding::kBf16) gpt2_set_precision(model, Precision::kBf16);
    if (d >= Decoding::kInt8) gpt2_set_precision(model, Precision::kInt8);
    if (d >= Decoding::kInt8Inputs) gpt2_round_inputs_q8(model);
    if (d == Decoding::kInt8Tiles) infer_keep_q8_tiles(model);
}

// GPT-2 124M's width in 2 layers (a vocabulary of 1000, a context of 64), GPT-2's init, at precision d.
void build_wide(GPT2* model, Decoding d) {
    gpt2_build(model, config_make(64, 1000, 2, 12, 768));
    gpt2_init_random(model, 3);
    set_decoding(model, d);
}

// n sequences with prompts of different lengths, decoded together for several steps: sequence i joins at step
// i % 3 and leaves after `steps` steps, each step's runs in another order. With `runs`, each takes 1-3 tokens a
// step (infer_decode_runs, every row's logits on even steps, each run's last on odd ones); else one (infer_decode).
// Each row's logits against the same sequence decoded alone a token at a time (infer_forward), byte for byte.
// Counts the rows that differ (and the caches whose length does) in *mismatches, the rows compared in *rows.
void decode_together(const GPT2& model, int n, bool runs, int* mismatches, int* rows) {
    const int V = model.cfg.vocab_size, Vp = model.cfg.padded_vocab_size, steps = 5, most = runs ? 3 : 1;
    std::vector<InferState> together(n), alone(n);
    std::vector<float> logits((size_t)n * most * Vp), row(Vp);
    for (int i = 0; i < n; i++) {
        const int len = 1 + 7 * i % 12;
        std::vector<int> prompt(len);
        for (int t = 0; t < len; t++) prompt[t] = (131 * i + 37 * t + 5) % V;
        for (InferState* st : {&together[i], &alone[i]}) {
            infer_init(st, model, len + steps * most, len);
            infer_forward(st, model, prompt.data(), len, row.data(), false);
        }
    }
    InferScratch scratch;
    infer_scratch_init(&scratch, model, n * most);
    *mismatches = *rows = 0;
    for (int step = 0; step < steps + 2; step++) {
        std::vector<InferState*> seqs;
        std::vector<int> tokens, ids, counts;
        for (int k = 0; k < n; k++) {
            const int i = (k + 5 * step) % n, decoded = step - i % 3;
            if (decoded < 0 || decoded >= steps) continue;
            seqs.push_back(&together[i]), ids.push_back(i), counts.push_back(runs ? 1 + (i + step) % 3 : 1);
            for (int r = 0; r < counts.back(); r++) tokens.push_back((53 * i + 29 * step + 7 * r + 1) % V);
        }
        if (seqs.empty()) continue;
        const bool all = !runs || step % 2 == 0;
        if (runs) infer_decode_runs(&scratch, seqs.data(), counts.data(), (int)seqs.size(), model, tokens.data(),
                                    logits.data(), all);
        else infer_decode(&scratch, seqs.data(), model, tokens.data(), (int)seqs.size(), logits.data());
        size_t at = 0, out = 0;  // the token, the logits' row
        for (size_t j = 0; j < seqs.size(); j++)
            for (int r = 0; r < counts[j]; r++, at++) {
                infer_forward(&alone[ids[j]], model, &tokens[at], 1, row.data(), false);
                if (!all && r + 1 < counts[j]) continue;
                *mismatches += memcmp(row.data(), &logits[out++ * Vp], sizeof(float) * Vp) != 0;
                *mismatches += r + 1 == counts[j] && together[ids[j]].len != alone[ids[j]].len;
                ++*rows;
            }
    }
}

void check_decode_together(Decoding d) {
    GPT2 trained, wide;
    checkpoint_load(&trained, kTrained);
    set_decoding(&trained, d);
    build_wide(&wide, d);
    for (const GPT2* model : {&trained, &wide})
        for (int n : {1, 2, 3, 8, 16}) {
            if (model == &wide && n > 3 && test_light()) continue;  // minutes under qemu; the native run has them
            for (bool runs : {false, true}) {
                int mismatches, rows;
                decode_together(*model, n, runs, &mismatches, &rows);
                printf("    %s, C %d, %2d sequences together%s: %d of %d rows differ from the sequence decoded "
                       "alone\n", decoding_name(d), model->cfg.channels, n, runs ? " (runs of 1-3)" : "",
                       mismatches, rows);
                CHECK(mismatches == 0 && (runs ? rows > 5 * n : rows == 5 * n));
            }
        }
}

}  // namespace

namespace {

std::vector<float> random_values(size_t n, uint64_t seed, float scale = 1.0f) {
    Rng rng(seed);
    std::vector<float> v(n);
    for (float& x : v) x = scale * rng.normal();
    return v;
}

// The numbers of rows a product takes at once: the kernels' groups of rows (fp32's 9 with AVX-512, else 3 in blocks
// of 12; the others' 8 or 4) whole and with rows left over. A light run (test.h) takes 2 and 13, which have both.
std::vector<int> row_counts() { return test_light() ? std::vector<int>{2, 13} : std::vector<int>{1, 2, 3, 7, 8, 16}; }
int rows_counted() {
    const std::vector<int> n = row_counts();
    return std::accumulate(n.begin(), n.end(), 0);
}

// The rows of products(out, x, N) (out (N, OC), x (N, IC)) for each N of row_counts() against each row alone
// (N = 1), byte for byte: the number of rows that differ. x's row 1 may hold a value q8_0 cannot.
template <typename Products>
int rows_mismatches(int IC, int OC, bool bad_row, Products products) {
    int mismatches = 0;
    for (int N : row_counts()) {
        std::vector<float> x = random_values((size_t)N * IC, 10 + N), out((size_t)N * OC), row(OC);
        if (bad_row && N > 1) x[(size_t)IC + 5] = 1e7f;  // past q8_0's range: that row NaN, the others not
        products(out.data(), x.data(), N);
        for (int r = 0; r < N; r++) {
            products(row.data(), x.data() + (size_t)r * IC, 1);
            mismatches += memcmp(row.data(), &out[(size_t)r * OC], sizeof(float) * OC) != 0;
        }
    }
    return mismatches;
}

// The model's own matrices at 124M's width (c_attn, attn c_proj, c_fc, mlp c_proj of layer 1, and the lm_head)
// through matmul_forward's decoding rows, at precision d.
int model_rows_mismatches(Decoding d) {
    GPT2 model;
    build_wide(&model, d);
    const int C = model.cfg.channels, Vp = model.cfg.padded_vocab_size;
    const LayerParams& lp = model.param.layers[1];
    struct Matrix {
        const float *w, *b;
        int IC, OC;
    };
    const Matrix matrices[] = {{lp.qkvw, lp.qkvb, C, 3 * C},
                               {lp.attprojw, lp.attprojb, C, C},
                               {lp.fcw, lp.fcb, C, 4 * C},
                               {lp.fcprojw, lp.fcprojb, 4 * C, C},
                               {model.param.wte, nullptr, C, Vp}};
    int mismatches = 0;
    for (const Matrix& m : matrices) {
        const Weight w = gpt2_weight(model, m.w);
        mismatches += rows_mismatches(m.IC, m.OC, false, [&](float* out, const float* x, int N) {
            matmul_forward(out, x, w, m.b, N, m.IC, m.OC, true);
        });
    }
    return mismatches;
}

}  // namespace

// Decoding's products of N rows at once against each row alone, byte for byte: the model's matrices at 124M's
// width in each precision, and each kernel on rows that are not whole vectors or whole groups of output rows.
TEST(decode_rows_products_equal_each_row_alone) {
    for (Decoding d : {Decoding::kFp32, Decoding::kInt8, Decoding::kInt8Inputs, Decoding::kInt8Tiles}) {
        const int mismatches = model_rows_mismatches(d);
        printf("    %s, 124M's matrices: %d of 5 x %d rows differ from the row alone\n", decoding_name(d), mismatches,
               rows_counted());
        CHECK(mismatches == 0);
    }
    struct Shape {
        int IC, OC;
    };
    for (Shape s : {Shape{31, 37}, Shape{70, 38}, Shape{768, 39}}) {  // fp32: rows ending in part of a vector
        const std::vector<float> W = random_values((size_t)s.OC * s.IC, 1), b = random_values(s.OC, 2);
        CHECK(0 == rows_mismatches(s.IC, s.OC, false, [&](float* out, const float* x, int N) {
                  matmul_forward(out, x, W.data(), b.data(), N, s.IC, s.OC, true);
              }));
        std::vector<uint16_t> W16(W.size());  // a frozen base held as bf16: fp32 products on its values
        bf16_round_array(W16.data(), W.data(), W.size());
        WeightCopy copy;
        copy.bf16 = W16.data(), copy.fp32_dropped = true;
        CHECK(0 == rows_mismatches(s.IC, s.OC, false, [&](float* out, const float* x, int N) {
                  matvec_rows(out, x, Weight(nullptr, copy_gemm_operands(), &copy), b.data(), N, s.IC, s.OC);
              }));
    }
    for (Shape s : {Shape{32, 37}, Shape{1056, 39}}) {  // q8: 33 blocks, the last group of rows 3 (or 7)
        std::vector<float> W = random_values((size_t)s.OC * s.IC, 3, 0.02f), b = random_values(s.OC, 4);
        std::vector<int8_t> q(W.size());
        std::vector<uint16_t> dq(W.size() / kQ8Block);
        for (size_t blk = 0; blk < dq.size(); blk++)
            dq[blk] = q8_quantize_block(&W[blk * kQ8Block], &q[blk * kQ8Block]);
        CHECK(0 == rows_mismatches(s.IC, s.OC, false, [&](float* out, const float* x, int N) {
                  matvec_q8(out, x, q.data(), dq.data(), b.data(), N, s.IC, s.OC);
              }));
        CHECK(0 == rows_mismatches(s.IC, s.OC, true, [&](float* out, const float* x, int N) {
                  matvec_q8q8(out, x, q.data(), dq.data(), b.data(), N, s.IC, s.OC);
              }));
        // laid out once (matvec_q8_tiles; the last tile part empty): the rows as each row alone, without them
        std::vector<uint32_t> tiles(matvec_q8_tiles_words(s.IC, s.OC));
        if (!matvec_q8_tiles(tiles.data(), q.data(), dq.data(), s.IC, s.OC)) continue;  // no AVX512-VNNI
        CHECK(0 == rows_mismatches(s.IC, s.OC, true, [&](float* out, const float* x, int N) {
                  if (N == 1) matvec_q8q8(out, x, q.data(), dq.data(), b.data(), N, s.IC, s.OC);
                  else matvec_q8q8(out, x, q.data(), dq.data(), b.data(), N, s.IC, s.OC, tiles.data());
              }));
        for (bool bad : {false, true}) {  // one row through the tiles as through the one-row kernel
            std::vector<float> x = random_values(s.IC, 7), alone(s.OC), tiled(s.OC);
            if (bad) x[5] = 1e7f;
            matvec_q8q8(alone.data(), x.data(), q.data(), dq.data(), b.data(), 1, s.IC, s.OC);
            matvec_q8q8(tiled.data(), x.data(), q.data(), dq.data(), b.data(), 1, s.IC, s.OC, tiles.data());
            CHECK(0 == memcmp(alone.data(), tiled.data(), sizeof(float) * s.OC));
        }
    }
}

// ./gpt2's fp32 mat-vecs (inference/matvec.h's matvec_rows, several rows and 16 outputs at a time) against the
// core's own (core/layers.cpp, the seam unset: what gpt2-core runs), byte for byte: the same order of sums.
TEST(decode_fp32_rows_equal_the_cores_own) {
    struct Shape {
        int IC, OC;
    };
    CHECK(matmul_rows != nullptr);  // set as main sets it (test_main.cpp): else both below are the core's
    int differ = 0, outputs = 0;
    for (Shape s : {Shape{768, 2304}, Shape{3072, 768}, Shape{768, 50304}, Shape{31, 37}, Shape{70, 38},
                    Shape{800, 17}}) {  // 124M's; rows ending in part of a vector or of 16 outputs; no bias
        const std::vector<float> W = random_values((size_t)s.OC * s.IC, 11), b = random_values(s.OC, 12);
        for (int N : row_counts()) {
            std::vector<float> x = random_values((size_t)N * s.IC, 13 + N), ours((size_t)N * s.OC), core(ours.size());
            const float* bias = s.IC == 800 ? nullptr : b.data();
            matmul_forward(ours.data(), x.data(), W.data(), bias, N, s.IC, s.OC, true);
            auto* seam = matmul_rows;
            matmul_rows = nullptr;
            matmul_forward(core.data(), x.data(), W.data(), bias, N, s.IC, s.OC, true);
            matmul_rows = seam;
            for (size_t i = 0; i < ours.size(); i++) differ += memcmp(&ours[i], &core[i], sizeof(float)) != 0;
            outputs += (int)ours.size();
        }
    }
    printf("    %d of %d outputs differ from the core's\n", differ, outputs);
    CHECK(differ == 0);
}

TEST(decode_rows_products_equal_each_row_alone_bf16) {
    if (!bf16_supported()) SKIP("this CPU has no AVX512_BF16");
    const int mismatches = model_rows_mismatches(Decoding::kBf16);
    printf("    bf16, 124M's matrices: %d of 5 x %d rows differ from the row alone\n", mismatches, rows_counted());
    CHECK(mismatches == 0);
    for (int IC : {31, 70, 768}) {  // rows a whole number of vectors, and ending in a part of one
        const int OC = IC == 31 ? 38 : IC == 70 ? 39 : 37;  // the last group of four rows: 2, 3 or 1 of them
        const std::vector<float> W = random_values((size_t)OC * IC, 5), b = random_values(OC, 6);
        std::vector<uint16_t> W16(W.size());
        bf16_round_array(W16.data(), W.data(), W.size());
        CHECK(0 == rows_mismatches(IC, OC, false, [&](float* out, const float* x, int N) {
                  matvec_bf16(out, x, W16.data(), b.data(), N, IC, OC);
              }));
    }
}

TEST(decode_together_equals_each_sequence_alone_fp32) { check_decode_together(Decoding::kFp32); }

TEST(decode_together_equals_each_sequence_alone_bf16) {
    if (!bf16_supported()) SKIP("this CPU has no AVX512_BF16");
    check_decode_together(Decoding::kBf16);
}

TEST(decode_together_equals_each_sequence_alone_int8) { check_decode_together(Decoding::kInt8); }

TEST(decode_together_equals_each_sequence_alone_int8_inputs_rounded) {
    check_decode_together(Decoding::kInt8Inputs);
}

// One sequence decoded a token at a time (one row a product) with the tiles kept and without, at 124M's width:
// the same logits byte for byte at every position.
TEST(int8_decoding_equals_with_the_tiles_kept_and_without) {
    GPT2 plain, tiled;
    build_wide(&plain, Decoding::kInt8Inputs);
    build_wide(&tiled, Decoding::kInt8Tiles);
    if (gpt2_precision_copies(tiled)->params8_tiles.empty()) SKIP("no AVX512-VNNI: int8 decoding lays out no tiles");
    const int Vp = plain.cfg.padded_vocab_size, prompt[] = {11, 400, 7};
    InferState a, b;
    infer_init(&a, plain, 12, 3);
    infer_init(&b, tiled, 12, 3);
    std::vector<float> la(Vp), lb(Vp);
    infer_forward(&a, plain, prompt, 3, la.data(), false);
    infer_forward(&b, tiled, prompt, 3, lb.data(), false);
    int differ = 0;
    for (int t = 0; t < 8; t++) {
        const int token = (97 * t + 5) % plain.cfg.vocab_size;
        infer_forward(&a, plain, &token, 1, la.data(), false);
        infer_forward(&b, tiled, &token, 1, lb.data(), false);
        differ += memcmp(la.data(), lb.data(), sizeof(float) * Vp) != 0;
    }
    printf("    C 768, 8 tokens decoded: %d positions' logits differ with the tiles kept\n", differ);
    CHECK(differ == 0);
}

TEST(int8_tiles_are_kept_where_they_fit) {
    GPT2 model;
    build_wide(&model, Decoding::kInt8Inputs);
    if (infer_q8_tiles_bytes(model) == 0) SKIP("no AVX512-VNNI: int8 decoding lays out no tiles");
    if (memory_available() == 0) SKIP("the available memory is unknown here: the tiles are kept whatever");
    infer_keep_q8_tiles_if_room(&model, 1e18);  // beside more than any machine has
    CHECK(gpt2_precision_copies(model)->params8_tiles.empty());
    infer_keep_q8_tiles_if_room(&model, 0);
    CHECK(!gpt2_precision_copies(model)->params8_tiles.empty());
}

TEST(decode_together_equals_each_sequence_alone_int8_tiles_kept) {
    GPT2 model;
    build_wide(&model, Decoding::kInt8Tiles);
    if (infer_q8_tiles_bytes(model) == 0) SKIP("no AVX512-VNNI: int8 decoding lays out no tiles");
    CHECK(!gpt2_precision_copies(model)->params8_tiles.empty());
    check_decode_together(Decoding::kInt8Tiles);
}

TEST(top_p_keeps_the_smallest_set_reaching_p) {
    std::vector<float> z = logits_of({0.05, 0.5, 0.1, 0.2, 0.15});
    SamplerConfig cfg;
    cfg.top_k = 0;
    cfg.top_p = 0.7f;  // 0.5 + 0.2 reaches 0.7
    auto d = sampler_distribution(z.data(), 5, cfg);
    CHECK(d.size() == 2 && d[0].first == 1 && d[1].first == 3);
    if (d.size() == 2) CHECK_NEAR(d[0].second, 0.5 / 0.7, 1e-6);
    cfg.top_p = 0.71f;  // needs the third
    CHECK(sampler_distribution(z.data(), 5, cfg).size() == 3);
    cfg.top_p = 0.3f;  // the top token alone
    CHECK(sampler_distribution(z.data(), 5, cfg).size() == 1);
    cfg.top_p = 1.0f;
    CHECK(sampler_distribution(z.data(), 5, cfg).size() == 5);
}

TEST(top_k_and_temperature) {
    std::vector<float> z = logits_of({0.05, 0.5, 0.1, 0.2, 0.15});
    SamplerConfig cfg;
    cfg.top_k = 2;
    auto d = sampler_distribution(z.data(), 5, cfg);
    CHECK(d.size() == 2 && d[0].first == 1 && d[1].first == 3);
    std::vector<float> ties = {1.0f, 2.0f, 2.0f, 0.0f};
    cfg.top_k = 1;  // ties with the k-th are kept, as HuggingFace's TopKLogitsWarper does
    CHECK(sampler_distribution(ties.data(), 4, cfg).size() == 2);
    cfg.top_k = 0;
    cfg.temperature = 0.5f;  // p ~ p^2
    d = sampler_distribution(z.data(), 5, cfg);
    double norm = 0.05 * 0.05 + 0.25 + 0.01 + 0.04 + 0.0225;
    CHECK_NEAR(d[0].second, 0.25 / norm, 1e-6);
    cfg.temperature = 0.0f;
    Rng rng(1);
    CHECK(sampler_sample(z.data(), 5, cfg, &rng) == 1);
    // only the first V logits count
    std::vector<float> padded = {0.0f, 1.0f, 50.0f};
    CHECK(sampler_argmax(padded.data(), 2) == 1);
}

TEST(sampler_equals_its_plain_form_at_gpt2s_vocabulary) {
    // Logits on a grid of 1/8 (many ties, -0 beside +0), and a few past the others, so that top-k's cut
    // falls inside a run of ties; the plain form sorts every (token, logit) pair.
    const int V = 50257;
    std::vector<float> z(V);
    Rng rng(11);
    for (float& x : z) x = std::round((12 * rng.uniform() - 8) * 8) / 8;
    for (int v = 0; v < V; v += 997) z[v] = -0.0f;
    for (int v = 5; v < V; v += 4999) z[v] = 5.0f;
    int equal = 0, total = 0;
    for (float temperature : {0.7f, 1.0f, 1.3f})
        for (int top_k : {0, 1, 3, 50, V - 1, V})
            for (float top_p : {1.0f, 0.9f}) {
                SamplerConfig cfg;
                cfg.temperature = temperature, cfg.top_k = top_k, cfg.top_p = top_p;
                total++;
                equal += sampler_distribution(z.data(), V, cfg) == sampler_distribution_ref(z.data(), V, cfg);
            }
    printf("    %d of %d distributions equal the plain form's, pair for pair\n", equal, total);
    CHECK(equal == total);
    int best = 0;  // the first of the largest
    for (int v = 1; v < V; v++) best = z[v] > z[best] ? v : best;
    CHECK(sampler_argmax(z.data(), V) == best && best == 5);
    z[V - 1] = 5.5f;  // the last logit, in the last (partial) chunk
    CHECK(sampler_argmax(z.data(), V) == V - 1);
    std::vector<float> zeros = {-0.0f, 0.0f, -1.0f};  // -0 and +0 are equal: the first
    CHECK(sampler_argmax(zeros.data(), 3) == 0);
}

TEST(sampling_follows_the_distribution) {
    std::vector<float> z = logits_of({0.1, 0.6, 0.3});
    SamplerConfig cfg;
    Rng rng(7);
    int counts[3] = {0, 0, 0};
    const int n = 30000;
    for (int i = 0; i < n; i++) counts[sampler_sample(z.data(), 3, cfg, &rng)]++;
    // binomial standard deviation is <= 0.0029 here; 5 sigma
    CHECK_NEAR(counts[0] / (double)n, 0.1, 0.015);
    CHECK_NEAR(counts[1] / (double)n, 0.6, 0.015);
}

TEST(generation_seeds_and_greedy) {
    GPT2 model;
    checkpoint_load(&model, kTrained);
    auto run = [&](uint64_t seed, float temperature, int top_k) {
        GenerateOptions opts;
        opts.max_tokens = 24;
        opts.sampler.temperature = temperature;
        opts.sampler.top_k = top_k;
        Rng rng(seed);
        return generate(
            model, {5, 6}, opts, &rng, [](int) {}, nullptr);
    };
    CHECK(run(1, 1.5f, 0) == run(1, 1.5f, 0));
    CHECK(run(1, 1.5f, 0) != run(2, 1.5f, 0));
    CHECK(run(3, 1.0f, 1) == run(4, 0.0f, 50));  // top-k 1 is greedy
    CHECK(run(3, 1.0f, 1).size() == 24);
}

TEST(generation_stops_and_slides) {
    GPT2 model;
    checkpoint_load(&model, kTrained);  // context 32
    GenerateOptions opts;
    opts.max_tokens = 40;
    opts.sampler.temperature = 0;
    Rng rng(1);
    GenerateStats stats;
    const std::vector<int> greedy = generate(
        model, {5, 6}, opts, &rng, [](int) {}, &stats);
    CHECK(greedy.size() == 40);
    CHECK(stats.stop == GenerateStop::kMaxTokens);
    CHECK(stats.slides == 40 - (32 - 2) - 1);  // tokens predicted after the cache held 32 positions
    // The same run asked to stop at its 10th token ends there, with that token, and says why.
    opts.stop_token = greedy[9];
    const std::vector<int> stopped = generate(
        model, {5, 6}, opts, &rng, [](int) {}, &stats);
    size_t first = 0;
    while (greedy[first] != opts.stop_token) first++;
    CHECK(stopped.size() == first + 1);
    CHECK(stats.stop == GenerateStop::kStopToken);
    CHECK(stats.slides == 0);
}
