// bench.h: the cases of `make bench` (tests/bench_main.cpp lists them in the order they run). Each case
// prints its figures as it measures them (medians and ratios, never pass/fail). A figure a later case
// compares with (bf16 against fp32, PyTorch against ours) is kept under a key for the rest of the run.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "precision/precision.h"

struct GPT2;

// Keeps value under key for the rest of this run; bench_kept returns it, or 0 when this run has not
// measured it (a case run on its own then prints its figure without the ratio).
void bench_keep(const std::string& key, double value);
double bench_kept(const std::string& key);

// bench_train.cpp (GPT-2 124M, random weights)
void bench_peak();                                    // peak GFLOP/s: fp32 FMA and bf16 dot loops
void bench_adamw_stream();  // GB/s of a loop with AdamW's memory traffic; keeps "adamw GB/s"
void bench_first_step();   // allocation, init, first step against a steady one
void bench_memory_options();  // train's memory flags on 124M: MiB allocated and ms per step of each
void bench_train_step(int B, int T, Precision prec);  // ms per step, % of peak; keeps "step <prec> BxT"
void bench_matmul(Precision prec);                    // GFLOP/s of each matmul at B=4 T=64
// bench_generate.cpp
void bench_read_bandwidth();                        // GB/s of a summing loop over 1 GiB; keeps "read GB/s"
void bench_decode(Precision prec, int prompt_len);  // decode tok/s; keeps "decode <prec> <prompt_len>"
// 1, 4, 8, 16 sequences decoded together (infer_decode): aggregate tok/s; keeps "decode together <prec> <n>"
void bench_decode_batch(Precision prec);
// Greedy decode of a 124M fp32 with its own int8 copy drafting and with a random 2-layer draft, beside plain.
void bench_decode_draft();
// The cases' 124M model: random weights (seed 1) at prec; int8 rounds its inputs to q8_0 as generate does.
void bench_build_124m(GPT2* model, Precision prec);
// For each n of counts, n sequences (sequence i's prompt 48 + 2i tokens, prefilled once) decoded together by
// infer_decode for `steps` greedy steps: the median of 3 runs' aggregate tok/s, given to `measured` at once.
void bench_decode_together(const GPT2& model, const std::vector<int>& counts, int steps,
                           const std::function<void(int n, double tok_s)>& measured);
// bench_llama.cpp: llama-bench's pp512 and tg128, ours fp32, bf16 and int8 beside llama.cpp (node-llama-cpp)
// on the same model as f32, bf16 and q8_0 GGUFs
void bench_llama();
// 1, 4, 8, 16 sequences decoded together, ours int8 beside llama.cpp's q8_0 sequences of one context
void bench_decode_batch_llama();
// bench_serve.cpp: time to first token and between tokens through serve's scheduler at 1 and 8 streams, and a
// chat's second turn prefilled alone against the whole conversation again
void bench_serve_latency(Precision prec);
// bench_busy.cpp, bench_tokenizer.cpp
void bench_busy();
void bench_tokenizer_encode();
// bench_isa.cpp: the dispatching build (ARCH=portable, $PORTABLE_BENCH) as a child process
void bench_dispatch_step();  // its fp32 step B=4 T=64 against this run's ("step fp32 4x64")
void bench_isa_paths();      // under each GPT2_ISA: that set's peak and fp32 step
// bench_torch.cpp: the same in PyTorch, with the ratio to ours when this run measured it
void bench_torch_step(int B, int T, bool autocast);
void bench_torch_decode();
