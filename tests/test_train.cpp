// test_train.cpp: training-loop invariants that the CLI tests can only see through exit codes: gradient
// accumulation over k micro-batches equals one k-times larger batch, gradients zeroed then overwritten equal those
// summed onto zeros, inference allocates no training memory, the head of a training forward (loss as in inference,
// its backward fused, in blocks of rows that equal one matmul where gemm blocks K alike), what the activation
// layouts hold, and the seam a model's reduced-precision copies sit behind.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "precision/half.h"
#include "platform/threads.h"
#include "platform/util.h"
#include "core/optimizer.h"
#include "core/model.h"
#include "precision/adamw_8bit.h"
#include "precision/precision.h"
#include "test.h"
#include "test_os.h"
#include "memory/memory.h"

GPT2Config tiny_config() { return config_make(16, 50, 2, 2, 16); }

GPT2 tiny_model() {
    GPT2 model;
    gpt2_build(&model, tiny_config());
    gpt2_init_random(&model, 7);
    return model;
}

TEST(grad_accumulation_equals_one_larger_batch) {
    const int k = 3, B = 2, T = 8, N = k * B * T;
    std::vector<int> x(N), y(N);
    for (int i = 0; i < N; i++) x[i] = (i * 7 + 3) % 50, y[i] = (i * 11 + 5) % 50;
    GPT2 big = tiny_model(), acc = tiny_model();
    gpt2_enable_training(&big);
    gpt2_enable_training(&acc);
    // one batch of k*B sequences
    gpt2_zero_grad(&big);
    const float big_loss = gpt2_forward(&big, x.data(), y.data(), k * B, T, 1.0f);
    gpt2_backward(&big);
    // k micro-batches of B sequences, each scaled by 1/k, as train does with --grad-accum k
    gpt2_zero_grad(&acc);
    double acc_loss = 0;
    for (int m = 0; m < k; m++) {
        acc_loss += gpt2_forward(&acc, x.data() + m * B * T, y.data() + m * B * T, B, T, 1.0f / k) / k;
        gpt2_backward(&acc);
    }
    double max_diff = 0, max_ref = 0;
    for (size_t i = 0; i < big.grads.size(); i++) {
        max_diff = max_abs(max_diff, (double)acc.grads[i] - big.grads[i]);
        max_ref = max_abs(max_ref, (double)big.grads[i]);
    }
    // Equal up to fp32 summation order (the batch sums rows in one pass, accumulation in k): a wrong
    // scale or a micro-batch left out would be off by O(1).
    printf("    grad accumulation vs one batch: max |diff| / max |ref| = %.2e, loss %.7f vs %.7f\n", max_diff / max_ref,
           acc_loss, big_loss);
    CHECK(max_ref > 0);
    CHECK(max_diff / max_ref <= 1e-6);
    CHECK_NEAR(acc_loss, big_loss, 1e-6);
}

// gpt2_zero_grad leaves the matrices' gradients to the next head and backward, which overwrite them: whatever they
// held (here NaN), the gradients are those of a buffer of zeros, bit for bit, with the head's backward in two
// blocks of rows and over two micro-batches.
TEST(zero_grad_then_backward_equals_gradients_from_zeros) {
    const int B = 160, T = 16, N = B * T;  // N / 2 > 1024: the head in two blocks of rows (layout_head_rows)
    std::vector<int> x(N), y(N);
    for (int i = 0; i < N; i++) x[i] = (i * 7 + 3) % 50, y[i] = (i * 11 + 5) % 50;
    GPT2 reused = tiny_model(), fresh = tiny_model();
    gpt2_enable_training(&reused), gpt2_enable_training(&fresh);
    std::fill(reused.grads.begin(), reused.grads.end(), NAN);  // an earlier step's, or anything
    gpt2_zero_grad(&reused);
    for (GPT2* m : {&reused, &fresh})
        for (int micro = 0; micro < 2; micro++) {
            gpt2_forward(m, x.data() + micro * N / 2, y.data() + micro * N / 2, B / 2, T, 0.5f);
            gpt2_backward(m);
        }
    size_t differ = 0, nonzero = 0;
    for (size_t i = 0; i < fresh.grads.size(); i++)
        differ += memcmp(&reused.grads[i], &fresh.grads[i], sizeof(float)) != 0, nonzero += fresh.grads[i] != 0;
    printf("    %zu of %zu gradients differ from those of zeros (%zu nonzero)\n", differ, fresh.grads.size(), nonzero);
    CHECK(nonzero > fresh.grads.size() / 2);
    CHECK(differ == 0);
}

