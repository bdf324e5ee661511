// loss_mask.h: a loss mask beside a token file, for answer-only loss on instruction data (tokenize
// --instructions writes them, formats/token_files.h reads them). X.mask sits beside X.bin; it does not end in
// .bin, so llm.c's globs of token files ('*_train_*.bin') never pick it up, and llm.c reads X.bin as ever.
// Layout, in llm.c's spirit: 256 int32 of header: magic 20261126, version 1, the token count, the token file's
// fingerprint (tokenfile_fingerprint, its 64 bits as two int32, low half first) that ties the mask to its file,
// the -T it was packed for (0: not packed), the rest zero; then one byte per token: 1 when the token is scored
// as a target (it is predicted from the tokens before it), 0 when not (a prompt, padding).
//
// train and eval use a shard's mask when it has one (--loss-on answer, the default; --loss-on all ignores masks and
// scores every token, exactly as without them) and refuse a mask that does not match its token file; masks that score
// nothing, and anything at X.mask that is not a mask (a directory, a dangling link), are errors. The loss is the mean
// over the step's scored targets, however they fall into micro-batches (--grad-accum) and ranks, as transformers
// computes it since 4.46: each micro-batch's mean loss and gradients are scaled by its share of them (nanoGPT's
// per-micro-batch mean would weigh a window with one answer token as much as a full one). Validation and eval
// --batches N weigh each batch by its scored targets the same way, and train's val line says how many were scored. A
// resume refuses changed masks, as changed data, and a changed --loss-on. Training with another -T than a mask was
// packed for is allowed, with a note: (examples are then split at window starts). gpt2-core reads no masks.
#pragma once
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "platform/output_files.h"

const int kLossMaskMagic = 20261126;
const int kLossMaskVersion = 1;

// X.bin -> X.mask (any other name: NAME.mask).
std::string lossmask_path(const std::string& token_path);
// Validates a mask image of n bytes against its token file (`tokens` tokens, fingerprint as 16 hex digits):
// false with a one-line message naming `where` and what was expected on any defect.
bool lossmask_check(const uint8_t* data, size_t n, size_t tokens, const std::string& fingerprint,
                    const std::string& where, std::string* err);
// Writes the mask of a token file (staged, replacing only a mask file); publish false leaves it staged, returned.
std::unique_ptr<OutputFile> lossmask_write(const std::string& path, const std::vector<uint8_t>& mask,
                                           const std::string& fingerprint, int T, bool publish = true);
extern const OutputKind kLossMaskKind;  // what a mask output may replace: a loss mask

// Examples packed into the loader's windows (core/dataloader.h: window i covers tokens [i*T, i*T + T], its
// targets i*T + 1 .. i*T + T). Each window's slot [i*T, i*T + T) starts with <|endoftext|> (the previous window's
// last target, not scored unless it closes an example of T tokens; it stands before the example as the document
// separator llm.c puts there), then whole examples, each ending with its own <|endoftext|> (scored), then padding <|endoftext|> (not
// scored) to T. The examples are chosen by best fit over a look-ahead of the next kPackLookahead examples in
// input order, refilled as each one is placed: the longest that fits the window's room, the first of equals; a
// window closes when none fits. An example longer than T - 1 starts a slot of its own as soon as the window open
// when it came closes, and runs on into the next ones (each of its tokens is still a target once, its context cut at
// window starts): split when longer than T. One of exactly T tokens (or a multiple of T) fills its windows' targets:
// its closing <|endoftext|> (scored) is the next slot's first token, and that slot takes the next examples (no
// padding window). A last <|endoftext|> closes the file, so its last window has its T + 1 tokens.
// The order is deterministic: the same examples give the same files.
const size_t kPackLookahead = 256;
struct PackedExample {
    std::vector<uint16_t> tokens;
    std::vector<uint8_t> scored;  // per token, 1 = scored as a target
};
struct PackStats {
    size_t examples = 0, example_tokens = 0, scored = 0, written = 0, windows = 0, split = 0;
};

// Packs examples as they come into a staged token file and its loss mask beside it (lossmask_path), writing
// each window as it fills. Memory: the look-ahead's examples, one window (T + 1 tokens, 3 bytes each) and at
// most 4 MiB of the token file's first and last bytes for its fingerprint, whatever the number of windows.
class PackWriter {
public:
    PackWriter(const std::string& token_path, int T, int eot);
    void add(PackedExample e);
    // Places what the look-ahead holds, closes the file and fills in both headers; the two stay staged
    // (returned, the mask first) for the caller to publish with others.
    std::vector<std::unique_ptr<OutputFile>> finish();
    const PackStats& stats() const { return stats_; }
    const std::string& path() const { return path_; }

private:
    void place_one();
    void put(uint64_t seq);
    void emit(uint16_t token, uint8_t scored);
    void pad_to_slot();
    void flush();
    std::string path_;
    size_t T_;
    uint16_t eot_;
    std::map<uint64_t, PackedExample> pending_;      // the look-ahead, by arrival
    std::set<std::pair<size_t, uint64_t>> fitting_;  // (length, ~seq) of those of at most T - 1 tokens
    std::deque<uint64_t> long_;                      // the others, in order
    uint64_t next_seq_ = 0;
    bool slot_open_ = false;
    size_t room_ = 0;                                 // of the open slot
    std::vector<uint16_t> window_;                    // tokens not yet written
    std::vector<uint8_t> window_mask_;
    std::vector<uint8_t> head_, tail_;                // the token bytes' first 2 MiB and last ones, for the fingerprint
    std::unique_ptr<OutputFile> tokens_, mask_;
    PackStats stats_;
};
