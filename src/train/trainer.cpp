// trainer.cpp: see trainer.h.
#include "train/trainer.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <string>

#include "base/dist.h"
#include "base/platform.h"
#include "base/stop.h"
#include "base/util.h"
#include "model/generate.h"
#include "train/evaluate.h"
#include "train/plot.h"

namespace {

// Prints a sample from <|endoftext|> (token 0 for a vocabulary without it) with the generator's defaults
// (temperature 1, top-k 50). It runs for the full length, showing a further <|endoftext|> as a blank line,
// so a young model's early end of text does not cut the sample short.
void print_sample(const GPT2& model, const Tokenizer& tok, int tokens, uint64_t seed) {
    GenerateOptions opts;
    opts.max_tokens = tokens;
    opts.cancelled = [] { return stop_requested() != 0; };  // a stop signal cuts a long sample short
    Rng rng(seed);
    TokenDecoder decoder(tok);
    printf("---- sample ----\n");
    GenerateStats stats;
    generate(
        model, {model.cfg.vocab_size > kTokenizerEot ? kTokenizerEot : 0}, opts, &rng,
        [&](int id) {
            fputs(id == kTokenizerEot ? (decoder.flush() + "\n\n").c_str() : decoder.push(id).c_str(), stdout);
        },
        &stats);
    if (stats.stop == GenerateStop::kNonFinite) fatal("%s (sample)", generate_nonfinite_message(stats).c_str());
    printf("%s\n----------------\n", decoder.flush().c_str());
    fflush(stdout);
}

struct StepStats {
    double loss;
    float norm, lr, ms;
    int stop;  // the stop signal the ranks agreed on during the step (share_stop_signal)
};

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

// The stop signal every rank acts on: with several ranks the stop flags are summed, so a signal that
// reached one rank stops all of them after the same step (the others would wait for it in the next sum).
// Every rank calls this at the same places, and decisions use its result, never stop_requested() read
// later (a signal arriving in between would send the ranks down different paths). One rank: stop_requested().
int share_stop_signal() {
    if (dist_world() == 1) return stop_requested();
    const int mine = stop_requested();
    double s[2] = {mine ? 1.0 : 0.0, (double)mine};
    dist_sum(s, 2);
    if (s[0] == 0) return 0;
    stop_set((int)(s[1] / s[0]));  // another rank's signal
    return mine ? mine : (int)(s[1] / s[0]);
}

// The training data changed under the run (dataloader_try_next's message): the state before this step is
// still whole, so save it when there is somewhere to (one process: with several, the other ranks wait in
// a sum and fatal aborts them all), then stop.
[[noreturn]] void fail_on_data(Trainer* t, int step, const std::string& err) {
    if (!t->o.out.empty() && dist_world() == 1 && step > 0) trainer_save(t, step);
    fatal("%s", err.c_str());
}

// The next batch, or the run stops on the data's error (fail_on_data).
void next_batch(Trainer* t, int step, const DataLoaderState& before) {
    std::string err;
    if (dataloader_try_next(&t->train_dl, &err)) return;
    dataloader_restore(&t->train_dl, before, "");  // earlier micro-batches of this step are undone too
    fail_on_data(t, step, err);
}

[[noreturn]] void fail_diverged(double loss, float norm, int step) {
    fatal("%s is %g at step %d: training diverged; the last checkpoint (if any) is kept",
          std::isfinite(loss) ? "gradient norm" : "loss", std::isfinite(loss) ? norm : loss, step + 1);
}

// The same stop when the update itself overflowed (AdamW's v from a huge gradient's square, which only an
// unclipped step can take: adamw_may_overflow), before anything of this step is saved.
void check_update(const Trainer& t, float norm, int step) {
    if (!adamw_may_overflow(norm, optimizer_clip_factor(norm, t.o.grad_clip))) return;
    const std::string what = adamw_nonfinite(t.opt, t.model);
    if (!what.empty())
        fatal_hint("clip the gradients (--grad-clip 1, the default) or lower --lr",
                   "%s at step %d: training diverged; the last checkpoint (if any) is kept", what.c_str(), step + 1);
}

// One optimizer step with --optimizer-in-backward (one process, one micro-batch): AdamW applied a layer at a
// time inside the backward (adamw_step_in_backward). A non-finite loss stops the run before any update, a
// non-finite norm too when clipping (found by the first backward), else after the update, without saving it.
StepStats train_step_in_backward(Trainer* t, int step) {
    const TrainOptions& o = t->o;
    const double t0 = time_now_s();
    t->tuner.begin();
    next_batch(t, step, dataloader_state(t->train_dl));
    const double loss = gpt2_forward(&t->model, t->train_dl.inputs.data(), t->train_dl.targets.data(), o.B, o.T);
    if (!std::isfinite(loss)) fail_diverged(loss, 0, step);
    const float lr = lr_schedule(step, o.steps, o.adamw.lr, o.warmup, o.min_lr_frac, o.cosine);
    const float norm = adamw_step_in_backward(&t->opt, &t->model, o.adamw, lr, o.grad_clip);
    if (!std::isfinite(norm)) fail_diverged(loss, norm, step);
    check_update(*t, norm, step);
    const int stop = share_stop_signal();
    t->tuner.end();
    return {loss, norm, lr, (float)((time_now_s() - t0) * 1e3), stop};
}

// ZeRO-1, after the update: every rank's updated slice of the weights to every other rank, and the model's
// reduced-precision copies of what the others updated refreshed (its own slice was, by the update).
void gather_weights(GPT2* model, const std::vector<size_t>& slices) {
    dist_gather_slices(model->params.data(), slices);
    const size_t mine = slices[dist_rank()], mine_end = slices[dist_rank() + 1], kChunk = 1 << 16;
    const long chunks = (long)((model->num_params + kChunk - 1) / kChunk);
#pragma omp parallel for schedule(static)
    for (long c = 0; c < chunks; c++) {
        const size_t b = (size_t)c * kChunk, e = std::min(model->num_params, b + kChunk);
        if (b < mine) gpt2_params_updated(model, b, std::min(e, mine) - b);
        if (e > mine_end) gpt2_params_updated(model, std::max(b, mine_end), e - std::max(b, mine_end));
    }
}

// One optimizer step: grad-accum micro-batches (batch, forward, backward), the gradient norm, clipping
// and AdamW. With several ranks each takes its share of the global batch; the gradients are summed across
// ranks in per-layer buckets started while the backward goes on (last micro-batch only) and waited for
// before the norm, and the loss and the stop signal are summed too, so every rank takes the same decision.
// A non-finite loss or norm stops the run before the update touches the parameters; an update that
// overflowed stops it after (check_update).
StepStats train_step(Trainer* t, int step) {
    if (t->model.mem.layer_grads) return train_step_in_backward(t, step);
    const TrainOptions& o = t->o;
    const double t0 = time_now_s();
    t->tuner.begin();  // all CPUs, or one when another process holds a CPU (base/threads.h)
    const int world = dist_world();
    GPT2& model = t->model;
    gpt2_zero_grad(&model);
    const std::vector<std::pair<size_t, size_t>> buckets = world > 1 ? grad_buckets(model) : decltype(buckets)();
    float* grads = model.grads.data();
    const bool zero = o.zero && world > 1;
    const std::vector<size_t> slices = zero ? dist_slices(model.num_params) : std::vector<size_t>();
    auto send = [&](size_t i) {  // bucket i: summed, or with ZeRO-1 each rank's part of it summed
        const auto [b, e] = buckets[i];
        if (!zero) return dist_sum_start(grads + b, e - b);
        std::vector<size_t> counts(world);
        for (int r = 0; r < world; r++)
            counts[r] = std::max(b, std::min(e, slices[r + 1])) - std::max(b, std::min(e, slices[r]));
        dist_sum_scatter_start(grads + b, e - b, counts);
    };
    auto send_layer = [&](int l) { send(l); };
    double loss = 0;
    const DataLoaderState before = dataloader_state(t->train_dl);
    for (int micro = 0; micro < o.accum; micro++) {
        next_batch(t, step, before);
        loss += gpt2_forward(&t->model, t->train_dl.inputs.data(), t->train_dl.targets.data(), o.B, o.T) / o.accum;
        const bool send = world > 1 && micro == o.accum - 1;
        gpt2_backward(&t->model, 1.0f / ((float)o.accum * world), send ? send_layer : std::function<void(int)>());
    }
    static const char* nan_rank = getenv("GPT2_TEST_NAN_ON_RANK");  // fault injection for tests/mpi.sh
    if (nan_rank && atoi(nan_rank) == dist_rank() && step == 0) loss = std::nan("");
    if (world > 1) {
        for (size_t i = model.cfg.num_layers; i < buckets.size(); i++) send(i);
        dist_sum(&loss, 1);
        loss /= world;
    }
    const int stop = share_stop_signal();
    dist_sum_wait();  // every bucket summed before the norm
    float norm;
    if (zero) {  // each rank has its slice of the summed gradients: their sums of squares, summed
        std::vector<double> sumsq(model.param_table.size());
        optimizer_grad_sumsq(model, 0, sumsq.size(), sumsq.data(), t->opt.begin, t->opt.end);
        dist_sum(sumsq.data(), sumsq.size());
        norm = optimizer_norm_of(sumsq);
    } else {
        norm = optimizer_grad_norm(model);
    }
    if (!std::isfinite(loss) || !std::isfinite(norm)) fail_diverged(loss, norm, step);
    const float lr = lr_schedule(step, o.steps, o.adamw.lr, o.warmup, o.min_lr_frac, o.cosine);
    adamw_update(&t->opt, &model, o.adamw, lr, optimizer_clip_factor(norm, o.grad_clip));  // clipping folded in
    check_update(*t, norm, step);
    if (zero) gather_weights(&model, slices);
    t->tuner.end();
    return {loss, norm, lr, (float)((time_now_s() - t0) * 1e3), stop};
}

void validate(Trainer* t, int step) {
    const float val_loss = evaluate_batches(&t->model, &t->val_dl, t->val_n);
    if (!std::isfinite(val_loss))
        fatal("val loss is %g at step %d: training diverged; the last checkpoint (if any) is kept", val_loss, step);
    t->progress.close();
    printf("step %5d/%d | val loss %.6f on %lld tokens\n", step, t->o.steps, val_loss,
           (long long)t->val_n * dist_world() * t->o.B * t->o.T);
    t->history.val.push_back({step, val_loss});
    if (!t->o.plot_path.empty()) plot_losses(t->o.plot_path, {{"", t->history.train, t->history.val}}, 800, 500, "--plot (train)");
    t->log.line("{\"step\":%d,\"val_loss\":%.6f,\"tokens\":%lld}\n", step, val_loss,
                (long long)step * t->o.B * t->o.T * t->o.accum * dist_world());
}

}  // namespace

