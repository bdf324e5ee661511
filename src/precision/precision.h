// precision.h: how a model's matmuls run, and the reduced-precision copies of its weights that this needs
// (kept in GPT2's copies, core/model.h): bf16 operands, or int8 weights in q8_0 blocks for inference.
// The kernels read the copies through gpt2_weight's Weight handle; the forward and backward (model.cpp)
// are the same code at every precision.
//
// --precision bf16 (train, eval, generate, compare) runs every matmul, attention's two products included, on
// bf16 operands with fp32 accumulation (AVX512_BF16's vdpbf16ps, or AMX tiles: bf16.h's bf16_amx). The rest
// stays fp32: the master weights and AdamW's moments, LayerNorm's statistics, softmax and log-sum-exp, the
// residual stream and the loss. Operands are rounded to nearest even as they are packed; the bf16 copy of the
// weights is refreshed in the same pass as each AdamW update, and decoding streams it at half fp32's bytes per
// token. Without AVX512_BF16 the command says so in one note: line and runs fp32, the default, which stays
// exact. For a LoRA base (train --lora, and --lora-from in eval and generate, so they give the run's numbers)
// bf16 means the frozen base held as bf16 instead, on any CPU (lora/lora.h).
//
// --precision int8 (generate, eval; in train only a LoRA run's frozen base: it is for running a model, not
// for training one) quantizes the weight matrices at load as llama.cpp's q8_0 does: each run of 32 weights
// along a row becomes 32 signed bytes and one fp16 scale (the largest |w| / 127), w = scale x byte. Each
// matmul's input is rounded the same way (gpt2_round_inputs_q8; a LoRA base keeps fp32 inputs); sums,
// LayerNorm, softmax and the KV cache stay fp32, and each block's product is summed in integers (q8_dot.h).
// The weights hold exactly what a --dtype q8_0 GGUF export stores (eval --precision int8 gives one loss on the
// model and on that file). A matrix whose rows are not a multiple of 32 (none at GPT-2's sizes), or with a
// weight past q8_0's range, stays fp32; stderr's "precision: int8, N of M weight matrices ..." says how many.
#pragma once
#include <cstdint>
#include <map>
#include <vector>

#include "core/model.h"
#include "precision/bf16.h"
#include "precision/half.h"

// How a model's matmuls run: fp32; bf16 operands with fp32 accumulation; or kInt8, weights quantized once
// to q8_0 blocks (inputs fp32, or rounded to q8_0 blocks too: gpt2_round_inputs_q8; sums fp32). An int8
// model's fp32 weights hold the quantized values, and a Weight carries its q8 copy, which the products read.
enum class Precision { kFp32, kBf16, kInt8 };

// A weight's copies in a reduced precision (core/layers.h's Weight::copy points to one): bf16, the same
// values rounded, which bf16's gemm (bf16_gemm_operands; a frozen base's: copy_gemm_operands) and decoding's
// mat-vec read; q8, the weight as q8_0 blocks (half.h) whose values the fp32 ones equal exactly (the model
// quantized them in place), read by decoding's matrix-vector product (inference/matvec.h's matvec_rows). A further precision adds
// its copy here and its mat-vec in inference/matvec.cpp; no caller changes.
struct WeightCopy {
    const uint16_t* bf16 = nullptr;  // or null
    const int8_t* q8 = nullptr;      // (OC, IC) values, or null
    const uint16_t* q8_d = nullptr;  // (OC, IC / kQ8Block) fp16 scales
    bool fp32_dropped = false;       // the fp32 values' memory was given back (drop_fp32): only q8 or bf16 holds them
    bool q8_inputs = false;          // q8: the products round their input to q8_0 blocks (gpt2_round_inputs_q8)
    const uint32_t* q8_tiles = nullptr;  // q8 also laid out for several rows' products (inference/infer.h's
                                         // infer_keep_q8_tiles), or null
};

// What gpt2_set_precision keeps in model->copies.
struct PrecisionCopies : ModelCopies {
    Precision precision = Precision::kFp32;
    std::vector<uint16_t> params16;  // kBf16: params rounded to bf16, same layout (a frozen base's: its block
                                     // matrices alone, from params16_from); else empty
    size_t params16_from = 0;
    // kInt8: the quantized matrices as q8_0 blocks, values at their offset in params and fp16 scales from
    // ceil(offset / kQ8Block) in params8_d. Else both empty.
    std::vector<int8_t> params8;
    std::vector<uint16_t> params8_d;
    std::vector<uint32_t> params8_tiles;  // kInt8, once infer_keep_q8_tiles laid them out: every q8 copy's tiles
    std::map<size_t, WeightCopy> at;  // by a tensor's offset in params: the copies of those it has
    bool frozen = false;              // drop_fp32: the weights are never updated
    size_t fp32_given_back = 0;       // drop_fp32: bytes of fp32 values given back to the system
    int kept = 0;                     // matrices the copies hold (gpt2_set_precision's count)

