// checkpoint.cpp: see checkpoint.h. Name mapping follows transformers' modeling_gpt2.py (GPT2Model).
#include "formats/checkpoint.h"


#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "core/hf.h"
#include "core/json.h"
#include "formats/safetensors_file.h"
#include "precision/half.h"
#include "platform/platform.h"
#include "platform/output_files.h"
#include "platform/signals.h"
#include "platform/util.h"
#include "formats/gguf.h"
#include "formats/llmc.h"
#include "memory/memory.h"

namespace {

// Loads parameters named in HuggingFace's scheme from st into a model built for cfg; a stored
// lm_head.weight must equal the tied wte. With `loaded`, the parameters are not zeroed first (each page is first
// touched by its value), and the memory is the caller's to check: loaded may give most of it back as it goes.
void load_from_safetensors(GPT2* model, const GPT2Config& cfg, const SafeTensors& st, const char* where,
                           CheckpointInfo* info, const TensorLoaded& loaded) {
    info->dtype = hf_check_header(st, hf_prefix(st), cfg);
    if (!loaded) memory_check(gpt2_params_bytes(cfg), std::string("parameters of ") + where, "use a smaller model");
    gpt2_build(model, cfg, !loaded);
    hf_read_params(st, model, loaded);
}

// Geometry of a bare safetensors file from its shapes: wte (V, C), wpe (maxT, C), layers counted.
GPT2Config infer_config(const SafeTensors& st, int heads_override) {
    const std::string prefix = hf_prefix(st);
    const StTensor* wte = st.find(prefix + "wte.weight");
    const StTensor* wpe = st.find(prefix + "wpe.weight");
    if (!wte || !wpe || wte->shape.size() != 2 || wpe->shape.size() != 2)
        fatal("cannot infer the geometry of %s: expected 2-D tensors %swte.weight and %swpe.weight", st.path.c_str(),
              prefix.c_str(), prefix.c_str());
    int layers = 0;
    while (st.find(prefix + "h." + std::to_string(layers) + ".ln_1.weight")) layers++;
    const int C = (int)wte->shape[1];
    const int heads = heads_override > 0 ? heads_override : C / 64;
    if (heads_override <= 0 && (C % 64 != 0 || heads < 1))
        fatal_hint("pass --heads", "cannot infer the head count of %s: channels %d is not a multiple of 64",
                   st.path.c_str(), C);
    GPT2Config cfg = config_make((int)wpe->shape[0], (int)wte->shape[0], layers, heads, C);
    if (const std::string bad = config_check(cfg, st.path.c_str()); !bad.empty()) fatal("%s", bad.c_str());
    return cfg;
}

}  // namespace

