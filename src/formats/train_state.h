// train_state.h: checkpoint directories of a training run and exact resume. A checkpoint is the model in
// HuggingFace's layout (checkpoint.h) plus train_state.safetensors: AdamW m and v, the data loader's epoch
// order, position and RNG, the loss history, the run's flags, and hashes tying it to the model file, the
// model's geometry and the training data. The directory is published whole (dir_publish), so a killed run
// leaves the previous checkpoint intact; files in it that gpt2 did not write stay where they are.
//
// --resume DIR continues bit for bit, from the same shard, window and RNG state, and refuses what changed: the data
// (each shard's fingerprint, formats/token_files.h, and a hash of all its tokens and mask flags taken in the pass
// that checks every id at open: a shard added, removed, reordered, resized or changed anywhere is named in one line),
// the model's geometry (e.g. an edited n_head), the flags that shape the model or the data order (compared as
// numbers: -B 08 is -B 8), a changed --loss-on, and a corrupt train state. Another rank count is fitted to the global
// batch (-B x --grad-accum x ranks). A flag given again replaces the stored one with a note: naming both. Train
// states from before the whole-content hash check the fingerprints alone; format 1's (one file, hashed whole) still
// resume. `gpt2 info --model DIR` shows a checkpoint's step, tokens, last losses, precision, data, flags and the
// command that continues it.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/safetensors.h"
#include "core/dataloader.h"
#include "core/model.h"
#include "core/optimizer.h"

// Where a training loader is in its data, as a checkpoint keeps it: DataLoader's position fields (its
// epoch's shard order and the current shard in it, that shard's window order, stored or computed, and the
// next index in it, and the RNG that shuffles what comes next), taken between steps. Empty orders mean no
// batch was drawn yet.
struct DataLoaderState {
    std::vector<uint32_t> shard_order;
    size_t shard_pos = 0;
    std::vector<uint32_t> order;
    uint64_t order_key = 0;
    size_t order_windows = 0;
    int epoch = -1;
    size_t pos = 0;
    Rng rng;
};
DataLoaderState dataloader_state(const DataLoader& dl);  // between optimizer steps (micro 0)
// Puts dl where s says; s must fit dl's shards (train_state_restore checks a state read from a file).
void dataloader_restore(DataLoader* dl, const DataLoaderState& s);

// Losses so far, (step, loss), for the plot; kept in the train state so a resumed run plots it all.
struct LossHistory {
    std::vector<std::pair<int, float>> train, val;
};

// Everything train_state.safetensors holds, validated for consistency on its own (train_state_parse);
// train_state_restore then checks it against the model and the data.
struct TrainState {
    std::string path;
    std::vector<std::pair<std::string, std::string>> flags;  // (name, value) as the run was given them
    int step = 0;                                            // optimizer steps done
    int adamw_step = 0;  // AdamW's updates: step less the steps skipped as they scored no target (loss masks)
    // AdamW's moments, F32, BF16 (--optimizer-state bf16) or U8 (8bit, with each block's steps), left in the
    // file (whose header, or image when parsed from one, `file` holds) until train_state_restore reads them a
    // piece at a time
    SafeTensors file;
    StTensor m, v, m_step, v_step;
    DataLoaderState loader;                                  // order: a permutation of the windows
    LossHistory history;
    std::string params_hash, data_hash, geometry;  // data_hash and geometry are empty in format 1 files
    int format = 3;                                // 1, 2: one data file; 3: shards
    size_t data_shards = 1;                        // format 3: shards the run was trained on
};

// The files train writes into a checkpoint directory (and the temporary names they pass through).
bool train_dir_is_ours(const std::string& name);
// True when `dir` holds a train_state.safetensors of ours (checked from its header, never fatal).
bool train_dir_is_checkpoint(const std::string& dir);
// The step such a checkpoint was saved at (0 if its header does not say), or -1 when it is none.
int train_dir_step(const std::string& dir);
// The command that continues the run in `dir`, trained on `ranks` processes: `./gpt2 train --resume DIR` (the
// binary as run: util.h's program_name), or under mpirun `mpirun -np N ./gpt2-mpi train --resume DIR`.
std::string train_resume_command(const std::string& dir, int ranks);
// Checks an --out directory before the first step: refuses a symbolic link, a file, and a non-empty
// directory that is not a training checkpoint; restores a replacement interrupted between its two
// renames. `flag` names the flag in errors.
void train_dir_check(const std::string& dir, const char* flag);
// Writes dir (model, train state, and whatever `extra` writes into the staging directory it is given,
// e.g. the loss plot) after `step` steps. fatal, leaving the previous checkpoint as it was, if anything is
// not finite or a write fails.
void train_state_save(const std::string& dir, const GPT2& model, const AdamW& opt, const DataLoader& dl, int step,
                      const std::vector<std::pair<std::string, std::string>>& run_flags, const LossHistory& history,
                      const std::function<void(const std::string& staging)>& extra);
// The train state file alone, at `path` (in a staging directory): the moments of the n parameters opt updates,
// their hash, the geometry, the loader, the flags and the history; `meta` adds metadata (lora/: the base's).
void train_state_write(const std::string& path, const AdamW& opt, size_t n, const std::string& params_hash,
                       const GPT2Config& cfg, const DataLoader& dl, int step,
                       const std::vector<std::pair<std::string, std::string>>& run_flags, const LossHistory& history,
                       const std::vector<std::pair<std::string, std::string>>& meta);
// Validates a parsed train_state.safetensors on its own: format, ranges, a permutation for the loader's
// order, moments of one size and dtype, the history. false with a one-line message otherwise. (The moments'
// values are checked as train_state_restore reads them.)
bool train_state_parse(const SafeTensors& st, TrainState* ts, std::string* err);
// Reads and parses dir/train_state.safetensors (all but the moments); fatal naming the file if missing or
// malformed.
void train_state_read(TrainState* ts, const std::string& dir);
// Restores AdamW (its moments read from the file a few MiB at a time straight into opt's, in opt's
// precision: fp32 moments are rounded to nearest for a bf16 state, bf16 ones widened exactly for an fp32
// one; only opt's range, all of the parameters or a ZeRO-1 slice), the data loader and the history; fatal
// if the state does not belong to `model` (parameters, geometry) or to the loader's data (window count,
// content hash), or a moment is not finite (or v negative).
void train_state_restore(TrainState* ts, const GPT2& model, AdamW* opt, DataLoader* dl, LossHistory* history);
// The same for the n parameters (hashed to params_hash, of a model of geometry cfg) that opt, its range set,
// updates: a LoRA adapter's (lora/).
void train_state_restore_params(TrainState* ts, size_t n, const std::string& params_hash, const GPT2Config& cfg,
                                AdamW* opt, DataLoader* dl, LossHistory* history);
// A loader state read from a train state, consistent on its own: both orders permutations (or a computed
// window order), positions inside them, epoch -1 exactly when there are no orders, a non-zero RNG state.
// false with a message otherwise.
bool dataloader_state_valid(const DataLoaderState& s, std::string* err);
// FNV-1a hash of a model's parameters or of all a loader's tokens (format 2's data hash), and the cheap
// hash of the loader's shard fingerprints format 3 records, as 16 hex digits.
std::string train_state_params_hash(const GPT2& model);
std::string train_state_data_hash(const DataLoader& dl);
std::string train_state_shards_hash(const DataLoader& dl);