TEST(inference_allocates_no_training_memory) {
    GPT2 model = tiny_model();
    std::vector<int> x(8, 1);
    gpt2_forward(&model, x.data(), nullptr, 1, 8);
    CHECK(model.grads.empty());
    CHECK(model.dacts.empty());
    CHECK(!model.acts.empty());
    gpt2_enable_training(&model);
    gpt2_forward(&model, x.data(), x.data(), 1, 8);
    CHECK(model.grads.size() == model.params.size());
    // the gradients' layout: no logits, no caches
    CHECK(model.dacts.size() == layout_params_size(layout_acts(model.cfg, 1, 8, true)));
    CHECK(model.dacts.size() < model.acts.size());
    CHECK(model.dact.logits == nullptr && model.dact.lnf_mean == nullptr && model.dact.layers[0].att_lse == nullptr);
}

TEST(training_forward_fuses_the_classifier_backward) {
    const int B = 2, T = 8, N = B * T;
    std::vector<int> x(N), y(N);
    for (int i = 0; i < N; i++) x[i] = (i * 7 + 3) % 50, y[i] = (i * 11 + 5) % 50;
    GPT2 eval = tiny_model(), train = tiny_model();
    const int V = eval.cfg.vocab_size, Vp = eval.cfg.padded_vocab_size;
    CHECK(Vp > V);  // padding columns to check
    // inference with targets: the loss, and the logits stay
    const float eval_loss = gpt2_forward(&eval, x.data(), y.data(), B, T);
    std::vector<float> logits(eval.act.logits, eval.act.logits + (size_t)N * Vp), losses(eval.act.losses, eval.act.losses + N);
    gpt2_forward(&eval, x.data(), nullptr, B, T);
    CHECK(std::equal(logits.begin(), logits.end(), eval.act.logits));
    // a training model: the same logits without targets, and with targets and no loss_scale the same loss and
    // logits; with a loss_scale the same loss, and the dlogits of loss * loss_scale instead
    gpt2_enable_training(&train);
    gpt2_forward(&train, x.data(), nullptr, B, T);
    CHECK(std::equal(logits.begin(), logits.end(), train.act.logits));
    CHECK(gpt2_forward(&train, x.data(), y.data(), B, T) == eval_loss);
    CHECK(std::equal(logits.begin(), logits.end(), train.act.logits) && !train.head_grads);
    gpt2_zero_grad(&train);
    CHECK(gpt2_forward(&train, x.data(), y.data(), B, T, 0.5f) == eval_loss);
    CHECK(std::equal(losses.begin(), losses.end(), train.act.losses) && train.head_grads);
    double max_diff = 0;
    for (int i = 0; i < N; i++) {
        const float* z = logits.data() + (size_t)i * Vp;
        const double zmax = *std::max_element(z, z + V);
        double sum = 0;
        for (int v = 0; v < V; v++) sum += std::exp(z[v] - zmax);
        for (int v = 0; v < Vp; v++) {
            double want = v < V ? (std::exp(z[v] - zmax) / sum - (v == y[i])) / N * 0.5 : 0.0;
            max_diff = max_abs(max_diff, train.act.logits[(size_t)i * Vp + v] - want);
        }
    }
    CHECK(max_diff <= 1e-6 / N);
    // a second backward, after the head again, computes the same gradients (the two-pass update's first pass
    // measures the norm)
    gpt2_backward(&train);
    CHECK(!train.head_grads);  // consumed: another backward needs the head again
    const std::vector<float> first = train.grads;
    gpt2_zero_grad(&train);
    gpt2_head(&train, 0.5f);
    gpt2_backward(&train);
    CHECK(train.grads == first);
    CHECK(std::any_of(first.begin(), first.end(), [](float g) { return g != 0; }));
}

