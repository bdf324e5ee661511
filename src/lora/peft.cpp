// peft.cpp: see peft.h. PEFT's rules followed here (huggingface/peft: config.py save_pretrained,
// tuners_utils.py check_target_module_exists, lora/layer.py): the config is json.dumps(indent=2,
// sort_keys=True); a target names a module whose full name equals it or ends with "." + it; lora_A is (r, in),
// lora_B (out, r) whatever fan_in_fan_out says (PEFT sets it true for GPT-2's Conv1D itself).
#include "lora/peft.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

#include "core/error.h"
#include "core/safetensors.h"
#include "formats/safetensors_file.h"
#include "platform/output_files.h"
#include "platform/platform.h"
#include "platform/util.h"

namespace {

const char* const kConfigName = "adapter_config.json";
const char* const kWeightsName = "adapter_model.safetensors";

// ---- JSON as Python's json.dumps(indent=2, sort_keys=True) writes it (ensure_ascii: \uXXXX beyond ASCII)

// repr() of a float: the fewest digits that read back to x (as a float32 when `single`), fixed notation
// with ".0" for exponents -4..15, else "1e-05" style.
std::string py_float(double x, bool single) {
    char buf[40];
    int p = 1;
    for (; p < 17; p++) {
        snprintf(buf, sizeof(buf), "%.*e", p - 1, x);
        const double back = strtod(buf, nullptr);
        if (single ? (float)back == (float)x : back == x) break;
    }
    snprintf(buf, sizeof(buf), "%.*e", p - 1, x);
    std::string s(buf), sign = s[0] == '-' ? "-" : "";
    if (!sign.empty()) s.erase(0, 1);
    const size_t e = s.find('e');
    const int exp = atoi(s.c_str() + e + 1);
    std::string digits = s.substr(0, 1) + (e > 2 ? s.substr(2, e - 2) : "");
    while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
    if (exp < -4 || exp >= 16) {
        snprintf(buf, sizeof(buf), "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
        return sign + digits.substr(0, 1) + (digits.size() > 1 ? "." + digits.substr(1) : "") + buf;
    }
    if (exp < 0) return sign + "0." + std::string(-exp - 1, '0') + digits;
    if ((int)digits.size() <= exp + 1) return sign + digits + std::string(exp + 1 - digits.size(), '0') + ".0";
    return sign + digits.substr(0, exp + 1) + "." + digits.substr(exp + 1);
}

std::string py_string(const std::string& s) {
    std::string out = "\"";
    char buf[16];
    for (size_t i = 0; i < s.size();) {
        const unsigned char c = s[i];
        const int more = c < 0x80 ? 0 : c < 0xE0 ? 1 : c < 0xF0 ? 2 : 3;  // valid UTF-8: the reader checked it
        uint32_t cp = more ? c & (0x3F >> more) : c;
        for (int k = 1; k <= more; k++) cp = cp << 6 | (s[i + k] & 0x3F);
        i += 1 + more;
        const char* esc = cp == '"'    ? "\\\""
                          : cp == '\\' ? "\\\\"
                          : cp == '\n' ? "\\n"
                          : cp == '\r' ? "\\r"
                          : cp == '\t' ? "\\t"
                          : cp == '\b' ? "\\b"
                          : cp == '\f' ? "\\f"
                                       : nullptr;
        if (esc) out += esc;
        else if (cp >= 0x20 && cp < 0x80) out += (char)cp;
        else if (cp < 0x10000) snprintf(buf, sizeof(buf), "\\u%04x", cp), out += buf;
        else
            snprintf(buf, sizeof(buf), "\\u%04x\\u%04x", 0xD800 + ((cp - 0x10000) >> 10), 0xDC00 + (cp & 0x3FF)),
                out += buf;
    }
    return out + "\"";
}

void py_dump(const Json& v, int depth, std::string* out) {
    const std::string in(2 * (depth + 1), ' '), close(2 * depth, ' ');
    switch (v.type) {
        case Json::NUL: *out += "null"; break;
        case Json::BOOL: *out += v.boolean ? "true" : "false"; break;
        case Json::NUMBER: *out += v.is_integer ? std::to_string(v.integer) : py_float(v.number, false); break;
        case Json::STRING: *out += py_string(v.str); break;
        case Json::ARRAY:
            if (v.items.empty()) {
                *out += "[]";
                break;
            }
            *out += "[\n";
            for (size_t i = 0; i < v.items.size(); i++) {
                *out += (i ? ",\n" : "") + in;
                py_dump(v.items[i], depth + 1, out);
            }
            *out += "\n" + close + "]";
            break;
        case Json::OBJECT: {
            if (v.members.empty()) {
                *out += "{}";
                break;
            }
            std::vector<const std::pair<std::string, Json>*> sorted;
            for (const auto& m : v.members) sorted.push_back(&m);
            std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->first < b->first; });
            *out += "{\n";
            for (size_t i = 0; i < sorted.size(); i++) {
                *out += (i ? ",\n" : "") + in + py_string(sorted[i]->first) + ": ";
                py_dump(sorted[i]->second, depth + 1, out);
            }
            *out += "\n" + close + "}";
            break;
        }
    }
}

