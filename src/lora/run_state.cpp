// run_state.cpp: a LoRA run's directory (lora.h): PEFT's two files (lora/peft.h) and the train state, which
// ties the adapter to its base by the base's fingerprint.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/error.h"
#include "formats/safetensors_file.h"
#include "lora/lora.h"
#include "platform/hash.h"
#include "platform/output_files.h"
#include "platform/platform.h"
#include "platform/util.h"

namespace {

const char* const kStateFile = "train_state.safetensors";

// The adapted modules as lora.targets records them: kLoraModules' names, comma-separated.
std::string target_set(const LoraConfig& c) {
    std::string out;
    for (int k = 0; k < kLoraTargets; k++)
        if (c.target[k]) out += (out.empty() ? "" : ",") + std::string(kLoraModules[k]);
    return out;
}

// Metadata saying lora.alpha and lora.dropout are float_text's (exact); train states without it wrote "%g".
const char* const kExactKey = "lora.exact";

// The fewest digits that read back to x as a float (the precision an adapter keeps it in): exact.
std::string float_text(double x) {
    char buf[32];
    for (int p = 1; p <= 9; p++) {
        snprintf(buf, sizeof(buf), "%.*g", p, x);
        if ((float)strtod(buf, nullptr) == (float)x) break;
    }
    return buf;
}

// x as a train state stores it: exactly, or for one saved before kExactKey, in %g's 6 digits.
std::string number_text(double x, bool exact) {
    if (exact) return float_text(x);
    char buf[32];
    snprintf(buf, sizeof(buf), "%g", (float)x);
    return buf;
}

// Whether `text` is a number equal to x as a float, or for an inexact x (number_text), equal to it in 6 digits.
bool same_number(const std::string& text, double x, bool exact = true) {
    char* end = nullptr;
    const double v = strtod(text.c_str(), &end);
    return !text.empty() && !*end && number_text(v, exact) == number_text(x, exact);
}

bool state_exact(const TrainState& ts) { return ts.file.meta(kExactKey) == "true"; }

}  // namespace

std::string lora_adapter_hash(const LoraAdapter& a) {
    return hash_hex(fnv1a(a.params.data(), a.params.size() * sizeof(float)));
}

void lora_save(const std::string& dir, const LoraModel& lora, const DataLoader& dl, int step,
               const std::vector<std::pair<std::string, std::string>>& run_flags, const LossHistory& history,
               const std::function<void(const std::string& staging)>& extra) {
    const LoraAdapter& a = lora.adapter;
    dir_publish(dir, train_dir_is_ours, [&](const std::string& staging) {
        PeftConfig peft = lora.peft;
        peft.lora = a.cfg;
        peft.base_model = lora.base_path;  // the base trained on, not the one --lora-from's adapter named
        peft_write(a, peft, staging);
        const std::vector<std::pair<std::string, std::string>> meta = {
            {"lora.base.path", lora.base_path},          {"lora.base.fnv1a", lora.base_hash},
            {"lora.r", std::to_string(a.cfg.rank)},      {"lora.alpha", float_text(a.cfg.alpha)},
            {"lora.targets", target_set(a.cfg)},         {"lora.rslora", a.cfg.rslora ? "true" : "false"},
            {"lora.dropout", float_text(a.cfg.dropout)}, {kExactKey, "true"}};
        train_state_write(path_join(staging, kStateFile), lora.opt, a.params.size(), lora_adapter_hash(a), a.base, dl,
                          step, run_flags, history, meta);
        extra(staging);
    });
}

void lora_load(LoraModel* lora, const std::string& dir, const GPT2Config& base) {
    peft_read(&lora->adapter, &lora->peft, dir, base);
}