namespace {

// The first bytes of a regular file (up to n) and its size; fatal naming the file otherwise.
std::vector<uint8_t> file_head(const std::string& path, size_t n, size_t* file_size, uint64_t* file_ino) {
    FILE* f = os_fopen_read_file(path);
    if (!f) fatal("cannot open %s: %s", path.c_str(), strerror(errno));
    input_note_fd(fileno(f));
    FileInfo st;
    if (!os_fstat(fileno(f), &st) || st.kind != FileKind::regular) {
        fclose(f);
        fatal("not a regular file (%s): expected a file whose size is known before reading", path.c_str());
    }
    *file_size = (size_t)st.size;
    *file_ino = st.ino;
    std::vector<uint8_t> head(std::min(n, *file_size));
    bool ok = fread(head.data(), 1, head.size(), f) == head.size();
    fclose(f);
    if (!ok) fatal("cannot read %s: %s", path.c_str(), strerror(errno));
    return head;
}

// Opens a GGUF file and parses its header, then calls use(header, read_at) while the file is open.
template <typename Use>
auto with_gguf(const std::string& path, Use use) {
    const int fd = os_open_read(path);
    FileInfo file;
    if (fd < 0 || !os_fstat(fd, &file)) fatal("cannot open %s: %s", path.c_str(), strerror(errno));
    input_note_fd(fd);
    struct Closer {
        int fd;
        ~Closer() { os_close(fd); }
    } closer{fd};
    const GgufReadAt read_at = [fd](void* dst, size_t n, uint64_t at) { return os_pread(fd, dst, n, at) == (long)n; };
    GgufHeader h;
    std::string err;
    if (!gguf_parse(read_at, file.size, &h, &err)) fatal("corrupt GGUF file (%s): %s", path.c_str(), err.c_str());
    return use(h, read_at);
}

// A GGUF file (gguf.h): header and geometry, and with `model` the weights, all through one descriptor.
GPT2Config open_gguf(const std::string& path, CheckpointInfo* info, GPT2* model) {
    return with_gguf(path, [&](const GgufHeader& h, const GgufReadAt& read_at) {
        const GPT2Config cfg = gguf_config(h, path, &info->dtype);
        info->format = "gguf v3";
        if (model) {
            memory_check(gpt2_params_bytes(cfg), "parameters of " + path, "use a smaller model");
            gpt2_build(model, cfg);
            gguf_read_params(h, read_at, path, cfg, model->params.data());
        }
        return cfg;
    });
}

// Resolves PATH to its format and geometry from headers alone. With `model`, also reads the parameters
// into it, a safetensors file's calling `loaded` (if any) as each tensor is read.
GPT2Config open_checkpoint(const std::string& path, int heads_override, CheckpointInfo* info, GPT2* model,
                           const TensorLoaded& loaded = nullptr) {
    if (dir_exists(path)) {
        std::string config_path = path_join(path, "config.json"), st_path = path_join(path, "model.safetensors");
        if (!file_exists(config_path) && file_exists(path_join(path, "adapter_config.json")))
            fatal_hint("give it as --lora-from DIR, with its base as --model",
                       "not a model (%s): a PEFT adapter directory (adapter_config.json), expected a GPT-2 model",
                       path.c_str());
        if (!file_exists(config_path))
            fatal("missing %s: expected a HuggingFace GPT-2 directory with config.json and model.safetensors",
                  config_path.c_str());
        GPT2Config cfg = hf_read_config(config_path);
        if (heads_override > 0 && heads_override != cfg.num_heads)
            fatal("conflicting head count (--heads %d): %s says %d", heads_override, config_path.c_str(),
                  cfg.num_heads);
        SafeTensors st;
        safetensors_load_header(&st, st_path);  // tensors are read from the file into the model
        info->format = "huggingface", info->by_tensor = true;
        if (model) load_from_safetensors(model, cfg, st, config_path.c_str(), info, loaded);
        else info->dtype = hf_check_header(st, hf_prefix(st), cfg);
        return cfg;
    }
    if (!file_exists(path))
        fatal("checkpoint not found (%s): expected a HuggingFace directory, a .safetensors file, an llm.c .bin or a "
              ".gguf file", path.c_str());
    size_t file_size = 0;
    uint64_t file_ino = 0;
    std::vector<uint8_t> head = file_head(path, 1024, &file_size, &file_ino);
    if (llmc_detect(head.data(), head.size())) {
        GPT2Config cfg;
        int version = 0;
        std::string err;
        if (!llmc_parse_header(head.data(), head.size(), file_size, &cfg, &version, &err))
            fatal("corrupt llm.c checkpoint (%s): %s", path.c_str(), err.c_str());
        info->format = "llm.c v" + std::to_string(version);
        info->dtype = version == 3 ? "F32" : "BF16";
        if (const std::string bad = config_check(cfg, path.c_str()); !bad.empty()) fatal("%s", bad.c_str());
        if (model) {
            memory_check(gpt2_params_bytes(cfg), "parameters of " + path, "use a smaller model");
            gpt2_build(model, cfg);
            llmc_read_params(path, cfg, version, file_ino, model->params.data());
        }
        return cfg;
    }
    if (gguf_detect(head.data(), head.size())) return open_gguf(path, info, model);
    // safetensors: an 8-byte little-endian length and a JSON object
    if (head.size() >= 9 && head[8] == '{') {
        SafeTensors st;
        safetensors_load_header(&st, path);
        GPT2Config cfg = infer_config(st, heads_override);
        info->format = "safetensors", info->by_tensor = true;
        if (model) load_from_safetensors(model, cfg, st, path.c_str(), info, loaded);
        else info->dtype = hf_check_header(st, hf_prefix(st), cfg);
        return cfg;
    }
    fatal(
        "unrecognised checkpoint (%s): expected a HuggingFace directory, a .safetensors file, an llm.c .bin "
        "(magic %d) or a .gguf file",
        path.c_str(), kLlmcMagic);
}

}  // namespace

