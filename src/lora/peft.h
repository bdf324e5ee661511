// peft.h: a LoRA adapter as HuggingFace's PEFT saves one for GPT-2: a directory holding adapter_config.json
// (its LoraConfig: keys sorted, indent 2, no final newline) and adapter_model.safetensors (F32, PEFT's key
// names "base_model.model.transformer.h.N.attn.c_attn.lora_A.weight", metadata {"format": "pt"}, tensors in
// the safetensors library's order: by name). Read tolerantly (keys that do not change the math are ignored and
// kept), refusing what gpt2 does not compute; a directory read and written again has the same bytes.
// target_modules match by suffix as PEFT's do (c_proj is both projections). `export --format peft` (F16 or BF16 in,
// F32 out) writes only a new or empty directory.
#pragma once
#include <string>

#include "core/json.h"
#include "lora/adapter.h"

struct PeftConfig {
    LoraConfig lora;
    std::string base_model;  // base_model_name_or_path; "" writes null
    Json kept;               // the file's keys as read (an OBJECT, or NUL for a new adapter), written back as read
};

// Reads and checks DIR/adapter_config.json for a base of geometry `base`: fatal, one line naming the file and
// the key, for a missing or malformed file, a rank that does not fit the base's matrices, targets gpt2 cannot
// adapt (lm_head, embeddings, some layers only), and settings that change the math (bias, modules_to_save,
// rank_pattern/alpha_pattern, use_dora, ...).
PeftConfig peft_read_config(const std::string& dir, const GPT2Config& base);
// Reads DIR (both files) into a, laid out by lora_layout over `base`: fatal naming the file for a missing or
// extra tensor, a shape that does not fit, a dtype other than F32, F16 or BF16, a non-finite value.
void peft_read(LoraAdapter* a, PeftConfig* cfg, const std::string& dir, const GPT2Config& base);
// adapter_config.json's text, as PEFT writes it: the long-standing keys from cfg.lora, the rest as read.
std::string peft_config_json(const PeftConfig& cfg);
// Writes adapter_config.json and adapter_model.safetensors into the existing directory dir, which holds
// neither (a staging directory: a checkpoint's, or peft_export's). fatal if a value is not finite.
void peft_write(const LoraAdapter& a, const PeftConfig& cfg, const std::string& dir);
// `gpt2 export --format peft`: publishes the directory `out` whole; `out` must be absent or empty (nothing in
// PEFT's files says who wrote them, so none is ever replaced).
void peft_export(const LoraAdapter& a, const PeftConfig& cfg, const std::string& out);