bool lora_run_config(const TrainState& ts, LoraConfig* cfg) {
    if (ts.file.meta("lora.base.fnv1a").empty()) return false;
    std::string r = ts.file.meta("lora.r"), alpha = ts.file.meta("lora.alpha"), targets = ts.file.meta("lora.targets");
    std::string dropout = ts.file.meta("lora.dropout");
    const bool rslora = ts.file.meta("lora.rslora") == "true";
    if (r.empty()) {  // saved before the settings were: the --lora flags it recorded, or their defaults
        alpha = "8", targets = "c_attn", dropout = "0";
        for (const auto& kv : ts.flags) {
            if (kv.first == "lora") r = kv.second;
            if (kv.first == "lora-alpha") alpha = kv.second;
            if (kv.first == "lora-targets") targets = kv.second;
            if (kv.first == "lora-dropout") dropout = kv.second;
        }
    }
    LoraConfig c;
    char *end_r = nullptr, *end_a = nullptr, *end_d = nullptr;
    c.rank = (int)strtol(r.c_str(), &end_r, 10);
    c.alpha = (float)strtod(alpha.c_str(), &end_a);
    c.dropout = (float)strtod(dropout.c_str(), &end_d);
    c.rslora = rslora;
    if (r.empty() || *end_r || *end_a || *end_d || !lora_parse_targets(targets, &c).empty()) return false;
    *cfg = c;
    return true;
}

std::string lora_flag_differs(const TrainState& ts, const LoraConfig& cfg, const std::string& flag,
                              const std::string& value) {
    const bool exact = state_exact(ts) || ts.file.meta("lora.r").empty();  // the flags as given are exact
    if (flag == "lora") return same_number(value, cfg.rank) ? "" : std::to_string(cfg.rank);
    if (flag == "lora-alpha") return same_number(value, cfg.alpha, exact) ? "" : number_text(cfg.alpha, exact);
    if (flag == "lora-dropout") return same_number(value, cfg.dropout, exact) ? "" : number_text(cfg.dropout, exact);
    LoraConfig given;
    const bool same = lora_parse_targets(value, &given).empty() && target_set(given) == target_set(cfg);
    return same ? "" : target_set(cfg);
}

void lora_load_train(LoraModel* lora, const std::string& dir, const GPT2Config& base, const TrainState* resumed) {
    const PeftConfig peft = peft_read_config(dir, base);
    const std::string config = path_join(dir, "adapter_config.json");
    const LoraConfig& c = peft.lora;
    LoraConfig run;
    if (resumed && lora_run_config(*resumed, &run)) {
        const bool exact = state_exact(*resumed);  // else 6 digits: the adapter_config.json's agree in those
        const struct {
            const char* key;
            std::string has, had;
        } keys[] = {{"r", std::to_string(c.rank), std::to_string(run.rank)},
                    {"lora_alpha", number_text(c.alpha, exact), number_text(run.alpha, exact)},
                    {"target_modules", target_set(c), target_set(run)},
                    {"use_rslora", c.rslora ? "true" : "false", run.rslora ? "true" : "false"},
                    {"lora_dropout", number_text(c.dropout, exact), number_text(run.dropout, exact)}};
        for (const auto& k : keys)
            if (k.has != k.had)
                fatal_hint("put back " + k.had + ": a resumed run keeps the adapter it trained",
                           "bad value for key %s in %s: %s disagrees with the run's train state (%s), which trained "
                           "with %s",
                           k.key, config.c_str(), k.has.c_str(), resumed->path.c_str(), k.had.c_str());
    }
    if (!(c.alpha > 0))
        fatal("bad value for key lora_alpha in %s: expected a number above 0 (the scale is alpha / r), got %g",
              config.c_str(), c.alpha);
    lora_load(lora, dir, base);
}

bool lora_run_base(const std::string& dir, std::string* path, std::string* hash) {
    const std::string state = path_join(dir, kStateFile);
    FileInfo info;
    if (!os_lstat(state, &info)) return false;  // PEFT's own directory
    SafeTensors st;
    // A train state that is there but unreadable never passes for none: that would skip the base's check.
    if (info.kind != FileKind::regular)
        fatal("bad train state (%s): not a regular file, expected the train state gpt2 train wrote", state.c_str());
    safetensors_load_header(&st, state);  // a damaged file: fatal, naming it
    if (!train_dir_is_checkpoint(dir))
        fatal("bad train state (%s): expected the train state gpt2 train wrote (its format metadata)", state.c_str());
    *path = st.meta("lora.base.path"), *hash = st.meta("lora.base.fnv1a");
    return !hash->empty();
}

