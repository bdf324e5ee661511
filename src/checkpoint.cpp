// checkpoint.cpp: see checkpoint.h. Name mapping follows transformers' modeling_gpt2.py (GPT2Model).
#include "checkpoint.h"

#include <cstring>

#include "json.h"
#include "util.h"

namespace {

// HuggingFace names of one layer's tensors, in LayerParams order, and whether each is a Conv1D weight.
const struct {
    const char* suffix;
    bool transposed;
} kHfLayer[] = {
    {"ln_1.weight", false},      {"ln_1.bias", false},       {"attn.c_attn.weight", true},
    {"attn.c_attn.bias", false}, {"attn.c_proj.weight", true}, {"attn.c_proj.bias", false},
    {"ln_2.weight", false},      {"ln_2.bias", false},       {"mlp.c_fc.weight", true},
    {"mlp.c_fc.bias", false},    {"mlp.c_proj.weight", true}, {"mlp.c_proj.bias", false},
};
const size_t kHfLayerCount = sizeof(kHfLayer) / sizeof(kHfLayer[0]);

std::string shape_str(const std::vector<int64_t>& s) {
    std::string out = "(";
    for (size_t i = 0; i < s.size(); i++) out += (i ? ", " : "") + std::to_string(s[i]);
    return out + (s.size() == 1 ? ",)" : ")");
}

// The shape HuggingFace stores for one of our tensors.
std::vector<int64_t> hf_shape(const TensorInfo& t, bool transposed, const GPT2Config& cfg) {
    if (t.name == "wte") return {cfg.vocab_size, (int64_t)t.cols};
    if (t.cols == 0) return {(int64_t)t.rows};
    if (transposed) return {(int64_t)t.cols, (int64_t)t.rows};
    return {(int64_t)t.rows, (int64_t)t.cols};
}

int config_int(const Json& root, const char* key, const char* fallback_key, const std::string& path) {
    const Json* v = root.find(key);
    if (!v && fallback_key) v = root.find(fallback_key);
    if (!v) fatal("missing key \"%s\" in %s: expected an integer", key, path.c_str());
    if (v->type != Json::NUMBER || !v->is_integer || v->integer < 1 || v->integer > (1 << 24))
        fatal("bad value for \"%s\" in %s: expected a positive integer", key, path.c_str());
    return (int)v->integer;
}

// "h.<l>.attn.bias" / "h.<l>.attn.masked_bias": the causal-mask buffers older exports include.
bool is_attention_buffer(const std::string& name) {
    if (name.compare(0, 2, "h.") != 0) return false;
    size_t i = 2;
    while (i < name.size() && name[i] >= '0' && name[i] <= '9') i++;
    if (i == 2) return false;
    std::string rest = name.substr(i);
    return rest == ".attn.bias" || rest == ".attn.masked_bias";
}

}  // namespace

std::vector<HfTensor> checkpoint_hf_tensors(const GPT2Config& cfg) {
    std::vector<HfTensor> out;
    size_t i = 0;
    out.push_back({"wte.weight", i++, false});
    out.push_back({"wpe.weight", i++, false});
    for (int l = 0; l < cfg.num_layers; l++)
        for (size_t k = 0; k < kHfLayerCount; k++)
            out.push_back({"h." + std::to_string(l) + "." + kHfLayer[k].suffix, i++, kHfLayer[k].transposed});
    out.push_back({"ln_f.weight", i++, false});
    out.push_back({"ln_f.bias", i++, false});
    return out;
}

GPT2Config checkpoint_read_hf_config(const std::string& path) {
    std::vector<uint8_t> bytes = file_read(path);
    Json root;
    std::string err;
    if (!json_parse(reinterpret_cast<const char*>(bytes.data()), bytes.size(), &root, &err))
        fatal("malformed JSON in %s: %s", path.c_str(), err.c_str());
    if (root.type != Json::OBJECT) fatal("bad config (%s): expected a JSON object", path.c_str());
    GPT2Config cfg = config_make(config_int(root, "n_positions", "n_ctx", path), config_int(root, "vocab_size", nullptr, path),
                                 config_int(root, "n_layer", nullptr, path), config_int(root, "n_head", nullptr, path),
                                 config_int(root, "n_embd", nullptr, path));
    config_validate(cfg, path.c_str());
    return cfg;
}

