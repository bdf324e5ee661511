// compare_cmd.cpp: the `compare` command. Loads a model and a reference dump written by
// scripts/reference.py (x, y, logits, loss, grad.<HF name> for every parameter, losses of AdamW steps)
// and reports, per tensor, max |ours - ref| / max |ref|; loss values are compared in absolute terms.
// Bars: 1e-5 for both, the project's parity bar for our fp32 against PyTorch's float64.
#include <cmath>
#include <cstdio>
#include <string>

#include "base/safetensors.h"
#include "base/util.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "io/checkpoint.h"
#include "model/model.h"
#include "train/optimizer.h"

namespace {

const double kRelBar = 1e-5;   // logits and gradients: max |ours - ref| / max |ref|
const double kLossBar = 1e-5;  // losses: |ours - ref|

struct Report {
    int failures = 0;
    void line(const std::string& name, double err, double bar, const char* kind) {
        bool ok = err <= bar;  // NaN fails
        failures += !ok;
        printf("%-32s %s %.3e  %s\n", name.c_str(), kind, err, ok ? "ok" : "FAIL");
    }
};

// max |a - b| / max |b| over rows x cols elements, a read at row stride lda (to skip padded vocab columns).
double rel_error(const float* a, const float* b, size_t rows, size_t cols, size_t lda) {
    double max_diff = 0, max_ref = 0;
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++) {
            double d = std::fabs((double)a[r * lda + c] - b[r * cols + c]);
            if (!(d <= max_diff)) max_diff = d;  // keeps NaN
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

}  // namespace

int cmd_compare(int argc, char** argv) {
    static const std::vector<CliFlag> flags = {
        {"model", "", "", "checkpoint the reference was made from"},
        {"ref", "", "", "reference dump (safetensors) from scripts/reference.py"},
        {"adamw-steps", "", "-1", "compare only the first N AdamW losses of the dump; -1 for all"},
        kCliHeadsFlag,
    };
    CliArgs args = cli_parse(argc, argv, "compare", "gpt2 compare --model PATH --ref DUMP",
                             "Compares logits, loss, every gradient and the losses of AdamW steps with a PyTorch "
                             "reference; exits 1 on FAIL.",
                             flags, false);
    GPT2 model;
    checkpoint_load(&model, args.str("model"), cli_heads(args));
    gpt2_enable_training(&model);
    SafeTensors ref;
    safetensors_load(&ref, args.str("ref"));
    const GPT2Config& cfg = model.cfg;
    const StTensor& xt = need(ref, "x");
    if (xt.shape.size() != 2 || xt.dtype != "I32") fatal("bad tensor x in %s: expected I32 (B, T)", ref.path.c_str());
    const int B = (int)xt.shape[0], T = (int)xt.shape[1], V = cfg.vocab_size, Vp = cfg.padded_vocab_size;
    std::vector<float> xf = safetensors_read_f32(ref, xt), yf = safetensors_read_f32(ref, need(ref, "y"));
    if (yf.size() != xf.size()) fatal("bad tensor y in %s: expected the shape of x", ref.path.c_str());
    std::vector<int> x(xf.begin(), xf.end()), y(yf.begin(), yf.end());

    Report report;
    float loss = gpt2_forward(&model, x.data(), y.data(), B, T);
    const StTensor& lt = need(ref, "logits");
    if (lt.numel() != (size_t)B * T * V) fatal("bad tensor logits in %s: expected (B, T, %d)", ref.path.c_str(), V);
    std::vector<float> ref_logits = safetensors_read_f32(ref, lt);
    report.line("logits", rel_error(model.a.logits, ref_logits.data(), (size_t)B * T, V, Vp), kRelBar, "rel");
    const StTensor& ref_loss = need(ref, "loss");
    if (ref_loss.numel() != 1)
        fatal("bad tensor loss in %s: expected one value, got %zu", ref.path.c_str(), ref_loss.numel());
    report.line("loss", std::fabs(loss - safetensors_read_f32(ref, ref_loss)[0]), kLossBar, "abs");

    gpt2_zero_grad(&model);
    gpt2_backward(&model, 1.0f);
    std::vector<float> ref_grads(model.num_params, 0.0f);
    checkpoint_unpack_hf(ref, "grad.", cfg, ref_grads.data());
    for (const TensorInfo& t : model.param_table) {
        size_t rows = t.name == "wte" ? (size_t)V : t.rows, cols = t.cols ? t.cols : 1;
        report.line("grad." + t.hf_name,
                    rel_error(model.grads.data() + t.offset, ref_grads.data() + t.offset, rows, cols, cols), kRelBar,
                    "rel");
    }

    // AdamW steps on the same batch: losses[i] is the loss before update i+1.
    std::vector<float> ref_losses = safetensors_read_f32(ref, need(ref, "losses"));
    if (ref_losses.empty())
        fatal("bad tensor losses in %s: expected the losses of at least one AdamW step", ref.path.c_str());
    long long adamw_steps = args.integer_in("adamw-steps", -1, 1 << 20);
    if (adamw_steps > (long long)ref_losses.size())
        fatal("bad value for --adamw-steps (compare): expected -1..%zu, got %lld", ref_losses.size(), adamw_steps);
    if (adamw_steps >= 0) ref_losses.resize((size_t)adamw_steps);
    AdamWConfig oc;
    oc.lr = (float)meta_number(ref, "lr", 0, 10, true);
    oc.beta1 = (float)meta_number(ref, "beta1", 0, 0.999999, false);
    oc.beta2 = (float)meta_number(ref, "beta2", 0, 0.999999, false);
    oc.eps = (float)meta_number(ref, "eps", 0, 1, true);
    oc.weight_decay = (float)meta_number(ref, "weight_decay", 0, 10, false);
    AdamW opt;
    for (size_t i = 0; i < ref_losses.size(); i++) {
        float step_loss = gpt2_forward(&model, x.data(), y.data(), B, T);
        report.line("adamw.loss[" + std::to_string(i) + "]", std::fabs(step_loss - ref_losses[i]), kLossBar, "abs");
        gpt2_zero_grad(&model);
        gpt2_backward(&model, 1.0f);
        adamw_update(&opt, &model, oc, oc.lr);
    }
    printf("%s\n", report.failures ? "FAIL" : "PASS");
    return report.failures ? 1 : 0;
}
