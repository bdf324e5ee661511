// export.h: a LoRA adapter for programs other than gpt2: llama.cpp's GGUF adapter, and the base's weights with
// the adapter merged in (W += scale B A), which every format `gpt2 export` writes can hold.
//
// `gpt2 export --model BASE --lora-from DIR --format gguf --out a.gguf` writes the GGUF adapter (llama.cpp:
// `llama-cli -m base.gguf --lora a.gguf`; node-llama-cpp: createContext({lora: {adapters: [{filePath}]}})), and
// --merge-lora --format hf, llmc or gguf the merged model; transformers loads DIR itself (PeftModel.from_pretrained).
// BASE is the base the adapter was trained on: its geometry must fit the adapter's shapes (read from headers; only
// --merge-lora loads its weights). The merge's scale is alpha / r (use_rslora: alpha / sqrt(r)). llama.cpp's own
// convert_lora_to_gguf.py transposes GPT-2's Conv1D pairs into shapes its loader refuses, so gpt2 writes the adapter
// itself. make test-ref (tests/ref_lora.sh) checks the merge against a float64 PyTorch merge and llama.cpp with base
// + adapter against llama.cpp and gpt2 on the merged model.
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
