// tokenizer.h: GPT-2's byte-level BPE: load encoder.json + vocab.bpe (or HuggingFace's vocab.json +
// merges.txt), encode text to ids with GPT-2's regex pre-tokenizer, decode ids to bytes, and a streaming
// decoder that only emits whole UTF-8 characters. encode treats the text `<|endoftext|>` as ordinary text
// (like tiktoken's encode_ordinary); callers insert kTokenizerEot themselves. Invalid UTF-8 bytes are
// encoded too: each is one pre-tokenizer character that is neither letter, number nor space.
// Letters, numbers and spaces are Unicode 16.0's, as in OpenAI's tiktoken, which `make test-ref` checks we
// match id for id (tests/ref_tokenizer.sh). Reference: OpenAI's gpt-2/src/encoder.py.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

const int kTokenizerEot = 50256;  // <|endoftext|>; tokenizer_load checks the vocabulary agrees

struct TokenizerMerge {
    int rank;    // line order in the merges file; lower merges first
    int merged;  // id of the concatenation
};

struct Tokenizer {
    std::string dir;
    int vocab_size = 0;
    std::vector<std::string> token_bytes;                 // id -> raw bytes
    int byte_ids[256] = {0};                              // single-byte tokens
    std::unordered_map<uint64_t, TokenizerMerge> merges;  // key (left << 32) | right
    // Pieces already encoded; bounded (cleared when it grows past a limit) so huge inputs cannot
    // exhaust memory. 65,536 pieces (about 8 MB) encode faster than 1M (slower to fill and clear) and than
    // 32K (tests/bench_results.md).
    std::unordered_map<std::string, std::vector<int>> cache;
    size_t cache_max_entries = 1 << 16;
    // Scratch for the merge loop, reused across pieces to avoid allocations.
    std::vector<int> scratch_ids, scratch_next, scratch_prev;
    std::vector<uint64_t> scratch_heap;
};

// Loads from `dir`; fatal with a one-line error naming the file on missing or corrupt files.
void tokenizer_load(Tokenizer* tok, const std::string& dir);
// Builds tok from a vocabulary spelled as GPT-2's files spell it (tokens[id], as tokenizer_spelling) and merge
// rules "left right" in rank order, with tokenizer_load's checks; `where` names the source (tok->dir too).
// A vocabulary of 50256 tokens or fewer (a model's first V of GPT-2's) may lack <|endoftext|>.
void tokenizer_from_spellings(Tokenizer* tok, const std::vector<std::string>& tokens,
                              const std::vector<std::string>& merges, const std::string& where);
// The tokenizer of a model whose vocabulary is tok's first V tokens: their spellings, and the merges (rank
// order, "left right") whose two sides and result all lie below V. What GGUF and HuggingFace exports store.
void tokenizer_spellings(const Tokenizer& tok, int V, std::vector<std::string>* tokens,
                         std::vector<std::string>* merges);
// tokenizer_load from `dir` (tokenizer_default_dir() when empty), then checks it has `model_vocab` tokens:
// fatal naming the directory otherwise, with a `hint:` line when hint is non-empty.
void tokenizer_load_for_model(Tokenizer* tok, const std::string& dir, int model_vocab, const std::string& hint);
// The check of tokenizer_load_for_model alone: fatal naming tok.dir unless it has `model_vocab` tokens.
void tokenizer_check_vocab(const Tokenizer& tok, int model_vocab, const std::string& hint);
// Non-const because of the piece cache.
std::vector<int> tokenizer_encode(Tokenizer* tok, const std::string& text);
// Raw bytes (not necessarily valid UTF-8); an id out of range is fatal and names the id.
std::string tokenizer_decode(const Tokenizer& tok, const std::vector<int>& ids);
// A token's bytes as GPT-2's files spell them (encoder.json, vocab.bpe, GGUF's tokenizer.ggml.tokens): each
// byte one printable character, UTF-8 encoded.
std::string tokenizer_spelling(const std::string& bytes);
// The merge rules in rank order: (left id, right id).
std::vector<std::pair<int, int>> tokenizer_merge_pairs(const Tokenizer& tok);
// True when `dir` holds encoder.json + vocab.bpe or vocab.json + merges.txt (not checked for content).
bool tokenizer_files_present(const std::string& dir);
// $GPT2_DATA_DIR/gpt2 when that variable is set and non-empty, else data/gpt2.
std::string tokenizer_default_dir();
// A place to cut text[0, n) so that encoding the two sides separately gives the ids of the whole: the
// highest p in (lo, hi] (hi < n) where an ASCII whitespace byte follows a character that is not
// whitespace. No pre-tokenizer piece spans such a point (pieces hold whitespace only before their
// non-whitespace characters). 0 when there is none.
size_t tokenizer_cut_before(const char* text, size_t n, size_t lo, size_t hi);
// GPT-2's pre-tokenizer alone: the pieces BPE runs on, concatenating to `text`. For tests and debugging.
std::vector<std::string> tokenizer_pretokenize(const std::string& text);

// Streaming decode for generation: push() returns the bytes that end on a complete UTF-8 character and
// holds back a trailing incomplete (but still completable) sequence until later tokens finish it. Bytes
// that can never become valid UTF-8 are passed through as they are. flush() returns what is held.
struct TokenDecoder {
    explicit TokenDecoder(const Tokenizer& tok) : tok(&tok) {}
    std::string push(int id);
    std::string flush();

    const Tokenizer* tok;
    std::string pending;
};
