// train_cmd.cpp: the `train` command: options from flags (and from a checkpoint's stored flags
// on --resume), the checks on outputs and memory before anything is computed, then the run itself
// (train/run.h).

#include <climits>
#include <cstdio>
#include <functional>
#include <iterator>
#include <memory>
#include <string>

#include "platform/platform.h"
#include "dist/dist.h"
#include "platform/hash.h"
#include "platform/output_files.h"
#include "platform/signals.h"
#include "platform/util.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "formats/checkpoint.h"
#include "core/dataloader.h"
#include "formats/token_files.h"
#include "inference/generate.h"
#include "core/model.h"
#include "precision/adamw_8bit.h"
#include "precision/precision.h"
#include "text/tokenizer.h"
#include "report/plot.h"
#include "dist/grad_sync.h"
#include "lora/setup.h"
#include "train/run.h"

namespace {

const std::vector<CliFlag> kTrainFlags = {
    {"train", "", "data/tinyshakespeare/train.bin",
     "training token file(s), llm.c format: a path, a quoted glob ('data/*_train_*.bin') or a comma list"},
    {"val", "", "data/tinyshakespeare/val.bin",
     "validation token file(s), as --train (default only with the default --train); \"\" skips"},
    {"no-shuffle", "", "", "read the training shards and their windows in order (default: llm.c's seeded shuffle)",
     true},
    kCliLossOnFlag,
    {"model", "", "",
     "start from this checkpoint instead of a random init (with --resume of a LoRA run: where its base is now)"},
    {"layers", "", "4", "layers of a from-scratch model"},
    {"heads", "", "4", "attention heads of a from-scratch model"},
    {"channels", "", "256", "channels (embedding size) of a from-scratch model"},
    {"seq-len", "", "256", "maximum context (positions) of a from-scratch model"},
    {"vocab", "", "50257", "vocabulary size of a from-scratch model"},
    {"batch", "B", "8", "sequences per micro-batch"},
    {"tokens", "T", "64", "tokens per sequence"},
    {"steps", "", "200", "optimizer steps"},
    {"grad-accum", "", "1", "micro-batches per optimizer step"},
    {"lr", "", "1e-3", "peak learning rate"},
    {"warmup", "", "10", "linear warmup steps"},
    {"min-lr-frac", "", "0.1", "final learning rate as a fraction of --lr (cosine schedule)"},
    {"lr-schedule", "", "cosine", "cosine or constant"},
    {"beta1", "", "0.9", "AdamW beta1"},
    {"beta2", "", "0.95", "AdamW beta2"},
    {"eps", "", "1e-8", "AdamW epsilon"},
    {"weight-decay", "", "0.1", "AdamW decoupled weight decay (2-D weights only)"},
    {"grad-clip", "", "1.0", "clip the global gradient norm to this; 0 disables"},
    {"seed", "", "1337", "seed for init and data order"},
    {"val-every", "", "50", "validate every N steps (and after the last); 0 disables"},
    {"val-batches", "", "8", "validation batches of -B x -T tokens, from the start of --val (`gpt2 eval` scores all)"},
    {"log", "", "", "append one JSON line per step and per validation to this file (a --resume keeps appending)"},
    {"out", "", "", "checkpoint directory: HuggingFace-layout model + train_state.safetensors"},
    {"overwrite", "", "",
     "start a new run in an --out that holds another run's checkpoint, replacing it (default: refused; --resume "
     "continues it)",
     true},
    {"save-every", "", "0", "save to --out every N steps (always after the last step); 0: only at the end"},
    {"stop-after", "", "0",
     "stop (and save) after N steps of this run, keeping the --steps schedule; 0: run to --steps"},
    {"resume", "", "", "continue exactly from a checkpoint directory written by --out"},
    {"plot", "", "",
     "loss plot PNG (800x500), refreshed at each validation (default: loss.png in --out, with each save)"},
    {"sample-every", "", "0", "print a generated sample every N steps; 0: only after the last step"},
    {"sample-tokens", "", "64", "tokens per sample; 0 disables samples (and the tokenizer)"},
    {"tokenizer", "", "", "tokenizer directory for samples (default: --model's own, else $GPT2_DATA_DIR/gpt2 or data/gpt2)"},
    kCliPrecisionFlag,
    {"recompute", "", "",
     "keep 30-40% less activation memory: the backward recomputes LayerNorm and GELU outputs (the same "
     "numbers, a few % slower)",
     true},
    {"recompute-blocks", "", "",
     "keep only each block's input (HF's gradient checkpointing): the backward runs the block's forward again "
     "first (the same numbers, about a third slower)",
     true},
    {"optimizer-state", "", "fp32",
     "AdamW's m and v in fp32, bf16 (half their memory) or 8bit (blocks of 64: 27%), rounded stochastically"},
    {"optimizer-in-backward", "", "",
     "apply AdamW a layer at a time inside the backward, so only one layer's gradients are held (the same "
     "numbers; with --grad-clip > 0 the backward runs twice, the first for the norm); one process, --grad-accum 1",
     true},
    {"zero", "", "0",
     "ZeRO stage under mpirun: 1 splits AdamW's state across the ranks (each keeps 1/N; gradients "
     "reduce-scattered, updated weights all-gathered); 0: every rank keeps all of it"},
};
// The table with LoRA's flags (lora/setup.h) after train's own.
std::vector<CliFlag> train_flags() {
    std::vector<CliFlag> flags = kTrainFlags;
    flags.insert(flags.end(), std::begin(kLoraTrainFlags), std::end(kLoraTrainFlags));
    return flags;
}

// Flags a resumed run must keep: they shape the model or the data order (the data's content is checked by
// hash, so the file may move). Of -B and --grad-accum only their product with the ranks is kept
// (keep_global_batch).
const char* const kFixedOnResume[] = {"batch",  "tokens", "grad-accum", "seed",    "model",
                                      "layers", "heads",  "channels",   "seq-len", "vocab"};
// Flags that belong to one invocation, not to the run: a resumed run never inherits them. (--log is the
// run's: a resumed run appends to it.)
const char* const kPerInvocation[] = {"out", "resume", "stop-after", "plot", "overwrite"};
// The flags of a from-scratch model's geometry: a --model run takes its checkpoint's.
const char* const kGeometry[] = {"layers", "heads", "channels", "seq-len", "vocab"};

bool is_geometry(const std::string& name) {
    for (const char* n : kGeometry)
        if (name == n) return true;
    return false;
}

// The run's rank count, kept in the checkpoint's flags: with -B and --grad-accum it makes the global batch
// a resume keeps (keep_global_batch).
const char* const kRanksKey = "ranks";

// Flag values equal as written, or as integers ("08" and "8").
bool same_value(const std::string& a, const std::string& b) {
    if (a == b) return true;
    char *ea = nullptr, *eb = nullptr;
    const long long x = strtoll(a.c_str(), &ea, 10), y = strtoll(b.c_str(), &eb, 10);
    return !a.empty() && !b.empty() && !*ea && !*eb && x == y;
}

// The directory a resumed run saves to: --out's, or the --resume directory itself when --out is absent or
// names that directory another way (./DIR, DIR/, its absolute path: the same directory, not a link to it).
std::string resume_out(const CliArgs& given, const std::string& resume_dir) {
    if (!given.has("out")) return resume_dir;
    const std::string out = path_strip_slashes(given.str("out"));
    FileInfo a, b;
    const bool same = !resume_dir.empty() && os_lstat(out, &a) && os_lstat(resume_dir, &b) && same_file(a, b);
    return same ? resume_dir : out;
}

bool is_per_invocation(const std::string& name) {
    for (const char* n : kPerInvocation)
        if (name == n) return true;
    return false;
}

// The flags a checkpoint records: those given but the per-invocation ones, the effective values of the
// ones a resumed run must keep (defaults included, so a resume can tell a change; a --model run's geometry
// is its checkpoint's, never the from-scratch defaults), and the resolved validation file.
// --train or --val's comma-separated paths or globs, each relative one joined to the working directory: as a
// run records them, so that it resumes from anywhere.
std::string data_paths_absolute(const std::string& list) {
    std::string out, cwd;
    for (size_t start = 0; start <= list.size();) {
        size_t comma = list.find(',', start);
        if (comma == std::string::npos) comma = list.size();
        const std::string p = list.substr(start, comma - start);
        const bool absolute = p.empty() || p[0] == '/' || p[0] == '\\' || (p.size() > 1 && p[1] == ':');
        if (!absolute && cwd.empty()) cwd = path_absolute(".");
        out += (start ? "," : "") + (absolute ? p : path_join(cwd, p.compare(0, 2, "./") ? p : p.substr(2)));
        start = comma + 1;
    }
    return out;
}

std::vector<std::pair<std::string, std::string>> run_flags(const CliArgs& args, const std::string& val_path,
                                                          bool lora) {
    std::vector<std::pair<std::string, std::string>> flags;
    for (size_t i = 0; i < args.names.size(); i++) {
        const std::string& name = args.names[i];
        if (is_per_invocation(name) || name == "val") continue;  // a LoRA run's base: resumed from anywhere
        flags.push_back({name, lora && name == "model" ? path_absolute(args.values[i])
                               : name == "train"       ? data_paths_absolute(args.values[i])
                                                       : args.values[i]});
    }
    for (const char* name : kFixedOnResume)
        if (!args.has(name) && std::string(name) != "model" && !(args.has("model") && is_geometry(name)))
            flags.push_back({name, args.str(name)});
    if (!args.has("train")) flags.push_back({"train", data_paths_absolute(args.str("train"))});  // the default's
    flags.push_back({"val", data_paths_absolute(val_path)});
    flags.push_back({kRanksKey, std::to_string(dist_world())});
    return flags;
}

// What training allocates, in bytes: parameters (and their bf16 copy for --precision bf16), gradients,
// AdamW's moments, activations with their gradients, and the sampler's KV cache and scratch while a sample
// is drawn (every other buffer still held). A save writes the model and its state from these buffers, a
// resume reads the moments into them, a few MiB at a time.
struct TrainMemory {
    double params, grads, moments, acts, samples;
    double total() const { return params + grads + moments + acts + samples; }
};

TrainMemory train_memory(const GPT2Config& cfg, const TrainOptions& o, const RunOptions& r, Precision prec) {
    TrainMemory m;
    m.params = r.lora ? gpt2_base_bytes(cfg, prec)  // a frozen base's
                      : gpt2_params_bytes(cfg) * (prec == Precision::kBf16 ? 1.5 : 1.0);
    m.grads = r.lora ? 0 : memory_grads_bytes(cfg, r.mem);  // a LoRA adapter's are a few MiB, not counted
    AdamW form;  // no moments allocated: their bytes per parameter
    adamw_use_form(&form, r.moments);
    const double params = gpt2_params_bytes(cfg) / sizeof(float);
    m.moments = r.lora ? 0 : params * adamw_moments_bytes(form) / (r.zero ? dist_world() : 1);
    m.acts = memory_acts_bytes(cfg, o.B, o.T, r.mem);
    m.samples = r.sample_tokens > 0 ? generate_memory_bytes(cfg, 1, r.sample_tokens) : 0;
    return m;
}

// Prints what training will allocate and stops before allocating if the machine does not have it (or the
// model's geometry cannot keep the moments the flags ask for). base_by_tensor: a LoRA base in int8 or bf16 is
// held so a tensor at a time as it loads (build_model), not read whole in fp32 first.
void check_memory(const GPT2Config& cfg, const TrainOptions& o, const RunOptions& r, Precision prec,
                  bool base_by_tensor = false) {
    if (const std::string why = r.moments == "8bit" ? adamw_8bit_refusal(cfg) : ""; !why.empty())
        fatal("bad value for --optimizer-state (train): 8bit moments come in blocks of 64: %s", why.c_str());
    const double mib = 1024.0 * 1024.0;
    const TrainMemory m = train_memory(cfg, o, r, prec);
    char samples[64] = "";
    if (m.samples > 0) snprintf(samples, sizeof(samples), ", samples %.0f", m.samples / mib);
    printf("memory: %.0f MiB (parameters %.0f, gradients %.0f, AdamW state %.0f, activations %.0f%s MiB)\n",
           m.total() / mib, m.params / mib, m.grads / mib, m.moments / mib, m.acts / mib, samples);
    // the base loads in fp32, then each block matrix is copied, given back
    if (r.lora && prec != Precision::kFp32 && !base_by_tensor) {
        printf("memory: %.0f MiB while the base loads in fp32\n", gpt2_params_bytes(cfg) / mib);
        const std::string held = prec == Precision::kInt8 ? "int8" : "bf16";
        memory_check(gpt2_params_bytes(cfg), "the fp32 base before --precision " + held + " holds it",
                     "train on a smaller base, or on a machine with more memory");
    }
    memory_check(m.total() - m.samples, "train",
                 "lower -B or -T, train a smaller model, or see --recompute-blocks, --optimizer-state 8bit and "
                 "--optimizer-in-backward");
    memory_check(m.total(), "samples of --sample-tokens " + std::to_string(r.sample_tokens) + " beside training",
                 "lower --sample-tokens (0: no samples)");
}

// Checks --plot before the first step: never inside --out, and a path plot_check_path accepts.
void check_plot_path(const std::string& path, const std::string& out) {
    if (path.empty()) fatal("empty value for --plot (train): expected a PNG path");
    // a plot inside --out would be swapped out by every save (--out may not exist yet: compared as resolved)
    if (!out.empty() && path_same_place(path_parent(path), out))
        fatal_hint("leave --plot out: the plot is saved into --out with every checkpoint",
                   "bad value for --plot (train): %s is inside --out %s", path.c_str(), out.c_str());
    plot_check_path(path, "--plot (train)");
}

// --log and --plot never name a file a save writes (train_dir_is_ours) in --out, where the save would replace it,
// nor in the run this one starts from (--lora-from's adapter, or the --resume run when it saves elsewhere),
// which it only reads: refused before the first step.
void check_side_outputs(const CliArgs& args, const std::string& resume_dir, const RunOptions& r) {
    const std::string from = resume_dir.empty() && args.has("lora-from") ? args.str("lora-from") : "";
    const std::pair<std::string, std::string> dirs[] = {
        {r.out, "in --out " + r.out + ", where each save writes that name"},
        {from, "a file of the --lora-from adapter " + from + ", which this run only reads"},
        {r.out_is_resume ? "" : resume_dir,
         "a file of the --resume run " + resume_dir + ", which this run only reads"}};
    for (const char* flag : {"log", "plot"}) {
        const std::string path = args.has(flag) ? args.str(flag) : "";
        if (path.empty() || !train_dir_is_ours(path_base(path))) continue;
        for (const auto& d : dirs)
            if (!d.first.empty() && path_same_place(path_parent(path), d.first))
                fatal_hint(std::string("give --") + flag + " a path of another name, or outside " + d.first,
                           "bad value for --%s (train): %s is %s", flag, path.c_str(), d.second.c_str());
    }
}

// Runs one part of setting up a run, saying so on stderr first when it handles more than 256 MiB (it may
// take seconds) and then how long it took.
void setup_phase(const char* what, double bytes, const std::function<void()>& run) {
    const bool said = bytes > 256.0 * 1024 * 1024 && dist_rank() == 0;  // rank 0 alone speaks
    if (said) {
        fflush(stdout);  // the lines before it first, when stdout is a pipe
        fprintf(stderr, "setting up: %s (%.1f GiB) ...", what, bytes / (1024.0 * 1024 * 1024));
    }
    const double t0 = time_now_s();
    run();
    if (said) fprintf(stderr, " %.1f s\n", time_now_s() - t0);
}

// A --model run takes the checkpoint's geometry: a geometry flag given with it must say the same.
void check_model_geometry(const CliArgs& args, const GPT2Config& cfg, const std::string& path) {
    const int values[] = {cfg.num_layers, cfg.num_heads, cfg.channels, cfg.max_seq_len, cfg.vocab_size};
    for (size_t i = 0; i < std::size(kGeometry); i++)
        if (args.has(kGeometry[i]) && args.integer_in(kGeometry[i], 0, LLONG_MAX) != values[i])
            fatal_hint(std::string("drop --") + kGeometry[i] + ": --model sets the geometry",
                       "bad value for --%s (train): the --model %s has %d, got %s", kGeometry[i], path.c_str(),
                       values[i], args.str(kGeometry[i]).c_str());
}

// The model a run trains: the checkpoint it resumes, --model, or a random init from the geometry flags.
// Memory is checked before anything large is allocated. Returns a LoRA run's base fingerprint (its fp32 values
// as read: train_state_params_hash), else "".
std::string build_model(GPT2* model, const CliArgs& args, const TrainOptions& o, const RunOptions& r) {
    const std::string &resume_dir = r.resume_dir, &out = r.out;
    const int T = o.T;
    const std::string p = args.str("precision");  // cli_precision checks it later
    const Precision prec = p == "bf16" && (bf16_supported() || r.lora) ? Precision::kBf16
                           : p == "int8" && r.lora         ? Precision::kInt8
                                                           : Precision::kFp32;
    if (!resume_dir.empty() || args.has("model")) {
        // a LoRA run's base is its --model, resumed or not; a resumed --model run keeps --model among its flags
        const bool from_model = resume_dir.empty() || r.lora;
        const std::string path = from_model ? args.str("model") : resume_dir;
        if (r.lora && !resume_dir.empty() && !path_exists(path))  // the base moved: --model finds it
            fatal_hint("give the base where it is now: --model DIR (its fingerprint is checked)",
                       "base model not found (%s): --resume %s was trained on it", path.c_str(), resume_dir.c_str());
        CheckpointInfo info;
        const int heads = from_model && args.has("heads") ? cli_heads(args) : 0;  // for a bare .safetensors
        GPT2Config cfg = checkpoint_inspect(path, heads, &info);  // its files are now inputs of the run
        if (from_model) check_model_geometry(args, cfg, path);
        if ((resume_dir.empty() || (r.lora && out != resume_dir)) && !out.empty() && !dir_input_entry(out).empty())
            fatal_hint("continue it with --resume " + out + ", or save elsewhere",
                       "bad value for --out (train): %s holds the --model this run starts from; a new run there "
                       "would replace it and its training state",
                       out.c_str());
        cli_check_tokens(args, T, cfg.max_seq_len);
        check_memory(cfg, o, r, prec, info.by_tensor);
        // A LoRA base in int8 or bf16 is held so a tensor at a time as it is read, once fingerprinted: its fp32
        // block matrices are never all in memory (but an llm.c or GGUF file's, read whole first).
        uint64_t hash = kFnv1aInit;
        // train_state_params_hash a tensor at a time: they come in the table's order, which is the buffer's
        const TensorLoaded held = [&](const TensorInfo& t) {
            hash = fnv1a(model->params.data() + t.offset, t.numel() * sizeof(float), hash);
            gpt2_set_precision_tensor(model, t, prec, true);
        };
        const bool hold = r.lora && prec != Precision::kFp32;  // check_memory checked what it keeps
        checkpoint_load(model, path, heads, nullptr, hold ? held : nullptr);
        if (from_model) printf("loaded %s (%s, %s)\n", path.c_str(), info.format.c_str(), info.dtype.c_str());
        return !r.lora ? "" : hold ? hash_hex(hash) : train_state_params_hash(*model);
    }
    GPT2Config cfg = config_make(args.integer_in("seq-len", 1, 1 << 20), args.integer_in("vocab", 1, 65536),
                                 args.integer_in("layers", 1, 1000), args.integer_in("heads", 1, 65536),
                                 args.integer_in("channels", 1, 65536));
    if (const std::string bad = config_check(cfg, "train flags"); !bad.empty()) fatal("%s", bad.c_str());
    cli_check_tokens(args, T, cfg.max_seq_len, "--seq-len ");
    check_memory(cfg, o, r, prec);
    setup_phase("random init of the parameters", gpt2_params_bytes(cfg), [&] {
        gpt2_build(model, cfg);
        gpt2_init_random(model, o.seed);
    });
    return "";
}

void train_options(const CliArgs& args, const CliArgs& given, const std::string& resume_dir, TrainOptions* to,
                   RunOptions* ro) {
    TrainOptions& o = *to;
    RunOptions& r = *ro;
    o.B = args.integer_in("batch", 1, 1 << 16), o.T = args.integer_in("tokens", 1, 1 << 20);
    o.steps = args.integer_in("steps", 0, 1 << 30), o.accum = args.integer_in("grad-accum", 1, 1 << 16);
    o.seed = (uint64_t)args.integer_in("seed", 0, LLONG_MAX);
    o.adamw.lr = (float)args.number_in("lr", 0, 10);
    o.adamw.beta1 = (float)args.number_in("beta1", 0, 0.999999);
    o.adamw.beta2 = (float)args.number_in("beta2", 0, 0.999999);
    o.adamw.eps = (float)args.number_in("eps", 0, 1);
    if (o.adamw.eps <= 0)  // the padded vocabulary rows have zero moments: 0 / (0 + eps) must stay 0
        fatal("bad value for --eps (train): expected > 0, got %g", o.adamw.eps);
    o.adamw.weight_decay = (float)args.number_in("weight-decay", 0, 10);
    o.grad_clip = (float)args.number_in("grad-clip", 0, 1e9),
    o.min_lr_frac = (float)args.number_in("min-lr-frac", 0, 1);
    o.warmup = args.integer_in("warmup", 0, 1 << 30);
    const std::string schedule = args.str("lr-schedule");
    if (schedule != "cosine" && schedule != "constant")
        fatal("bad value for --lr-schedule (train): expected cosine or constant, got '%s'", schedule.c_str());
    o.cosine = schedule == "cosine";
    o.shuffle = !args.on("no-shuffle");
    token_files_masks = cli_loss_on(args);
    r.val_every = args.integer_in("val-every", 0, 1 << 30), r.val_batches = args.integer_in("val-batches", 1, 1 << 20);
    r.save_every = args.integer_in("save-every", 0, 1 << 30), r.stop_after = args.integer_in("stop-after", 0, 1 << 30);
    r.sample_every = args.integer_in("sample-every", 0, 1 << 30);
    r.sample_tokens = args.integer_in("sample-tokens", 0, 1 << 20);
    r.train_path = args.str("train");
    r.resume_dir = resume_dir;
    // A resumed run saves where it resumed from unless --out says otherwise.
    r.out = resume_out(given, resume_dir);
    r.plot_in_out = !args.has("plot") && !r.out.empty();
    r.plot_path = args.has("plot") ? args.str("plot") : "";
    if (r.save_every > 0 && r.out.empty())
        fatal("missing flag --out (train): --save-every needs a directory to save to");
    // The default val file belongs to the default train file; custom training data validates only on --val.
    const std::string val = args.has("val") ? args.str("val") : args.has("train") ? "" : args.str("val");
    r.val_path = r.val_every > 0 ? val : "";
    r.mem.recompute = args.on("recompute");
    r.mem.recompute_blocks = args.on("recompute-blocks");
    r.mem.layer_grads = args.on("optimizer-in-backward");
    const std::string state = args.str("optimizer-state");
    if (state != "fp32" && state != "bf16" && state != "8bit")
        fatal("bad value for --optimizer-state (train): expected fp32, bf16 or 8bit, got '%s'", state.c_str());
    r.moments = state;
    r.zero = args.integer_in("zero", 0, 1) == 1;
    r.saving = !r.out.empty();
    r.out_is_resume = r.out == resume_dir;
    if (r.mem.layer_grads && o.accum > 1)
        fatal("bad value for --grad-accum (train): --optimizer-in-backward updates during each backward, so it "
              "takes --grad-accum 1, got %d",
              o.accum);
    // --lora-from: its adapter's own rank, alpha and targets (a resumed run made so has it among its flags)
    r.lora = args.has("lora") || args.has("lora-from");
    if (r.lora) lora_check_flags(args, given, resume_dir, r.out);
    for (const char* f : {"lora-alpha", "lora-targets", "lora-dropout"})
        if (!r.lora && given.has(f))
            fatal("flag --%s (train) needs --lora: expected --lora R or --lora-from DIR with it, got --%s alone", f, f);
    if (r.mem.layer_grads && dist_world() > 1)
        fatal("--optimizer-in-backward (train) runs in one process: with %d ranks the gradients are summed across "
              "ranks before any update",
              dist_world());
}

// Says which flags given to a resumed run replace the values it was trained with (stored, else the default).
void note_overrides(const CliArgs& given, const std::vector<std::pair<std::string, std::string>>& stored) {
    if (dist_rank() != 0) return;
    for (size_t i = 0; i < given.names.size(); i++) {
        const std::string& name = given.names[i];
        if (name == "resume" || is_per_invocation(name)) continue;
        if (lora_is_adapter_flag(name)) continue;  // equal (lora_check_resumed_flags)
        const CliFlag* flag = nullptr;
        for (const CliFlag& f : given.flags) flag = name == f.name ? &f : flag;
        std::string old = flag && flag->default_value ? flag->default_value : "", why = " (the default)";
        for (const auto& kv : stored)
            if (kv.first == name) old = kv.second, why = "";
        if (flag && flag->is_switch) continue;  // the only resumable switch, --no-shuffle, is checked below
        const bool data = name == "train" || name == "val";  // recorded absolute (data_paths_absolute)
        if (!same_value(old, given.values[i]) && !(data && old == data_paths_absolute(given.values[i])))
            printf("note: --%s %s replaces the run's %s%s\n", name.c_str(), given.values[i].c_str(),
                   old.empty() ? "(none)" : old.c_str(), why.c_str());
    }
}

// The note for the --log that resume_args left behind: the run it came from logged there, this one does not.
void note_log_left(const CliArgs& given, const std::string& resume_dir, const std::string& out,
                   const std::vector<std::pair<std::string, std::string>>& stored) {
    if (dist_rank() != 0 || out == resume_dir || given.has("log")) return;
    for (const auto& kv : stored)
        if (kv.first == "log")
            printf("note: not logging: %s's log %s stays as it was (--log FILE logs this run)\n", resume_dir.c_str(),
                   kv.second.c_str());
}

// The shape of a global batch, for messages: "-B 2 x --grad-accum 3 x 2 ranks".
std::string batch_shape(long long B, long long accum, long long ranks) {
    return "-B " + std::to_string(B) + " x --grad-accum " + std::to_string(accum) + " x " + std::to_string(ranks) +
           (ranks == 1 ? " rank" : " ranks");
}

// A resumed run keeps its global batch, -B x --grad-accum x ranks sequences per optimizer step, and with it
// the data order (a step's windows depend on the global batch alone, core/dataloader.h). Under another rank
// count, or with -B or --grad-accum given, the flag not given is fitted (--grad-accum first, so -B and the
// memory stay); a shape that cannot keep it is refused naming one that can. --val-batches (when not
// given) is fitted too, so validation keeps its sequences. The values go into *stored, which the run records.
void keep_global_batch(const CliArgs& given, const std::string& resume_dir,
                       std::vector<std::pair<std::string, std::string>>* stored, const std::string& stored_ranks) {
    const auto find = [&](const char* name) -> std::string* {  // the last value stored wins, as in CliArgs
        for (size_t i = stored->size(); i-- > 0;)
            if ((*stored)[i].first == name) return &(*stored)[i].second;
        return nullptr;
    };
    const auto value = [&](const char* name) -> std::string& {  // stored, else the default the run had
        if (std::string* v = find(name)) return *v;
        for (const CliFlag& f : given.flags)
            if (name == std::string(f.name)) stored->push_back({name, f.default_value ? f.default_value : ""});
        return stored->back().second;
    };
    const auto count = [&](const char* name, const std::string& v, long long hi) {
        char* end = nullptr;
        const long long x = strtoll(v.c_str(), &end, 10);
        if (v.empty() || *end || x < 1 || x > hi)
            fatal("bad train state (%s): its flag %s is '%s', expected a count in 1..%lld",
                  path_join(resume_dir, "train_state.safetensors").c_str(), name, v.c_str(), hi);
        return x;
    };
    const long long B0 = count("batch", value("batch"), 1 << 16), A0 = count("grad-accum", value("grad-accum"), 1 << 16);
    const long long W0 = stored_ranks.empty() ? 1 : count(kRanksKey, stored_ranks, 1 << 20), W = dist_world(),
                    G = B0 * A0 * W0;
    const bool has_b = given.has("batch"), has_a = given.has("grad-accum");
    long long B = has_b ? given.integer_in("batch", 1, 1 << 16) : B0;
    long long A = has_a ? given.integer_in("grad-accum", 1, 1 << 16) : A0;
    if (!has_a && G % (B * W) == 0) A = G / (B * W);
    else if (has_a && !has_b && G % (A * W) == 0) B = G / (A * W);
    const char* ranks = W == 1 ? "rank" : "ranks";
    if (B * A * W != G) {
        if (G % W) {  // no -B or --grad-accum can: the nearest rank counts that divide it
            long long below = W, above = W;
            while (G % below) below--;
            while (above <= G && G % above) above++;
            fatal_hint("resume with mpirun -np " + std::to_string(below) +
                           (above <= G ? " or -np " + std::to_string(above) : ""),
                       "bad value for --resume (train): %s keeps %lld sequences per step, its global batch (%s), "
                       "expected a rank count that divides %lld, got %lld %s",
                       resume_dir.c_str(), G, batch_shape(B0, A0, W0).c_str(), G, W, ranks);
        }
        long long b = std::min(has_a && !has_b ? B0 : B, G / W);  // the largest -B up to the one wanted that fits
        while ((G / W) % b) b--;
        std::string got = has_b || !has_a ? "-B " + std::to_string(B) : "";
        if (has_a) got += (got.empty() ? "" : " ") + std::string("--grad-accum ") + std::to_string(A);
        fatal("bad value for %s (train): a resumed run keeps %lld sequences per step, its global batch (%s), "
              "expected -B %lld --grad-accum %lld on %lld %s, got %s%s",
              has_a && !has_b ? "--grad-accum" : "-B", G, batch_shape(B0, A0, W0).c_str(), b, G / W / b, W, ranks,
              got.c_str(), has_a || has_b ? "" : " (the run's)");
    }
    const long long per_val = B0 * W0;  // sequences per validation batch, as the run had them
    if (!given.has("val-batches") && B * W != per_val && find("val") && !find("val")->empty()) {
        const long long V = count("val-batches", value("val-batches"), 1 << 20) * per_val;
        const long long vb = std::max(1LL, (V + B * W / 2) / (B * W));
        value("val-batches") = std::to_string(vb);
        if (dist_rank() == 0)
            printf("note: validation in --val-batches %lld of -B %lld x %lld %s: %lld sequences%s\n", vb, B, W, ranks,
                   vb * B * W, vb * B * W == V ? ", as the run had" : (", the run had " + std::to_string(V)).c_str());
    }
    if ((B != B0 || A != A0 || W != W0) && dist_rank() == 0)
        printf("note: %s keep the run's %lld sequences per step (it had %s)\n", batch_shape(B, A, W).c_str(), G,
               batch_shape(B0, A0, W0).c_str());
    value("batch") = std::to_string(B);
    value("grad-accum") = std::to_string(A);
}

// The flags of a resumed run: its stored ones with those given now on top, refusing a change to one that
// shapes the model or the data order. Reads the train state into *resume.
CliArgs resume_args(const CliArgs& given, const std::string& resume_dir, TrainState* resume) {
    if (resume_dir.empty()) fatal("empty value for --resume (train): expected a checkpoint directory");
    dir_recover_interrupted(resume_dir, train_dir_is_checkpoint);
    train_state_read(resume, resume_dir);
    // a LoRA run's base may have moved: --model finds it (lora_restore checks its fingerprint)
    const bool lora_run = !resume->file.meta("lora.base.fnv1a").empty();
    if (given.has("model") && !lora_run)
        fatal("conflicting flags (train): --resume continues its own model; drop --model");
    std::vector<std::pair<std::string, std::string>> stored;
    std::string ranks;  // the global batch and the data order depend on the rank count
    for (const auto& kv : resume->flags) {
        if (kv.first == kRanksKey) ranks = kv.second;
        else if (!is_per_invocation(kv.first)) stored.push_back(kv);  // --model too: `info` shows where the run began
    }
    for (const char* name : kFixedOnResume)
        for (const auto& kv : stored)
            if (kv.first == name && given.has(name) && !same_value(given.str(name), kv.second) &&
                kv.first != "batch" && kv.first != "grad-accum" && kv.first != "model")  // keep_global_batch
                fatal("bad value for --%s (train): a resumed run keeps %s, got %s", name, kv.second.c_str(),
                      given.str(name).c_str());
    lora_check_resumed_flags(given, *resume, lora_run);
    keep_global_batch(given, resume_dir, &stored, ranks);
    // Continued into another directory, the run leaves the one it came from as it was, its log included
    // (note_log_left says so, after the refusals).
    if (resume_out(given, resume_dir) != resume_dir && !given.has("log"))
        stored.erase(std::remove_if(stored.begin(), stored.end(), [](const auto& kv) { return kv.first == "log"; }),
                     stored.end());
    bool stored_no_shuffle = false;  // a switch is recorded only when given
    for (const auto& kv : stored) stored_no_shuffle = stored_no_shuffle || kv.first == "no-shuffle";
    if (given.on("no-shuffle") && !stored_no_shuffle)
        fatal("bad value for --no-shuffle (train): a resumed run keeps its shuffled data order");
    std::string loss_on = "answer";  // recorded only when given
    for (const auto& kv : stored) loss_on = kv.first == "loss-on" ? kv.second : loss_on;
    if (given.has("loss-on") && given.str("loss-on") != loss_on)
        fatal("bad value for --loss-on (train): a resumed run keeps --loss-on %s, got %s", loss_on.c_str(),
              given.str("loss-on").c_str());
    return cli_merge_stored(given, stored, resume->path);
}

// The tokenizer for samples (cli_tokenizer: --tokenizer, --model's own, or the default directory). Samples
// are on by default, so only a tokenizer asked for by flag must exist and fit the model; otherwise training
// goes on without samples and says so.
void load_sampler(TrainRun* t, const CliArgs& args, const CliArgs& given) {
    const GPT2Config& cfg = t->model.cfg;
    const bool asked = given.has("sample-tokens") || given.has("tokenizer");
    // A resumed run's --model (kept for `info`) may have moved since: the tokenizer then comes from the defaults.
    const std::string model = args.has("model") && t->run.resume_dir.empty() ? args.str("model") : "";
    const std::string which = cli_tokenizer(args, model, false, &t->tok);
    if (which.empty()) {
        printf(
            "note: no tokenizer files in %s (encoder.json + vocab.bpe): training without samples; set "
            "--tokenizer or GPT2_DATA_DIR to see them\n",
            tokenizer_default_dir().c_str());
        t->run.sample_tokens = 0;
    } else if (asked) {
        tokenizer_check_vocab(t->tok, cfg.vocab_size, "--sample-tokens 0 trains without samples");
    } else if (t->tok.vocab_size != cfg.vocab_size) {
        printf("note: the tokenizer in %s has %d tokens, the model %d: training without samples\n", t->tok.dir.c_str(),
               t->tok.vocab_size, cfg.vocab_size);
        t->run.sample_tokens = 0;
    }
    if (t->run.sample_tokens) printf("tokenizer: %s\n", which.c_str());
}

// Every rank must run the same math on the same data: a rank started with other flags, another model or
// other files would wait forever in a sum of another size, or train silently wrong. The ranks compare
// digests of the flags that shape the run (their parsed values), of the model, and of the data.
void check_ranks_agree(const TrainRun& t) {
    const TrainOptions& o = t.opts;
    const RunOptions& r = t.run;
    char numbers[256];  // the parsed values, so that "08" and "8" agree
    snprintf(numbers, sizeof(numbers), "%d %d %d %d %llu %a %a %a %a %a %a %a %d %d %d %d %d %d %d", o.B, o.T,
             o.steps, o.accum, (unsigned long long)o.seed, o.adamw.lr, o.adamw.beta1, o.adamw.beta2, o.adamw.eps,
             o.adamw.weight_decay, o.grad_clip, o.min_lr_frac, o.warmup, o.cosine, o.shuffle, r.val_every,
             r.val_batches, r.stop_after, (int)gpt2_precision(t.model));
    std::string data;
    for (const DataLoader* dl : {&t.train_dl, &t.val_dl})
        for (const TokenShard& s : dl->shards) data += s.fingerprint + token_files_content(s) + ";";
    const GPT2Config& g = t.model.cfg;
    // a LoRA run: its base as fingerprinted before int8 or bf16 held it, and its adapter
    const std::string weights =
        t.lora ? t.lora->base_hash + " " + lora_adapter_hash(t.lora->adapter) : train_state_params_hash(t.model);
    const std::string model = std::to_string(g.num_layers) + " " + std::to_string(g.num_heads) + " " +
                              std::to_string(g.channels) + " " + std::to_string(g.max_seq_len) + " " +
                              std::to_string(g.vocab_size) + " " + weights;
    const std::pair<const char*, std::string> parts[] = {
        {"flags", numbers}, {"model (geometry and weights)", model}, {"training data", data}};
    for (const auto& part : parts)
        if (!dist_agree(fnv1a(part.second.data(), part.second.size())))
            fatal_hint("start every rank with the same command line and files",
                       "ranks disagree on the %s (rank %d of %d): expected every rank to train the same run",
                       part.first, dist_rank(), dist_world());
}

// The locks a run holds until it ends. Members are released in the reverse of this order, as the locals
// they replace were: the log's, the plot's, --out's, then the checkpoint's it resumes from.
struct TrainLocks {
    std::unique_ptr<PathLock> resume, out, plot, log;
};

// Outputs are checked, and --out locked, before anything is computed: a run that cannot save fails now.
void lock_outputs(TrainRun* t, const CliArgs& args, const CliArgs& given, const std::string& resume_dir,
                  TrainLocks* locks) {
    const RunOptions& r = t->run;
    if (!r.out.empty() || (given.has("out") && dist_rank() == 0))
        train_dir_check(r.out, given.has("out") ? "--out" : "--resume");
    if (given.on("overwrite") && r.out_is_resume)
        fatal("conflicting flags (train): --overwrite starts a new run in --out; --resume %s continues its own",
              resume_dir.c_str());
    if (given.on("overwrite") && !given.has("out"))
        fatal("missing flag --out (train): --overwrite replaces the run in --out with a new one");
    locks->out.reset(r.out.empty() || r.out == resume_dir ? nullptr : new PathLock(r.out, "--out"));
    // Another run's checkpoint (looked for under the lock) is never replaced unasked: HF's trainers refuse a
    // non-empty output directory without --overwrite_output_dir. With --overwrite, the first save replaces it
    // as every save does. (A --model that is --out itself is refused by build_model, --overwrite or not.)
    FileInfo out_dir, model_dir;
    const bool out_is_model = resume_dir.empty() && args.has("model") && os_stat(r.out, &out_dir) &&
                              os_stat(args.str("model"), &model_dir) && same_file(out_dir, model_dir);
    if (const int step = r.out.empty() || r.out_is_resume || out_is_model ? -1 : train_dir_step(r.out);
        step >= 0 && !given.on("overwrite"))
        fatal_hint("continue that run with: " + train_resume_command(r.out, dist_world()) +
                       "; or replace it with a new one: --overwrite",
                   "bad value for --out (train): %s holds the checkpoint of another run (at step %d); expected a "
                   "new or empty directory",
                   r.out.c_str(), step);
    if (!r.out.empty()) dir_clear_dead_staging(r.out, train_dir_is_ours);  // before anything opens files in it
    if (args.has("plot") && !r.plot_path.empty()) check_plot_path(r.plot_path, r.out);  // any name inside --out
    check_side_outputs(args, resume_dir, r);
    if (args.has("plot") && !r.plot_path.empty()) locks->plot.reset(new PathLock(r.plot_path, "--plot (train)"));
    if (args.has("log") && dist_rank() == 0) {
        locks->log.reset(new PathLock(args.str("log"), "--log (train)"));
        t->log.open(args.str("log"), "--log (train)", kRunLogKind);
        if (!resume_dir.empty() && !given.has("log")) printf("log: appending to %s (the run's --log)\n", args.str("log").c_str());
    }
}

// The data: tokens (and shards) to train on, what one step takes, and what a val loss covers.
void print_data(const TrainRun& t) {
    const TrainOptions& o = t.opts;
    const RunOptions& r = t.run;
    const auto count = [](const DataLoader& dl, const char* what) {
        std::string s = std::to_string(token_files_num_tokens(dl)) + " " + what + " tokens";
        return dl.shards.size() > 1 ? s + " in " + std::to_string(dl.shards.size()) + " shards" : s;
    };
    std::string shape = o.accum > 1 ? "--grad-accum " + std::to_string(o.accum) + " x " : "";
    shape += "-B " + std::to_string(o.B) + " x -T " + std::to_string(o.T);
    if (dist_world() > 1) shape += " x " + std::to_string(dist_world()) + " ranks";
    printf("data: %s%s; %d step%s of %lld tokens (%s)\n", count(t.train_dl, "train").c_str(),
           o.shuffle ? "" : " (in order)", o.steps, o.steps == 1 ? "" : "s",
           (long long)dist_world() * o.accum * o.B * o.T, shape.c_str());
    if (r.val_path.empty()) {
        printf("val: none\n");
        return;
    }
    const std::string every = r.val_every == 1 ? "step" : std::to_string(r.val_every) + " steps";
    printf("val: every %s, the first %lld of %s (--val-batches %zu x -B %d x -T %d; `gpt2 eval` scores "
           "all of them)\n",
           every.c_str(), (long long)t.val_n * dist_world() * o.B * o.T, count(t.val_dl, "val").c_str(), t.val_n,
           o.B * dist_world(), o.T);
}

// Everything the first step needs, each said as it is set up: the model, the data, the resumed optimizer
// state, the precision and the sampler. Returns the step the run starts from.
int prepare_run(TrainRun* t, const CliArgs& args, const CliArgs& given, const std::string& resume_dir,
                TrainState* resume) {
    const TrainOptions& o = t->opts;
    const RunOptions& r = t->run;
    dataloader_expand(r.train_path, "--train");  // a pattern that matches nothing fails before any allocation
    if (!r.val_path.empty()) dataloader_expand(r.val_path, "--val");
    if (!resume_dir.empty() && given.has("steps") && o.steps < resume->step)  // a --steps behind: it trains nothing
        fatal_hint("give a --steps past " + std::to_string(resume->step) + ", or leave it out",
                   "bad value for --steps (train): the run %s is at step %d already, got %d", resume_dir.c_str(),
                   resume->step, o.steps);
    const std::string base_hash = build_model(&t->model, args, o, r);
    adamw_use_form(&t->opt, r.moments);  // 8bit: check_memory checked the geometry
    if (r.lora) {
        memory_enable_training(&t->model, r.mem, true);  // a frozen base: --recompute's seams, no gradients
        const int rows = std::max(o.B * o.T, t->model.cfg.max_seq_len);  // a training batch, or a sample's context
        t->lora = lora_setup(&t->model, args, resume_dir, resume, rows, o.seed, base_hash);
    } else
        setup_phase("gradients", memory_grads_bytes(t->model.cfg, r.mem),
                    [&] { memory_enable_training(&t->model, r.mem); });
    if (r.lora) grad_sync_init_flat(&t->sync, t->lora->grads.data(), t->lora->grads.size());
    else grad_sync_init(&t->sync, &t->model, r.zero, &t->opt);  // with --zero 1: this rank's slice of AdamW
    const GPT2Config& cfg = t->model.cfg;
    printf("model: %d layers, %d heads, %d channels, context %d, vocab %d: %.2fM parameters\n", cfg.num_layers,
           cfg.num_heads, cfg.channels, cfg.max_seq_len, cfg.vocab_size, gpt2_num_real_params(cfg) / 1e6);
    trainer_load_data(t);
    int first_step = 0;
    if (!resume_dir.empty()) {  // reads the moments in
        if (r.lora)
            lora_restore(resume, t->lora.get(), args.str("model"), t->lora->base_hash, &t->train_dl, &t->history);
        else train_state_restore(resume, t->model, &t->opt, &t->train_dl, &t->history);
        first_step = resume->step;
        printf("resumed %s at step %d\n", resume_dir.c_str(), first_step);
    }
    // the weights are in place: bf16 copies them (a LoRA base: rounded as it loaded); int8 (a LoRA base) was
    // quantized as it loaded
    cli_set_precision(&t->model, args, r.lora, r.lora);
    const bool bf16 = gpt2_precision(t->model) == Precision::kBf16 && !r.lora;
    if (bf16 || r.moments != "fp32")
        printf("precision: %s, fp32 master weights, AdamW state %s\n",
               bf16 ? "bf16 matmuls (fp32 accumulation)" : "fp32 matmuls",
               r.moments == "fp32" ? "fp32" : (r.moments + " (stochastic rounding)").c_str());
    // The buffers the first step would otherwise allocate and fault in: that step then runs as a steady one.
    setup_phase("activations and AdamW state",
                memory_acts_bytes(cfg, o.B, o.T, r.mem) + train_memory(cfg, o, r, Precision::kFp32).moments, [&] {
                    gpt2_alloc_acts(&t->model, o.B, o.T);
                    if (r.lora) adamw_prepare(&t->lora->opt, t->lora->adapter.params.size());
                    else adamw_prepare(&t->opt, t->model.params.size());
                });
    print_data(*t);
    if (o.T < cfg.max_seq_len && !args.has("model") && resume_dir.empty())
        printf("note: -T %d trains positions 0-%d of the model's %d; text generated past %d tokens runs on untrained "
               "positions (-T %d trains them all)\n",
               o.T, o.T - 1, cfg.max_seq_len, o.T, cfg.max_seq_len);
    if (r.mem.recompute && r.mem.recompute_blocks)
        printf("note: --recompute-blocks keeps less than --recompute, with the same numbers: it alone applies\n");
    if (r.sample_tokens > 0) load_sampler(t, args, given);  // before training, so a bad tokenizer fails fast
    if (!resume_dir.empty()) {  // the resume is taken: every check that could refuse it has passed
        note_overrides(given, resume->flags);
        note_log_left(given, resume_dir, r.out, resume->flags);
    }
    return first_step;
}

// The end of a run: where its loss plot is and, after a save, how to sample from the model it saved.
void print_next(const TrainRun& t, const CliArgs& args) {
    const RunOptions& r = t.run;
    const std::string plot = !r.plot_in_out ? r.plot_path : t.saved ? path_join(r.out, "loss.png") : "";
    if (!plot.empty() && path_exists(plot)) printf("plot: %s\n", plot.c_str());
    if (!t.saved) return;
    std::string generate = shell_word(program_name()) + " generate --model " +
                           (r.lora ? shell_word(t.lora->base_path) + " --lora-from " : "") + shell_word(r.out);
    if (r.lora && args.str("precision") != "fp32")
        generate += " --precision " + args.str("precision");  // as it trained
    if (args.has("tokenizer")) generate += " --tokenizer " + shell_word(args.str("tokenizer"));
    if (t.model.cfg.vocab_size <= kTokenizerEot) generate += " --prompt-ids 0 --ids";  // no <|endoftext|> to start from
    printf("sample from it: %s\n", generate.c_str());
}

// Trains from first_step to --steps and says how the run ended: 0 when it ran to its end, 128 + the signal
// when one stopped it.
int run_steps(TrainRun* t, int first_step, const std::string& resume_dir, const CliArgs& args) {
    const TrainOptions& o = t->opts;
    const RunOptions& r = t->run;
    if (first_step >= o.steps) {  // nothing to train: a fresh run still saves what was asked for
        if (r.saving && !r.out_is_resume) trainer_save(t, first_step);  // what --out asked for
        else if (!resume_dir.empty())
            printf("nothing to do: %s is at step %d of %d\n", resume_dir.c_str(), first_step, o.steps);
        t->log.close();
        print_next(*t, args);
        return 0;
    }
    const int step = trainer_run(t, first_step);
    t->log.close();
    stop_catch(false);
    print_next(*t, args);
    const int sig = stop_requested();
    if (!sig) return 0;
    if (t->saved)  // the one line that says so (trainer_save is silent when a signal stopped the run)
        fprintf(stderr, "interrupted at step %d by %s, saved %s; continue with: %s\n", step, stop_signal_name(sig),
                r.out.c_str(), train_resume_command(r.out, dist_world()).c_str());
    else if (dist_rank() == 0)  // rank 0 alone saves (and says so)
        fprintf(stderr, "interrupted at step %d by %s; nothing saved (%s)\n", step, stop_signal_name(sig),
                r.out.empty() ? "no --out" : "no step was done");
    return 128 + sig;
}

}  // namespace

