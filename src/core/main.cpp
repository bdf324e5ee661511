// main.cpp: gpt2-core (`make core`), the core alone: trains GPT-2 in fp32 on one process from a random init
// or a HuggingFace checkpoint, on one llm.c token file, and saves a HuggingFace checkpoint. For the same flags
// its losses equal `gpt2 train`'s bit for bit (tests/cli_core.sh): it runs the same step (core/trainer.h).
// Everything else (validation, resume, samples, shards, other precisions, MPI, safe replacing of outputs) is ./gpt2's.
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <new>
#include <set>
#include <string>

#include "core/error.h"
#include "core/hf.h"
#include "core/trainer.h"

namespace {

std::map<std::string, std::string> flags = {  // the flags and their defaults: the same as `gpt2 train`'s
    {"train", "data/tinyshakespeare/train.bin"}, {"model", ""}, {"out", ""}, {"layers", "4"}, {"heads", "4"},
    {"channels", "256"}, {"seq-len", "256"}, {"vocab", "50257"}, {"batch", "8"}, {"tokens", "64"}, {"steps", "200"},
    {"grad-accum", "1"}, {"lr", "1e-3"}, {"warmup", "10"}, {"min-lr-frac", "0.1"}, {"lr-schedule", "cosine"},
    {"beta1", "0.9"}, {"beta2", "0.95"}, {"eps", "1e-8"}, {"weight-decay", "0.1"}, {"grad-clip", "1.0"},
    {"seed", "1337"}, {"no-shuffle", ""}
};
std::set<std::string> given;  // the flags on the command line

double number(const char* name, double lo, double hi) {
    const std::string& v = flags[name];
    char* end = nullptr;
    const double x = (errno = 0, strtod(v.c_str(), &end));  // ERANGE: past double, or under it (1e-400 is not 0)
    if (v.empty() || *end || v.find_first_of("xXnN") != std::string::npos || errno || !(x >= lo && x <= hi))
        fatal("bad value for --%s (gpt2-core): expected a number in [%g, %g], got '%s'", name, lo, hi, v.c_str());
    return x;
}

long long integer(const char* name, long long lo, long long hi) {
    const std::string& v = flags[name];
    char* end = nullptr;
    const long long x = (errno = 0, strtoll(v.c_str(), &end, 10));  // ERANGE: past long long, out of range
    if (v.empty() || *end || v.find_first_not_of("0123456789") != std::string::npos || errno || x < lo || x > hi)
        fatal("bad value for --%s (gpt2-core): expected an integer in [%lld, %lld], got '%s'", name, lo, hi, v.c_str());
    return x;
}

// `write`'s bytes to path + ".partial" (created new), then renamed to path: a whole file or none; fatal on any failure.
void write_new(const std::string& path, const std::function<void(const ByteSink&)>& write) {
    const std::string partial = path + ".partial";
    FILE* f = fopen(partial.c_str(), "wbx");
    if (!f) fatal("cannot create %s: %s", partial.c_str(), strerror(errno));
    FatalCleanup remove_partial([&] { std::remove(partial.c_str()); });
    bool ok = true;
    write([&](const void* data, size_t n) { ok = ok && fwrite(data, 1, n, f) == n; });
    if (fclose(f) != 0 || !ok) fatal("cannot write %s: %s", partial.c_str(), strerror(errno));
    if (std::rename(partial.c_str(), path.c_str()) != 0)
        fatal("cannot rename %s: %s", partial.c_str(), strerror(errno));
}

// SIGINT, SIGTERM and SIGHUP (unless nohup ignores it) end the run at once (it saves only at its end), removing
// the --out it made if still empty; the save ignores them, and SIGQUIT too. A closed pipe or a file-size limit
// fails the write instead of killing the process (mingw has none of SIGHUP, SIGQUIT, SIGPIPE, SIGXFSZ).
#ifdef SIGHUP
const int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP}, kSaveSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
const int kNohup = SIGHUP, kWriteSignals[] = {SIGPIPE, SIGXFSZ};
#else
const int kStopSignals[] = {SIGINT, SIGTERM}, kSaveSignals[] = {SIGINT, SIGTERM}, kNohup = 0, kWriteSignals[] = {0};
#endif
const char* out_dir = "";
const char* const kOomHint = "expected a smaller model, -B or -T";
std::string oom_where = "gpt2-core";  // what a failed allocation was for: the file being read, or the run
const char* oom_hint = kOomHint;
void on_signal(int sig) { std::remove(out_dir), std::signal(sig, SIG_DFL), std::raise(sig); }  // remove: rmdir

