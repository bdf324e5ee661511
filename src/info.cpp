// info.cpp: the `info` command: a checkpoint's format, geometry, parameter count and dtype.
#include <cstdio>

#include "checkpoint.h"
#include "cli.h"
#include "commands.h"
#include "util.h"

int cmd_info(int argc, char** argv) {
    static const std::vector<CliFlag> flags = {{"model", "", "", "checkpoint to describe"}};
    CliArgs args = cli_parse(argc, argv, "info", "gpt2 info --model PATH",
                             "Prints a checkpoint's format, geometry, parameter count and dtype.", flags, false);
    GPT2 model;
    checkpoint_load(&model, args.str("model"));
    const GPT2Config& c = model.cfg;
    printf("format: huggingface (config.json + model.safetensors)\n");
    printf("layers %d, heads %d, channels %d, context %d, vocab %d (padded %d)\n", c.num_layers, c.num_heads,
           c.channels, c.max_seq_len, c.vocab_size, c.padded_vocab_size);
    printf("parameters: %zu (%.2fM)\n", gpt2_num_real_params(c), gpt2_num_real_params(c) / 1e6);
    printf("dtype in memory: fp32\n");
    return 0;
}
