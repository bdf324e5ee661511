// run.cpp: see run.h.
#include "train/run.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "core/error.h"
#include "dist/dist.h"
#include "formats/token_files.h"
#include "inference/generate.h"
#include "platform/platform.h"
#include "platform/signals.h"
#include "platform/util.h"
#include "report/evaluate.h"
#include "report/plot.h"
#include "train/step.h"

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
            print_text(id == kTokenizerEot ? decoder.flush() + "\n\n" : decoder.push(id));
        },
        &stats);
    if (stats.stop == GenerateStop::kNonFinite) fatal("%s (sample)", generate_nonfinite_message(stats).c_str());
    print_text(decoder.flush() + "\n----------------\n");
    fflush(stdout);
}

void validate(TrainRun* t, int step) {
    size_t scored = 0;
    const float val_loss = evaluate_batches(&t->model, &t->val_dl, t->val_n, nullptr, &scored);
    const long long tokens = (long long)t->val_n * t->sync.ranks * t->opts.B * t->opts.T;
    if (scored == 0) {  // checked before step 1 (check_val_scores): the val file changed since; keep the steps
        if (!t->run.out.empty() && t->sync.ranks == 1) trainer_save(t, step);
        fatal("no scored tokens in the val batches (%s): their loss masks score none of %lld tokens; expected "
              "some answers (more --val-batches, or --loss-on all)", t->run.val_path.c_str(), tokens);
    }
    if (!std::isfinite(val_loss))
        fatal("val loss is %g at step %d: training diverged; the last checkpoint (if any) is kept", val_loss, step);
    t->progress.close();
    printf("step %5d/%d | val loss %.6f on %lld tokens", step, t->opts.steps, val_loss, tokens);
    if ((long long)scored < tokens) printf(", %zu of them scored (the answers, as the loss masks say)", scored);
    printf("\n");
    t->history.val.push_back({step, val_loss});
    if (!t->run.plot_path.empty()) plot_losses(t->run.plot_path, {{"", t->history.train, t->history.val}}, 800, 500, "--plot (train)");
    t->log.line("{\"step\":%d,\"val_loss\":%.6f,\"tokens\":%lld}\n", step, val_loss,
                (long long)step * t->opts.B * t->opts.T * t->opts.accum * t->sync.ranks);
}

// The val batches are the same at every validation: when their loss masks score no target, refuse before step 1
// rather than at the first validation, after every step trained.
void check_val_scores(TrainRun* t) {
    if (std::none_of(t->val_dl.shards.begin(), t->val_dl.shards.end(),
                     [](const TokenShard& s) { return token_files_mask(s) != nullptr; }))
        return;
    const size_t batches = t->val_n * t->sync.ranks;
    for (size_t i = 0; i < batches; i++) {
        evaluate_load_batch(&t->val_dl, i);
        if (token_files_scored(t->val_dl.targets) > 0) return;
    }
    fatal_hint("a larger -T (whole examples in a window), more --val-batches, or --loss-on all",
               "no scored tokens in the val batches (%s): none of the %zu val windows (--val-batches %zu x -B %d, "
               "T=%d) scores a token; their loss masks mark prompts only",
               t->run.val_path.c_str(), batches * t->opts.B, t->val_n, t->opts.B, t->opts.T);
}

}  // namespace

void trainer_fail_on_data(TrainRun* t, int step, const std::string& err) {
    if (!t->run.out.empty() && t->sync.ranks == 1 && step > 0) trainer_save(t, step);
    fatal("%s", err.c_str());
}

void Progress::step(int step, int steps, const RunStepStats& s, double tokens) {
    const double ms = s.ms;
    if (!s.skipped && count++ == 0) first_ms = ms;  // a skipped step computed nothing: no speed, not in the ETA
    else if (!s.skipped) ms_sum += ms;
    const double mean_ms = count > 1 ? ms_sum / (count - 1) : first_ms;
    char loss[64], speed[64];
    if (s.skipped) snprintf(loss, sizeof(loss), "-- (no scored token in this batch)");
    else snprintf(loss, sizeof(loss), "%.6f", s.loss);
    if (s.skipped) speed[0] = 0;
    else snprintf(speed, sizeof(speed), "%.1f ms | %.0f tok/s | ", ms, tokens / (ms / 1e3));
    char text[320];
    snprintf(text, sizeof(text), "step %5d/%d | loss %s | lr %.3e | norm %.4f | %s%s", step, steps, loss, s.lr,
             s.norm, speed, count ? progress_eta(steps - step, mean_ms / 1e3).c_str() : "ETA --");
    line.update(text);
}