void checkpoint_unpack_hf(const SafeTensors& st, const std::string& prefix, const GPT2Config& cfg, float* base) {
    std::vector<TensorInfo> table = layout_params(cfg);
    for (const HfTensor& h : checkpoint_hf_tensors(cfg)) {
        const TensorInfo& t = table[h.table_index];
        std::string name = prefix + h.hf_name;
        const StTensor* s = st.find(name);
        std::vector<int64_t> want = hf_shape(t, h.transposed, cfg);
        if (!s) fatal("missing tensor %s in %s: expected shape %s", name.c_str(), st.path.c_str(), shape_str(want).c_str());
        if (s->shape != want)
            fatal("shape mismatch for tensor %s in %s: expected %s, got %s", name.c_str(), st.path.c_str(),
                  shape_str(want).c_str(), shape_str(s->shape).c_str());
        std::vector<float> src = safetensors_read_f32(st, *s);
        float* dst = base + t.offset;
        if (!h.transposed) {
            memcpy(dst, src.data(), src.size() * sizeof(float));
            continue;
        }
        const size_t rows = t.rows, cols = t.cols;  // ours (rows, cols) = theirs transposed
        for (size_t r = 0; r < rows; r++)
            for (size_t c = 0; c < cols; c++) dst[r * cols + c] = src[c * rows + r];
    }
}

void checkpoint_load_hf(GPT2* model, const std::string& dir) {
    std::string config_path = path_join(dir, "config.json"), st_path = path_join(dir, "model.safetensors");
    if (!file_exists(config_path))
        fatal("missing %s: expected a HuggingFace GPT-2 directory with config.json and model.safetensors", config_path.c_str());
    GPT2Config cfg = checkpoint_read_hf_config(config_path);
    SafeTensors st;
    safetensors_load(&st, st_path);
    std::string prefix = st.find("transformer.wte.weight") ? "transformer." : "";
    gpt2_build(model, cfg, config_path.c_str());
    checkpoint_unpack_hf(st, prefix, cfg, model->params.data());

    // Everything else in the file must be a known buffer or the tied lm_head.
    std::vector<HfTensor> known = checkpoint_hf_tensors(cfg);
    for (const StTensor& s : st.tensors) {
        bool ok = false;
        if (s.name.compare(0, prefix.size(), prefix) == 0) {
            std::string rest = s.name.substr(prefix.size());
            for (const HfTensor& h : known) ok = ok || rest == h.hf_name;
            ok = ok || is_attention_buffer(rest);
        }
        if (s.name == "lm_head.weight") {
            std::vector<int64_t> want = {cfg.vocab_size, cfg.channels};
            if (s.shape != want)
                fatal("shape mismatch for tensor lm_head.weight in %s: expected %s, got %s", st_path.c_str(),
                      shape_str(want).c_str(), shape_str(s.shape).c_str());
            std::vector<float> w = safetensors_read_f32(st, s);
            if (memcmp(w.data(), model->p.wte, w.size() * sizeof(float)) != 0)
                fatal("untied lm_head.weight in %s: expected it to equal wte.weight (GPT-2 ties them)", st_path.c_str());
            ok = true;
        }
        if (!ok) fatal("unknown tensor %s in %s: expected only GPT-2 parameters", s.name.c_str(), st_path.c_str());
    }
}

void checkpoint_save_hf(const GPT2& model, const std::string& dir) {
    const GPT2Config& cfg = model.cfg;
    dir_create(dir);
    std::vector<std::vector<float>> transposed;  // keeps transposed copies alive until written
    std::vector<StWriteItem> items;
    for (const HfTensor& h : checkpoint_hf_tensors(cfg)) {
        const TensorInfo& t = model.param_table[h.table_index];
        const float* src = model.params.data() + t.offset;
        if (h.transposed) {
            transposed.emplace_back(t.numel());
            float* dst = transposed.back().data();
            for (size_t r = 0; r < t.rows; r++)
                for (size_t c = 0; c < t.cols; c++) dst[c * t.rows + r] = src[r * t.cols + c];
            src = dst;
        }
        items.push_back({h.hf_name, "F32", hf_shape(t, h.transposed, cfg), src});
    }
    safetensors_write(path_join(dir, "model.safetensors"), items, {{"format", "pt"}});
    char json[1024];
    int n = snprintf(json, sizeof(json),
                     "{\n  \"architectures\": [\"GPT2LMHeadModel\"],\n  \"model_type\": \"gpt2\",\n"
                     "  \"activation_function\": \"gelu_new\",\n  \"layer_norm_epsilon\": 1e-05,\n"
                     "  \"n_ctx\": %d,\n  \"n_positions\": %d,\n  \"n_embd\": %d,\n  \"n_head\": %d,\n"
                     "  \"n_layer\": %d,\n  \"vocab_size\": %d,\n  \"bos_token_id\": 50256,\n"
                     "  \"eos_token_id\": 50256,\n  \"tie_word_embeddings\": true\n}\n",
                     cfg.max_seq_len, cfg.max_seq_len, cfg.channels, cfg.num_heads, cfg.num_layers, cfg.vocab_size);
    file_write_atomic(path_join(dir, "config.json"), json, (size_t)n);
}

void checkpoint_load(GPT2* model, const std::string& path) {
    if (dir_exists(path)) return checkpoint_load_hf(model, path);
    if (!file_exists(path)) fatal("checkpoint not found (%s): expected a directory with config.json and model.safetensors", path.c_str());
    fatal("unrecognised checkpoint (%s): expected a directory with config.json and model.safetensors", path.c_str());
}