TEST(head_in_row_chunks_equals_one_matmul_over_all_rows) {
    // 1,312 rows: the head takes 1,024, then 288 (layout_head_rows), and keeps the last 288 rows' in act.logits. At
    // this size every matmul sums K in gemm_kc's 256-blocks whatever its rows, so the blocks change no number.
    const int B = 82, T = 16, N = B * T, rows = layout_head_rows(N), last = N - rows;
    std::vector<int> x(N), y(N);
    for (int i = 0; i < N; i++) x[i] = (i * 7 + 3) % 50, y[i] = i % 9 == 0 ? -1 : (i * 11 + 5) % 50;  // some -1
    GPT2 model = tiny_model();
    const int C = model.cfg.channels, V = model.cfg.vocab_size, Vp = model.cfg.padded_vocab_size;
    gpt2_enable_training(&model);
    gpt2_zero_grad(&model);
    const float loss = gpt2_forward(&model, x.data(), y.data(), B, T, 0.25f);
    CHECK(rows == 1024 && model.head_last_row == rows);
    CHECK(model.acts.size() == layout_params_size(layout_acts(model.cfg, B, T)));
    // the whole (N, Vp) at once from the same lnf: one matmul each way
    std::vector<float> logits((size_t)N * Vp), losses(N), dlnf((size_t)N * C), dwte((size_t)Vp * C, 0.0f);
    const Weight wte(model.param.wte);
    matmul_forward(logits.data(), model.act.lnf, wte, nullptr, N, C, Vp);
    const long scored = std::count_if(y.begin(), y.end(), [](int t) { return t >= 0; });
    crossentropy_fused(logits.data(), losses.data(), y.data(), N, V, Vp, 1.0f / scored, 0.25f);
    matmul_backward(dlnf.data(), dwte.data(), nullptr, logits.data(), model.act.lnf, wte, N, C, Vp);
    double total = 0;
    for (float l : losses) total += l;
    CHECK(loss == (float)(total / scored));
    CHECK(std::equal(losses.begin(), losses.end(), model.act.losses));
    CHECK(std::equal(logits.end() - (size_t)last * Vp, logits.end(), model.act.logits));  // the last rows' dlogits
    CHECK(std::equal(dlnf.begin(), dlnf.end(), model.dact.lnf));
    size_t equal = 0;
    for (size_t i = 0; i < dwte.size(); i++) equal += dwte[i] == model.grad.wte[i];
    printf("    wte's gradient: %zu of %zu equal one matmul's over all %d rows\n", equal, dwte.size(), N);
    CHECK(equal == dwte.size());
}

TEST(activation_layouts_hold_one_classifier_buffer) {
    // GPT-2 124M at B=8, T=256: the forward layout holds one (1024, Vp) tensor (the head's rows at a time), the
    // gradients' none: they are one layer's in three buffers, 6 C a row (layout.h).
    const GPT2Config cfg = config_make(1024, 50257, 12, 12, 768);
    const int B = 8, T = 256;
    const size_t NVp = (size_t)layout_head_rows(B * T) * cfg.padded_vocab_size;
    CHECK(layout_head_rows(B * T) == 1024);
    const std::vector<TensorInfo> acts = layout_acts(cfg, B, T), dacts = layout_acts(cfg, B, T, true);
    CHECK(std::count_if(acts.begin(), acts.end(), [&](const TensorInfo& t) { return t.numel() == NVp; }) == 1);
    CHECK(std::none_of(dacts.begin(), dacts.end(), [&](const TensorInfo& t) { return t.numel() == NVp; }));
    CHECK(dacts.size() == 3 && layout_params_size(dacts) == (size_t)B * T * 6 * cfg.channels);
    for (const TensorInfo& t : dacts) {
        const std::string& n = t.name;
        CHECK(n.find("mean") == std::string::npos && n.find("rstd") == std::string::npos &&
              n.find("lse") == std::string::npos && n != "losses");
    }
    const size_t bytes = sizeof(float) * (layout_params_size(acts) + layout_params_size(dacts));
    printf("    124M B=8 T=256: activations %.1f MB + their gradients %.1f MB = %.1f MB (logits %.1f MB)\n",
           sizeof(float) * layout_params_size(acts) / 1e6, sizeof(float) * layout_params_size(dacts) / 1e6, bytes / 1e6,
           sizeof(float) * NVp / 1e6);
}

namespace {

// A model's copies as the core sees them (core/model.h's ModelCopies), fp32 underneath: it records which
// tensors the matmuls asked for and which values the optimizer said it changed.
struct RecordingCopies : ModelCopies {
    std::set<size_t> asked;
    std::vector<int> updated;  // times each parameter was reported changed
    int operands_asked = 0;
    Weight weight(const float* w, size_t offset) const override {
        const_cast<RecordingCopies*>(this)->asked.insert(offset);
        return Weight(w);
    }
    const GemmOperands* operands() const override {
        const_cast<RecordingCopies*>(this)->operands_asked++;
        return nullptr;
    }
    void params_updated(const float*, size_t offset, size_t n) override {
        for (size_t i = offset; i < offset + n; i++) updated[i]++;  // threads report disjoint ranges
    }
};

}  // namespace

