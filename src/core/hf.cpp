// hf.cpp: see hf.h. Name mapping follows transformers' modeling_gpt2.py (GPT2Model).
#include "core/hf.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "core/error.h"
#include "core/json.h"

namespace {

std::string shape_str(const std::vector<int64_t>& s) {
    std::string out = "(";
    for (size_t i = 0; i < s.size(); i++) out += (i ? ", " : "") + std::to_string(s[i]);
    return out + (s.size() == 1 ? ",)" : ")");
}

// The shape HuggingFace stores for one of our tensors.
std::vector<int64_t> hf_shape(const TensorInfo& t, const GPT2Config& cfg) {
    if (t.name == "wte") return {cfg.vocab_size, (int64_t)t.cols};
    if (t.cols == 0) return {(int64_t)t.rows};
    if (t.hf_transposed) return {(int64_t)t.cols, (int64_t)t.rows};
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

// Fields that change the math: refused, not ignored, unless at GPT-2's value (an absent field takes GPT-2's default).
void check_config_math(const Json& root, const std::string& path, int channels) {
    auto bad = [&](const char* key, const char* expected) {
        fatal("unsupported value for \"%s\" in %s: expected %s", key, path.c_str(), expected);
    };
    if (const Json* v = root.find("activation_function"))
        if (v->type != Json::STRING || (v->str != "gelu_new" && v->str != "gelu_pytorch_tanh"))
            bad("activation_function", "\"gelu_new\" (GELU, tanh approximation)");
    if (const Json* v = root.find("layer_norm_epsilon"))
        if (v->type != Json::NUMBER || std::fabs(v->number - 1e-5) > 1e-12) bad("layer_norm_epsilon", "1e-05");
    if (const Json* v = root.find("n_inner"))
        if (v->type != Json::NUL && !(v->type == Json::NUMBER && v->is_integer && v->integer == 4LL * channels))
            bad("n_inner", "null or 4 x n_embd");
    const std::pair<const char*, bool> flags[] = {{"tie_word_embeddings", true},
                                                  {"scale_attn_weights", true},
                                                  {"scale_attn_by_inverse_layer_idx", false},
                                                  {"add_cross_attention", false}};
    for (const auto& [key, want] : flags)
        if (const Json* v = root.find(key))
            if (v->type != Json::BOOL || v->boolean != want) bad(key, want ? "true" : "false");
}

// "h.<l>.attn.bias" / "h.<l>.attn.masked_bias": the causal-mask buffers older exports include. A loop, not
// std::regex, whose matcher recurses once per character: a hostile name of 100,000 digits overflowed the stack.
bool is_attention_buffer(const std::string& name) {
    if (name.compare(0, 2, "h.") != 0) return false;
    const size_t i = name.find_first_not_of("0123456789", 2);
    if (i == 2 || i == std::string::npos) return false;  // no layer number, or nothing after it
    const std::string rest = name.substr(i);
    return rest == ".attn.bias" || rest == ".attn.masked_bias";
}

void check_shape(const SafeTensors& st, const StTensor& s, const std::vector<int64_t>& want) {
    if (s.shape != want)
        fatal("shape mismatch for tensor %s in %s: expected %s, got %s", s.name.c_str(), st.path.c_str(),
              shape_str(want).c_str(), shape_str(s.shape).c_str());
}

// The stored tensor for one of ours: fatal naming it if it is missing or not in HuggingFace's shape.
const StTensor& find_hf_tensor(const SafeTensors& st, const std::string& prefix, const TensorInfo& t,
                               const GPT2Config& cfg) {
    const std::string name = prefix + t.hf_name;
    const StTensor* s = st.find(name);
    const std::vector<int64_t> want = hf_shape(t, cfg);
    if (!s) fatal("missing tensor %s in %s: expected shape %s", name.c_str(), st.path.c_str(), shape_str(want).c_str());
    check_shape(st, *s, want);
    return *s;
}

}  // namespace

GPT2Config hf_read_config(const std::string& path) {
    std::vector<uint8_t> bytes = read_whole_file(path, (size_t)1 << 20);  // config.json: a few hundred bytes
    Json root;
    std::string err;
    if (!json_parse(reinterpret_cast<const char*>(bytes.data()), bytes.size(), &root, &err))
        fatal("malformed JSON in %s: %s", path.c_str(), err.c_str());
    if (root.type != Json::OBJECT) fatal("bad config (%s): expected a JSON object", path.c_str());
    GPT2Config cfg =
        config_make(config_int(root, "n_positions", "n_ctx", path), config_int(root, "vocab_size", nullptr, path),
                    config_int(root, "n_layer", nullptr, path), config_int(root, "n_head", nullptr, path),
                    config_int(root, "n_embd", nullptr, path));
    if (const std::string bad = config_check(cfg, path.c_str()); !bad.empty()) fatal("%s", bad.c_str());
    check_config_math(root, path, cfg.channels);
    return cfg;
}

std::string hf_config_json(const GPT2Config& cfg) {
    // bos/eos: GPT-2's <|endoftext|> (50256), or null (none) in a smaller vocabulary (a model of train --vocab 1000).
    const std::string eot = cfg.vocab_size > 50256 ? "50256" : "null";
    char json[1024];
    int n = snprintf(json, sizeof(json),
                     "{\n  \"architectures\": [\"GPT2LMHeadModel\"],\n  \"model_type\": \"gpt2\",\n"
                     "  \"activation_function\": \"gelu_new\",\n  \"layer_norm_epsilon\": 1e-05,\n"
                     "  \"n_ctx\": %d,\n  \"n_positions\": %d,\n  \"n_embd\": %d,\n  \"n_head\": %d,\n"
                     "  \"n_layer\": %d,\n  \"vocab_size\": %d,\n  \"bos_token_id\": %s,\n"
                     "  \"eos_token_id\": %s,\n  \"tie_word_embeddings\": true\n}\n",
                     cfg.max_seq_len, cfg.max_seq_len, cfg.channels, cfg.num_heads, cfg.num_layers, cfg.vocab_size,
                     eot.c_str(), eot.c_str());
    return std::string(json, (size_t)n);
}

std::string hf_prefix(const SafeTensors& st) { return st.find("transformer.wte.weight") ? "transformer." : ""; }

std::string hf_check_header(const SafeTensors& st, const std::string& prefix, const GPT2Config& cfg) {
    const std::vector<TensorInfo> table = layout_params(cfg);
    std::string dtype;
    for (const TensorInfo& t : table) {
        const StTensor& s = find_hf_tensor(st, prefix, t, cfg);
        dtype = dtype.empty() || dtype == s.dtype ? s.dtype : "mixed";
    }
    for (const StTensor& s : st.tensors) {
        if (s.name == "lm_head.weight") check_shape(st, s, {cfg.vocab_size, cfg.channels});
        bool ok = s.name == "lm_head.weight" ||
                  (s.name.compare(0, prefix.size(), prefix) == 0 && is_attention_buffer(s.name.substr(prefix.size())));
        for (const TensorInfo& t : table) ok = ok || s.name == prefix + t.hf_name;
        if (!ok) fatal("unknown tensor %s in %s: expected only GPT-2 parameters", s.name.c_str(), st.path.c_str());
    }
    return dtype;
}

void hf_unpack(const SafeTensors& st, const std::string& prefix, const GPT2Config& cfg, float* base,
               const TensorLoaded& loaded) {
    for (const TensorInfo& t : layout_params(cfg)) {
        const StTensor* s = &find_hf_tensor(st, prefix, t, cfg);
        float* dst = base + t.offset;
        if (!t.hf_transposed) {
            safetensors_read_into(st, *s, dst);
            std::fill(dst + s->numel(), dst + t.numel(), 0.0f);  // wte's padded rows: the base may be unset
        } else {
            std::vector<float> src = safetensors_read_f32(st, *s);  // one matrix at a time
            const size_t rows = t.rows, cols = t.cols;              // ours (rows, cols) = theirs transposed
            for (size_t r = 0; r < rows; r++)
                for (size_t c = 0; c < cols; c++) dst[r * cols + c] = src[c * rows + r];
        }
        if (loaded) loaded(t);
    }
}

void hf_read_params(const SafeTensors& st, GPT2* model, const TensorLoaded& loaded) {
    const StTensor* head = st.find("lm_head.weight");
    hf_unpack(st, hf_prefix(st), model->cfg, model->params.data(), [&](const TensorInfo& t) {
        if (head && t.offset == 0) {  // wte, compared before loaded may quantize it in place
            std::vector<float> w = safetensors_read_f32(st, *head);
            if (memcmp(w.data(), model->param.wte, w.size() * sizeof(float)) != 0)
                fatal("untied lm_head.weight in %s: expected it to equal wte.weight (GPT-2 ties them)",
                      st.path.c_str());
        }
        if (loaded) loaded(t);
    });
}

std::vector<StWriteItem> hf_tensors(const GPT2& model) {
    std::vector<StWriteItem> items;
    for (const TensorInfo& t : model.param_table) {
        const float* src = model.params.data() + t.offset;
        items.push_back({t.hf_name, "F32", hf_shape(t, model.cfg), src});
        if (!t.hf_transposed) continue;
        items.back().fill = [&t, src](size_t first, size_t count, void* out) {
            size_t r = first % t.rows, c = first / t.rows;  // HF's element i is (c, r) of the (cols, rows) matrix
            for (size_t i = 0; i < count; i++) {
                static_cast<float*>(out)[i] = src[r * t.cols + c];
                if (++r == t.rows) r = 0, c++;
            }
        };
    }
    return items;
}

void hf_load(GPT2* model, const std::string& dir) {
    const GPT2Config cfg = hf_read_config(dir + "/config.json");
    SafeTensors st;
    safetensors_load(&st, dir + "/model.safetensors");
    hf_check_header(st, hf_prefix(st), cfg);
    gpt2_build(model, cfg);
    hf_read_params(st, model);
}

void hf_write_safetensors(const GPT2& model, const ByteSink& out) {
    safetensors_write(out, hf_tensors(model), {{"format", "pt"}, {"writer", kHfWriter}});
}

void checkpoint_check_finite(const GPT2& model, const std::string& where, const char* doing, const TensorInfo* only) {
    for (const TensorInfo& t : model.param_table) {
        if (only && t.offset != only->offset) continue;
        const float* x = model.params.data() + t.offset;
        for (size_t i = 0; i < t.numel(); i++)
            if (!std::isfinite(x[i]))
                fatal("non-finite parameter (%s): %s[%zu] is %g; %s", where.c_str(), t.hf_name.c_str(), i, x[i], doing);
    }
}