void trainer_load_data(TrainRun* t) {
    const TrainOptions& o = t->opts;
    const RunOptions& r = t->run;
    t->train_dl.rank = t->sync.rank;  // before init, which checks each shard against accum * world * B windows
    t->train_dl.world = t->sync.ranks;
    t->train_dl.accum = o.accum;
    dataloader_init(&t->train_dl, r.train_path, "--train", t->model.cfg.vocab_size, o.B, o.T, o.shuffle, o.seed);
    size_t masked = 0, scored = 0;
    const TokenShard* other_T = nullptr;  // a shard whose mask was packed for another -T
    for (size_t i = 0; i < t->train_dl.shards.size(); i++) {
        const TokenShard& s = t->train_dl.shards[i];
        masked += token_files_mask(s) != nullptr;
        if (token_files_mask_T(s) && token_files_mask_T(s) != o.T && !other_T) other_T = &s;
        scored += token_files_scored_targets(s, dataloader_shard_windows(t->train_dl, i) * o.T);  // some window's
    }
    if (scored == 0)  // every step would be a loss of 0 and a zero gradient
        fatal("no scored tokens in %s: the loss masks score none of them; expected some answers, or --loss-on all",
              r.train_path.c_str());
    t->run.masked = masked > 0;
    if (masked && t->sync.rank == 0)
        printf("loss: on the answers only, as the loss masks of %zu of %zu train shards mark them (--loss-on all: "
               "every token)\n", masked, t->train_dl.shards.size());
    if (other_T && t->sync.rank == 0)  // tokenize packs for -T 2 and up: a window of 1 token holds no example
        printf("note: the loss mask of %s was packed for -T %d, this run has -T %d: examples are split at window "
               "starts (%s)\n", other_T->path.c_str(), token_files_mask_T(*other_T), o.T,
               o.T > 1 ? ("tokenize --instructions -T " + std::to_string(o.T) + " packs them for it").c_str()
                       : "a window of one token holds no whole example");
    if (r.val_path.empty()) return;
    dataloader_init(&t->val_dl, r.val_path, "--val", t->model.cfg.vocab_size, o.B, o.T, false, o.seed);
    const int ranks = t->sync.ranks;  // each validates its share of the batches
    t->val_n = std::min((size_t)r.val_batches, evaluate_num_batches(t->val_dl) / ranks);
    if (evaluate_num_batches(t->val_dl) < (size_t)ranks)
        fatal("too few tokens in %s for %d ranks: expected at least %d windows of T=%d", r.val_path.c_str(), ranks,
              o.B * ranks, o.T);
    check_val_scores(t);
}

void trainer_save(TrainRun* t, int step) {
    const LossHistory& h = t->history;
    AdamW whole;  // with ZeRO-1: every rank's moments, gathered for the save
    const AdamW& opt = grad_sync_whole_moments(t->sync, t->opt, t->model, &whole);
    if (t->run.out.empty()) return;  // another rank: its moments are sent
    const auto plot = [&](const std::string& staging) {
        if (t->run.plot_in_out && !(h.train.empty() && h.val.empty()))  // no loss yet (every step skipped): no plot
            plot_losses(path_join(staging, "loss.png"), {{"", h.train, h.val}});
    };
    if (t->lora) lora_save(t->run.out, *t->lora, t->train_dl, step, t->run_flags, h, plot);
    else train_state_save(t->run.out, t->model, opt, t->train_dl, step, t->run_flags, h, plot);
    t->saved = true;
    t->progress.close();
    if (stop_requested()) return;  // the command's one "interrupted at step N by SIG..., saved" line says it
    const std::string resume = train_resume_command(t->run.out, t->sync.ranks);
    if (step < t->opts.steps) printf("saved %s at step %d; continue with: %s\n", t->run.out.c_str(), step, resume.c_str());
    else printf("saved %s at step %d, the last; train on with: %s --steps %d\n", t->run.out.c_str(), step,
                resume.c_str(), 2 * std::max(step, 1));
}

int trainer_run(TrainRun* t, int first_step) {
    const TrainOptions& o = t->opts;
    const RunOptions& r = t->run;
    t->progress.line = ProgressLine(stdout, progress_in_place(stdout, t->sync.ranks > 1), false);
    int step = first_step;
    while (step < o.steps && !(step == first_step && stop_requested())) {
        const RunStepStats s = run_step(t, step);
        step++;
        if (!s.skipped) t->history.train.push_back({step, (float)s.loss});
        t->progress.step(step, o.steps, s, (double)o.B * o.T * o.accum * t->sync.ranks);
        char loss[64];  // a skipped step has none: null, and "skipped" says why
        if (s.skipped) snprintf(loss, sizeof(loss), "null,\"skipped\":\"no scored token\"");
        else snprintf(loss, sizeof(loss), "%.6f", s.loss);
        t->log.line("{\"step\":%d,\"loss\":%s,\"lr\":%.6e,\"norm\":%.6f,\"ms\":%.3f,\"tokens\":%lld}\n", step, loss,
                    s.lr, s.norm, s.ms, (long long)step * o.B * o.T * o.accum * t->sync.ranks);
        if (const int err = t->progress.line.error()) {  // `train | head -1`: nobody reads on, so stop now
            const bool save = !r.out.empty() && !t->sync.sharded;  // a ZeRO-1 save needs every rank
            if (save) trainer_save(t, step);
            fatal("cannot write standard output: %s%s", strerror(err), save ? " (saved --out first)" : "");
        }
        bool last = step == o.steps || (r.stop_after > 0 && step - first_step == r.stop_after) || s.stop;
        if (!r.val_path.empty() && (step % r.val_every == 0 || last)) validate(t, step);
        const int stop = grad_sync_stop(t->sync);
        last = last || stop;  // a signal during validation saves at this step, not the next
        if (r.saving && ((r.save_every > 0 && step % r.save_every == 0) || last)) trainer_save(t, step);
        // after the save, so a sample that fails cannot cost the run
        if (r.sample_tokens > 0 && !stop && ((r.sample_every > 0 && step % r.sample_every == 0) || last)) {
            t->progress.close();
            print_sample(t->model, t->tok, r.sample_tokens, o.seed + step);
        }
        if (last) break;
    }
    t->progress.close();
    if (step > first_step && os_peak_rss() > 0) printf("peak memory: %.0f MiB\n", os_peak_rss() / (1024.0 * 1024.0));
    grad_sync_report(t->sync, step - first_step);
    return step;
}