// v as JSON on one line (the line breaks and indents of py_dump left out), cut at 60 bytes: a message's "got".
std::string json_brief(const Json& v) {
    std::string full, one;
    py_dump(v, 0, &full);
    for (size_t i = 0; i < full.size(); i++)
        if (full[i] == '\n')
            while (i + 1 < full.size() && full[i + 1] == ' ') i++;
        else
            one += full[i];
    return one.size() > 60 ? one.substr(0, 57) + "..." : one;
}

Json json_of(Json::Type type) {
    Json j;
    j.type = type;
    return j;
}
Json json_str(const std::string& s) {
    Json j = json_of(Json::STRING);
    j.str = s;
    return j;
}
Json json_bool(bool b) {
    Json j = json_of(Json::BOOL);
    j.boolean = b;
    return j;
}
// A number as Python writes it: an int when it is one and `as_int` (PEFT's r and lora_alpha are ints), else the
// float32's shortest repr (what a user passed as 0.05 reads back as 0.05; lora_dropout 0 is PEFT's 0.0).
Json json_number(double x, bool as_int) {
    Json j = json_of(Json::NUMBER);
    j.is_integer = as_int && x == std::floor(x) && std::fabs(x) < 1e15;
    j.integer = j.is_integer ? (int64_t)x : 0;
    j.number = j.is_integer ? x : strtod(py_float(x, true).c_str(), nullptr);
    return j;
}
void json_set(Json* obj, const std::string& key, const Json& v) {
    for (auto& m : obj->members)
        if (m.first == key) return (void)(m.second = v);
    obj->members.push_back({key, v});
}

// ---- reading the config

bool is_null_or_empty(const Json& v) {
    return v.type == Json::NUL || (v.type == Json::ARRAY && v.items.empty()) ||
           (v.type == Json::OBJECT && v.members.empty());
}

// The modules of GPT2LMHeadModel, by full name, that a target may select; PEFT adapts only Linear and Conv1D.
std::vector<std::string> gpt2_modules(int layers) {
    std::vector<std::string> names = {"transformer",   "transformer.wte",  "transformer.wpe", "transformer.drop",
                                      "transformer.h", "transformer.ln_f", "lm_head"};
    static const char* const kBlock[] = {
        "",      ".ln_1", ".attn",     ".attn.c_attn", ".attn.c_proj", ".attn.attn_dropout", ".attn.resid_dropout",
        ".ln_2", ".mlp",  ".mlp.c_fc", ".mlp.c_proj",  ".mlp.act",     ".mlp.dropout"};
    for (int l = 0; l < layers; l++)
        for (const char* m : kBlock) names.push_back("transformer.h." + std::to_string(l) + m);
    return names;
}

