// setup.cpp: see setup.h.
#include "lora/setup.h"

#include <algorithm>
#include <cstdio>
#include <iterator>

#include "core/error.h"
#include "formats/checkpoint.h"
#include "formats/train_state.h"
#include "platform/util.h"

const CliFlag kLoraTrainFlags[kLoraTrainFlagCount] = {
    {"lora", "", "", "train a LoRA adapter of this rank on the frozen --model (only the adapter is saved)"},
    {"lora-alpha", "", "8", "LoRA's alpha: the adapter is scaled by alpha / rank (PEFT's lora_alpha)"},
    {"lora-dropout", "", "0", "LoRA's dropout on the adapter's input, as PEFT's lora_dropout (training steps only)"},
    {"lora-targets", "", "c_attn",
     "the layers LoRA adapts, PEFT's module names: c_attn, c_proj (both projections), c_fc, attn.c_proj, mlp.c_proj"},
    {"lora-from", "", "",
     "start the adapter from this PEFT directory (adapter_config.json + adapter_model.safetensors), with its rank, "
     "alpha and targets (implies --lora)"},
};

namespace {

// The adapter's flags: a resumed LoRA run takes its adapter from the checkpoint (recorded only when given, so a
// run without --lora records what it did before).
const char* const kAdapterFlags[] = {"lora", "lora-alpha", "lora-targets", "lora-dropout"};

}  // namespace

bool lora_is_adapter_flag(const std::string& name) {
    return std::find(std::begin(kAdapterFlags), std::end(kAdapterFlags), name) != std::end(kAdapterFlags);
}

// --lora trains an adapter on a frozen --model, in one process, with fp32 AdamW state after the backward:
// the flags it cannot combine with yet are refused, each naming why.
void lora_check_flags(const CliArgs& args, const CliArgs& given, const std::string& resume_dir,
                      const std::string& out) {
    if (!args.has("model"))
        fatal("missing flag --model (train): --lora trains an adapter on a base model; expected --model DIR");
    if (given.has("lora-from") && !resume_dir.empty())
        fatal("conflicting flags (train): --resume %s continues its own adapter; drop --lora-from", resume_dir.c_str());
    if (given.has("lora-from"))
        for (const char* f : {"lora", "lora-alpha", "lora-targets"})
            if (given.has(f))
                fatal(
                    "conflicting flags (train): --lora-from %s brings its adapter's rank, alpha and targets; "
                    "drop --%s",
                    args.str("lora-from").c_str(), f);
    if (args.has("lora")) args.integer_in("lora", 1, 1 << 20);  // checked before anything loads
    if (const double alpha = args.number_in("lora-alpha", -1e300, 1e300); !(alpha > 0 && alpha <= 1e6))
        fatal(
            "bad value for --lora-alpha (train): expected a number above 0, at most 1e6 (the scale is alpha / "
            "rank), got %g",
            alpha);
    args.number_in("lora-dropout", 0, 1);
    // The adapter a run starts from is its input, as --model is: never replaced by the run's saves.
    // (compared where the save lands: --out DIR/nox/../AD is AD once the save makes DIR/nox)
    if (given.has("lora-from") && !out.empty() && path_same_place(out, args.str("lora-from")))
        fatal_hint(std::string(train_dir_is_checkpoint(out) ? "continue that run with --resume " + out + ", or " : "") +
                       "save elsewhere (--out NEW_DIR)",
                   "bad value for --out (train): %s holds the --lora-from adapter this run starts from; a new run "
                   "there would replace it and its training state",
                   out.c_str());
    struct Refused {
        bool given;
        std::string flag;
        const char* why;
    };
    const std::string moments = args.str("optimizer-state");
    const Refused refused[] = {
        {args.on("optimizer-in-backward"), "--optimizer-in-backward",
         "it updates the base's weights inside the backward"},
        {moments != "fp32", "--optimizer-state " + moments, "the adapter's moments are small and kept in fp32"},
        {args.integer_in("zero", 0, 1) == 1, "--zero 1", "it splits the base's AdamW state across ranks"}};
    for (const Refused& x : refused)
        if (x.given) fatal("conflicting flags (train): --lora cannot take %s: %s", x.flag.c_str(), x.why);
}

void lora_check_resumed_flags(const CliArgs& given, const TrainState& resume, bool lora_run) {
    LoraConfig adapter;  // a LoRA run's: given again, its own values (targets in any order) are taken silently
    const bool known = lora_run_config(resume, &adapter);
    for (const char* name : kAdapterFlags) {
        if (!given.has(name)) continue;
        const std::string had = known ? lora_flag_differs(resume, adapter, name, given.str(name)) : "?";
        if (!lora_run)
            fatal("bad value for --%s (train): a resumed run keeps its training without --lora; got %s", name,
                  given.str(name).c_str());
        if (!had.empty())
            fatal("bad value for --%s (train): a resumed run keeps its adapter%s; got %s", name,
                  known ? (" (--" + std::string(name) + " " + had + ")").c_str() : " (adapter_config.json's)",
                  given.str(name).c_str());
    }
}

// The adapter of a --lora run: the resumed one, --lora-from's, or PEFT's init for the flags' rank, alpha and
// targets; hooked into the model, whose weights are then frozen.
std::unique_ptr<LoraModel> lora_setup(GPT2* model, const CliArgs& args, const std::string& resume_dir,
                                      const TrainState* resume, int rows, uint64_t seed, const std::string& base_hash) {
    const GPT2Config& cfg = model->cfg;
    auto lora = std::make_unique<LoraModel>();
    LoraAdapter& a = lora->adapter;
    const std::string from = !resume_dir.empty() ? resume_dir : args.has("lora-from") ? args.str("lora-from") : "";
    if (!from.empty()) {
        lora_load_train(lora.get(), from, cfg, resume_dir.empty() ? nullptr : resume);
        if (resume_dir.empty() && args.has("lora-dropout"))  // a training choice, not the adapter's math
            a.cfg.dropout = (float)args.number_in("lora-dropout", 0, 1);
    } else {
        LoraConfig lc;
        lc.rank = (int)args.integer_in("lora", 1, 1 << 20);
        lc.alpha = (float)args.number_in("lora-alpha", 0, 1e6);
        lc.dropout = (float)args.number_in("lora-dropout", 0, 1);
        if (const std::string err = lora_parse_targets(args.str("lora-targets"), &lc); !err.empty())
            fatal("%s (train)", err.c_str());
        if (const std::string err = lora_check(lc, cfg, "--lora (train)"); !err.empty()) fatal("%s", err.c_str());
        lora_layout(&a, lc, cfg);
        lora_init_random(&a, seed);
    }
    lora_attach(model, lora.get(), rows, true);
    lora->dropout.seed = seed;
    lora->base_path = path_absolute(args.str("model"));  // the record outlives the working directory
    lora->base_hash = base_hash;
    if (resume_dir.empty() && args.has("lora-from")) lora_note_new_base(from, lora->base_path, lora->base_hash);
    std::string targets;
    for (const std::string& m : a.cfg.target_modules) targets += (targets.empty() ? "" : ",") + m;
    char dropout[32] = "";
    if (a.cfg.dropout > 0) snprintf(dropout, sizeof(dropout), ", dropout %g", a.cfg.dropout);
    printf("lora: rank %d, alpha %g (scale %g%s) on %s: %.2fM parameters trained, the base's %.2fM frozen\n",
           a.cfg.rank, a.cfg.alpha, a.cfg.scale(), dropout, targets.c_str(), a.params.size() / 1e6,
           gpt2_num_real_params(cfg) / 1e6);
    return lora;
}