TEST(model_copies_see_every_matmul_weight_and_every_update) {
    // the seam precision/ keeps its bf16 and int8 copies behind, checked on any CPU: every matrix of the
    // forward and backward comes through gpt2_weight, attention asks for its operands, each AdamW update
    // reports every parameter once, and the numbers stay those of a model without copies
    GPT2 plain = tiny_model(), model = tiny_model();
    auto copies = std::make_unique<RecordingCopies>();
    RecordingCopies* rec = copies.get();
    rec->updated.assign(model.num_params, 0);
    model.copies = std::move(copies);
    gpt2_enable_training(&plain);
    gpt2_enable_training(&model);
    std::vector<int> x(16), y(16);
    for (int i = 0; i < 16; i++) x[i] = (i * 7 + 3) % 50, y[i] = (i * 11 + 5) % 50;
    AdamW opt_plain, opt;
    AdamWConfig oc;
    for (int step = 0; step < 2; step++) {
        gpt2_zero_grad(&plain), gpt2_zero_grad(&model);
        CHECK(gpt2_forward(&plain, x.data(), y.data(), 2, 8, 1) == gpt2_forward(&model, x.data(), y.data(), 2, 8, 1));
        gpt2_backward(&plain), gpt2_backward(&model);
        adamw_update(&opt_plain, gpt2_param_set(plain), oc, 1e-2f);
        adamw_update(&opt, gpt2_param_set(model), oc, 1e-2f);
    }
    CHECK(plain.params == model.params);
    std::set<size_t> matrices = {(size_t)(model.param.wte - model.params.data())};  // the lm_head's
    for (const LayerParams& lp : model.param.layers)
        for (const float* w : {lp.qkvw, lp.attprojw, lp.fcw, lp.fcprojw}) matrices.insert(w - model.params.data());
    CHECK(rec->asked == matrices);
    CHECK(rec->operands_asked == 2 * (2 + 1));  // per step: each layer's forward, and the backward once
    CHECK(std::count(rec->updated.begin(), rec->updated.end(), 2) == (long)model.num_params);
}

TEST(bf16_weight_copy_follows_every_adamw_update) {
    if (!bf16_supported()) SKIP("this CPU has no AVX512_BF16");
    GPT2 model = tiny_model();
    gpt2_enable_training(&model);
    gpt2_set_precision(&model, Precision::kBf16);
    std::vector<int> x(16), y(16);
    for (int i = 0; i < 16; i++) x[i] = (i * 7 + 3) % 50, y[i] = (i * 11 + 5) % 50;
    AdamW opt;
    AdamWConfig oc;
    float first = 0, last = 0;
    for (int step = 0; step < 5; step++) {
        gpt2_zero_grad(&model);
        last = gpt2_forward(&model, x.data(), y.data(), 2, 8, 1.0f);
        if (step == 0) first = last;
        gpt2_backward(&model);
        adamw_update(&opt, gpt2_param_set(model), oc, 1e-2f);
        int stale = 0;
        const std::vector<uint16_t>& params16 = gpt2_precision_copies(model)->params16;
        for (size_t i = 0; i < model.params.size(); i++) stale += params16[i] != bf16_round(model.params[i]);
        CHECK(stale == 0);
    }
    CHECK(last < first);  // bf16 training still learns the batch
    gpt2_set_precision(&model, Precision::kFp32);
    CHECK(!model.copies && gpt2_precision(model) == Precision::kFp32);
}

namespace {

// One forward and backward of `model` on a fixed batch; layer_done as gpt2_backward's.
void forward_backward(GPT2* model, const std::function<void(int)>& layer_done = nullptr) {
    std::vector<int> x(16), y(16);
    for (int i = 0; i < 16; i++) x[i] = (i * 7 + 3) % 50, y[i] = (i * 11 + 5) % 50;
    gpt2_zero_grad(model);
    gpt2_forward(model, x.data(), y.data(), 2, 8, 1.0f);
    gpt2_backward(model, layer_done);
}

}  // namespace