// cfg->target from cfg->target_modules: each of the four Conv1D kinds selected in every layer or in none.
void resolve_targets(LoraConfig* cfg, int layers, const std::string& path) {
    std::fill(cfg->target, cfg->target + kLoraTargets, false);
    const char* p = path.c_str();
    if (cfg->target_modules.size() == 1 && cfg->target_modules[0] == "all-linear") {
        std::fill(cfg->target, cfg->target + kLoraTargets, true);  // every Linear and Conv1D but the output layer
        return;
    }
    std::vector<int> hits(kLoraTargets * layers, 0);  // layer l's kind k selected by some entry
    std::string first[kLoraTargets];                     // the first entry that selected kind k, for the message
    for (const std::string& t : cfg->target_modules) {
        for (const std::string& m : gpt2_modules(layers)) {
            int kind = -1;
            for (int k = 0; k < kLoraTargets; k++)
                if (lora_module_matches(m, kLoraModules[k])) kind = k;
            if (lora_module_matches(m, t) && kind < 0)
                fatal(
                    "unsupported value for key target_modules in %s: \"%s\" selects %s, expected only attn.c_attn, "
                    "attn.c_proj, mlp.c_fc and mlp.c_proj (GPT-2's Conv1D layers)",
                    p, t.c_str(), m.c_str());
        }
        for (int k = 0; k < kLoraTargets; k++)
            for (int l = 0; l < layers; l++)
                if (lora_module_matches("transformer.h." + std::to_string(l) + "." + kLoraModules[k], t)) {
                    hits[k * layers + l] = 1;
                    if (first[k].empty()) first[k] = t;
                }
    }
    for (int k = 0; k < kLoraTargets; k++) {  // PEFT adapts the union of the entries: it must hold every layer
        const int n = (int)std::count(hits.begin() + k * layers, hits.begin() + (k + 1) * layers, 1);
        if (n > 0 && n < layers)
            fatal("unsupported value for key target_modules in %s: \"%s\" selects %s in %d of %d layers, expected "
                  "every layer",
                  p, first[k].c_str(), kLoraModules[k], n, layers);
        cfg->target[k] = n > 0;
    }
    if (std::none_of(cfg->target, cfg->target + kLoraTargets, [](bool b) { return b; }))
        fatal(
            "bad value for key target_modules in %s: expected names of GPT-2's c_attn, c_proj or c_fc modules, "
            "none matched",
            p);
}

// A number at `key` (missing: `fallback`, PEFT's default), finite and in [lo, hi].
double config_number(const Json& root, const char* key, double fallback, double lo, double hi, bool integer,
                     const std::string& path) {
    const Json* v = root.find(key);
    if (!v) return fallback;
    if (v->type != Json::NUMBER || !std::isfinite(v->number) || v->number < lo || v->number > hi ||
        (integer && !v->is_integer))
        fatal("bad value for key %s in %s: expected %s in [%.*g, %.*g], got %s", key, path.c_str(),
              integer ? "an integer" : "a number", integer ? 17 : 6, lo, integer ? 17 : 6, hi,
              json_brief(*v).c_str());
    return v->number;
}

// A path that is there but is no regular file (a directory, a FIFO, a device, a link to one) is named as such,
// not as missing.
void check_regular(const std::string& path, const char* what) {
    FileInfo st;
    if (!os_lstat(path, &st) || file_exists(path)) return;  // missing (a dangling link too), or a file
    const bool dir = dir_exists(path);
    fatal("not a regular file (%s): %s, expected %s as a file", path.c_str(),
          dir ? "a directory" : st.kind == FileKind::symlink && path_exists(path) ? "a link to a device, FIFO or socket"
                                                                                 : "a device, FIFO or socket",
          what);
}

