// lora_train.cpp: a LoRA run's directory (lora.h): PEFT's two files (lora/peft.h) and the train state, which
// ties the adapter to its base by the base's fingerprint.
#include <cstdio>
#include <string>

#include "core/error.h"
#include "lora/lora.h"
#include "platform/hash.h"
#include "platform/output_files.h"
#include "platform/util.h"

namespace {

const char* const kStateFile = "train_state.safetensors";

}  // namespace

std::string lora_adapter_hash(const LoraAdapter& a) {
    return hash_hex(fnv1a(a.params.data(), a.params.size() * sizeof(float)));
}

void lora_save(const std::string& dir, const LoraModel& lora, const std::string& base_path,
               const std::string& base_hash, const DataLoader& dl, int step,
               const std::vector<std::pair<std::string, std::string>>& run_flags, const LossHistory& history,
               const std::function<void(const std::string& staging)>& extra) {
    const LoraAdapter& a = lora.adapter;
    dir_publish(dir, train_dir_is_ours, [&](const std::string& staging) {
        PeftConfig peft = lora.peft;
        peft.lora = a.cfg;
        if (peft.base_model.empty()) peft.base_model = base_path;
        peft_write(a, peft, staging);
        train_state_write(path_join(staging, kStateFile), lora.opt, a.params.size(), lora_adapter_hash(a), a.base, dl, step,
                          run_flags, history, {{"lora.base.path", base_path}, {"lora.base.fnv1a", base_hash}});
        extra(staging);
    });
}

void lora_load(LoraModel* lora, const std::string& dir, const GPT2Config& base) {
    peft_read(&lora->adapter, &lora->peft, dir, base);
}

void lora_apply(GPT2* model, LoraModel* lora, const std::string& dir, int max_rows) {
    lora_load(lora, dir, model->cfg);
    lora_attach(model, lora, max_rows, false);
    const LoraConfig& c = lora->adapter.cfg;
    fprintf(stderr, "lora: %s (rank %d, alpha %g: scale %g)\n", dir.c_str(), c.rank, c.alpha, c.scale());
}

void lora_restore(TrainState* ts, LoraModel* lora, const std::string& base_hash, DataLoader* dl,
                  LossHistory* history) {
    const std::string saved = ts->file.meta("lora.base.fnv1a");
    if (saved.empty())
        fatal("bad train state (%s): expected a LoRA run's (metadata \"lora.base.fnv1a\")", ts->path.c_str());
    if (saved != base_hash)
        fatal_hint("resume with the base it was trained on, or start a new run with --lora-from on this one",
                   "base model changed since the checkpoint (%s): it was trained on %s, fingerprint %s; --model now "
                   "fingerprints to %s",
                   ts->path.c_str(), ts->file.meta("lora.base.path").c_str(), saved.c_str(), base_hash.c_str());
    lora_prepare(lora);
    const LoraAdapter& a = lora->adapter;
    train_state_restore_params(ts, a.params.size(), lora_adapter_hash(a), a.base, &lora->opt, dl, history);
}