int cmd_train(int argc, char** argv) {
    const CliArgs given = cli_parse(
        argc, argv, "train", "gpt2 train [flags]",
        "Trains GPT-2 on token files (one, or a list or glob of shards) with AdamW, from scratch, from --model, or "
        "continuing exactly from --resume. Ctrl-C, SIGTERM and SIGHUP finish the step, "
        "save to --out and exit 128 + the signal.",
        train_flags(), false);
    // Stop signals are caught from the start: before the first step they end the run cleanly (lock
    // released, nothing saved); from then on the step finishes and the run saves.
    stop_catch(true);
    dist_init(nullptr, nullptr);  // under mpirun: join the other ranks (make MPI=1); else one process
    TrainRun t;
    TrainState resume;
    const std::string resume_dir = given.has("resume") ? path_strip_slashes(given.str("resume")) : "";
    // The checkpoint is locked before its train state is read: a save in progress is never read half-way.
    TrainLocks locks;
    // A run that saves elsewhere only reads it, so a read-only checkpoint can be continued into --out NEW.
    const bool elsewhere = resume_out(given, resume_dir) != resume_dir;
    if (!resume_dir.empty() && dist_rank() == 0)
        locks.resume.reset(new PathLock(resume_dir, "--resume", elsewhere,
                                        "a run that saves into its own directory needs to write there; to "
                                        "continue a read-only checkpoint elsewhere, add --out NEW_DIR"));
    const CliArgs args = given.has("resume") ? resume_args(given, resume_dir, &resume) : given;
    train_options(args, given, resume_dir, &t.opts, &t.run);
    t.run_flags = run_flags(args, t.run.val_path, t.run.lora);
    if (dist_rank() != 0) {  // rank 0 alone prints, logs, plots, samples and saves
        t.run.out.clear(), t.run.plot_path.clear();
        t.run.plot_in_out = false, t.run.sample_tokens = 0;
        output_silence_stdout();
    }
    lock_outputs(&t, args, given, resume_dir, &locks);
    const int first_step = prepare_run(&t, args, given, resume_dir, &resume);
    if (dist_world() > 1) check_ranks_agree(t);
    return run_steps(&t, first_step, resume_dir, args);
}
