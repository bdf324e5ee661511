// compare_cmd.cpp: the `compare` command. Loads a model and a reference dump, detected by its first bytes:
//   * ours, written by scripts/reference.py (safetensors: x, y, logits, loss, grad.<HF name> for every
//     parameter, the losses of AdamW steps on the same batch and the optimizer's settings; with --masked, y
//     holds -1 for targets not scored, and dlogits, the loss's gradient at the logits);
//   * llm.c's gpt2_124M_debug_state.bin (train_gpt2.py's write_state; formats/llmc.h), which holds no AdamW
//     trajectory: its losses are printed for the user to hold against test_gpt2.c's expected ones;
//   * with --lora-from, scripts/lora_reference.py's: the same with grad.<PEFT key> for every adapter tensor, and
//     AdamW on the adapter alone, the base frozen (lora/lora.h).
// Reports, per tensor, max |ours - ref| / max |ref|; loss values are compared in absolute terms.
// Bars: 1e-5 for both, the project's parity bar for our fp32 against PyTorch's float64 (PyTorch's fp32,
// which llm.c's dump holds, is itself within a few 1e-6 of float64). --precision bf16 runs our bf16 matmuls
// against the same reference with cosine and relative-loss bars (kBf16CosineBar, kBf16LossBar).
// With llm.c's files: `./gpt2 compare --model gpt2_124M.bin --ref gpt2_124M_debug_state.bin --steps 10` checks logits
// (past 1,024 rows, those of the head's last block), loss and every gradient at our bars (llm.c's test_gpt2.c uses
// 1e-2), then prints 10 AdamW losses with test_gpt2.c's settings on the dump's batch to hold against the ten it
// lists.
#include <cmath>
#include <cstdio>
#include <string>

#include "core/hf.h"
#include "core/safetensors.h"
#include "platform/util.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "formats/checkpoint.h"
#include "formats/llmc.h"
#include "core/model.h"
#include "precision/precision.h"
#include "core/optimizer.h"
#include "lora/lora.h"
#include "memory/memory.h"

namespace {

const double kRelBar = 1e-5;   // logits and gradients: max |ours - ref| / max |ref|
const double kLossBar = 1e-5;  // losses: |ours - ref|
// --precision bf16 (matmul operands rounded to bf16: 8 significant bits, unit roundoff u = 2^-8 = 3.9e-3).
// A product of two rounded operands is off by up to 2u, but the K errors of a dot product have random signs,
// so a sum of K terms is off by ~2u * ||terms||_2, a fraction ~2u/sqrt(K)..2u of its value. Through 12
// layers forward and back that grows to a relative error norm of a few u (we see ~0.01); a tensor whose error
// norm is e relative to its own norm has cosine ~1 - e^2/2, so cosine >= 0.999 allows e = 0.045 (11u) and
// fails a real bug (a wrong operand or a stale weight is e ~ 1). The mean loss averages N positions' errors:
// 5e-3 relative is ~1.3u, far above the ~1e-4 we see and below what a broken matmul gives.
const double kBf16CosineBar = 0.999;  // logits and gradients: cosine similarity to the reference
const double kBf16LossBar = 5e-3;     // losses: |ours - ref| / |ref|

struct Report {
    int failures = 0;
    void line(const std::string& name, double err, double bar, const char* kind) {
        bool ok = err <= bar;  // NaN fails
        failures += !ok;
        printf("%-32s %s %.3e  %s\n", name.c_str(), kind, err, ok ? "ok" : "FAIL");
    }
    void at_least(const std::string& name, double value, double bar, const char* kind) {
        bool ok = value >= bar;  // NaN fails
        failures += !ok;
        printf("%-32s %s %.6f  %s\n", name.c_str(), kind, value, ok ? "ok" : "FAIL");
    }
};

// Cosine similarity of a (rows x cols, row stride lda) and b (rows x cols), in double; 1 when both are zero.
double cosine(const float* a, const float* b, size_t rows, size_t cols, size_t lda) {
    double ab = 0, aa = 0, bb = 0;
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++) {
            double x = a[r * lda + c], y = b[r * cols + c];
            ab += x * y, aa += x * x, bb += y * y;
        }
    if (aa == 0 && bb == 0) return 1.0;
    return ab / std::sqrt(aa * bb);
}

