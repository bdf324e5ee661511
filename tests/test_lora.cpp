// test_lora.cpp: LoRA's kernels against their plain references, an adapter on a frozen base (B = 0 leaves the
// base's logits bit for bit, the base gets no gradient, the adapter's gradients match finite differences), and
// PEFT's target names and the rank's bounds.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/rng.h"
#include "lora/lora.h"
#include "test.h"

namespace {

std::vector<float> randoms(size_t n, Rng* rng) {
    std::vector<float> v(n);
    for (float& x : v) x = rng->normal();
    return v;
}

// max |a - b| / max |b|
double rel_err(const std::vector<float>& a, const std::vector<float>& b) {
    double diff = 0, ref = 0;
    for (size_t i = 0; i < a.size(); i++) diff = max_abs(diff, a[i] - b[i]), ref = max_abs(ref, b[i]);
    return diff / ref;
}

}  // namespace

TEST(lora_kernels_match_the_reference) {
    Rng rng(3);
    const int N = 37, in = 48, out = 40, rank = 5;
    const float scale = 2.5f;
    const std::vector<float> x = randoms((size_t)N * in, &rng), A = randoms((size_t)rank * in, &rng),
                             B = randoms((size_t)out * rank, &rng), dout = randoms((size_t)N * out, &rng);
    std::vector<float> y = randoms((size_t)N * out, &rng), y_ref = y, hs((size_t)N * rank), hs_ref(hs.size());
    lora_forward(y.data(), hs.data(), x.data(), A.data(), B.data(), scale, N, in, out, rank);
    lora_forward_ref(y_ref.data(), hs_ref.data(), x.data(), A.data(), B.data(), scale, N, in, out, rank);
    CHECK(rel_err(hs, hs_ref) < 1e-6);
    CHECK(rel_err(y, y_ref) < 1e-6);
    // the gradients accumulate onto what is there
    std::vector<float> dinp = randoms((size_t)N * in, &rng), dA = randoms(A.size(), &rng), dB = randoms(B.size(), &rng);
    std::vector<float> dinp_ref = dinp, dA_ref = dA, dB_ref = dB, g((size_t)N * rank);
    lora_backward(dinp.data(), dA.data(), dB.data(), g.data(), dout.data(), hs.data(), x.data(), A.data(), B.data(),
                  scale, N, in, out, rank);
    lora_backward_ref(dinp_ref.data(), dA_ref.data(), dB_ref.data(), dout.data(), hs.data(), x.data(), A.data(),
                      B.data(), scale, N, in, out, rank);
    CHECK(rel_err(dinp, dinp_ref) < 1e-6);
    CHECK(rel_err(dA, dA_ref) < 1e-6);
    CHECK(rel_err(dB, dB_ref) < 1e-6);
}

TEST(lora_dropout_masks_the_adapters_input_as_peft_does) {
    // PEFT: y += scale B A dropout(x), dropout(x) = x * mask / (1 - p). A linear under a step's dropout against the
    // references run on the masked input: the output, dA, dB, and dinp through the mask. The mask keeps about
    // 1 - p; it is another for the next micro-batch and the next step, the same for the same ones (a resume), and
    // there is none outside a step.
    Rng rng(5);
    const int N = 64, in = 96, out = 40, rank = 4;
    const float scale = 2.0f, p = 0.25f, inv = 1.0f / (1.0f - p);
    const std::vector<float> x = randoms((size_t)N * in, &rng), A = randoms((size_t)rank * in, &rng),
                             B = randoms((size_t)out * rank, &rng), dout = randoms((size_t)N * out, &rng);
    LoraDropout drop;
    drop.p = p, drop.seed = 7, drop.step = 3;
    std::vector<float> xd((size_t)N * in), dxd(xd.size()), hs((size_t)N * rank), g(hs.size());
    std::vector<float> dA(A.size(), 0.0f), dB(B.size(), 0.0f), y((size_t)N * out, 0.0f), dinp(x.size(), 0.0f);
    LoraLinear lin;
    lin.A = A.data(), lin.B = B.data(), lin.dA = dA.data(), lin.dB = dB.data(), lin.hs = hs.data();
    lin.scratch = g.data(), lin.scale = scale, lin.in = in, lin.out = out, lin.rank = rank;
    lin.dropout = &drop, lin.xd = xd.data(), lin.dxd = dxd.data(), lin.index = 2;
    lin.forward(y.data(), x.data(), N);
    const uint64_t key = lin.key;
    std::vector<float> xm(x.size());
    size_t kept = 0;
    for (size_t i = 0; i < x.size(); i++) {
        const bool keep = lora_dropout_keep(key, i, p);
        xm[i] = keep ? x[i] * inv : 0.0f;
        kept += keep;
    }
    printf("    kept %zu of %zu inputs (p = %.2f)\n", kept, x.size(), p);
    CHECK(key != 0 && std::fabs((double)kept / x.size() - (1 - p)) < 0.02);
    std::vector<float> y_ref(y.size(), 0.0f), hs_ref(hs.size()), dA_ref(dA.size(), 0.0f), dB_ref(dB.size(), 0.0f);
    std::vector<float> dinp_ref(dinp.size(), 0.0f);
    lora_forward_ref(y_ref.data(), hs_ref.data(), xm.data(), A.data(), B.data(), scale, N, in, out, rank);
    CHECK(rel_err(y, y_ref) < 1e-6);
    std::vector<float> y2(y.size(), 0.0f);
    lin.forward(y2.data(), x.data(), N);  // run again before its backward (--recompute-blocks): the same mask
    CHECK(lin.key == key && y2 == y);
    lin.backward(dinp.data(), dout.data(), x.data(), N);
    lora_backward_ref(dinp_ref.data(), dA_ref.data(), dB_ref.data(), dout.data(), hs_ref.data(), xm.data(), A.data(),
                      B.data(), scale, N, in, out, rank);
    for (size_t i = 0; i < dinp_ref.size(); i++) dinp_ref[i] *= xm[i] != 0.0f ? inv : 0.0f;
    CHECK(rel_err(dA, dA_ref) < 1e-6 && rel_err(dB, dB_ref) < 1e-6 && rel_err(dinp, dinp_ref) < 1e-6);
    lin.forward(y2.data(), x.data(), N);  // the step's next micro-batch, after one backward
    CHECK(lin.key != key && lin.calls == 1);
    lin.calls = 0, drop.step = 4;
    lin.forward(y2.data(), x.data(), N);
    CHECK(lin.key != key);
    lin.calls = 0, drop.step = 3;
    lin.forward(y2.data(), x.data(), N);
    CHECK(lin.key == key);
    drop.step = -1;  // validation, samples: the plain product
    std::fill(y2.begin(), y2.end(), 0.0f), std::fill(y_ref.begin(), y_ref.end(), 0.0f);
    lin.forward(y2.data(), x.data(), N);
    lora_forward(y_ref.data(), hs_ref.data(), x.data(), A.data(), B.data(), scale, N, in, out, rank);
    CHECK(lin.key == 0 && y2 == y_ref);
}

