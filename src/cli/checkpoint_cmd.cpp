// checkpoint_cmd.cpp: the `info` and `export` commands: describe a checkpoint, convert between
// HuggingFace's layout and llm.c's format. Format detection and conversion live in checkpoint.h/llmc.h.
#include <unistd.h>

#include <cstdio>
#include <memory>

#include "base/publish.h"
#include "base/util.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "io/checkpoint.h"
#include "io/llmc.h"

int cmd_info(int argc, char** argv) {
    static const std::vector<CliFlag> flags = {{"model", "", "", "checkpoint to describe"}, kCliHeadsFlag};
    CliArgs args = cli_parse(argc, argv, "info", "gpt2 info --model PATH",
                             "Prints a checkpoint's format, geometry, parameter count and dtype.", flags, false);
    CheckpointInfo info;
    const GPT2Config c = checkpoint_inspect(args.str("model"), cli_heads(args), &info);
    printf("format: %s\n", info.format.c_str());
    printf("layers %d, heads %d, channels %d, context %d, vocab %d (padded %d)\n", c.num_layers, c.num_heads,
           c.channels, c.max_seq_len, c.vocab_size, c.padded_vocab_size);
    printf("parameters: %zu (%.2fM)\n", gpt2_num_real_params(c), gpt2_num_real_params(c) / 1e6);
    printf("dtype: %s (fp32 in memory)\n", info.dtype.c_str());
    return 0;
}

int cmd_export(int argc, char** argv) {
    static const std::vector<CliFlag> flags = {
        {"model", "", "", "checkpoint to convert (any format `info` reads)"},
        {"out", "", "", "output: a directory for hf, a file for llmc"},
        {"format", "", "hf", "hf (config.json + model.safetensors) or llmc (llm.c .bin)"},
        {"dtype", "", "f32", "f32, f16 (hf only) or bf16; narrowing rounds to nearest even"},
        kCliHeadsFlag,
    };
    CliArgs args =
        cli_parse(argc, argv, "export", "gpt2 export --model PATH --out PATH [--format hf|llmc] [--dtype f32]",
                  "Converts a checkpoint between HuggingFace's layout and llm.c's format.", flags, false);
    const std::string format = args.str("format"), dtype = args.str("dtype"), out = args.str("out");
    if (format != "hf" && format != "llmc")
        fatal("bad value for --format (export): expected hf or llmc, got '%s'", format.c_str());
    if (dtype != "f32" && dtype != "f16" && dtype != "bf16")
        fatal("bad value for --dtype (export): expected f32, f16 or bf16, got '%s'", dtype.c_str());
    if (format == "llmc" && dtype == "f16")
        fatal("bad value for --dtype (export): llm.c files are f32 (v3) or bf16 (v5)");
    std::unique_ptr<PathLock> lock;
    if (format == "llmc") {  // checked before the model is read: a file is replaced only by its own kind
        input_note_path(args.str("model"));
        output_check(out, "--out (export)", kLlmcKind);
        lock.reset(new PathLock(out, "--out (export)"));
    }
    GPT2 model;
    checkpoint_load(&model, args.str("model"), cli_heads(args));
    if (format == "hf") checkpoint_export_hf(model, out, dtype == "f32" ? "F32" : dtype == "f16" ? "F16" : "BF16");
    else llmc_save(model, out, dtype == "f32" ? 3 : 5, "--out (export)");
    printf("wrote %s (%s, %s)\n", out.c_str(), format.c_str(), dtype.c_str());
    return 0;
}