void Progress::step(int step, int steps, double loss, float lr, float norm, double ms, double tokens) {
    if (count++ > 0) ms_sum += ms;
    const double mean_ms = count > 1 ? ms_sum / (count - 1) : ms;
    char text[256];
    snprintf(text, sizeof(text), "step %5d/%d | loss %.6f | lr %.3e | norm %.4f | %.1f ms | %.0f tok/s | %s", step,
             steps, loss, lr, norm, ms, tokens / (ms / 1e3), progress_eta(steps - step, mean_ms / 1e3).c_str());
    line.update(text);
}

void trainer_load_data(Trainer* t) {
    const TrainOptions& o = t->o;
    t->train_dl.rank = dist_rank();  // before init, which checks each shard against accum * world * B windows
    t->train_dl.world = dist_world();
    t->train_dl.accum = o.accum;
    dataloader_init(&t->train_dl, o.train_path, "--train", t->model.cfg.vocab_size, o.B, o.T, o.shuffle, o.seed);
    if (o.val_path.empty()) return;
    dataloader_init(&t->val_dl, o.val_path, "--val", t->model.cfg.vocab_size, o.B, o.T, false, o.seed);
    t->val_n = std::min((size_t)o.val_batches, dataloader_num_batches(t->val_dl) / dist_world());
    if (dataloader_num_batches(t->val_dl) < (size_t)dist_world())
        fatal("too few tokens in %s for %d ranks: expected at least %d windows of T=%d", o.val_path.c_str(),
              dist_world(), o.B * dist_world(), o.T);
}

