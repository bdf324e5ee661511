// lora.h: LoRA on a frozen base: y = W x + b + scale * B (A x) for each targeted linear layer. The kernels
// (through the gemm, with plain references the tests compare against), the adapters the base's linear layers
// call through core/layers.h's LinearAdapter seam, and the optimizer step over the adapter's flat buffer
// (the gradient norm, clipping and AdamW of core/optimizer.h's chunk kernels).
//
// train --model BASE --lora R trains y = W x + b + scale B (A x) (scale = alpha / r; A (r, in), B (out, r) as PEFT
// stores them, B zero at the start so step 1's loss is the base's) on the linear layers --lora-targets names (PEFT's
// module names: c_attn, c_proj = both projections, c_fc, attn.c_proj, mlp.c_proj). The base is frozen:
// gpt2_enable_training(model, true) keeps no gradient buffer, and the backward computes activation gradients only (a
// null parameter gradient is not computed). Each adapted layer's forward keeps hs = scale x A^T (B*T x r) and adds hs
// B^T; its backward adds dB += dout^T hs, dA += g^T x and dinp += g A with g = scale dout B: four small products
// through the gemm. The norm, clipping and AdamW run over the adapter's flat buffer (weight decay on A and B). --out
// holds PEFT's two files (lora/peft.h) and a train state with the base's path and fingerprint, so --resume continues
// bit for bit; generate, eval and compare take --lora-from DIR.
//
// --recompute and --recompute-blocks work as in a full run (the adapter's inputs are the recomputed ln1, ln2 and
// fch_gelu; a block's forward run again draws the same dropout masks, since a mask's key counts the linear's
// backwards, not its forwards). --precision int8 trains on a base quantized to q8_0 blocks (QLoRA's idea in GGUF's
// format): the products read the blocks (precision/gemm_copy.cpp widens B's panels for fp32's micro-kernel, so the
// numbers are those of an fp32 base holding the quantized values: tests/cli_lora.sh checks them bit for bit against
// the base's q8_0 GGUF export), and each block matrix's fp32 values are given back to the system as soon as it is
// quantized (drop_fp32 of gpt2_set_precision), which train does as each tensor is read (gpt2_set_precision_tensor),
// so the base never sits whole in fp32. --precision bf16 holds the base in bf16 the same way, on any CPU.
// Refused for now, each with its reason: --optimizer-in-backward, --optimizer-state bf16 or 8bit, --zero 1. Under
// mpirun the adapter's gradients are summed in one piece after the backward (grad_sync_init_flat): 2 ranks x B=2 give
// 1 x B=4's losses and adapter (tests/mpi.sh). make test-ref (tests/ref_lora_train.sh) checks logits, loss, every
// adapter gradient and 5 AdamW steps against a float64 PyTorch LoRA (scripts/lora_reference.py) within 1e-5.
#pragma once
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/optimizer.h"
#include "formats/train_state.h"
#include "lora/adapter.h"
#include "lora/peft.h"

// One target, N rows: hs (N, r) = scale * x (N, in) A^T, kept for the backward; out (N, out) += hs B^T.
void lora_forward(float* out, float* hs, const float* x, const float* A, const float* B, float scale, int N, int in,
                  int out_features, int rank);
// Its backward, g (N, r) a scratch: g = scale * dout B; dB (out, r) += dout^T hs; dA (r, in) += g^T x;
// dinp (N, in) += g A.
void lora_backward(float* dinp, float* dA, float* dB, float* g, const float* dout, const float* hs, const float* x,
                   const float* A, const float* B, float scale, int N, int in, int out_features, int rank);
// Plain loops in double, the same contracts.
void lora_forward_ref(float* out, float* hs, const float* x, const float* A, const float* B, float scale, int N,
                      int in, int out_features, int rank);
void lora_backward_ref(float* dinp, float* dA, float* dB, const float* dout, const float* hs, const float* x,
                       const float* A, const float* B, float scale, int N, int in, int out_features, int rank);