// DIR/adapter_config.json's bytes (path), checked: the directory and the file exist (a model checkpoint named
// as such), UTF-8 as Python reads the file (and py_string relies on).
std::vector<uint8_t> read_config_bytes(const std::string& dir, const std::string& path) {
    const char* p = path.c_str();
    if (path_exists(dir) && !dir_exists(dir)) {
        const std::string base = path_base(dir);
        const char* what =
            "not a LoRA adapter (--lora-from %s): a file, expected a PEFT adapter directory with %s and %s";
        if (base == kConfigName || base == kWeightsName)  // one of the adapter's own files
            fatal_hint("give the directory holding it: --lora-from " + path_parent(dir), what, dir.c_str(),
                       kConfigName, kWeightsName);
        fatal(what, dir.c_str(), kConfigName, kWeightsName);
    }
    if (!dir_exists(dir))
        fatal("adapter not found (%s): expected a PEFT adapter directory with %s and %s", dir.c_str(), kConfigName,
              kWeightsName);
    if (!file_exists(path) &&
        (file_exists(path_join(dir, "config.json")) || file_exists(path_join(dir, "model.safetensors"))))
        fatal_hint("load it with --model " + dir,
                   "not a LoRA adapter (--lora-from %s): a model checkpoint (config.json, model.safetensors), expected "
                   "PEFT's %s and %s",
                   dir.c_str(), kConfigName, kWeightsName);
    check_regular(path, "PEFT's adapter config");
    if (!file_exists(path))
        fatal("missing %s: expected PEFT's adapter config%s", p,
              (file_exists(path_join(dir, kWeightsName)) ? std::string(" beside ") + kWeightsName
                                                         : std::string(" and ") + kWeightsName + " in the directory")
                  .c_str());
    const std::vector<uint8_t> bytes = file_read(path, (size_t)1 << 20);  // a few hundred bytes
    for (size_t i = 0; i < bytes.size();) {
        const uint8_t c = bytes[i];
        const int more = c < 0x80                ? 0
                         : c >= 0xC2 && c < 0xE0 ? 1
                         : c >= 0xE0 && c < 0xF0 ? 2
                         : c >= 0xF0 && c < 0xF5 ? 3
                                                 : -1;
        bool ok = more >= 0 && i + more < bytes.size();
        for (int k = 1; ok && k <= more; k++) ok = (bytes[i + k] & 0xC0) == 0x80;
        if (!ok) fatal("bad adapter config (%s): byte %zu is not UTF-8, expected a UTF-8 JSON file", p, i);
        i += 1 + more;
    }
    return bytes;
}

// target_modules of the config at `path` into cfg->target_modules: a list of names, "all-linear", or PEFT's
// default for GPT-2 (LoraConfig's) when missing or null; a regular expression is refused.
void read_targets(const Json& root, LoraConfig* c, const std::string& path) {
    const char* p = path.c_str();
    LoraConfig& cfg = *c;
    const Json* targets = root.find("target_modules");
    if (targets && targets->type == Json::STRING) {
        if (targets->str != "all-linear")
            fatal(
                "unsupported value for key target_modules in %s: a regular expression, expected a list of module "
                "names or \"all-linear\"",
                p);
        cfg.target_modules = {"all-linear"};
    } else if (targets && targets->type == Json::ARRAY) {
        cfg.target_modules.clear();
        for (const Json& t : targets->items) {
            if (t.type != Json::STRING) fatal("bad value for key target_modules in %s: expected a list of strings", p);
            cfg.target_modules.push_back(t.str);
        }
    } else if (targets && targets->type != Json::NUL) {
        fatal("bad value for key target_modules in %s: expected a list of module names", p);
    }  // else PEFT's default for GPT-2, {"c_attn"}: LoraConfig's
}

}  // namespace

