// test_train.cpp: training-loop invariants that the CLI tests can only see through exit codes: gradient
// accumulation over k micro-batches equals one k-times larger batch, and inference allocates no
// training memory.
#include <cmath>
#include <cstdio>
#include <vector>

#include "model/model.h"
#include "test.h"
#include "train/optimizer.h"

namespace {

GPT2 tiny_model() {
    GPT2 model;
    gpt2_build(&model, config_make(16, 50, 2, 2, 16), "test");
    gpt2_init_random(&model, 7);
    return model;
}

}  // namespace

TEST(grad_accumulation_equals_one_larger_batch) {
    const int k = 3, B = 2, T = 8, N = k * B * T;
    std::vector<int> x(N), y(N);
    for (int i = 0; i < N; i++) x[i] = (i * 7 + 3) % 50, y[i] = (i * 11 + 5) % 50;
    GPT2 big = tiny_model(), acc = tiny_model();
    gpt2_enable_training(&big);
    gpt2_enable_training(&acc);
    // one batch of k*B sequences
    gpt2_zero_grad(&big);
    const float big_loss = gpt2_forward(&big, x.data(), y.data(), k * B, T);
    gpt2_backward(&big, 1.0f);
    // k micro-batches of B sequences, each scaled by 1/k, as train does with --grad-accum k
    gpt2_zero_grad(&acc);
    double acc_loss = 0;
    for (int m = 0; m < k; m++) {
        acc_loss += gpt2_forward(&acc, x.data() + m * B * T, y.data() + m * B * T, B, T) / k;
        gpt2_backward(&acc, 1.0f / k);
    }
    double max_diff = 0, max_ref = 0;
    for (size_t i = 0; i < big.grads.size(); i++) {
        max_diff = std::fmax(max_diff, std::fabs((double)acc.grads[i] - big.grads[i]));
        max_ref = std::fmax(max_ref, std::fabs((double)big.grads[i]));
    }
    // Equal up to fp32 summation order (the batch sums rows in one pass, accumulation in k): a wrong
    // scale or a micro-batch left out would be off by O(1).
    printf("    grad accumulation vs one batch: max |diff| / max |ref| = %.2e, loss %.7f vs %.7f\n", max_diff / max_ref,
           acc_loss, big_loss);
    CHECK(max_ref > 0);
    CHECK(max_diff / max_ref <= 1e-6);
    CHECK_NEAR(acc_loss, big_loss, 1e-6);
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
    CHECK(model.dacts.size() == model.acts.size());
}

TEST(bf16_weight_copy_follows_every_adamw_update) {
    if (!bf16_supported()) {
        printf("  (skipped: this CPU has no AVX512_BF16)\n");
        return;
    }
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
        last = gpt2_forward(&model, x.data(), y.data(), 2, 8);
        if (step == 0) first = last;
        gpt2_backward(&model, 1.0f);
        adamw_update(&opt, &model, oc, 1e-2f);
        int stale = 0;
        for (size_t i = 0; i < model.params.size(); i++) stale += model.params16[i] != bf16_round(model.params[i]);
        CHECK(stale == 0);
    }
    CHECK(last < first);  // bf16 training still learns the batch
    gpt2_set_precision(&model, Precision::kFp32);
    CHECK(model.params16.empty());
}