// max |a - b| / max |b| over rows x cols elements, a read at row stride lda (to skip padded vocab columns).
double rel_error(const float* a, const float* b, size_t rows, size_t cols, size_t lda) {
    double max_diff = 0, max_ref = 0;
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++) {
            double d = std::fabs((double)a[r * lda + c] - b[r * cols + c]);
            if (!(d <= max_diff) && max_diff == max_diff) max_diff = d;  // a NaN, once seen, stays
            max_ref = std::fmax(max_ref, std::fabs((double)b[r * cols + c]));
        }
    return max_ref > 0 ? max_diff / max_ref : max_diff;
}

const StTensor& need(const SafeTensors& st, const std::string& name) {
    const StTensor* t = st.find(name);
    if (!t) fatal("missing tensor %s in reference dump %s", name.c_str(), st.path.c_str());
    return *t;
}

// A finite number in [lo, hi] (lo excluded when open_lo) from the dump's metadata.
double meta_number(const SafeTensors& st, const char* key, double lo, double hi, bool open_lo) {
    std::string v = st.meta(key);
    char* end = nullptr;
    double x = strtod(v.c_str(), &end);
    if (v.empty() || *end || !std::isfinite(x) || x < lo || x > hi || (open_lo && x == lo))
        fatal("bad metadata \"%s\" in reference dump %s: expected a number in %c%g, %g], got '%s'", key,
              st.path.c_str(), open_lo ? '(' : '[', lo, hi, v.c_str());
    return x;
}

// One batch and what PyTorch made of it, from either kind of dump.
struct Reference {
    std::string kind;  // "gpt2.cpp" or "llm.c"
    int B = 0, T = 0;
    std::vector<int> x, y;
    std::vector<float> logits;  // (B, T, V)
    std::vector<float> dlogits;  // (B, T, V), or empty: a masked dump's d(loss)/dlogits
    float loss = 0;
    std::vector<float> grads;   // our layout
    std::vector<float> losses;  // AdamW trajectory; empty for llm.c's dumps
    AdamWConfig adamw;
};

// A dump made from another model is not a bad dump: says that --model and the dump disagree, and in what.
void check_dump_model(const SafeTensors& ref, const GPT2Config& cfg) {
    const auto shape = [&](const char* name) {
        const StTensor* t = ref.find(name);
        if (!t) return std::string("none");
        std::string s;
        for (size_t d : t->shape) s += (s.empty() ? "(" : ", ") + std::to_string(d);
        return s + ")";
    };
    int layers = 0;
    while (ref.find("grad.h." + std::to_string(layers) + ".ln_1.weight")) layers++;
    const std::string wte = "(" + std::to_string(cfg.vocab_size) + ", " + std::to_string(cfg.channels) + ")";
    const std::string wpe = "(" + std::to_string(cfg.max_seq_len) + ", " + std::to_string(cfg.channels) + ")";
    if (layers != cfg.num_layers || shape("grad.wte.weight") != wte || shape("grad.wpe.weight") != wpe)
        fatal_hint("give --model the checkpoint the dump was made from (scripts/reference.py writes both)",
                   "--model and --ref disagree (compare): the model has %d layers, wte %s, wpe %s; the dump %s "
                   "holds gradients of %d layers, wte %s, wpe %s",
                   cfg.num_layers, wte.c_str(), wpe.c_str(), ref.path.c_str(), layers, shape("grad.wte.weight").c_str(),
                   shape("grad.wpe.weight").c_str());
}