PeftConfig peft_read_config(const std::string& dir, const GPT2Config& base) {
    const std::string path = path_join(dir, kConfigName);
    const char* p = path.c_str();
    const std::vector<uint8_t> bytes = read_config_bytes(dir, path);
    PeftConfig out;
    std::string err;
    if (!json_parse(reinterpret_cast<const char*>(bytes.data()), bytes.size(), &out.kept, &err))
        fatal("malformed JSON in %s: %s", p, err.c_str());
    const Json& root = out.kept;
    if (root.type != Json::OBJECT) fatal("bad adapter config (%s): expected a JSON object", p);
    const Json* type = root.find("peft_type");
    if (!type || type->type != Json::STRING || type->str != "LORA")
        fatal("unsupported adapter (%s): peft_type is %s, expected \"LORA\"", p,
              !type                        ? "missing"
              : type->type == Json::STRING ? ("\"" + type->str + "\"").c_str()
                                           : "not a string");
    // Keys whose other values change what the adapter computes: refused, naming what gpt2 computes.
    struct Rule {
        const char* key;
        bool (*ok)(const Json&);
        const char* expected;
    };
    static const Rule kRules[] = {
        {"bias", [](const Json& v) { return v.type == Json::STRING && v.str == "none"; },
         "\"none\" (no trained biases)"},
        {"modules_to_save", is_null_or_empty, "null (no fully trained modules)"},
        {"rank_pattern", is_null_or_empty, "{} (one rank for every matrix)"},
        {"alpha_pattern", is_null_or_empty, "{} (one alpha for every matrix)"},
        {"layers_to_transform", is_null_or_empty, "null (every layer adapted)"},
        {"exclude_modules", is_null_or_empty, "null"},
        {"layer_replication", is_null_or_empty, "null"},
        {"target_parameters", is_null_or_empty, "null"},
        {"trainable_token_indices", is_null_or_empty, "null"},
        {"alora_invocation_tokens", is_null_or_empty, "null (plain LoRA)"},
        {"megatron_config", is_null_or_empty, "null"},
        {"use_dora", [](const Json& v) { return v.type == Json::NUL || (v.type == Json::BOOL && !v.boolean); },
         "false (plain LoRA)"},
        {"lora_bias", [](const Json& v) { return v.type == Json::NUL || (v.type == Json::BOOL && !v.boolean); },
         "false (no bias on lora_B)"},
        {"use_qalora", [](const Json& v) { return v.type == Json::NUL || (v.type == Json::BOOL && !v.boolean); },
         "false (plain LoRA)"},
        {"use_rslora", [](const Json& v) { return v.type == Json::NUL || v.type == Json::BOOL; }, "true or false"},
        {"fan_in_fan_out", [](const Json& v) { return v.type == Json::NUL || v.type == Json::BOOL; },
         "true or false (PEFT sets it true for GPT-2's Conv1D either way)"},
        {"init_lora_weights",
         [](const Json& v) { return v.type == Json::BOOL || (v.type == Json::STRING && v.str == "gaussian"); },
         "true, false or \"gaussian\" (the others, pissa, olora, loftq, corda, eva, change the base weights)"},
        {"base_model_name_or_path", [](const Json& v) { return v.type == Json::NUL || v.type == Json::STRING; },
         "a string or null"},
    };
    for (const Rule& r : kRules)
        if (const Json* v = root.find(r.key); v && !r.ok(*v))
            fatal("unsupported value for key %s in %s: expected %s, got %s", r.key, p, r.expected, json_brief(*v).c_str());
    LoraConfig& cfg = out.lora;
    cfg.rank = (int)config_number(root, "r", 8, 1, 1 << 20, true, path);
    cfg.alpha = (float)config_number(root, "lora_alpha", 8, -1e30, 1e30, false, path);
    cfg.dropout = (float)config_number(root, "lora_dropout", 0, 0, 1, false, path);
    const Json* rs = root.find("use_rslora");
    cfg.rslora = rs && rs->type == Json::BOOL && rs->boolean;
    const Json* name = root.find("base_model_name_or_path");
    out.base_model = name && name->type == Json::STRING ? name->str : "";
    read_targets(root, &cfg, path);
    resolve_targets(&cfg, base.num_layers, path);
    const int C = base.channels, in[kLoraTargets] = {C, C, C, 4 * C}, outs[kLoraTargets] = {3 * C, C, 4 * C, C};
    for (int k = 0; k < kLoraTargets; k++)
        if (cfg.target[k] && cfg.rank > std::min(in[k], outs[k]))
            fatal("bad value for key r in %s: %d, expected at most %d, the smaller side of %s (%d x %d) in the base", p,
                  cfg.rank, std::min(in[k], outs[k]), kLoraModules[k], outs[k], in[k]);
    return out;
}