TEST(recompute_and_one_layer_of_gradients_change_no_number) {
    GPT2 plain = tiny_model(), recompute = tiny_model(), layered = tiny_model();
    gpt2_enable_training(&plain);
    TrainingMemory rc, lg;
    rc.recompute = true;
    lg.layer_grads = lg.recompute = true;
    memory_enable_training(&recompute, rc);
    memory_enable_training(&layered, lg);
    forward_backward(&plain);
    forward_backward(&recompute);
    CHECK(recompute.grads == plain.grads);  // bit for bit
    CHECK(recompute.acts.size() < plain.acts.size());
    CHECK(recompute.act.layers[0].ln1 == recompute.act.layers[1].ln1 && plain.act.layers[0].ln1 != plain.act.layers[1].ln1);
    // one layer's gradients at a time: each, read in layer_done, is the full buffer's, and so are the rest
    int layers_seen = 0, mismatched = 0;
    forward_backward(&layered, [&](int l) {
        layers_seen++;
        for (size_t i = 0; i < layered.param_table.size(); i++) {
            const TensorInfo& t = layered.param_table[i];
            if (t.layer == l)
                mismatched += !std::equal(gpt2_param_set(layered).grad(i), gpt2_param_set(layered).grad(i) + t.numel(),
                                          plain.grads.data() + t.offset);
        }
        memory_clear_layer_grads(&layered);
    });
    for (size_t i = 0; i < layered.param_table.size(); i++) {
        const TensorInfo& t = layered.param_table[i];
        if (t.layer < 0)
            mismatched += !std::equal(gpt2_param_set(layered).grad(i), gpt2_param_set(layered).grad(i) + t.numel(),
                                      plain.grads.data() + t.offset);
    }
    CHECK(layers_seen == 2 && mismatched == 0);
    CHECK(layered.grads.size() < plain.grads.size());
    CHECK(layered.grads.size() * sizeof(float) == memory_grads_bytes(layered.cfg, lg));
    CHECK(sizeof(float) * (recompute.acts.size() + recompute.dacts.size()) == memory_acts_bytes(recompute.cfg, 2, 8, rc));
    // the activation gradients are one layer's whatever the depth
    CHECK(layout_params_size(layout_acts(config_make(16, 50, 2, 2, 16), 2, 8, true)) ==
          layout_params_size(layout_acts(config_make(16, 50, 7, 2, 16), 2, 8, true)));
}

TEST(update_in_backward_equals_the_full_update_bit_for_bit) {
    // clipped (two backwards) and unclipped (one), fp32 and bf16 moments, three steps each
    for (float clip : {0.05f, 0.0f})
        for (bool bf16 : {false, true}) {
            GPT2 full = tiny_model(), layered = tiny_model();
            gpt2_enable_training(&full);
            TrainingMemory lg;
            lg.layer_grads = true;
            memory_enable_training(&layered, lg);
            AdamW a, b;
            if (bf16) adamw_use_bf16(&a), adamw_use_bf16(&b);
            AdamWConfig oc;
            bool norms_equal = true;
            for (int step = 0; step < 3; step++) {
                forward_backward(&full);
                const float norm = optimizer_grad_norm(gpt2_param_set(full));
                adamw_update(&a, gpt2_param_set(full), oc, 1e-2f, optimizer_clip_factor(norm, clip));
                std::vector<int> x(16), y(16);
                for (int i = 0; i < 16; i++) x[i] = (i * 7 + 3) % 50, y[i] = (i * 11 + 5) % 50;
                gpt2_zero_grad(&layered);
                gpt2_forward(&layered, x.data(), y.data(), 2, 8, 1.0f);
                norms_equal = norms_equal && adamw_step_in_backward(&b, &layered, oc, 1e-2f, clip) == norm;
                CHECK(clip == 0 || norm > clip);  // the clipped case clips
            }
            CHECK(norms_equal);
            CHECK(full.params == layered.params);
        }
}

TEST(bf16_moments_are_rounded_stochastically_and_follow_fp32) {
    // A constant gradient of 1 with beta2 = 0.999: fp32's v after t steps is 1 - 0.999^t. Rounding v to
    // the nearest bf16 would stall it (each step adds 0.001 (1 - v), under half a bf16 step once v
    // passes 1/4); stochastic rounding keeps the mean on course.
    const size_t n = 4096;
    std::vector<float> w(n, 0.5f), g(n, 1.0f), m32(n, 0.0f), v32(n, 0.0f);
    std::vector<uint16_t> m16(n, 0), v16(n, 0), m16b(n, 0), v16b(n, 0);
    std::vector<float> w16 = w, w16b = w;
    AdamWStep s{0.9f, 0.999f, 1e-8f, 1e-4f, 1.0f, 1.0f, 1.0f, 0};
    for (int step = 1; step <= 2000; step++) {
        s.t = step;
        adamw_chunk(w.data(), g.data(), m32.data(), v32.data(), n, s);
        adamw_chunk_bf16(w16.data(), g.data(), m16.data(), v16.data(), n, s, 1000);
        // the same range in two uneven pieces (threads, ZeRO slices): the same bits
        adamw_chunk_bf16(w16b.data(), g.data(), m16b.data(), v16b.data(), 1001, s, 1000);
        adamw_chunk_bf16(w16b.data() + 1001, g.data() + 1001, m16b.data() + 1001, v16b.data() + 1001, n - 1001, s,
                         2001);
    }
    double mean_v = 0;
    for (uint16_t v : v16) mean_v += bf16_to_float(v) / n;
    const double want = 1 - std::pow(0.999, 2000);
    printf("    v after 2000 steps: fp32 %.6f, bf16 mean %.6f (exact %.6f)\n", v32[0], mean_v, want);
    CHECK(std::fabs(v32[0] - want) < 1e-4);
    CHECK(std::fabs(mean_v - want) < 2e-3 * want);
    CHECK(m16 == m16b && v16 == v16b && w16 == w16b);
}