void load_ours(Reference* r, const std::string& path, const GPT2Config& cfg, const LoraModel* lora) {
    SafeTensors ref;
    safetensors_load(&ref, path);
    r->kind = lora ? "gpt2.cpp LoRA" : "gpt2.cpp";
    if (!lora) check_dump_model(ref, cfg);
    const StTensor& xt = need(ref, "x");
    if (xt.shape.size() != 2 || xt.dtype != "I32") fatal("bad tensor x in %s: expected I32 (B, T)", ref.path.c_str());
    r->B = (int)xt.shape[0], r->T = (int)xt.shape[1];
    if (r->T > cfg.max_seq_len)
        fatal("bad tensor x in %s: T %d is past the model's context %d", ref.path.c_str(), r->T, cfg.max_seq_len);
    std::vector<float> xf = safetensors_read_f32(ref, xt), yf = safetensors_read_f32(ref, need(ref, "y"));
    if (yf.size() != xf.size()) fatal("bad tensor y in %s: expected the shape of x", ref.path.c_str());
    r->x.assign(xf.begin(), xf.end()), r->y.assign(yf.begin(), yf.end());
    const StTensor& lt = need(ref, "logits");
    if (lt.numel() != xf.size() * cfg.vocab_size)
        fatal("bad tensor logits in %s: expected (B, T, %d)", ref.path.c_str(), cfg.vocab_size);
    r->logits = safetensors_read_f32(ref, lt);
    if (const StTensor* dt = ref.find("dlogits")) {
        if (dt->numel() != lt.numel()) fatal("bad tensor dlogits in %s: expected the shape of logits", ref.path.c_str());
        r->dlogits = safetensors_read_f32(ref, *dt);
    }
    const StTensor& ref_loss = need(ref, "loss");
    if (ref_loss.numel() != 1)
        fatal("bad tensor loss in %s: expected one value, got %zu", ref.path.c_str(), ref_loss.numel());
    r->loss = safetensors_read_f32(ref, ref_loss)[0];
    if (lora) {  // the adapter's gradients, laid out as its parameters
        r->grads.assign(lora->adapter.params.size(), 0.0f);
        for (const TensorInfo& t : lora->adapter.table) {
            const StTensor& g = need(ref, "grad." + t.name);
            if (g.numel() != t.numel())
                fatal("bad tensor grad.%s in %s: expected %zu x %zu values, as --lora-from's", t.name.c_str(),
                      ref.path.c_str(), t.rows, t.cols);
            safetensors_read_into(ref, g, r->grads.data() + t.offset);
        }
    } else {
        r->grads.assign(layout_params_size(layout_params(cfg)), 0.0f);
        hf_unpack(ref, "grad.", cfg, r->grads.data());
    }
    r->losses = safetensors_read_f32(ref, need(ref, "losses"));
    if (r->losses.empty())
        fatal("bad tensor losses in %s: expected the losses of at least one AdamW step", ref.path.c_str());
    r->adamw.lr = (float)meta_number(ref, "lr", 0, 10, true);
    r->adamw.beta1 = (float)meta_number(ref, "beta1", 0, 0.999999, false);
    r->adamw.beta2 = (float)meta_number(ref, "beta2", 0, 0.999999, false);
    r->adamw.eps = (float)meta_number(ref, "eps", 0, 1, true);
    r->adamw.weight_decay = (float)meta_number(ref, "weight_decay", 0, 10, false);
}

void load_llmc(Reference* r, const std::string& path, const GPT2Config& cfg) {
    LlmcState st;
    llmc_state_load(path, cfg, &st);
    r->kind = "llm.c";
    r->B = st.B, r->T = st.T;
    r->x = std::move(st.x), r->y = std::move(st.y), r->logits = std::move(st.logits), r->grads = std::move(st.grads);
    r->loss = st.loss;
    r->adamw.lr = 1e-4f;  // test_gpt2.c's settings
    r->adamw.weight_decay = 0.01f;
}

// The flags of `gpt2 compare`, parsed; --help and a malformed flag end the process here.
CliArgs compare_args(int argc, char** argv) {
    static const std::vector<CliFlag> flags = {
        {"model", "", "", "checkpoint the reference was made from"},
        {"ref", "", "", "reference dump: scripts/reference.py's (safetensors) or llm.c's gpt2_124M_debug_state.bin"},
        {"steps", "", "-1",
         "AdamW steps on the dump's batch. Ours: compared with its losses (-1: all it holds). llm.c's: printed, "
         "with test_gpt2.c's settings (lr 1e-4, betas 0.9/0.999, eps 1e-8, weight decay 0.01; -1: none)"},
        kCliHeadsFlag,
        {"lora-from", "", "",
         "a PEFT adapter on --model: the dump (scripts/lora_reference.py) holds its gradients, AdamW trains it alone"},
        {"precision", "", "fp32",
         "fp32: max relative errors against 1e-5; bf16: bf16 matmuls, cosine similarity >= 0.999 for logits and "
         "gradients and losses within 5e-3 relative (needs AVX512_BF16)"},
    };
    return cli_parse(argc, argv, "compare", "gpt2 compare --model PATH --ref DUMP [--steps n] [--precision p]",
                     "Compares logits, loss, every gradient and the losses of AdamW steps with a PyTorch "
                     "reference; exits 1 on FAIL.",
                     flags, false);
}