namespace {

// ZeRO-1: rank 0 gathers every rank's moments into *whole; the others send theirs.
void gather_moments(const Trainer& t, AdamW* whole) {
    const AdamW& mine = t.opt;
    const std::vector<size_t> slices = dist_slices(t.model.num_params);
    const size_t elem = mine.bf16 ? 2 : 4;
    auto data = [](const AdamW& a, int k) {
        return const_cast<void*>(a.bf16 ? (const void*)(k ? a.v16 : a.m16).data() : (const void*)(k ? a.v : a.m).data());
    };
    whole->bf16 = mine.bf16, whole->step = mine.step;
    if (dist_rank() == 0) adamw_prepare(whole, t.model);
    for (int k = 0; k < 2; k++) {  // m, then v
        if (dist_rank() == 0) memcpy(data(*whole, k), data(mine, k), elem * slices[1]);  // rank 0's slice starts at 0
        dist_gather_to_root(dist_rank() == 0 ? data(*whole, k) : data(mine, k), elem, slices);
    }
}

}  // namespace

void trainer_shard_optimizer(Trainer* t) {
    if (!t->o.zero || dist_world() == 1) return;
    const std::vector<size_t> slices = dist_slices(t->model.num_params);
    t->opt.begin = slices[dist_rank()];
    t->opt.end = slices[dist_rank() + 1];
    std::string sizes;
    for (int r = 0; r < dist_world(); r++) sizes += (r ? ", " : "") + std::to_string(slices[r + 1] - slices[r]);
    printf("zero: AdamW state split across %d ranks: %s parameters (%.0f MiB on each)\n", dist_world(), sizes.c_str(),
           (double)(t->opt.bf16 ? 4 : 8) * (slices[1] - slices[0]) / (1024.0 * 1024.0));
}

