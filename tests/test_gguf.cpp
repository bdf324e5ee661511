// test_gguf.cpp: GGUF export and import (formats/gguf.h): every tensor comes back exactly at f32 and as its
// rounding at f16, bf16 and q8_0; the tokenizer keys llama.cpp reads; the parser refuses truncated and
// corrupt headers. Whether llama.cpp itself runs the files is tests/ref_gguf.sh's question.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "precision/half.h"
#include "platform/platform.h"
#include "platform/output_files.h"
#include "formats/checkpoint.h"
#include "formats/gguf.h"
#include "core/model.h"
#include "precision/precision.h"
#include "test.h"
#include "test_os.h"
#include "text/tokenizer.h"

namespace {

std::vector<uint8_t> file_bytes(const std::string& path) {
    std::vector<uint8_t> b;
    FILE* f = os_fopen_read(path);
    if (!f) return b;
    int c;
    while ((c = fgetc(f)) != EOF) b.push_back((uint8_t)c);
    fclose(f);
    return b;
}

GgufReadAt image_reader(const std::vector<uint8_t>& image) {
    return [&image](void* dst, size_t n, uint64_t at) {
        if (at > image.size() || n > image.size() - at) return false;
        memcpy(dst, image.data() + at, n);
        return true;
    };
}

bool parse_image(const std::vector<uint8_t>& image, GgufHeader* h, std::string* err) {
    return gguf_parse(image_reader(image), image.size(), h, err);
}

bool tokenizer_here(Tokenizer* tok) {
    if (!tokenizer_files_present(tokenizer_default_dir())) return false;
    tokenizer_load(tok, tokenizer_default_dir());
    return true;
}

// A small random model (rows of 64: every weight q8_0-able) over the first V tokens.
void random_model(GPT2* m, int V) {
    gpt2_build(m, config_make(16, V, 2, 2, 64));
    gpt2_init_random(m, 7);
}

// What `type` stores for x: x itself, its fp16 or bf16 rounding; q8_0 is checked by bound instead.
float rounded(float x, GgufType type) {
    if (type == GgufType::kF16) return fp16_to_float(fp16_round(x));
    if (type == GgufType::kBF16) return bf16_rounded(x);
    return x;
}

// Compares a loaded model with the one exported as `type`; returns the largest q8_0 error relative to
// its block's scale (max |x| / 127), 0 for the other types.
double compare(const GPT2& a, const GPT2& b, GgufType type) {
    double worst = 0;
    for (const TensorInfo& t : a.param_table) {
        const size_t n = t.name == "wte" ? t.cols * a.cfg.vocab_size : t.numel();
        const float *x = a.params.data() + t.offset, *y = b.params.data() + t.offset;
        if (t.cols == 0 || type != GgufType::kQ8_0) {
            const GgufType stored = t.cols == 0 ? GgufType::kF32 : type;
            for (size_t i = 0; i < n; i++)
                if (y[i] != rounded(x[i], stored)) return -1;
            continue;
        }
        for (size_t blk = 0; blk < n; blk += 32) {
            double amax = 0;
            for (int j = 0; j < 32; j++) amax = max_abs(amax, x[blk + j]);
            for (int j = 0; j < 32; j++) worst = max_abs(worst, (x[blk + j] - y[blk + j]) / (amax / 127));
        }
    }
    for (size_t i = (size_t)a.cfg.vocab_size * a.cfg.channels; i < (size_t)a.cfg.padded_vocab_size * a.cfg.channels; i++)
        if (b.params[i] != 0) return -1;  // wte's padding rows: not stored, zero after loading
    return worst;
}

}  // namespace