// The dump at ref_path, of either kind, checked against the model it claims to come from (its batch's shape
// and tokens) and against the memory the comparison takes.
Reference load_reference(const std::string& ref_path, const GPT2Config& cfg, const LoraModel* lora) {
    const std::vector<uint8_t> head = file_head_bytes(ref_path, 4);
    Reference ref;
    if (llmc_state_detect(head.data(), head.size()) && !lora) load_llmc(&ref, ref_path, cfg);
    else load_ours(&ref, ref_path, cfg, lora);
    if (ref.B < 1 || ref.T < 1 || ref.T > cfg.max_seq_len)
        fatal("bad tensor x in %s: expected (B, T) with B >= 1 and 1 <= T <= %d (the model's context), got (%d, %d)",
              ref_path.c_str(), cfg.max_seq_len, ref.B, ref.T);
    memory_check(gpt2_acts_bytes(cfg, ref.B, ref.T, true) + 3 * gpt2_params_bytes(cfg),
                 "gradients, AdamW state and activations for the dump's B=" + std::to_string(ref.B) +
                     ", T=" + std::to_string(ref.T),
                 "");
    // A NaN in the reference would compare as no error at all: such a dump is refused.
    const std::pair<const char*, const std::vector<float>*> values[] = {
        {"logits", &ref.logits}, {"dlogits", &ref.dlogits}, {"gradients", &ref.grads}, {"losses", &ref.losses}};
    for (const auto& v : values)
        for (size_t i = 0; i < v.second->size(); i++)
            if (!std::isfinite((*v.second)[i]))
                fatal("non-finite value in %s (%s): element %zu is %g; expected a finite reference", ref_path.c_str(),
                      v.first, i, (double)(*v.second)[i]);
    if (!std::isfinite(ref.loss)) fatal("non-finite value in %s (loss): %g", ref_path.c_str(), (double)ref.loss);
    for (const std::vector<int>* ids : {&ref.x, &ref.y})
        for (size_t i = 0; i < ids->size(); i++)
            if ((*ids)[i] < (ids == &ref.y ? -1 : 0) || (*ids)[i] >= cfg.vocab_size)  // y: -1 is not scored
                fatal("bad tensor %s in %s: token %d at index %zu, expected %s..%d (the model's vocabulary)",
                      ids == &ref.x ? "x" : "y", ref_path.c_str(), (*ids)[i], i, ids == &ref.y ? "-1" : "0",
                      cfg.vocab_size - 1);
    return ref;
}

// The report's lines against the bars of the precision: fp32 against max relative error bars, bf16 against
// cosine and relative-loss bars (see the constants).
struct Checks {
    Report report;
    bool bf16 = false;
    void tensor(const std::string& name, const float* ours, const float* theirs, size_t rows, size_t cols, size_t lda) {
        if (bf16) report.at_least(name, cosine(ours, theirs, rows, cols, lda), kBf16CosineBar, "cos");
        else report.line(name, rel_error(ours, theirs, rows, cols, lda), kRelBar, "rel");
    }
    void loss_line(const std::string& name, float ours, float theirs) {
        if (bf16) report.line(name, std::fabs(ours - theirs) / std::fabs(theirs), kBf16LossBar, "rel");
        else report.line(name, std::fabs(ours - theirs), kLossBar, "abs");
    }
};