// PEFT's lora_dropout: during a training step each adapted linear's input to A is x * mask / (1 - p), a mask
// element kept when a hash of (seed, step, linear, micro-batch, element) is at least p: the same on any thread
// count and after a resume, so the backward recomputes it instead of keeping it. Off outside the steps
// (validation, samples, eval and generate see no dropout).
struct LoraDropout {
    float p = 0;
    uint64_t seed = 0;
    int step = -1;  // the step under way (lora_dropout_step), or -1: off
};
// Whether element i of the input with mask key `key` is kept.
bool lora_dropout_keep(uint64_t key, size_t i, float p);

// One adapted linear layer: its A and B in the adapter, their gradients, and its rows of hs.
struct LoraLinear : LinearAdapter {
    const float *A = nullptr, *B = nullptr;
    float *dA = nullptr, *dB = nullptr;
    float* hs = nullptr;       // (rows, rank): the last forward's scale * x A^T
    float* scratch = nullptr;  // (rows, rank), shared by every layer's backward
    float scale = 0;
    int in = 0, out = 0, rank = 0;
    const LoraDropout* dropout = nullptr;  // or null: none
    float *xd = nullptr, *dxd = nullptr;   // (rows, in) scratches with dropout: the masked input, its gradient
    int index = 0;                         // among the adapter's linears
    // Backwards in this step: the micro-batch, for the mask, which a forward run again before the backward
    // (memory.h's recompute_blocks) takes again. So each forward of a step has one backward (train refuses
    // --optimizer-in-backward, whose clipping runs two, with --lora).
    mutable int calls = 0;
    mutable uint64_t key = 0;              // the last forward's mask key (0: none applied)
    void forward(float* out, const float* inp, int N) const override;
    void backward(float* dinp, const float* dout, const float* inp, int N) const override;
};

// An adapter trained (or applied) on a frozen base: its parameters, gradients and AdamW state.
struct LoraModel {
    LoraAdapter adapter;
    PeftConfig peft;           // what adapter_config.json says (or will): --lora-from's keys kept as read
    std::vector<float> grads;  // laid out as adapter.params
    AdamW opt;                 // m and v laid out as adapter.params
    std::vector<float> hs, scratch, xd, dxd;
    LoraDropout dropout;
    std::vector<LoraLinear> linears;        // one per (layer, target), in table order
    std::map<size_t, const LoraLinear*> at;  // by its base weight's offset in the model's params
    std::string base_path, base_hash;        // training: the base's absolute path and fingerprint, saved with it
};

// The error for cfg over a base of geometry `base`, naming `flag`, or "": a rank in [1, the smaller side of
// every targeted matrix], at least one target.
std::string lora_check(const LoraConfig& cfg, const GPT2Config& base, const char* flag);
// Parses PEFT target names ("c_attn", "c_proj", "attn.c_proj", "mlp.c_fc", ..., comma-separated; each matched as
// PEFT does: a module's name equals it or ends with "." + it) into cfg; "" or the error naming --lora-targets.
std::string lora_parse_targets(const std::string& list, LoraConfig* cfg);
// Hooks lora's linears into model's (model->adapter_of) for forwards of up to max_rows rows (B*T, and a
// sample's context); with training, the model's base is frozen and the adapter gets gradients.
void lora_attach(GPT2* model, LoraModel* lora, int max_rows, bool training);
void lora_zero_grad(LoraModel* lora);
// Dropout for the training step `step` (its mask keys), or off (-1).
void lora_dropout_step(LoraModel* lora, int step);
// The adapter's matrices and their gradients as the optimizer walks them (core/optimizer.h: the norm, AdamW
// and its finite check, as a model's): every matrix decayed, as PEFT trains A and B with the decay of the
// optimizer it is given.
ParamSet lora_param_set(LoraModel* lora);

