// config.cpp: see config.h.
#include "core/config.h"

#include <cstdio>

GPT2Config config_make(int max_seq_len, int vocab_size, int num_layers, int num_heads, int channels) {
    const int padded_vocab_size = (vocab_size + 127) / 128 * 128;
    return GPT2Config{max_seq_len, vocab_size, padded_vocab_size, num_layers, num_heads, channels};
}

std::string config_check(const GPT2Config& cfg, const char* where) {
    char err[256] = "";
    if (cfg.num_layers < 1 || cfg.num_layers > 1000)
        snprintf(err, sizeof(err), "bad layer count (%s): expected 1..1000, got %d", where, cfg.num_layers);
    else if (cfg.channels < 1 || cfg.channels > 65536)
        snprintf(err, sizeof(err), "bad channel count (%s): expected 1..65536, got %d", where, cfg.channels);
    else if (cfg.num_heads < 1 || cfg.channels % cfg.num_heads != 0)
        snprintf(err, sizeof(err), "bad head count (%s): expected a divisor of channels %d, got %d", where,
                 cfg.channels, cfg.num_heads);
    else if (cfg.max_seq_len < 1 || cfg.max_seq_len > 1 << 20)
        snprintf(err, sizeof(err), "bad context length (%s): expected 1..1048576, got %d", where, cfg.max_seq_len);
    else if (cfg.vocab_size < 1 || cfg.vocab_size > 1 << 24)
        snprintf(err, sizeof(err), "bad vocabulary size (%s): expected 1..16777216, got %d", where, cfg.vocab_size);
    else if (cfg.padded_vocab_size < cfg.vocab_size)
        snprintf(err, sizeof(err), "bad padded vocabulary (%s): expected >= %d, got %d", where, cfg.vocab_size,
                 cfg.padded_vocab_size);
    return err;
}