TEST(gguf_round_trips_every_dtype) {
    Tokenizer tok;
    if (!tokenizer_here(&tok)) {
        CHECK(!"tokenizer files not found (set GPT2_DATA_DIR)");
        return;
    }
    GPT2 model;
    random_model(&model, 300);
    const std::string dir = test_os_temp_dir("gguf"), path = dir + "/m.gguf";
    const struct {
        GgufType type;
        const char* dtype;
    } cases[] = {{GgufType::kF32, "F32"},
                 {GgufType::kF16, "F16, 1-D tensors F32"},
                 {GgufType::kBF16, "BF16, 1-D tensors F32"},
                 {GgufType::kQ8_0, "Q8_0, 1-D tensors F32"}};
    for (const auto& c : cases) {
        gguf_save(model, tok, path, c.type, "test");
        GPT2 back;
        CheckpointInfo info;
        checkpoint_load(&back, path, 0, &info);
        inputs_forget();  // the next case writes the file this one read
        CHECK(info.format == "gguf v3" && info.dtype == c.dtype);
        CHECK(back.cfg.vocab_size == 300 && back.cfg.num_layers == 2 && back.cfg.num_heads == 2 &&
              back.cfg.channels == 64 && back.cfg.max_seq_len == 16);
        const double q8 = compare(model, back, c.type);
        printf("    %s: %s\n", c.dtype, q8 < 0 ? "MISMATCH" : c.type == GgufType::kQ8_0 ? "" : "exact");
        CHECK(q8 >= 0);
        // q8_0: round(x / d) is off by at most d / 2, and d's fp16 rounding (2^-11 relative) moves the
        // largest value (127 d) by 127 * 2^-11 d more: 0.562 d in all.
        if (c.type == GgufType::kQ8_0) {
            printf("    q8_0: max |x - q8(x)| = %.3f of its block's scale\n", q8);
            CHECK(q8 > 0.3 && q8 <= 0.5 + 127.0 / 2048);
        }
    }
    os_unlink(path.c_str());
    os_rmdir(dir);
}

TEST(int8_model_holds_the_values_of_its_q8_0_export) {
    Tokenizer tok;
    if (!tokenizer_here(&tok)) {
        CHECK(!"tokenizer files not found (set GPT2_DATA_DIR)");
        return;
    }
    GPT2 model, int8;
    random_model(&model, 300);
    random_model(&int8, 300);
    const std::string dir = test_os_temp_dir("gguf_int8"), path = dir + "/m.gguf";
    gguf_save(model, tok, path, GgufType::kQ8_0, "test");
    GPT2 back;
    checkpoint_load(&back, path, 0);
    inputs_forget();
    CHECK(gpt2_set_precision(&int8, Precision::kInt8) == 1 + 1 + 4 * 2);  // wte, wpe, 4 per block
    CHECK(int8.params == back.params);  // --precision int8 runs exactly the weights llama.cpp reads as q8_0
    // and int8 on the loaded file quantizes its values back to the file's own blocks
    CHECK(gpt2_set_precision(&back, Precision::kInt8) == 10);
    const PrecisionCopies &b8 = *gpt2_precision_copies(back), &i8 = *gpt2_precision_copies(int8);
    CHECK(back.params == int8.params && b8.params8 == i8.params8 && b8.params8_d == i8.params8_d);
    bool differs = false;
    for (size_t i = 0; i < model.params.size(); i++) differs = differs || model.params[i] != int8.params[i];
    CHECK(differs);
    os_unlink(path.c_str());
    os_rmdir(dir);
}