void peft_read(LoraAdapter* a, PeftConfig* cfg, const std::string& dir, const GPT2Config& base) {
    *cfg = peft_read_config(dir, base);
    if (!(cfg->lora.alpha > 0))  // as train refuses it: a scale of 0 adapts nothing, a negative one inverts it
        fatal("bad value for key lora_alpha in %s: expected a number above 0 (the scale is alpha / r), got %g",
              path_join(dir, kConfigName).c_str(), cfg->lora.alpha);
    lora_layout(a, cfg->lora, base);
    const std::string path = path_join(dir, kWeightsName);
    const char* p = path.c_str();
    check_regular(path, "PEFT's adapter weights");
    if (!file_exists(path)) fatal("missing %s: expected PEFT's adapter weights beside %s", p, kConfigName);
    SafeTensors st;
    safetensors_load_header(&st, path);
    std::map<std::string, const TensorInfo*> expected;
    for (const TensorInfo& t : a->table) expected[t.name] = &t;
    for (const StTensor& s : st.tensors) {
        auto it = expected.find(s.name);
        if (it == expected.end())
            fatal(
                "unexpected tensor %s in %s: expected only lora_A and lora_B of the target_modules in %s, for %d "
                "layers",
                s.name.c_str(), p, kConfigName, base.num_layers);
        const TensorInfo& t = *it->second;
        if (s.shape != std::vector<int64_t>{(int64_t)t.rows, (int64_t)t.cols})
            fatal("shape mismatch for tensor %s in %s: expected [%zu, %zu] (r %d over the base's geometry), got %s",
                  s.name.c_str(), p, t.rows, t.cols, cfg->lora.rank,
                  s.shape.size() == 2
                      ? ("[" + std::to_string(s.shape[0]) + ", " + std::to_string(s.shape[1]) + "]").c_str()
                      : (std::to_string(s.shape.size()) + " dims").c_str());
        if (s.dtype != "F32" && s.dtype != "F16" && s.dtype != "BF16")
            fatal("unsupported dtype for tensor %s (%s): expected F32, F16 or BF16, got %s", s.name.c_str(), p,
                  s.dtype.c_str());
        float* x = a->params.data() + t.offset;
        safetensors_read_into(st, s, x);
        for (size_t i = 0; i < t.numel(); i++)
            if (!std::isfinite(x[i]))
                fatal("non-finite value in %s: %s[%zu] is %g, expected finite weights", p, s.name.c_str(), i, x[i]);
        expected.erase(it);
    }
    if (!expected.empty()) {
        const TensorInfo& t = *expected.begin()->second;
        fatal("missing tensor %s in %s: expected [%zu, %zu] for target_modules and r in %s", t.name.c_str(), p, t.rows,
              t.cols, kConfigName);
    }
}

