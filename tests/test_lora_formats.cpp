// test_lora_formats.cpp: PEFT's adapter directory (src/lora/peft.h): written, read back to the same values, and
// written again to the same bytes; adapter_config.json in Python's json.dumps(indent=2, sort_keys=True) form; the
// GGUF adapter (src/lora/export.h) as llama.cpp's loader reads it.
// The errors are tests/cli_lora_formats.sh's (each one exits); tests/ref_lora.sh checks against PyTorch.
#include <cstring>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/rng.h"
#include "core/safetensors.h"
#include "formats/gguf.h"
#include "formats/safetensors_file.h"
#include "lora/export.h"
#include "lora/peft.h"
#include "platform/platform.h"
#include "platform/util.h"
#include "test.h"
#include "test_os.h"

namespace {

// An adapter over a small base with every B non-zero (PEFT's init leaves B zero, which would hide a swap of A and B).
LoraAdapter test_adapter(const LoraConfig& cfg, const GPT2Config& base) {
    LoraAdapter a;
    lora_layout(&a, cfg, base);
    lora_init_random(&a, 7);
    Rng rng(11);
    for (float& x : a.params)
        if (x == 0) x = 0.1f * (2 * rng.uniform() - 1);
    return a;
}

std::string file_text(const std::string& path) {
    const std::vector<uint8_t> b = file_read(path);
    return std::string(b.begin(), b.end());
}

void remove_dir(const std::string& dir) {
    for (const std::string& e : dir_entries(dir)) os_unlink(path_join(dir, e).c_str());
    os_rmdir(dir);
}

}  // namespace

TEST(peft_writes_reads_and_rewrites_the_same_bytes) {
    const GPT2Config base = config_make(32, 1000, 12, 2, 32);  // 12 layers: "h.10" sorts before "h.2"
    LoraConfig cfg;
    cfg.rank = 4, cfg.alpha = 16, cfg.dropout = 0.05f;
    cfg.target_modules = {"c_attn", "c_proj"};  // c_proj: attn.c_proj and mlp.c_proj, as PEFT matches it
    cfg.target[kLoraAttnProj] = cfg.target[kLoraMlpProj] = true;
    const LoraAdapter a = test_adapter(cfg, base);
    PeftConfig pc{cfg, "gpt2", Json()};
    const std::string d1 = test_os_temp_dir("peft1"), d2 = test_os_temp_dir("peft2");
    peft_write(a, pc, d1);
    LoraAdapter back;
    PeftConfig read;
    peft_read(&back, &read, d1, base);
    CHECK(back.params == a.params);
    CHECK(back.table.size() == a.table.size() && read.lora.rank == 4 && read.lora.alpha == 16);
    CHECK(read.lora.target[kLoraAttnQKV] && read.lora.target[kLoraAttnProj] && !read.lora.target[kLoraMlpFC] &&
          read.lora.target[kLoraMlpProj]);
    CHECK(read.base_model == "gpt2" && read.lora.target_modules == cfg.target_modules);
    peft_write(back, read, d2);
    for (const char* f : {"adapter_config.json", "adapter_model.safetensors"})
        CHECK(file_text(path_join(d1, f)) == file_text(path_join(d2, f)));
    SafeTensors st;  // laid out by name, as the safetensors library writes PEFT's file
    safetensors_load_header(&st, path_join(d1, "adapter_model.safetensors"));
    CHECK(st.tensors.size() == a.table.size() && st.meta("format") == "pt" && st.metadata.size() == 1);
    for (size_t i = 1; i < st.tensors.size(); i++) CHECK(st.tensors[i - 1].name < st.tensors[i].name);
    CHECK(st.tensors.size() > 40 && st.tensors[12].name.find(".h.10.") != std::string::npos);
    const std::string json = file_text(path_join(d1, "adapter_config.json"));
    CHECK(json.find("\"lora_alpha\": 16,\n") != std::string::npos);      // an int, as PEFT's type is
    CHECK(json.find("\"lora_dropout\": 0.05,\n") != std::string::npos);  // the float32's shortest repr
    CHECK(json.find("\"target_modules\": [\n    \"c_attn\",\n    \"c_proj\"\n  ],") != std::string::npos);
    CHECK(json.front() == '{' && json.back() == '}');         // no final newline
    CHECK(json.find("\"use_rslora\"") == std::string::npos);  // only when true: older PEFT refuses unknown keys
    remove_dir(d1), remove_dir(d2);
}