void parse(int argc, char** argv) {
    for (int i = 1; i < argc; i++) {
        std::string name = argv[i];
        if (name == "-h" || name == "--help") {
            printf("usage: gpt2-core [--NAME VALUE]...   flags and defaults:\n");
            for (const auto& kv : flags) printf("  --%s %s\n", kv.first.c_str(), kv.second.c_str());
            exit(0);
        }
        name = name == "-B" ? "--batch" : name == "-T" ? "--tokens" : name;
        if (name.rfind("--", 0) != 0 || !flags.count(name.substr(2)))
            fatal("unknown flag %s (gpt2-core): expected one of --help's", argv[i]);
        name = name.substr(2);
        const bool takes_value = name != "no-shuffle";  // the one flag without a value
        if (takes_value && i + 1 == argc) fatal("missing value for --%s (gpt2-core)", name.c_str());
        flags[name] = takes_value ? argv[++i] : "1";
        given.insert(name);
    }
}

// The step's options from the flags, each checked.
TrainOptions read_options() {
    TrainOptions o;
    o.B = (int)integer("batch", 1, 1 << 16), o.T = (int)integer("tokens", 1, 1 << 20);
    o.steps = (int)integer("steps", 0, 1 << 30), o.accum = (int)integer("grad-accum", 1, 1 << 16);
    o.seed = (uint64_t)integer("seed", 0, LLONG_MAX);
    o.adamw.lr = (float)number("lr", 0, 10);
    o.adamw.beta1 = (float)number("beta1", 0, 0.999999), o.adamw.beta2 = (float)number("beta2", 0, 0.999999);
    o.adamw.eps = (float)number("eps", 1e-30, 1), o.adamw.weight_decay = (float)number("weight-decay", 0, 10);
    o.grad_clip = (float)number("grad-clip", 0, 1e9), o.min_lr_frac = (float)number("min-lr-frac", 0, 1);
    o.warmup = (int)integer("warmup", 0, 1 << 30);
    if (const std::string& s = flags["lr-schedule"]; s != "cosine" && s != "constant")
        fatal("bad value for --lr-schedule (gpt2-core): expected cosine or constant, got '%s'", s.c_str());
    o.cosine = flags["lr-schedule"] == "cosine", o.shuffle = flags["no-shuffle"].empty();
    if (flags["train"].empty()) fatal("bad value for --train (gpt2-core): expected a token file, got ''");
    return o;
}

// --model's weights (finite, and the geometry flags given beside it agreeing), else a random init of the
// flags' geometry.
void load_model(GPT2* m, uint64_t seed) {
    const GPT2Config flag_cfg = config_make((int)integer("seq-len", 1, 1 << 20), (int)integer("vocab", 1, 65536),
                                            (int)integer("layers", 1, 1000), (int)integer("heads", 1, 65536),
                                            (int)integer("channels", 1, 65536));  // checked beside --model too
    const std::string& model = flags["model"];
    if (model.empty()) {
        if (const std::string bad = config_check(flag_cfg, "gpt2-core flags"); !bad.empty()) fatal("%s", bad.c_str());
        gpt2_build(m, flag_cfg);
        gpt2_init_random(m, seed);
        return;
    }
    oom_where = model, oom_hint = "expected a --model that fits in memory";
    hf_load(m, model);
    checkpoint_check_finite(*m, model, "expected finite weights");
    oom_where = "gpt2-core", oom_hint = kOomHint;
    const GPT2Config& c = m->cfg;  // a geometry flag given with it must say the same, as in gpt2 train
    for (auto [name, has] : {std::pair{"layers", c.num_layers}, {"heads", c.num_heads}, {"channels", c.channels},
                             {"seq-len", c.max_seq_len}, {"vocab", c.vocab_size}})
        if (given.count(name) && integer(name, 1, INT_MAX) != has)  // its syntax and range checked above
            fatal_hint(std::string("drop --") + name + ": --model sets the geometry",
                       "bad value for --%s (gpt2-core): the --model %s has %d, got %s", name, model.c_str(), has,
                       flags[name].c_str());
}

}  // namespace

