// config.cpp: see config.h.
#include "core/config.h"

#include <cstdio>

int config_padded_vocab(int vocab_size) { return (vocab_size + 127) / 128 * 128; }

GPT2Config config_make(int max_seq_len, int vocab_size, int num_layers, int num_heads, int channels) {
    GPT2Config cfg;
    cfg.max_seq_len = max_seq_len;
    cfg.vocab_size = vocab_size;
    cfg.padded_vocab_size = config_padded_vocab(vocab_size);
    cfg.num_layers = num_layers;
    cfg.num_heads = num_heads;
    cfg.channels = channels;
    return cfg;
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