std::string peft_config_json(const PeftConfig& cfg) {
    Json root = cfg.kept.type == Json::OBJECT ? cfg.kept : json_of(Json::OBJECT);
    const LoraConfig& c = cfg.lora;
    // what the adapter's math is: from cfg.lora, a number kept as read when it is the same value
    auto number = [&](const char* key, double x, bool as_int) {
        const Json* was = root.find(key);
        if (!was || was->type != Json::NUMBER || (float)was->number != (float)x)
            json_set(&root, key, json_number(x, as_int));
    };
    number("r", c.rank, true);
    number("lora_alpha", c.alpha, true);
    number("lora_dropout", c.dropout, false);
    const Json* was_targets = root.find("target_modules");
    LoraConfig read_back;  // what the targets as written would be read as
    if (was_targets && was_targets->type == Json::ARRAY) {
        read_back.target_modules.clear();
        for (const Json& t : was_targets->items) read_back.target_modules.push_back(t.str);
    } else if (was_targets && was_targets->type == Json::STRING) {
        read_back.target_modules = {was_targets->str};
    }
    if (!was_targets || read_back.target_modules != c.target_modules) {
        Json targets = json_of(Json::ARRAY);
        for (const std::string& t : c.target_modules) targets.items.push_back(json_str(t));
        json_set(&root, "target_modules",
                 c.target_modules == std::vector<std::string>{"all-linear"} ? json_str("all-linear") : targets);
    }
    if (c.rslora || root.find("use_rslora")) json_set(&root, "use_rslora", json_bool(c.rslora));
    json_set(&root, "base_model_name_or_path", cfg.base_model.empty() ? json_of(Json::NUL) : json_str(cfg.base_model));
    // the rest of PEFT's long-standing keys, for a new adapter
    const std::pair<const char*, Json> kDefaults[] = {
        {"bias", json_str("none")},
        {"fan_in_fan_out", json_bool(true)},
        {"inference_mode", json_bool(true)},
        {"init_lora_weights", json_bool(true)},
        {"modules_to_save", json_of(Json::NUL)},
        {"peft_type", json_str("LORA")},
        {"revision", json_of(Json::NUL)},
        {"task_type", json_str("CAUSAL_LM")},
    };
    for (const auto& d : kDefaults)
        if (!root.find(d.first)) json_set(&root, d.first, d.second);
    std::string out;
    py_dump(root, 0, &out);
    return out;
}

void peft_write(const LoraAdapter& a, const PeftConfig& cfg, const std::string& dir) {
    std::vector<const TensorInfo*> order;  // the safetensors library sorts by name (all F32)
    for (const TensorInfo& t : a.table) order.push_back(&t);
    std::sort(order.begin(), order.end(), [](auto* x, auto* y) { return x->name < y->name; });
    std::vector<StWriteItem> items;
    for (const TensorInfo* t : order) {
        const float* x = a.params.data() + t->offset;
        for (size_t i = 0; i < t->numel(); i++)
            if (!std::isfinite(x[i]))
                fatal("non-finite adapter weight (%s): %s[%zu] is %g; not saving non-finite weights", dir.c_str(),
                      t->name.c_str(), i, x[i]);
        items.push_back({t->name, "F32", {(int64_t)t->rows, (int64_t)t->cols}, x});
    }
    safetensors_write_file(path_join(dir, kWeightsName), items, {{"format", "pt"}});
    const std::string json = peft_config_json(cfg);
    output_write(path_join(dir, kConfigName), kConfigName, kNewFile, {{json.data(), json.size()}});
}

void peft_export(const LoraAdapter& a, const PeftConfig& cfg, const std::string& out) {
    const std::string dir = path_strip_slashes(out);
    if (dir.empty()) fatal("empty value for --out (export): expected a directory path");
    if (path_is_symlink(dir))
        fatal("bad value for --out (export): %s is a symbolic link, expected a directory", dir.c_str());
    if (dir_exists(dir) && !dir_entries(dir).empty())
        fatal_hint("choose a new or empty directory",
                   "bad value for --out (export): %s holds %s, expected a new or "
                   "empty directory for the adapter",
                   dir.c_str(), dir_entries(dir)[0].c_str());
    if (!dir_exists(dir) && path_exists(dir))
        fatal("bad value for --out (export): %s exists and is not a directory", dir.c_str());
    PathLock lock(dir, "--out");
    dir_publish(
        dir,
        [](const std::string& name) {
            return name_is_ours(name, {kConfigName, kWeightsName});
        },
        [&](const std::string& staging) { peft_write(a, cfg, staging); });
}
