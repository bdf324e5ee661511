// train_state.h: checkpoint directories of a training run and exact resume. A checkpoint is the model in
// HuggingFace's layout (checkpoint.h) plus train_state.safetensors: AdamW m and v, the data loader's epoch
// order, position and RNG, the loss history and the run's flags, and a hash tying it to the model file.
// The directory is assembled under a temporary name and swapped in whole (dir_replace_atomic), so a
// killed run leaves the previous checkpoint intact.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "dataloader.h"
#include "model.h"
#include "optimizer.h"
#include "safetensors.h"

// Losses so far, (step, loss), for the plot; kept in the train state so a resumed run plots it all.
struct LossHistory {
    std::vector<std::pair<int, float>> train, val;
};

struct TrainState {
    SafeTensors st;
    std::vector<std::pair<std::string, std::string>> flags;  // (name, value) as the run was given them
    int step = 0;                                             // optimizer steps done
};

// Writes dir (model, train state, and plot_name's loss plot unless empty) after `step` steps.
void train_state_save(const std::string& dir, const GPT2& model, const AdamW& opt, const DataLoader& dl, int step,
                      const std::vector<std::pair<std::string, std::string>>& run_flags, const LossHistory& history,
                      const std::string& plot_name);
// Reads dir/train_state.safetensors; fatal naming the file if missing or malformed.
void train_state_read(TrainState* ts, const std::string& dir);
// Restores AdamW, the data loader and the history; fatal if the state does not belong to `model` (hash)
// or to the loader's data.
void train_state_restore(const TrainState& ts, const GPT2& model, AdamW* opt, DataLoader* dl, LossHistory* history);