// Logits, loss and every gradient of one forward and backward on the dump's batch; returns the loss, which
// the first AdamW step reuses.
float check_gradients(GPT2* model, LoraModel* lora, const Reference& ref, Checks* checks) {
    const int B = ref.B, T = ref.T, V = model->cfg.vocab_size, Vp = model->cfg.padded_vocab_size;
    // The logits first, from a forward without targets: with them, the head leaves dlogits in their place. It keeps
    // its last rows' (all up to 1,024: model.h); wte's gradient below depends on every row's.
    if (lora) lora_attach(model, lora, B * T, true);  // frozen: its logits are read the same way
    gpt2_forward(model, ref.x.data(), nullptr, B, T);
    const size_t N = (size_t)B * T, first = model->head_last_row, kept = N - first;
    const std::string last = first ? " (the last " + std::to_string(kept) + " rows)" : "";
    checks->tensor("logits" + last, model->act.logits, ref.logits.data() + first * V, kept, V, Vp);
    gpt2_enable_training(model);
    float loss = gpt2_forward(model, ref.x.data(), ref.y.data(), B, T, 1.0f);
    checks->loss_line("loss", loss, ref.loss);
    if (!ref.dlogits.empty())  // the fused cross-entropy left them in the logits' place
        checks->tensor("dlogits" + last, model->act.logits, ref.dlogits.data() + first * V, kept, V, Vp);
    gpt2_backward(model);
    for (const TensorInfo& t : lora ? lora->adapter.table : std::vector<TensorInfo>()) {
        const float* ours = lora->grads.data() + t.offset;
        checks->tensor("grad." + t.name, ours, ref.grads.data() + t.offset, t.rows, t.cols, t.cols);
    }
    if (lora) return loss;
    for (const TensorInfo& t : model->param_table) {
        size_t rows = t.name == "wte" ? (size_t)V : t.rows, cols = t.cols ? t.cols : 1;
        checks->tensor("grad." + t.hf_name, model->grads.data() + t.offset, ref.grads.data() + t.offset, rows, cols,
                       cols);
    }
    return loss;
}

// AdamW steps on the same batch: losses[i] is the loss before update i+1. Ours are compared with the
// dump's; llm.c's dump holds none, so they are printed.
void check_adamw(GPT2* model, LoraModel* lora, const Reference& ref, const CliArgs& args, const std::string& ref_path,
                 float loss, Checks* checks) {
    const int B = ref.B, T = ref.T;
    const bool ours = !ref.losses.empty();
    const long long held = (long long)ref.losses.size(), steps_arg = args.integer_in("steps", -1, 1 << 20);
    if (ours && steps_arg > held)
        fatal("bad value for --steps (compare): expected -1..%lld (the AdamW losses %s holds), got %lld", held,
              ref_path.c_str(), steps_arg);
    const long long steps = steps_arg >= 0 ? steps_arg : ours ? held : 0;
    if (!ours && steps)
        printf(
            "AdamW on the dump's batch, test_gpt2.c's settings; llm.c's dump holds no losses to compare, "
            "test_gpt2.c lists the expected ones:\n");
    AdamW opt;
    for (long long i = 0; i < steps; i++) {
        if (i > 0) gpt2_zero_grad(model);
        if (i > 0 && lora) lora_zero_grad(lora);
        const float step_loss = i == 0 ? loss : gpt2_forward(model, ref.x.data(), ref.y.data(), B, T, 1.0f);
        if (i > 0) gpt2_backward(model);
        if (ours) checks->loss_line("adamw.loss[" + std::to_string(i) + "]", step_loss, ref.losses[i]);
        else printf("step %lld: loss %f\n", i, step_loss);
        if (!std::isfinite(step_loss)) fatal("loss is %g at AdamW step %lld: expected a finite loss", step_loss, i);
        adamw_update(lora ? &lora->opt : &opt, lora ? lora_param_set(lora) : gpt2_param_set(*model), ref.adamw,
                     ref.adamw.lr);
    }
}

}  // namespace

int cmd_compare(int argc, char** argv) {
    CliArgs args = compare_args(argc, argv);
    if (args.str("precision") == "bf16" && !bf16_supported())  // a check cannot fall back as a run does
        fatal("bad value for --precision (compare): this CPU has no AVX512_BF16, so bf16 cannot be checked here");
    const Precision prec = cli_precision(args);
    GPT2 model;
    checkpoint_load(&model, args.str("model"), cli_heads(args));
    gpt2_set_precision(&model, prec);
    LoraModel lora;
    if (args.has("lora-from")) lora_load(&lora, args.str("lora-from"), model.cfg);
    LoraModel* adapter = args.has("lora-from") ? &lora : nullptr;
    const std::string ref_path = args.str("ref");
    const Reference ref = load_reference(ref_path, model.cfg, adapter);
    printf("reference: %s dump, B=%d, T=%d\n", ref.kind.c_str(), ref.B, ref.T);

    Checks checks;
    checks.bf16 = prec == Precision::kBf16;
    const float loss = check_gradients(&model, adapter, ref, &checks);
    check_adamw(&model, adapter, ref, args, ref_path, loss, &checks);
    printf("%s\n", checks.report.failures ? "FAIL" : "PASS");
    return checks.report.failures ? 1 : 0;
}