int main(int argc, char** argv) {
    std::set_new_handler(  // an allocation that fails: one error line naming what was being read, not an abort
        [] { fatal("out of memory (%s): an allocation failed; %s", oom_where.c_str(), oom_hint); });
    parse(argc, argv);
    Trainer t;
    t.opts = read_options();
    const TrainOptions& o = t.opts;
    // --out is made now, so a run that could not save fails before its first step; a run that fails removes
    // what it made there, and the directory once empty (a file someone else put there stays).
    const std::string out = flags["out"];
    int threads = 0;  // OpenMP's threads start first: a failure to start them (libgomp exits) leaves no --out
#pragma omp parallel reduction(+ : threads)
    threads++;
    std::error_code err;
    if (!out.empty() && !std::filesystem::create_directory(out, err)) {  // false, no error: a directory is there
        if (!err || err == std::errc::file_exists)
            fatal("bad value for --out (gpt2-core): %s exists; expected a new directory", out.c_str());
        fatal("cannot create --out %s: %s", out.c_str(), err.message().c_str());
    }
    out_dir = out.c_str();
    for (int sig : kStopSignals)
        if (std::signal(sig, on_signal) == SIG_IGN && sig == kNohup) std::signal(sig, SIG_IGN);
    for (int sig : kWriteSignals)
        if (sig) std::signal(sig, SIG_IGN);
    FatalCleanup remove_out([&] {  // until main returns
        if (out.empty()) return;
        for (const char* name : {"config.json", "model.safetensors"}) std::filesystem::remove(out + "/" + name, err);
        std::filesystem::remove(out, err);
    });

    load_model(&t.model, o.seed);
    const GPT2Config& cfg = t.model.cfg;
    if (o.T > cfg.max_seq_len) fatal("bad value for -T (gpt2-core): expected at most %d, got %d", cfg.max_seq_len, o.T);
    gpt2_enable_training(&t.model);
    gpt2_alloc_acts(&t.model, o.B, o.T);
    adamw_prepare(&t.opt, t.model.params.size());
    t.train_dl.accum = o.accum;  // a step's accum * B windows come from one shard, as in gpt2 train
    oom_where = flags["train"], oom_hint = "expected a token file that fits in memory (gpt2-core reads it whole)";
    dataloader_init(&t.train_dl, flags["train"], "--train", cfg.vocab_size, o.B, o.T, o.shuffle, o.seed);
    oom_where = "gpt2-core", oom_hint = kOomHint;
    printf("model: %d layers, %d heads, %d channels, context %d, vocab %d\n", cfg.num_layers, cfg.num_heads,
           cfg.channels, cfg.max_seq_len, cfg.vocab_size);

    for (int step = 0; step < o.steps; step++) {
        const StepStats s = train_step(&t, step);
        printf("step %5d/%d | loss %.6f | lr %.3e | norm %.4f | %.1f ms\n", step + 1, o.steps, s.loss, s.lr, s.norm,
               s.ms);
        if (fflush(stdout) != 0) fatal("cannot write standard output: %s", strerror(errno));
    }
    if (!out.empty()) {
        for (int sig : kSaveSignals) std::signal(sig, SIG_IGN);  // a save, once begun, ends whole
        const std::string config = hf_config_json(cfg);
        write_new(out + "/config.json", [&](const ByteSink& sink) { sink(config.data(), config.size()); });
        write_new(out + "/model.safetensors", [&](const ByteSink& sink) { hf_write_safetensors(t.model, sink); });
        printf("saved %s\n", out.c_str());
    }
    return 0;
}
