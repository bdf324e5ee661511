// grad_sync.cpp: see grad_sync.h.
#include "dist/grad_sync.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "dist/dist.h"
#include "platform/signals.h"
#include "precision/adamw_8bit.h"

namespace {

// Spans [begin, end) of the flat gradient buffer summed across ranks: one per layer (a layer's tensors are
// contiguous), then the tensors outside the layers (wte, wpe, ln_f), those in pieces no larger than a
// layer's (MPI's temporaries are the size of a bucket).
std::vector<std::pair<size_t, size_t>> grad_buckets(const GPT2& model) {
    const int L = model.cfg.num_layers;
    std::vector<std::pair<size_t, size_t>> b(L, {SIZE_MAX, 0});
    for (const TensorInfo& t : model.param_table) {
        if (t.layer < 0) continue;
        b[t.layer].first = std::min(b[t.layer].first, t.offset);
        b[t.layer].second = std::max(b[t.layer].second, t.offset + t.numel());
    }
    const size_t piece = b.empty() ? SIZE_MAX : b[0].second - b[0].first;
    for (const TensorInfo& t : model.param_table)
        for (size_t at = 0; t.layer < 0 && at < t.numel(); at += piece)
            b.push_back({t.offset + at, t.offset + std::min(t.numel(), at + piece)});
    return b;
}

// Starts bucket i: summed, or with ZeRO-1 each rank's part of it summed (a reduce-scatter).
void send(const GradSync& s, size_t i) {
    const auto [b, e] = s.buckets[i];
    if (!s.sharded) return dist_sum_start(s.grads + b, e - b);
    std::vector<size_t> counts(s.ranks);
    for (int r = 0; r < s.ranks; r++)
        counts[r] = std::max(b, std::min(e, s.slices[r + 1])) - std::max(b, std::min(e, s.slices[r]));
    dist_sum_scatter_start(s.grads + b, e - b, counts);
}

}  // namespace

void grad_sync_init(GradSync* s, GPT2* model, bool zero, AdamW* opt) {
    s->rank = dist_rank(), s->ranks = dist_world();
    if (s->ranks == 1) return;
    s->buckets = grad_buckets(*model);
    s->layers = model->cfg.num_layers;
    s->grads = model->grads.data();
    s->sharded = zero;
    if (!zero) return;
    s->slices = dist_slices(model->num_params);
    opt->begin = s->slices[s->rank];
    opt->end = s->slices[s->rank + 1];
    std::string sizes;
    for (int r = 0; r < s->ranks; r++) sizes += (r ? ", " : "") + std::to_string(s->slices[r + 1] - s->slices[r]);
    printf("zero: AdamW state split across %d ranks: %s parameters (%.0f MiB on each)\n", s->ranks, sizes.c_str(),
           adamw_moments_bytes(*opt) * (s->slices[1] - s->slices[0]) / (1024.0 * 1024.0));
}

void grad_sync_init_flat(GradSync* s, float* grads, size_t n) {
    s->rank = dist_rank(), s->ranks = dist_world();
    if (s->ranks == 1) return;
    s->buckets = {{0, n}};
    s->layers = 0;
    s->grads = grads;
}

float grad_sync_loss_scale(const GradSync& s, int accum) { return 1.0f / ((float)accum * s.ranks); }

std::function<void(int)> grad_sync_layer_hook(GradSync* s) {
    if (s->ranks == 1 || s->layers == 0) return nullptr;
    return [s](int l) { send(*s, l); };
}

void grad_sync_backward_done(GradSync* s) {
    for (size_t i = s->layers; i < s->buckets.size(); i++) send(*s, i);
}

double grad_sync_loss(const GradSync& s, double loss) {
    if (s.ranks > 1) dist_sum(&loss, 1);
    return loss;
}

int grad_sync_stop(const GradSync& s) {
    if (s.ranks == 1) return stop_requested();
    const int mine = stop_requested();
    double sum[2] = {mine ? 1.0 : 0.0, (double)mine};
    dist_sum(sum, 2);
    if (sum[0] == 0) return 0;
    stop_set((int)(sum[1] / sum[0]));  // another rank's signal
    return mine ? mine : (int)(sum[1] / sum[0]);
}

float grad_sync_norm(const GradSync& s, const GPT2& model, const AdamW& opt) {
    dist_sum_wait();  // every bucket summed
    if (!s.sharded) return optimizer_grad_norm(gpt2_param_set(model));
    std::vector<double> sumsq(model.param_table.size());  // of this rank's slice of the summed gradients
    optimizer_grad_sumsq(gpt2_param_set(model), 0, sumsq.size(), sumsq.data(), opt.begin, opt.end);
    dist_sum(sumsq.data(), sumsq.size());
    return optimizer_norm_of(sumsq);
}

void grad_sync_weights(const GradSync& s, GPT2* model) {
    if (!s.sharded) return;
    dist_gather_slices(model->params.data(), s.slices);
    // this rank's slice was refreshed by the update: the others' now
    const size_t mine = s.slices[s.rank], mine_end = s.slices[s.rank + 1], kChunk = 1 << 16;
    const long chunks = (long)((model->num_params + kChunk - 1) / kChunk);
#pragma omp parallel for schedule(static)
    for (long c = 0; c < chunks; c++) {
        const size_t b = (size_t)c * kChunk, e = std::min(model->num_params, b + kChunk);
        if (b < mine) gpt2_params_updated(model, b, std::min(e, mine) - b);
        if (e > mine_end) gpt2_params_updated(model, std::max(b, mine_end), e - std::max(b, mine_end));
    }
}

const AdamW& grad_sync_whole_moments(const GradSync& s, const AdamW& opt, const GPT2& model, AdamW* whole) {
    if (!s.sharded) return opt;
    adamw_use_form(whole, adamw_form(opt));
    whole->step = opt.step;
    if (s.rank == 0) adamw_prepare(whole, model.params.size());
    const std::vector<MomentsArray> mine = adamw_moments_arrays(opt), all = adamw_moments_arrays(*whole);
    for (size_t k = 0; k < mine.size(); k++) {
        std::vector<size_t> bounds = s.slices;  // in the array's elements (the slices are multiples of 64)
        for (size_t& b : bounds) b /= mine[k].per;
        if (s.rank == 0)  // rank 0's slice starts at 0
            memcpy(all[k].data, mine[k].data, mine[k].elem * bounds[1]);
        dist_gather_to_root(s.rank == 0 ? all[k].data : mine[k].data, mine[k].elem, bounds);
    }
    return s.rank == 0 ? *whole : opt;
}

void grad_sync_report(const GradSync& s, int steps) {
    if (s.ranks == 1 || steps == 0) return;
    printf("data parallel: %d ranks; %.1f ms per step waiting for the sums across ranks (rank 0)\n", s.ranks,
           dist_take_wait_seconds() * 1e3 / steps);
}