void trainer_save(Trainer* t, int step) {
    const LossHistory& h = t->history;
    AdamW whole;  // with ZeRO-1: rank 0's copy of every rank's moments, for the save
    if (t->o.zero && dist_world() > 1) gather_moments(*t, &whole);
    if (t->o.out.empty()) return;  // another rank: its moments are sent
    const AdamW& opt = t->o.zero && dist_world() > 1 ? whole : t->opt;
    train_state_save(t->o.out, t->model, opt, t->train_dl, step, t->run_flags, h, [&](const std::string& staging) {
        if (t->o.plot_in_out) plot_losses(path_join(staging, "loss.png"), {{"", h.train, h.val}});
    });
    t->saved = true;
    t->progress.close();
    if (stop_requested()) return;  // the command's one "interrupted at step N by SIG..., saved" line says it
    const std::string resume = train_resume_command(t->o.out, dist_world());
    if (step < t->o.steps) printf("saved %s at step %d; continue with: %s\n", t->o.out.c_str(), step, resume.c_str());
    else printf("saved %s at step %d, the last; train on with: %s --steps %d\n", t->o.out.c_str(), step,
                resume.c_str(), 2 * std::max(step, 1));
}

int trainer_run(Trainer* t, int first_step) {
    const TrainOptions& o = t->o;
    t->progress.line = ProgressLine(stdout, progress_in_place(stdout, dist_world() > 1), false);
    int step = first_step;
    while (step < o.steps && !(step == first_step && stop_requested())) {
        const StepStats s = train_step(t, step);
        step++;
        t->history.train.push_back({step, (float)s.loss});
        t->progress.step(step, o.steps, s.loss, s.lr, s.norm, s.ms, (double)o.B * o.T * o.accum * dist_world());
        t->log.line("{\"step\":%d,\"loss\":%.6f,\"lr\":%.6e,\"norm\":%.6f,\"ms\":%.3f,\"tokens\":%lld}\n", step, s.loss,
                    s.lr, s.norm, s.ms, (long long)step * o.B * o.T * o.accum * dist_world());
        if (const int err = t->progress.line.error()) {  // `train | head -1`: nobody reads on, so stop now
            if (!o.out.empty() && !(o.zero && dist_world() > 1)) trainer_save(t, step);  // ZeRO-1 saves together
            fatal("cannot write standard output: %s%s", strerror(err),
                  o.out.empty() || (o.zero && dist_world() > 1) ? "" : " (saved --out first)");
        }
        bool last = step == o.steps || (o.stop_after > 0 && step - first_step == o.stop_after) || s.stop;
        if (!o.val_path.empty() && (step % o.val_every == 0 || last)) validate(t, step);
        const int stop = share_stop_signal();
        last = last || stop;  // a signal during validation saves at this step, not the next
        if (o.saving && ((o.save_every > 0 && step % o.save_every == 0) || last)) trainer_save(t, step);
        // after the save, so a sample that fails cannot cost the run
        if (o.sample_tokens > 0 && !stop && ((o.sample_every > 0 && step % o.sample_every == 0) || last)) {
            t->progress.close();
            print_sample(t->model, t->tok, o.sample_tokens, o.seed + step);
        }
        if (last) break;
    }
    t->progress.close();
    if (step > first_step && os_peak_rss() > 0) printf("peak memory: %.0f MiB\n", os_peak_rss() / (1024.0 * 1024.0));
    if (dist_world() > 1 && step > first_step)
        printf("data parallel: %d ranks; %.1f ms per step waiting for the sums across ranks (rank 0)\n", dist_world(),
               dist_take_wait_seconds() * 1e3 / (step - first_step));
    return step;
}