    Weight weight(const float* w, size_t offset) const override;
    const GemmOperands* operands() const override;
    void params_updated(const float* params, size_t offset, size_t n) override;
};

KERNELS_BEGIN
// The operands (core/gemm.h's ops) of a product with a weight that its q8_0 blocks or bf16 values alone hold,
// its WeightCopy given as the gemm's B_copy: fp32's, with B's panels widened from the copy (gemm_copy.cpp), so
// the same numbers as on the quantized or rounded fp32 values, which need not be kept.
const GemmOperands* copy_gemm_operands();
// int8 inference's operands (gpt2_round_inputs_q8; gemm_q8.cpp), for the forward's x W^T alone, W's copy given
// as B_copy: x's rows rounded to q8_0 blocks as they are packed, each block's product in integers, as
// decoding's matvec_q8q8 computes a row. A block q8_0 cannot hold makes its row's outputs NaN.
const GemmOperands* q8_gemm_operands();
KERNELS_END

// Sets how the matmuls run: kFp32 (exact), or kBf16, bf16 operands with fp32 accumulation (core/gemm.h;
// fp32 everywhere else: master weights, AdamW, LayerNorm statistics, softmax, residual stream, loss). kBf16
// (but a frozen base's, below) needs bf16_supported() (asserted) and fills params16 from params, so call it
// once the weights are in place (loaded or initialised); gpt2_params_updated keeps it current from then on.
// kInt8 is for inference and a frozen base (LoRA): it quantizes every matrix whose rows are a multiple of
// kQ8Block (all of them at GPT-2's sizes; the rule GGUF's q8_0 export follows) to q8_0 blocks in place:
// params then hold the quantized values, which every matmul uses; the products read the blocks
// (copy_gemm_operands, and decoding's mat-vecs; with gpt2_round_inputs_q8, q8_gemm_operands and matvec_q8q8).
// A matrix with a value non-finite or past q8_0's range
// (|x| > 65504 * 127) stays fp32. Returns the number of matrices quantized. Irreversible: setting another
// precision afterwards drops the int8 copy but keeps the quantized values.
// drop_fp32 (a frozen base: inference, or LoRA's): each block matrix's fp32 values are given back to the
// system as soon as it is quantized (not wte and wpe, whose rows the embedding reads), so the weights take
// about a quarter of their fp32 memory (int8; bf16: half) and never more than it; gpt2_weight then hands them
// out without fp32 values (null), and nothing may read them from params (saving, exporting, training them).
// kBf16 with drop_fp32 is a frozen base held as bf16, on any CPU: every value is rounded to bf16 in place, the
// block matrices are kept as bf16 alone (half their fp32 memory) and every product is fp32 on the rounded
// values (as bitsandbytes computes in float32 on a quantized base). Returns the number of matrices kept so.
int gpt2_set_precision(GPT2* model, Precision prec, bool drop_fp32 = false);
// gpt2_set_precision a tensor at a time, for a load that hands each over as soon as its values are in params
// (formats/checkpoint.h's loaded): the first call makes the copies, each call quantizes or rounds t into them
// (with drop_fp32, giving its fp32 values back at once), and once every tensor of the table has been given, in
// any order, the model is as gpt2_set_precision(model, prec, drop_fp32) leaves it. The same prec and drop_fp32
// at every call, each tensor once; kFp32 does nothing. A frozen base so never holds all its fp32 values at once.
void gpt2_set_precision_tensor(GPT2* model, const TensorInfo& t, Precision prec, bool drop_fp32);
// int8 inference as llama.cpp runs a q8_0 model: after gpt2_set_precision(kInt8), every product with a q8_0
// weight rounds its input to q8_0 blocks too (each row's 32 values a block, half.h's q8_round_input_block):
// decoding's mat-vecs and the gemm of prefill and eval sum the blocks' products in integers (matvec.h's
// matvec_q8q8, q8_gemm_operands). Not for a frozen base in training, whose products
// keep fp32 inputs (as bitsandbytes computes), nor for eval or generate of a LoRA run's base, which reproduce it.
void gpt2_round_inputs_q8(GPT2* model);
// The bytes of a model's parameters with drop_fp32 (gpt2_set_precision): q8_0 blocks for every value (int8's
// copy spans params) or bf16 for the block matrices', fp32 for what stays (wte, wpe, biases and LayerNorms).
double gpt2_base_bytes(const GPT2Config& cfg, Precision prec);
// The model's copies as gpt2_set_precision made them, or null (fp32: it keeps none).
const PrecisionCopies* gpt2_precision_copies(const GPT2& model);
// How the model's matmuls run (kFp32 when it keeps no copies).
Precision gpt2_precision(const GPT2& model);
