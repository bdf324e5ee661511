// config.cpp: see config.h.
#include "model/config.h"

#include "base/util.h"

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

void config_validate(const GPT2Config& cfg, const char* where) {
    if (cfg.num_layers < 1 || cfg.num_layers > 1000)
        fatal("bad layer count (%s): expected 1..1000, got %d", where, cfg.num_layers);
    if (cfg.channels < 1 || cfg.channels > 65536)
        fatal("bad channel count (%s): expected 1..65536, got %d", where, cfg.channels);
    if (cfg.num_heads < 1 || cfg.channels % cfg.num_heads != 0)
        fatal("bad head count (%s): expected a divisor of channels %d, got %d", where, cfg.channels, cfg.num_heads);
    if (cfg.max_seq_len < 1 || cfg.max_seq_len > 1 << 20)
        fatal("bad context length (%s): expected 1..1048576, got %d", where, cfg.max_seq_len);
    if (cfg.vocab_size < 1 || cfg.vocab_size > 1 << 24)
        fatal("bad vocabulary size (%s): expected 1..16777216, got %d", where, cfg.vocab_size);
    if (cfg.padded_vocab_size < cfg.vocab_size)
        fatal("bad padded vocabulary (%s): expected >= %d, got %d", where, cfg.vocab_size, cfg.padded_vocab_size);
}