// Twin models of cfg (seed 7), one gradient each, one AdamW update each: with fp32 moments (*fp32) and with
// `form`'s (*other). A first update computes the moments in fp32 before storing them, so the weights agree bit
// for bit whatever the form; the callers hold each stored moment to its form's step.
static void first_update_both_forms(const GPT2Config& cfg, const std::string& form, GPT2* a, GPT2* b, AdamW* fp32,
                                    AdamW* other) {
    for (GPT2* model : {a, b}) {
        gpt2_build(model, cfg);
        gpt2_init_random(model, 7);
        gpt2_enable_training(model);
        forward_backward(model);
    }
    adamw_use_form(other, form);
    const AdamWConfig oc;
    adamw_update(fp32, gpt2_param_set(*a), oc, 1e-2f);
    adamw_update(other, gpt2_param_set(*b), oc, 1e-2f);
    CHECK(a->params == b->params);
}

TEST(bf16_moments_plug_into_adamw_through_its_seam) {
    // AdamW with its moments in bf16 (precision/adamw_bf16, AdamW::moments) against fp32 ones: a first update
    // computes the moments in fp32 before storing them, so the weights agree bit for bit and each stored
    // moment is within a bf16 step of fp32's; adamw_nonfinite reads the bf16 moments.
    GPT2 a, b;
    AdamW fp32, bf16;
    first_update_both_forms(tiny_config(), "bf16", &a, &b, &fp32, &bf16);
    const AdamWBf16* moments = adamw_bf16(bf16);
    CHECK(moments && bf16.prepared() && bf16.m.empty() && moments->m.size() == a.num_params);
    size_t far = 0, moved = 0;
    for (size_t i = 0; moments && i < a.num_params; i++)
        for (int k = 0; k < 2; k++) {
            const float x = k ? fp32.v[i] : fp32.m[i], y = bf16_to_float(k ? moments->v[i] : moments->m[i]);
            far += std::fabs(y - x) > std::ldexp(std::fabs(x), -7);
            moved += y != 0;
        }
    CHECK(far == 0 && moved > a.num_params);
    CHECK(adamw_nonfinite(bf16, gpt2_param_set(b)).empty());
    adamw_bf16(bf16)->v[3] = 0x7F80;  // +inf
    const std::string what = adamw_nonfinite(bf16, gpt2_param_set(b));
    printf("    %s\n", what.c_str());
    CHECK(what.find("AdamW v of ") == 0 && what.find("[3] is inf") != std::string::npos);
}

TEST(eight_bit_codes_cover_their_range_and_round_stochastically) {
    // Every code's value encodes back to it (to nearest); the values rise, up to 1.875; a value between two
    // codes rounds to the nearer with r = 0x8000, and over all 2^16 r to each neighbour in proportion, so its
    // mean is the value (within one part in 2^16 of the gap): in the subnormals, the normals and the top.
    bool round_trip = true, rising = true, unbiased = true, nearest = true;
    for (int k = 0; k < 2; k++) {
        const int codes = k ? 256 : 128;
        const auto value = [k](uint32_t c) { return k ? v_code_value((uint8_t)c) : m_code_value((uint8_t)c); };
        const auto code = [k](float y, uint32_t r) { return k ? v_code(y, r) : m_code(y, r); };
        for (int c = 0; c < codes; c++) {
            const int negative = c | 0x80;  // -0 too: a negative value rounded to 0
            round_trip = round_trip && code(value(c), 0x8000) == c && (k || code(-value(c), 0x8000) == negative);
            rising = rising && (c == 0 || value(c) > value(c - 1));
        }
        CHECK(value(codes - 1) == 1.875f);
        for (int c : {1, 5, 8, 9, 60, codes - 2}) {
            const float lo = value(c), hi = value(c + 1);
            for (float f : {0.1f, 0.5f, 0.7f}) {
                const float y = lo + f * (hi - lo);
                double mean = 0;
                for (uint32_t r = 0; r < 65536; r++) mean += value(code(y, r));
                mean /= 65536;
                unbiased = unbiased && std::fabs(mean - y) <= (hi - lo) / 65536 + 1e-6 * y;
                nearest = nearest && value(code(y, 0x8000)) == (f < 0.5f ? lo : hi);
            }
        }
    }
    CHECK(round_trip && rising && unbiased && nearest);
    CHECK(m_code_value(m_code(-0.75f, 0x8000)) == -0.75f && v_code_value(1) == std::ldexp(1.0f, -33));
    CHECK(m_code_value(1) == std::ldexp(1.0f, -17));
    // a v above 0 never codes as 0, whatever the random bits: m / (0 + eps) would be far larger than fp32's
    bool never_zero = v_code(0.0f, 0xFFFF) == 0;
    for (uint32_t r : {0u, 0x8000u, 0xFFFFu}) never_zero = never_zero && v_code(std::ldexp(1.0f, -40), r) == 1;
    CHECK(never_zero);
}

