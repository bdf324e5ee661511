// adapter.cpp: see adapter.h.
#include "lora/adapter.h"

#include <cmath>

#include "core/rng.h"

const char* const kLoraModules[kLoraTargets] = {"attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"};

double LoraConfig::scale() const { return rslora ? alpha / std::sqrt((double)rank) : (double)alpha / rank; }

bool lora_module_matches(const std::string& name, const std::string& target) {
    return name == target || (name.size() > target.size() &&
                              name.compare(name.size() - target.size() - 1, std::string::npos, "." + target) == 0);
}

void lora_layout(LoraAdapter* a, const LoraConfig& cfg, const GPT2Config& base) {
    a->cfg = cfg;
    a->base = base;
    a->table.clear();
    const size_t C = base.channels;
    const size_t in[kLoraTargets] = {C, C, C, 4 * C}, out[kLoraTargets] = {3 * C, C, 4 * C, C};
    size_t offset = 0;
    for (int l = 0; l < base.num_layers; l++)
        for (int k = 0; k < kLoraTargets; k++) {
            if (!cfg.target[k]) continue;
            for (int is_b = 0; is_b < 2; is_b++) {
                TensorInfo t;
                t.hf_name =
                    "h." + std::to_string(l) + "." + kLoraModules[k] + (is_b ? ".lora_B.weight" : ".lora_A.weight");
                t.name = "base_model.model.transformer." + t.hf_name;
                t.rows = is_b ? out[k] : (size_t)cfg.rank;
                t.cols = is_b ? (size_t)cfg.rank : in[k];
                t.offset = offset, t.decay = true, t.layer = l, t.slot = k;
                offset += t.numel();
                a->table.push_back(t);
            }
        }
    a->params.assign(offset, 0.0f);
}

void lora_init_random(LoraAdapter* a, uint64_t seed) {
    Rng rng(seed);
    for (const TensorInfo& t : a->table) {
        const bool is_b = t.name.find(".lora_B.") != std::string::npos;
        const float bound = 1.0f / std::sqrt((float)t.cols);
        for (size_t i = 0; i < t.numel(); i++)
            a->params[t.offset + i] = is_b ? 0.0f : (2.0f * rng.uniform() - 1.0f) * bound;
    }
}
