// run_log.h: the JSON-lines log of a run (train --log): one line per step {"step","loss","lr","norm","ms",
// "tokens"} ("loss" null, with "skipped", for a step whose batch scored no token: no point on a plot) and per
// validation {"step","val_loss","tokens"} ("tokens": trained on by that step; logs before it lack it),
// appended through output_files.h's AppendFile; read back by `gpt2 plot`. It does not train or draw.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "platform/output_files.h"
#include "formats/train_state.h"

// What --log appends to: a missing file, or one holding JSON lines (starts with '{', ends with a newline).
extern const OutputKind kRunLogKind;

// A log read back: (step, loss) and (step, val_loss) as LossHistory, and the tokens of each point.
struct RunLog : LossHistory {
    std::vector<int64_t> train_tokens, val_tokens;  // parallel to train and val; -1 where a line has none
    size_t line_without_tokens = 0;                 // the first point's line without "tokens"; 0 if none
};

// Reads a --log file back: the step lines and the validation lines, each sorted by step. Other fields are
// ignored and blank lines skipped. A step logged twice (a resumed run repeats the steps after its
// checkpoint) keeps its later value. fatal naming the file and line for a line that is not a JSON object
// with an integer "step" and a number "loss" or "val_loss" (and "tokens", if there, an integer >= 0), and
// naming the file when it holds no points at all.
RunLog run_log_read(const std::string& path);