// The adapter's values' FNV-1a fingerprint (16 hex digits): its train state's, and what the ranks compare.
std::string lora_adapter_hash(const LoraAdapter& a);
// The directory a LoRA run saves (--out), published whole: PEFT's adapter_config.json and
// adapter_model.safetensors, and train_state.safetensors with the adapter's AdamW moments, the data's position,
// the flags, the history, the adapter's settings (lora_run_config) and the base's path and fingerprint
// (lora.base.path, lora.base.fnv1a: lora's base_path and base_hash); adapter_config.json names base_path (the
// base trained on) as its base_model_name_or_path. `extra` adds to the staging directory (the loss plot). The base
// is not written.
void lora_save(const std::string& dir, const LoraModel& lora, const DataLoader& dl, int step,
               const std::vector<std::pair<std::string, std::string>>& run_flags, const LossHistory& history,
               const std::function<void(const std::string& staging)>& extra);
// Reads the PEFT adapter in dir, made for a base of geometry `base` (fatal naming the file otherwise).
void lora_load(LoraModel* lora, const std::string& dir, const GPT2Config& base);
// lora_load for training on: fatal naming adapter_config.json for a lora_alpha not above 0 and, for the adapter
// of the run `resumed` (or null), for r, lora_alpha, target_modules, use_rslora or lora_dropout other than its
// train state's (lora_run_config), before the weights are read.
void lora_load_train(LoraModel* lora, const std::string& dir, const GPT2Config& base, const TrainState* resumed);
// The adapter settings of the LoRA run whose train state is ts: the metadata lora.r, lora.alpha, lora.targets
// (the adapted modules, kLoraModules' names), lora.rslora and lora.dropout, or for a run saved before them the
// --lora flags it recorded (and their defaults). false when ts is not a LoRA run's, or neither says.
bool lora_run_config(const TrainState& ts, LoraConfig* cfg);
// "" when `value`, given as the --lora flag `flag` (lora, lora-alpha, lora-targets, lora-dropout), says what
// cfg, the settings of the run whose train state is ts, has (targets as a set, in any order; alpha and dropout
// as the adapter's floats, or in 6 digits for a train state that stored only those); else cfg's value, as that
// flag would give it.
std::string lora_flag_differs(const TrainState& ts, const LoraConfig& cfg, const std::string& flag,
                              const std::string& value);
// The base a LoRA run of ours in dir was trained on: its train state's lora.base.path and lora.base.fnv1a;
// false for an adapter without them (PEFT's own). A train state there that is damaged or not gpt2's is fatal.
bool lora_run_base(const std::string& dir, std::string* path, std::string* hash);
// Where --lora-from `dir` meets the base `model` (its weights as loaded from model_path, fp32, before any
// --precision): when dir is a LoRA run whose base fingerprints otherwise, fatal naming both (hint: the run's
// base, or --force-base), or with `force` a note on `out` saying it is applied anyway; an adapter that does not
// fit the base's geometry is refused as peft_read refuses it, before. PEFT's adapters pass.
void lora_check_base(const std::string& dir, const GPT2& model, const std::string& model_path, bool force, FILE* out);
// The note train prints instead when --lora-from's run was trained on another base than base_hash's: the new
// run trains the adapter on on this one (and records it).
void lora_note_new_base(const std::string& dir, const std::string& base_path, const std::string& base_hash);
// Applies the PEFT adapter in dir (--lora-from of eval and generate) to model, for forwards of up to max_rows
// rows, and says so on stderr.
void lora_apply(GPT2* model, LoraModel* lora, const std::string& dir, int max_rows);
// A resumed LoRA run: fatal unless the train state's base fingerprint is base_hash (of the base at base_path)
// and its moments are this adapter's; then the moments, the data's position and the history.
void lora_restore(TrainState* ts, LoraModel* lora, const std::string& base_path, const std::string& base_hash,
                  DataLoader* dl, LossHistory* history);
