// evaluate.cpp: see evaluate.h.
#include "report/evaluate.h"

#include <algorithm>

#include "core/error.h"
#include "dist/dist.h"
#include "formats/token_files.h"

size_t evaluate_num_batches(const DataLoader& dl) {
    size_t n = 0;
    for (size_t s = 0; s < dl.shards.size(); s++) n += dataloader_shard_windows(dl, s) / dl.B;
    return n;
}

void evaluate_load_batch(DataLoader* dl, size_t index) {
    if (index >= evaluate_num_batches(*dl))
        fatal("batch %zu out of range for %s: it holds %zu batches of B=%d, T=%d", index, dl->spec.c_str(),
              evaluate_num_batches(*dl), dl->B, dl->T);
    size_t s = 0;
    for (; index >= dataloader_shard_windows(*dl, s) / dl->B; s++) index -= dataloader_shard_windows(*dl, s) / dl->B;
    std::vector<uint32_t> windows(dl->B);
    for (int b = 0; b < dl->B; b++) windows[b] = (uint32_t)(index * dl->B + b);
    std::string err;
    if (!dataloader_read(dl, dl->shards[s], windows.data(), &err)) fatal("%s", err.c_str());
}

float evaluate_batches(GPT2* model, DataLoader* dl, size_t batches, const std::function<void(double)>& progress,
                       size_t* scored_tokens) {
    // A batch is world * B windows, as a training step's: this rank takes the rank-th B of each.
    const int world = dist_world();
    // Each batch's mean weighs its share of a whole batch's targets: the mean over every scored target, and with
    // no loss mask (weights 1) exactly the mean of the batch means. A batch that scores none weighs nothing.
    double sums[3] = {0, 0, 0};  // of weighted batch means, weights, targets scored
    for (size_t i = 0; i < batches; i++) {
        evaluate_load_batch(dl, i * world + dist_rank());
        const float loss = gpt2_forward(model, dl->inputs.data(), dl->targets.data(), dl->B, dl->T);
        const size_t n = token_files_scored(dl->targets);
        const double weight = (double)n / ((double)dl->B * dl->T);
        if (n) sums[0] += loss * weight, sums[1] += weight, sums[2] += (double)n;
        if (progress) progress((double)(i + 1) / (double)batches);
    }
    dist_sum(sums, 3);
    if (scored_tokens) *scored_tokens = (size_t)sums[2];
    return (float)(sums[0] / sums[1]);
}

double evaluate_every_token(GPT2* model, DataLoader* dl, size_t* tokens, size_t* scored_tokens,
                            const std::function<void(double)>& progress) {
    const size_t T = dl->T;
    const double total = (double)(token_files_num_tokens(*dl) - dl->shards.size());  // tokens predicted
    double sum = 0;  // of per-token losses
    size_t batch = 0, predicted = 0, counted = 0;
    for (size_t s = 0; s < dl->shards.size(); s++) {
        const size_t batches = dataloader_shard_windows(*dl, s) / dl->B;
        for (size_t i = 0; i < batches; i++) {
            evaluate_load_batch(dl, batch++);
            const size_t n = token_files_scored(dl->targets);  // a batch's loss is its mean over these
            sum += (double)gpt2_forward(model, dl->inputs.data(), dl->targets.data(), dl->B, dl->T) * n;
            counted += n;
            if (progress) progress((double)(predicted + (i + 1) * dl->B * T) / total);
        }
        // What whole batches leave: windows first (one batch of fewer rows), then the tokens after them.
        const uint16_t* tok = dl->shards[s].tokens;
        const uint8_t* mask = token_files_mask(dl->shards[s]);
        size_t start = batches * dl->B * T;
        const size_t n = dl->shards[s].num_tokens, rows = (n - 1 - start) / T, tail = n - 1 - start - rows * T;
        std::vector<int> in, out;
        const int shapes[2][2] = {{(int)rows, (int)T}, {1, (int)tail}};  // (B, T) of each
        for (const auto& bt : shapes) {
            const size_t len = (size_t)bt[0] * bt[1];
            if (len == 0) continue;
            in.assign(tok + start, tok + start + len);
            out.assign(tok + start + 1, tok + start + len + 1);
            for (size_t j = 0; mask && j < len; j++) out[j] = mask[start + 1 + j] ? out[j] : -1;
            const size_t scored_here = token_files_scored(out);
            sum += (double)gpt2_forward(model, in.data(), out.data(), bt[0], bt[1]) * scored_here;
            counted += scored_here;
            start += len;
        }
        predicted += n - 1;
        if (progress) progress((double)predicted / total);
    }
    *tokens = predicted;
    *scored_tokens = counted;
    return sum / (double)counted;
}