TEST(eight_bit_moments_follow_fp32) {
    // Each block's first value keeps a gradient of 1, and with it the block's largest moments; the others have
    // 1 for 1000 steps, then 0.5 to 1: their v falls towards a quarter to all of the first's by 0.1% of the
    // gap a step (beta2 = 0.999), far under a code's step (12.5%). Round to nearest would hold them at the
    // top code; stochastic rounding keeps their mean on fp32's course.
    const size_t n = 4096;
    std::vector<float> g(n, 1.0f), w(n, 0.5f), m32(n, 0.0f), v32(n, 0.0f);
    std::vector<uint8_t> m8(n, 0), v8(n, 0), m8b(n, 0), v8b(n, 0);
    std::vector<float> ms(n / 64, 0.0f), vs(n / 64, 0.0f), msb = ms, vsb = vs, w8 = w, w8b = w;
    AdamWStep s{0.9f, 0.999f, 1e-8f, 1e-4f, 1.0f, 1.0f, 1.0f, 0};
    for (int step = 1; step <= 2000; step++) {
        s.t = step;
        if (step == 1001)
            for (size_t i = 0; i < n; i++) g[i] = i % 64 ? 0.5f + 0.5f * (float)(i % 64) / 64 : 1.0f;
        adamw_chunk(w.data(), g.data(), m32.data(), v32.data(), n, s);
        adamw_chunk_8bit(w8.data(), g.data(), m8.data(), v8.data(), ms.data(), vs.data(), n, s, 1024);
        // the same range in two uneven pieces of whole blocks (threads, ZeRO slices): the same bits
        adamw_chunk_8bit(w8b.data(), g.data(), m8b.data(), v8b.data(), msb.data(), vsb.data(), 1088, s, 1024);
        adamw_chunk_8bit(w8b.data() + 1088, g.data() + 1088, m8b.data() + 1088, v8b.data() + 1088, msb.data() + 17,
                         vsb.data() + 17, n - 1088, s, 1024 + 1088);
    }
    double mean_v = 0, mean_m = 0, fell = 0;
    for (size_t i = 0; i < n; i++) {
        if (i % 64 == 0) continue;
        mean_v += v_code_value(v8[i]) * vs[i / 64] / v32[i] / (n - n / 64);
        mean_m += m_code_value(m8[i]) * ms[i / 64] / m32[i] / (n - n / 64);
        fell += v32[i] / v32[i - i % 64] / (n - n / 64);
    }
    printf("    after 2000 steps, 8-bit / fp32: v %.5f, m %.5f (fp32's v fell to %.3f of the block's first)\n",
           mean_v, mean_m, fell);
    CHECK(std::fabs(mean_v - 1) < 3e-3 && std::fabs(mean_m - 1) < 3e-3 && fell < 0.8);
    CHECK(m8 == m8b && v8 == v8b && ms == msb && vs == vsb && w8 == w8b);
}