// A config as a current PEFT writes it (every key, some gpt2 does not use) comes back byte for byte, numbers
// spelled as Python spelled them.
TEST(peft_config_keeps_what_it_does_not_use) {
    const std::string text =
        "{\n  \"alpha_pattern\": {},\n  \"auto_mapping\": null,\n  \"base_model_name_or_path\": \"gpt2\",\n"
        "  \"bias\": \"none\",\n  \"eva_config\": null,\n  \"fan_in_fan_out\": true,\n  \"inference_mode\": true,\n"
        "  \"init_lora_weights\": \"gaussian\",\n  \"layers_pattern\": null,\n  \"loftq_config\": {},\n"
        "  \"lora_alpha\": 16.0,\n  \"lora_dropout\": 1e-05,\n  \"megatron_core\": \"megatron.core\",\n  "
        "\"modules_to_save\": null,\n"
        "  \"note\": \"caf\\u00e9 \\ud83d\\ude00 \\\"q\\\"\\n\",\n  \"peft_type\": \"LORA\",\n"
        "  \"peft_version\": \"0.17.1\",\n  \"qalora_group_size\": 16,\n  \"r\": 2,\n  \"revision\": null,\n"
        "  \"target_modules\": [\n    \"mlp.c_fc\",\n    \"c_attn\"\n  ],\n  \"task_type\": \"CAUSAL_LM\",\n"
        "  \"use_rslora\": true\n}";
    const std::string dir = test_os_temp_dir("peft_cfg");
    const std::string path = path_join(dir, "adapter_config.json");
    FILE* f = fopen(path.c_str(), "wb");  // the test's own fixture (src/ writes only through output_files)
    CHECK(f && fwrite(text.data(), 1, text.size(), f) == text.size());
    if (f) fclose(f);
    const PeftConfig cfg = peft_read_config(dir, config_make(32, 1000, 2, 2, 32));
    CHECK(cfg.lora.rslora && cfg.lora.rank == 2 && cfg.lora.alpha == 16 && cfg.lora.target[kLoraMlpFC]);
    CHECK(peft_config_json(cfg) == text);
    PeftConfig changed = cfg;  // a value the config owns is written anew, in Python's spelling
    changed.lora.alpha = 0.1f, changed.lora.rank = 3;
    const std::string json = peft_config_json(changed);
    CHECK(json.find("\"lora_alpha\": 0.1,\n") != std::string::npos && json.find("\"r\": 3,\n") != std::string::npos);
    os_unlink(path.c_str());
    os_rmdir(dir);
}

// The GGUF adapter as llama.cpp's loader checks it (llama-adapter.cpp): the keys and their types, each
// tensor named after its base weight with PEFT's A and B byte for byte (ne [in, r] and [r, out]); with rslora,
// alpha x sqrt(r), so that llama.cpp's alpha / r is PEFT's scale.
TEST(gguf_adapter_holds_peft_bytes_under_llama_cpp_names) {
    const GPT2Config base = config_make(32, 1000, 2, 2, 32);
    LoraConfig cfg;
    cfg.rank = 4, cfg.alpha = 8, cfg.rslora = true;
    cfg.target[kLoraMlpFC] = true;
    const LoraAdapter a = test_adapter(cfg, base);
    const std::string dir = test_os_temp_dir("gguf_adapter"), path = dir + "/a.gguf";
    lora_save_gguf(a, path, "test");
    const int fd = os_open_read(path);
    FileInfo info;
    GgufHeader h;
    std::string err;
    const GgufReadAt read_at = [fd](void* dst, size_t n, uint64_t at) { return os_pread(fd, dst, n, at) == (long)n; };
    CHECK(fd >= 0 && os_fstat(fd, &info) && gguf_parse(read_at, info.size, &h, &err));
    auto str = [&](const char* k) { return h.find(k) && h.find(k)->type == 8 ? h.find(k)->str : ""; };
    CHECK(str("general.type") == "adapter" && str("adapter.type") == "lora" && str("general.architecture") == "gpt2");
    const GgufValue* alpha = h.find("adapter.lora.alpha");
    CHECK(alpha && alpha->type == 6 && alpha->number == 16.0f);  // FLOAT32; 8 x sqrt(4)
    CHECK(h.tensors.size() == 8 && gguf_adapter_is_ours(path));
    for (const TensorInfo& t : a.table) {
        const bool is_b = t.name.find("lora_B") != std::string::npos;
        const std::string name = "blk." + std::to_string(t.layer) + "." +
                                 (t.slot == kLoraMlpFC ? "ffn_up" : "attn_qkv") + ".weight" +
                                 (is_b ? ".lora_b" : ".lora_a");
        const GgufTensor* g = h.tensor(name);
        CHECK(g && g->type == 0 && g->dims == std::vector<uint64_t>({t.cols, t.rows}));
        std::vector<float> got(t.numel());
        CHECK(g && read_at(got.data(), got.size() * 4, g->offset) &&
              memcmp(got.data(), a.params.data() + t.offset, got.size() * 4) == 0);
    }
    os_close(fd);
    remove_dir(dir);
}
