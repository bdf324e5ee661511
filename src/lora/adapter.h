// adapter.h: a LoRA adapter (Hu et al. 2021, "LoRA: Low-Rank Adaptation of Large Language Models") on GPT-2's
// linear layers: y = W x + b + scale * B (A x), with A (rank, in) and B (out, rank), stored as PEFT stores them.
// Its matrices live in one flat buffer, laid out by a table as the model's parameters are; gradients and AdamW's
// moments mirror it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/layout.h"

// The four linear layers of a GPT-2 block, by the names of HuggingFace's Conv1D modules in a block.
enum LoraTarget { kLoraAttnQKV, kLoraAttnProj, kLoraMlpFC, kLoraMlpProj, kLoraTargets };
// "attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj", indexed by LoraTarget.
extern const char* const kLoraModules[kLoraTargets];

struct LoraConfig {
    int rank = 8;            // PEFT's r
    float alpha = 8;         // PEFT's lora_alpha
    float dropout = 0;       // PEFT's lora_dropout
    bool rslora = false;     // PEFT's use_rslora: scale alpha / sqrt(rank) instead of alpha / rank
    bool target[kLoraTargets] = {true, false, false, false};  // PEFT's default for GPT-2: c_attn
    // As adapter_config.json wrote them ("c_attn", "c_proj", "attn.c_proj", ...), kept for its round trip;
    // target[] is what they select.
    std::vector<std::string> target_modules = {"c_attn"};
    double scale() const;  // alpha / rank, or alpha / sqrt(rank) with rslora
};

// The adapter of one base geometry. table[i].name is PEFT's key
// ("base_model.model.transformer.h.3.attn.c_attn.lora_A.weight"), .layer its block, .slot its LoraTarget,
// rows x cols its shape: A (rank, in), B (out, rank); layer-major, then by target, A before B.
struct LoraAdapter {
    LoraConfig cfg;
    GPT2Config base;
    std::vector<TensorInfo> table;
    std::vector<float> params;  // every matrix, at its table offset
};

// A module name (or its suffix after a '.') as PEFT's target_modules matches it: "c_proj" matches "attn.c_proj".
bool lora_module_matches(const std::string& name, const std::string& target);

// Lays out cfg's matrices over a base of geometry `base`, zeroed (cfg checked by the caller: rank in
// [1, min(in, out)] of each target).
void lora_layout(LoraAdapter* a, const LoraConfig& cfg, const GPT2Config& base);
// PEFT's init: each A uniform in [-1/sqrt(in), 1/sqrt(in)] (kaiming_uniform_ with a = sqrt(5)), each B zero,
// so the adapted model starts equal to its base.
void lora_init_random(LoraAdapter* a, uint64_t seed);
