// setup.h: a `train --lora` run's flags and its set-up: the flags it declares, refuses and, resumed, keeps,
// and the adapter it starts from (resumed, --lora-from's or new), hooked into the frozen base.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "formats/train_state.h"
#include "lora/lora.h"
#include "platform/args.h"

// --lora, --lora-alpha, --lora-dropout, --lora-targets and --lora-from, as train's flag table lists them.
constexpr int kLoraTrainFlagCount = 5;
extern const CliFlag kLoraTrainFlags[kLoraTrainFlagCount];
// --lora, --lora-alpha, --lora-targets and --lora-dropout: the adapter's own, which a resumed run keeps.
bool lora_is_adapter_flag(const std::string& name);
// --lora trains an adapter on a frozen --model, in one process, with fp32 AdamW state after the backward: fatal
// on a flag it cannot combine with yet (each naming why), on a bad --lora value, or on an --out (`out`) where the
// save would replace the --lora-from adapter. args: the merged flags; given: those on the command line.
void lora_check_flags(const CliArgs& args, const CliArgs& given, const std::string& resume_dir, const std::string& out);
// A resumed run (`lora_run`: a LoRA run's train state) given an adapter flag again: fatal unless it says what the
// run's adapter has (its targets in any order), and always for a run that was not a LoRA run.
void lora_check_resumed_flags(const CliArgs& given, const TrainState& resume, bool lora_run);
// The adapter of a --lora run: the resumed one (resume_dir, its train state `resume`), --lora-from's, or PEFT's init
// for the flags' rank, alpha and targets from `seed`; hooked into model for forwards of up to `rows` rows, whose
// weights are then frozen, with the base's path and fingerprint (base_hash: train_state_params_hash of its fp32
// values as loaded, which int8 or bf16 has since changed) recorded. Says what it trains in one line.
std::unique_ptr<LoraModel> lora_setup(GPT2* model, const CliArgs& args, const std::string& resume_dir,
                                      const TrainState* resume, int rows, uint64_t seed, const std::string& base_hash);