TEST(eight_bit_moments_plug_into_adamw_through_its_seam) {
    // AdamW with 8-bit moments against fp32 ones on a model with n_embd 64: a first update computes the moments
    // in fp32 before storing them, so the weights agree bit for bit, and each stored moment is within a code's
    // step (an eighth of it, or of 2^-17 of its block's largest in the subnormals) of fp32's. A model whose
    // tensors do not start on a block of 64 is refused; adamw_nonfinite reads the 8-bit moments.
    const std::string why = adamw_8bit_refusal(tiny_config());
    printf("    n_embd 16: %s\n", why.c_str());
    CHECK(why.find("n_embd 16 is not a multiple of 64") == 0);
    CHECK(adamw_8bit_refusal(config_make(16, 50, 2, 2, 64)).empty());
    GPT2 a, b;
    AdamW fp32, q;
    first_update_both_forms(config_make(16, 50, 2, 2, 64), "8bit", &a, &b, &fp32, &q);
    const AdamW8bit* moments = adamw_8bit(q);
    CHECK(moments && q.prepared() && q.m.empty() && moments->m.size() == a.num_params);
    size_t far = 0, moved = 0;
    for (size_t i = 0; moments && i < a.num_params; i++)
        for (int k = 0; k < 2; k++) {
            const float x = k ? fp32.v[i] : fp32.m[i], y = moments->value(k, i);
            const float largest = 1.875f * (k ? moments->v_step : moments->m_step)[i / 64];
            far += std::fabs(y - x) > std::fabs(x) / 8 + std::ldexp(largest, k ? -33 : -17);  // the subnormals' step
            moved += y != 0;
        }
    CHECK(far == 0 && moved > a.num_params);
    CHECK(adamw_nonfinite(q, gpt2_param_set(b)).empty());
    adamw_8bit(q)->v_step[1] = INFINITY;
    const std::string what = adamw_nonfinite(q, gpt2_param_set(b));
    printf("    %s\n", what.c_str());
    CHECK(what.find("AdamW v of ") == 0 && what.find("[64] is ") != std::string::npos);
}

// A first round of the tuner: its full team, or 0 where it does not tune (the caller skips).
static int tuner_team(ThreadTuner* tuner) {
    tuner->begin();
    const int all = tuner->threads();
    tuner->end();
    return all >= 2 && !getenv("OMP_NUM_THREADS") ? all : 0;
}

TEST(thread_tuner_takes_one_thread_while_others_hold_a_cpu) {
    ThreadTuner tuner;
    const int all = tuner_team(&tuner);
    if (all == 0) SKIP("one thread, or OMP_NUM_THREADS set: the tuner does not tune");
    auto next_round = [&] {
        tuner.begin();
        const int t = tuner.threads();
        tuner.end();
        return t;
    };
    // Windows as end() measures them: CPUs that other processes kept busy.
    tuner.observe(0.1, all);
    CHECK(next_round() == all);
    tuner.observe(0.9, all);  // a busy process
    CHECK(next_round() == all - 1);
    CHECK(next_round() == all - 1);  // until a window says otherwise
    tuner.observe(0.6, all);         // it keeps its CPU while ours are fewer
    CHECK(next_round() == all - 1);
    tuner.observe(all + 1.0, all);  // more than every CPU: still one thread, never none
    CHECK(next_round() == 1);
    tuner.observe(0.05, all);  // gone
    CHECK(next_round() == all);
    // The user's OMP_NUM_THREADS wins.
    tuner.observe(1.0, all);
    test_os_setenv("OMP_NUM_THREADS", "2");
    CHECK(next_round() == all);
    test_os_setenv("OMP_NUM_THREADS", nullptr);
    tuner.observe(0.0, all);
}

TEST(thread_tuner_measures_a_busy_process) {
    // end() itself, against a real busy child: its windows must see about one CPU taken by others.
    ThreadTuner tuner;
    const int all = tuner_team(&tuner);
    if (all == 0) SKIP("one thread, or OMP_NUM_THREADS set: the tuner does not tune");
    auto rounds = [&](double seconds) {  // rounds of ~10 ms of our own work for `seconds`; the last team size
        int last = 0;
        for (double t0 = time_now_s(); time_now_s() - t0 < seconds;) {
            tuner.begin();
            last = tuner.threads();
            for (double t1 = time_now_s(); time_now_s() - t1 < 0.01;) {
            }
            tuner.end();
        }
        return last;
    };
    // The baseline first, before our own busy child: on a machine other processes already keep busy, a
    // smaller team proves nothing about the child.
    const int idle = rounds(0.5);
    if (idle < all) SKIP("the machine is busy already (a team of " + std::to_string(idle) + " of " + std::to_string(all) + " before the busy child)");
    const long child = test_os_spin_child();
    if (child < 0) SKIP("no child processes here (fork)");
    const int busy = rounds(1.5);
    test_os_kill(child);
    CHECK(busy <= all - 1);  // one CPU (or more, on a shared machine) taken
    // A niced one counts too: started from another terminal (a session, so an autogroup, of its own) it takes its
    // CPU as an equal whatever its nice value.
    const long niced = test_os_spin_child(19);
    if (niced < 0) SKIP("no child processes here (fork)");
    const int beside_niced = rounds(1.5);
    test_os_kill(niced);
    CHECK(beside_niced <= all - 1);
}
