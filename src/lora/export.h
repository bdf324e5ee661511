// export.h: a LoRA adapter for programs other than gpt2: llama.cpp's GGUF adapter, and the base's weights with
// the adapter merged in (W += scale B A), which every format `gpt2 export` writes can hold.
#pragma once
#include <string>

#include "core/model.h"
#include "lora/adapter.h"

// Writes `a` as a GGUF LoRA adapter llama.cpp loads beside its base (llama-adapter.cpp): general.type
// "adapter", general.architecture "gpt2", adapter.type "lora", adapter.lora.alpha (FLOAT32), tensors
// "blk.N.attn_qkv.weight.lora_a" / ".lora_b" holding PEFT's A and B byte for byte (ggml's ne [in, r] and
// [r, out]), F32. llama.cpp scales by alpha / rank: an rslora adapter is written with alpha x sqrt(rank).
// Replaces only a GGUF adapter gpt2 wrote; fatal for an alpha llama.cpp would read as "no scale" (0).
void lora_save_gguf(const LoraAdapter& a, const std::string& path, const char* flag);
// model's weights += scale B A for every matrix of `a` (the same geometry), each sum in double.
void lora_merge(GPT2* model, const LoraAdapter& a);
