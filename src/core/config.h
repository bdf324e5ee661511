// config.h: GPT-2 geometry. Holds sizes only; the parameter layout built from it is in layout.h.
#pragma once
#include <string>

struct GPT2Config {
    int max_seq_len = 1024;         // n_positions
    int vocab_size = 50257;         // real tokens
    int padded_vocab_size = 50304;  // vocab_size rounded up to a multiple of 128, for aligned matmuls
    int num_layers = 12;
    int num_heads = 12;
    int channels = 768;
};

// A config with padded_vocab_size filled in: the vocabulary rounded up to a multiple of 128 (50257 -> 50304).
// Padded logits never enter softmax, loss or sampling; padded wte rows stay zero.
GPT2Config config_make(int max_seq_len, int vocab_size, int num_layers, int num_heads, int channels);
// Checks the geometry: "" when consistent, else a one-line error naming `where` (a file or flag) for the
// caller to report.
std::string config_check(const GPT2Config& cfg, const char* where);