size_t gpt2_num_real_params(const GPT2Config& cfg) {
    size_t n = layout_params_size(layout_params(cfg));
    return n - (size_t)(cfg.padded_vocab_size - cfg.vocab_size) * cfg.channels;
}

void checkpoint_load(GPT2* model, const std::string& path, int heads_override, CheckpointInfo* info,
                     const TensorLoaded& loaded) {
    CheckpointInfo local, *found = info ? info : &local;
    const char* doing = "expected finite weights";
    const TensorLoaded checked = [&](const TensorInfo& t) {  // before loaded may give its values back
        checkpoint_check_finite(*model, path, doing, &t);
        loaded(t);
    };
    open_checkpoint(path, heads_override, found, model, loaded ? checked : nullptr);
    if (!loaded || !found->by_tensor) {  // read whole: checked, then handed over
        checkpoint_check_finite(*model, path, doing);
        if (loaded)
            for (const TensorInfo& t : model->param_table) loaded(t);
    }
    stop_point();  // a command that ends at its next stop point (signals.h) need not wait for its first write
}

GPT2Config checkpoint_inspect(const std::string& path, int heads_override, CheckpointInfo* info) {
    return open_checkpoint(path, heads_override, info, nullptr);
}

bool checkpoint_tokenizer(const std::string& path, Tokenizer* tok) {
    if (dir_exists(path)) {
        if (!tokenizer_files_present(path)) return false;
        tokenizer_load(tok, path);
        return true;
    }
    size_t size = 0;
    uint64_t ino = 0;
    const std::vector<uint8_t> head = file_head(path, 4, &size, &ino);
    if (!gguf_detect(head.data(), head.size())) return false;
    return with_gguf(path,
                     [&](const GgufHeader& h, const GgufReadAt& read_at) { return gguf_tokenizer(h, read_at, path, tok); });
}

namespace {

// HuggingFace's GPT-2 tokenizer files for the model's vocabulary (tokenizer_spellings): vocab.json and
// merges.txt (GPT-2's encoder.json and vocab.bpe under HF's names, merges after a `#version: 0.2` line, which
// GPT2Tokenizer skips), and the settings it reads beside them. A vocabulary without <|endoftext|> (the first
// V < 50257 tokens) names no special tokens, as config.json then gives null ids.
void save_hf_tokenizer(const Tokenizer& tok, const GPT2Config& cfg, const std::string& dir) {
    if (tok.vocab_size < cfg.vocab_size)
        fatal("tokenizer and model disagree (%s): tokenizer has %d tokens, model %d", tok.dir.c_str(), tok.vocab_size,
              cfg.vocab_size);
    std::vector<std::string> tokens, merges;
    tokenizer_spellings(tok, cfg.vocab_size, &tokens, &merges);
    std::string vocab = "{";
    for (size_t id = 0; id < tokens.size(); id++)
        vocab += (id ? ", " : "") + json_escape(tokens[id]) + ": " + std::to_string(id);
    vocab += "}\n";
    std::string bpe = "#version: 0.2\n";
    for (const std::string& m : merges) bpe += m + "\n";
    const bool eot = cfg.vocab_size > kTokenizerEot;
    const std::string special = eot ? "\"<|endoftext|>\"" : "null";
    const std::string specials = "  \"bos_token\": " + special + ",\n  \"eos_token\": " + special +
                                 ",\n  \"unk_token\": " + special + "\n";
    const std::string config = "{\n  \"tokenizer_class\": \"GPT2Tokenizer\",\n  \"model_max_length\": " +
                               std::to_string(cfg.max_seq_len) + ",\n  \"add_prefix_space\": false,\n" + specials +
                               "}\n";
    const std::string map = eot ? "{\n" + specials + "}\n" : "{}\n";
    const std::pair<const char*, const std::string*> files[] = {{"vocab.json", &vocab},
                                                                  {"merges.txt", &bpe},
                                                                  {"tokenizer_config.json", &config},
                                                                  {"special_tokens_map.json", &map}};
    for (const auto& f : files)
        output_write(path_join(dir, f.first), f.first, kNewFile, {{f.second->data(), f.second->size()}});
}

}  // namespace

