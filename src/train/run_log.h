// run_log.h: the JSON-lines log of a run (train --log): one line per step {"step","loss","lr","norm","ms"}
// and per validation {"step","val_loss"}, appended through publish.h's AppendFile; read back by `gpt2 plot`.
// It does not train or draw.
#pragma once
#include <string>

#include "base/publish.h"
#include "train/train_state.h"

// What --log appends to: a missing file, or one holding JSON lines (starts with '{', ends with a newline).
extern const OutputKind kRunLogKind;

// Reads a --log file back: (step, loss) of the step lines and (step, val_loss) of the validation lines,
// each sorted by step. Other fields are ignored and blank lines skipped. A step logged twice (a resumed run
// repeats the steps after its checkpoint) keeps its later value. fatal naming the file and line for a line
// that is not a JSON object with an integer "step" and a number "loss" or "val_loss", and naming the file
// when it holds no points at all.
LossHistory run_log_read(const std::string& path);
