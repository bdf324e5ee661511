// hellaswag.h: HellaSwag scored the completion way llm.c's dev/data/hellaswag.py does: each of an example's
// four candidates is the tokens of ctx followed by those of " " + ending, and its loss is the model's
// cross-entropy on the ending's tokens only, summed (acc) and averaged per token (acc_norm); the prediction is
// the candidate with the lowest loss. Reads the official JSONL (ctx, endings, label; other fields ignored).
// It does not truncate: a candidate longer than the model's context is an error, as in llm.c's C loader.
// Reference: Zellers et al. 2019 (HellaSwag), https://github.com/rowanz/hellaswag.
//
// `gpt2 eval --hellaswag FILE` prints `hellaswag N examples`, then acc and acc_norm with their counts;
// --hellaswag-batch N sets the examples per forward pass (4N rows, longest first), --hellaswag-scores FILE writes
// every example's summed and mean losses and choices as JSON lines, and the tokenizer is --tokenizer DIR, else the
// model's own, else $GPT2_DATA_DIR/gpt2 or data/gpt2. tests/ref_hellaswag.sh checks the scoring against a float64
// PyTorch scorer; the figures to expect on GPT-2 124M are in tests/bench_results.md.
#pragma once
#include <string>
#include <vector>

#include "core/model.h"
#include "text/tokenizer.h"

const int kHellaSwagEndings = 4;

struct HellaSwagExample {
    int line = 0;   // 1-based line in the file
    int label = 0;  // index of the true ending
    std::string ctx;
    std::string endings[kHellaSwagEndings];
    std::vector<int> ctx_ids, ending_ids[kHellaSwagEndings];  // after hellaswag_tokenize
};

// One example's candidate losses and the choices they make (the first lowest on a tie).
struct HellaSwagScore {
    double sum[kHellaSwagEndings], mean[kHellaSwagEndings];
    int pred_sum = 0, pred_mean = 0;
};

// Parses every non-blank line of the file; fatal with one line naming the file and line number on a line
// that is not a JSON object, lacks ctx / endings / label, has endings that are not 4 strings, an empty ctx,
// or a label outside 0..3; fatal on a file without examples.
std::vector<HellaSwagExample> hellaswag_read(const std::string& path);
// Fills the token ids; fatal naming the file and line when a candidate has more than max_len tokens.
// Returns the most tokens any candidate has.
int hellaswag_tokenize(std::vector<HellaSwagExample>* examples, Tokenizer* tok, int max_len, const std::string& path);
// Bytes the model's activations take for batches of `per_batch` examples of up to max_tokens tokens.
double hellaswag_memory_bytes(const GPT2Config& cfg, int per_batch, int max_tokens);
// Scores all examples, `per_batch` of them (4 rows each, padded to the longest) per forward pass, batched in
// order of length (the longest first) and returned in file order, with a progress line on stderr (its
// running acc is over the examples done so far, in that order). fatal naming `path` and the line when a loss is not finite.
std::vector<HellaSwagScore> hellaswag_evaluate(GPT2* model, const std::vector<HellaSwagExample>& examples,
                                               int per_batch, const std::string& path);