void checkpoint_save_hf(const GPT2& model, const std::string& dir, const std::string& dtype, const Tokenizer* tok) {
    const GPT2Config& cfg = model.cfg;
    assert((dtype == "F32" || dtype == "F16" || dtype == "BF16") && "checkpoint_save_hf dtype");
    checkpoint_check_finite(model, dir, "not saving non-finite weights");
    std::vector<StWriteItem> items = hf_tensors(model);
    if (dtype != "F32")  // narrowed a piece at a time as it is written: never a second model
        for (StWriteItem& item : items) {
            StWriteItem wide = item;
            item.dtype = dtype;
            item.fill = [wide, &dtype, &dir](size_t first, size_t count, void* out) {
                std::vector<float> piece(count);
                if (wide.fill) wide.fill(first, count, piece.data());
                else memcpy(piece.data(), static_cast<const float*>(wide.data) + first, count * sizeof(float));
                for (size_t i = 0; i < count; i++) {
                    const uint16_t h = dtype == "F16" ? fp16_round(piece[i]) : bf16_round(piece[i]);
                    if (std::isinf(dtype == "F16" ? fp16_to_float(h) : bf16_to_float(h)))
                        fatal_hint("export as f32 or bf16", "value out of %s range (%s): %s[%zu] is %g", dtype.c_str(),
                                   dir.c_str(), wide.name.c_str(), first + i, piece[i]);
                    static_cast<uint16_t*>(out)[i] = h;
                }
            };
        }
    safetensors_write_file(path_join(dir, "model.safetensors"), items, {{"format", "pt"}, {"writer", kHfWriter}});
    const std::string json = hf_config_json(cfg);
    output_write(path_join(dir, "config.json"), "config.json", kNewFile, {{json.data(), json.size()}});
    if (tok) save_hf_tokenizer(*tok, cfg, dir);
}

namespace {

bool export_is_ours(const std::string& name) {
    return name_is_ours(name, {"config.json", "model.safetensors", "vocab.json", "merges.txt", "tokenizer_config.json",
                               "special_tokens_map.json"});
}

}  // namespace

void checkpoint_export_hf(const GPT2& model, const std::string& out, const std::string& dtype, const Tokenizer* tok) {
    const std::string dir = path_strip_slashes(out);
    if (dir.empty()) fatal("empty value for --out (export): expected a directory path");
    if (path_is_symlink(dir))
        fatal("bad value for --out (export): %s is a symbolic link, expected a directory", dir.c_str());
    if (dir_exists(dir)) {
        std::vector<std::string> entries = dir_entries(dir);
        if (file_exists(path_join(dir, "train_state.safetensors")))
            fatal_hint("export to a new directory",
                       "bad value for --out (export): %s is a training checkpoint; writing a model into it would make "
                       "it unresumable (%s)",
                       dir.c_str(), file_exists(path_join(dir, "adapter_config.json")) ? "a LoRA run: it holds an adapter"
                                                                                       : "its model replaced");
        if (const std::string input = dir_input_entry(dir); !input.empty()) {
            const bool adapter = input.compare(0, 8, "adapter_") == 0;  // --merge-lora's --lora-from
            fatal_hint("export to another directory",
                       "bad value for --out (export): %s holds %s, which this export reads (%s); replacing it would "
                       "lose the %s",
                       dir.c_str(), input.c_str(), adapter ? "--lora-from" : "--model",
                       adapter ? "adapter it merges" : "model it converts");
        }
        bool ours = true;
        for (const std::string& e : entries) ours = ours && export_is_ours(e);
        if (ours && !entries.empty()) {
            SafeTensors st;
            ours = file_exists(path_join(dir, "model.safetensors"));
            if (ours) safetensors_load_header(&st, path_join(dir, "model.safetensors"));
            ours = ours && st.meta("writer") == kHfWriter;
        }
        if (!ours)
            fatal_hint("choose a new or empty directory; gpt2 replaces only exports it wrote",
                       "bad value for --out (export): %s holds %s, which gpt2 export did not write", dir.c_str(),
                       entries[0].c_str());
    } else if (path_exists(dir)) {
        fatal("bad value for --out (export): %s exists and is not a directory", dir.c_str());
    }
    checkpoint_check_finite(model, dir, "not saving non-finite weights");  // named as --out, not its staging
    PathLock lock(dir, "--out");
    dir_publish(dir, export_is_ours,
                [&](const std::string& staging) { checkpoint_save_hf(model, staging, dtype, tok); });
}