TEST(gguf_stores_the_tokenizer_llama_cpp_reads) {
    Tokenizer tok;
    if (!tokenizer_here(&tok)) {
        CHECK(!"tokenizer files not found (set GPT2_DATA_DIR)");
        return;
    }
    CHECK(tokenizer_spelling(" hello\n") == "\xc4\xa0hello\xc4\x8a");  // Ġhello Ċ, as encoder.json spells them
    CHECK(tokenizer_spelling("<|endoftext|>") == "<|endoftext|>");
    const std::string dir = test_os_temp_dir("gguf"), path = dir + "/m.gguf";
    for (int V : {300, 50257}) {
        GPT2 model;
        gpt2_build(&model, config_make(8, V, 1, 1, 32));
        gguf_save(model, tok, path, GgufType::kF32, "test");
        GgufHeader h;
        std::string err;
        const std::vector<uint8_t> image = file_bytes(path);
        CHECK(parse_image(image, &h, &err));
        const GgufValue *tokens = h.find("tokenizer.ggml.tokens"), *merges = h.find("tokenizer.ggml.merges");
        const GgufValue *kinds = h.find("tokenizer.ggml.token_type"), *eos = h.find("tokenizer.ggml.eos_token_id");
        CHECK(h.find("tokenizer.ggml.model") && h.find("tokenizer.ggml.model")->str == "gpt2");
        CHECK(h.find("tokenizer.ggml.pre") && h.find("tokenizer.ggml.pre")->str == "gpt-2");
        CHECK(tokens && tokens->array_count == (uint64_t)V && kinds && kinds->array_count == (uint64_t)V);
        // GPT-2's merges make tokens 256, 257, ... in order: those below V are the first V - 256
        CHECK(merges && merges->array_count == (uint64_t)std::min(V - 256, 50000));
        CHECK(V > 50256 ? eos && eos->number == 50256 : !eos);
        // and read back (gguf_tokenizer) it is the tokenizer's first V tokens and the merges among them
        Tokenizer back;
        CHECK(gguf_tokenizer(h, image_reader(image), path, &back));
        CHECK(back.vocab_size == V && back.dir == path);
        CHECK(back.token_bytes == std::vector<std::string>(tok.token_bytes.begin(), tok.token_bytes.begin() + V));
        CHECK(back.merges.size() == merges->array_count);
        const std::string text = "To be, or not to be: that is the question.";
        std::vector<int> ids = tokenizer_encode(&back, text);
        CHECK(tokenizer_decode(back, ids) == text);
        for (int id : ids) CHECK(id < V);
        if (V == 50257) CHECK(ids == tokenizer_encode(&tok, text));
    }
    GgufHeader none;  // a header without tokenizer keys: none read
    Tokenizer unused;
    CHECK(!gguf_tokenizer(none, image_reader({}), path, &unused));
    os_unlink(path.c_str());
    os_rmdir(dir);
}

TEST(gguf_parser_refuses_truncated_and_corrupt_headers) {
    Tokenizer tok;
    if (!tokenizer_here(&tok)) {
        CHECK(!"tokenizer files not found (set GPT2_DATA_DIR)");
        return;
    }
    GPT2 model;
    random_model(&model, 300);
    const std::string dir = test_os_temp_dir("gguf"), path = dir + "/m.gguf";
    gguf_save(model, tok, path, GgufType::kQ8_0, "test");
    const std::vector<uint8_t> image = file_bytes(path);
    os_unlink(path.c_str());
    os_rmdir(dir);
    GgufHeader h;
    std::string err;
    CHECK(parse_image(image, &h, &err));
    int refused = 0, cuts = 0;
    for (size_t n = 0; n < image.size(); n += 1 + n / 16, cuts++) {
        GgufHeader t;
        refused += !parse_image(std::vector<uint8_t>(image.begin(), image.begin() + n), &t, &err);
    }
    CHECK(refused == cuts);  // every prefix: its header or its last tensor's data is cut
    auto refuses = [&](size_t at, const void* bytes, size_t n, const char* why) {
        std::vector<uint8_t> bad = image;
        memcpy(bad.data() + at, bytes, n);
        GgufHeader t;
        const bool ok = parse_image(bad, &t, &err);
        if (ok || err.find(why) == std::string::npos) printf("    expected '%s', got '%s'\n", why, ok ? "ok" : err.c_str());
        return !ok && err.find(why) != std::string::npos;
    };
    const uint32_t v2 = 2, bad_type = 99;
    const uint64_t huge = (uint64_t)1 << 40;
    CHECK(refuses(4, &v2, 4, "version 2"));
    CHECK(refuses(8 + 8 + 8 + 8 + 20, &bad_type, 4, "unknown value type 99"));  // general.architecture's type
    const size_t tokens = std::string(image.begin(), image.end()).find("tokenizer.ggml.tokens");
    CHECK(refuses(tokens + 21 + 4 + 4, &huge, 8, "past the end"));  // the tokens array's count
    const size_t last = std::string(image.begin(), image.end()).rfind("output_norm.bias");
    CHECK(refuses(last + 16 + 4 + 8 + 4, &huge, 8, "past the end"));  // its data offset
    const uint64_t odd = 4;
    CHECK(refuses(last + 16 + 4 + 8 + 4, &odd, 8, "not aligned"));
}