TEST(lora_on_a_frozen_base) {
    const int B = 2, T = 8;
    std::vector<int> x(B * T), y(B * T);
    for (int i = 0; i < B * T; i++) x[i] = (i * 7) % 50, y[i] = (i * 11 + 3) % 50;
    GPT2 base = tiny_model();
    gpt2_forward(&base, x.data(), nullptr, B, T);
    const std::vector<float> base_logits(base.act.logits, base.act.logits + B * T * base.cfg.padded_vocab_size);

    GPT2 model = tiny_model();
    LoraModel lora;
    LoraConfig cfg;
    cfg.rank = 3;
    CHECK(lora_parse_targets("c_attn,c_proj,c_fc", &cfg).empty());
    lora_layout(&lora.adapter, cfg, model.cfg);
    lora_init_random(&lora.adapter, 5);
    lora_attach(&model, &lora, B * T, true);
    CHECK(model.grads.empty());  // a frozen base: no gradient buffer
    const float loss = gpt2_forward(&model, x.data(), y.data(), B, T);
    gpt2_forward(&model, x.data(), nullptr, B, T);
    bool same = true;
    for (size_t i = 0; i < base_logits.size(); i++) same = same && base_logits[i] == model.act.logits[i];
    CHECK(same);  // B = 0: the adapter adds exactly nothing

    // B != 0: the adapter's gradients against central differences of the loss
    Rng rng(9);
    for (const TensorInfo& t : lora.adapter.table)
        if (t.name.find("lora_B") != std::string::npos)
            for (size_t i = 0; i < t.numel(); i++) lora.adapter.params[t.offset + i] = 0.05f * rng.normal();
    lora_zero_grad(&lora);
    gpt2_forward(&model, x.data(), y.data(), B, T, 1.0f);
    gpt2_backward(&model);
    CHECK(model.grads.empty());
    const std::vector<float> grads = lora.grads;
    int checked = 0;
    for (size_t i = 0; i < lora.adapter.params.size(); i += 97) {
        float& p = lora.adapter.params[i];
        const float keep = p, h = 1e-2f;
        p = keep + h;
        const double up = gpt2_forward(&model, x.data(), y.data(), B, T);
        p = keep - h;
        const double down = gpt2_forward(&model, x.data(), y.data(), B, T);
        p = keep;
        const double fd = (up - down) / (2 * h);
        CHECK_NEAR(grads[i], fd, 2e-3 + 2e-2 * std::fabs(fd));
        checked++;
    }
    CHECK(checked > 10);
    CHECK(loss > 0);
}

TEST(lora_targets_and_ranks) {
    LoraConfig cfg;
    CHECK(lora_parse_targets("c_proj", &cfg).empty());
    CHECK(!cfg.target[kLoraAttnQKV] && cfg.target[kLoraAttnProj] && !cfg.target[kLoraMlpFC] && cfg.target[kLoraMlpProj]);
    CHECK(lora_parse_targets("attn.c_proj", &cfg).empty());
    CHECK(cfg.target[kLoraAttnProj] && !cfg.target[kLoraMlpProj]);
    CHECK(lora_parse_targets("c_attn,mlp.c_fc", &cfg).empty());
    CHECK(cfg.target[kLoraAttnQKV] && cfg.target[kLoraMlpFC] && cfg.target_modules.size() == 2);
    CHECK(lora_parse_targets("proj", &cfg).find("got 'proj'") != std::string::npos);  // a suffix after a '.'
    CHECK(lora_parse_targets("c_attn,", &cfg).find("got ''") != std::string::npos);
    CHECK(lora_parse_targets("wte", &cfg).find("--lora-targets") != std::string::npos);
    const GPT2Config g = config_make(16, 50, 2, 2, 16);
    CHECK(lora_parse_targets("c_fc", &cfg).empty());
    cfg.rank = 16;
    CHECK(lora_check(cfg, g, "--lora").empty());
    cfg.rank = 17;  // c_fc is 64 x 16
    CHECK(lora_check(cfg, g, "--lora").find("[1, 16]") != std::string::npos);
    cfg.rank = 0;
    CHECK(!lora_check(cfg, g, "--lora").empty());
}