void lora_check_base(const std::string& dir, const GPT2& model, const std::string& model_path, bool force, FILE* out) {
    std::string path, hash;
    if (!lora_run_base(dir, &path, &hash)) return;  // PEFT's: nothing says which base it was made on
    LoraAdapter shape;  // an adapter of another geometry is refused as such first: no flag makes it fit
    PeftConfig cfg;
    peft_read(&shape, &cfg, dir, model.cfg);
    const std::string have = train_state_params_hash(model);
    if (have == hash) return;
    if (!force)
        fatal_hint("give its base as --model " + path + ", or --force-base to apply it to this one anyway",
                   "base model mismatch (--lora-from %s): it was trained on %s, fingerprint %s; --model %s "
                   "fingerprints to %s",
                   dir.c_str(), path.c_str(), hash.c_str(), model_path.c_str(), have.c_str());
    fflush(stdout);
    fprintf(out,
            "note: --lora-from %s was trained on %s (fingerprint %s); --model %s fingerprints to %s: applied to it "
            "anyway (--force-base)\n",
            dir.c_str(), path.c_str(), hash.c_str(), model_path.c_str(), have.c_str());
}

void lora_note_new_base(const std::string& dir, const std::string& base_path, const std::string& base_hash) {
    std::string path, hash;
    if (!lora_run_base(dir, &path, &hash) || hash == base_hash) return;
    printf(
        "note: --lora-from %s was trained on %s (fingerprint %s); --model %s fingerprints to %s: this run "
        "trains it on this base\n",
        dir.c_str(), path.c_str(), hash.c_str(), base_path.c_str(), base_hash.c_str());
}

void lora_apply(GPT2* model, LoraModel* lora, const std::string& dir, int max_rows) {
    lora_load(lora, dir, model->cfg);
    lora_attach(model, lora, max_rows, false);
    const LoraConfig& c = lora->adapter.cfg;
    fprintf(stderr, "lora: %s (rank %d, alpha %g: scale %g)\n", dir.c_str(), c.rank, c.alpha, c.scale());
}

void lora_restore(TrainState* ts, LoraModel* lora, const std::string& base_path, const std::string& base_hash,
                  DataLoader* dl, LossHistory* history) {
    const std::string saved = ts->file.meta("lora.base.fnv1a");
    if (saved.empty())
        fatal("bad train state (%s): expected a LoRA run's (metadata \"lora.base.fnv1a\")", ts->path.c_str());
    const std::string recorded = ts->file.meta("lora.base.path");
    if (saved != base_hash && !recorded.empty() && path_absolute(base_path) != recorded)  // another --model given
        fatal_hint("give the base it was trained on, " + recorded +
                       ", as --model (or leave --model out), or start a "
                       "new run on this one with --lora-from " +
                       path_parent(ts->path),
                   "base model mismatch (--model %s): it is not the run's base: %s was trained on %s, fingerprint %s; "
                   "--model %s fingerprints to %s",
                   base_path.c_str(), path_parent(ts->path).c_str(), recorded.c_str(), saved.c_str(), base_path.c_str(),
                   base_hash.c_str());
    if (saved != base_hash)
        fatal_hint(
            "resume with --model pointing at the base it was trained on, or start a new run with --lora-from "
            "on this one",
            "base model changed since the checkpoint (%s): it was trained on %s, fingerprint %s; --model %s "
            "fingerprints to %s",
            ts->path.c_str(), ts->file.meta("lora.base.path").c_str(), saved.c_str(), base_path.c_str(),
            base_hash.c_str());
    adamw_prepare(&lora->opt, lora->adapter.params.size());
    const LoraAdapter& a = lora->adapter;
    if (ts->params_hash != lora_adapter_hash(a) && ts->m.numel() == a.params.size())
        fatal_hint("put back the adapter this run saved, or start a new run from this one: --lora-from DIR",
                   "adapter changed since the checkpoint (%s): its values fingerprint to %s; the train state %s was "
                   "saved with %s",
                   path_join(path_parent(ts->path), "adapter_model.safetensors").c_str(), lora_adapter_hash(a).c_str(),
                   ts->path.c_str(), ts->params_hash.c_str());
    train_state_restore_params(ts, a.params.size(), lora_adapter_hash(a), a.base, &lora->opt, dl, history);
}
