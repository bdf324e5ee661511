// test_formats.cpp: JSON reader, safetensors reader/writer (including every corrupt-header defect the
// reader must reject), fp16/bf16 widening, token files and batches, AdamW and the lr schedule.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/json.h"
#include "text/json_lines.h"
#include "precision/half.h"
#include "platform/platform.h"
#include "platform/output_files.h"
#include "core/safetensors.h"
#include "formats/safetensors_file.h"
#include "formats/checkpoint.h"
#include "core/hf.h"
#include "platform/util.h"
#include "core/dataloader.h"
#include "formats/token_files.h"
#include "formats/token_writer.h"
#include "formats/train_state.h"
#include "report/evaluate.h"
#include "core/model.h"
#include "test.h"
#include "test_os.h"
#include "core/optimizer.h"

namespace {

bool parses(const std::string& s, Json* out = nullptr) {
    Json j;
    std::string err;
    return json_parse(s.data(), s.size(), out ? out : &j, &err);
}

std::string tmp_path(const std::string& name) { return "/tmp/gpt2_test_" + std::to_string(os_getpid()) + "_" + name; }

// A safetensors image with the given header text and `data_bytes` zero bytes of data.
std::vector<uint8_t> st_image(const std::string& header, size_t data_bytes, uint64_t claimed_len = UINT64_MAX) {
    uint64_t len = claimed_len == UINT64_MAX ? header.size() : claimed_len;
    std::vector<uint8_t> b(8);
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)(len >> (8 * i));
    b.insert(b.end(), header.begin(), header.end());
    b.resize(b.size() + data_bytes, 0);
    return b;
}

bool st_ok(const std::vector<uint8_t>& image) {
    SafeTensors st;
    std::string err;
    return safetensors_parse(&st, image, &err);
}

}  // namespace

TEST(json_parses_and_rejects) {
    Json j;
    CHECK(parses("{\"a\": [1, -2.5e3, true, null, \"x\\u00e9\\ud83d\\ude00\"], \"b\": {}}", &j));
    CHECK(j.find("a") && j.find("a")->items.size() == 5);
    CHECK(j.find("a")->items[0].is_integer && j.find("a")->items[0].integer == 1);
    CHECK(!j.find("a")->items[1].is_integer && j.find("a")->items[1].number == -2500);
    CHECK(j.find("a")->items[4].str == "x\xc3\xa9\xf0\x9f\x98\x80");
    const char* bad[] = {"",   "{",  "[1,]", "{\"a\" 1}", "\"abc",   "\"\\ud800\"",
                         "01", "1.", "tru",  "[1] x",     "\"\\x\"", "{\"a\":1,}"};
    for (const char* s : bad) CHECK(!parses(s));
    CHECK(!parses(std::string(100, '[') + std::string(100, ']')));  // deeper than the limit
    CHECK(parses(std::string(60, '[') + std::string(60, ']')));
}

// json_escape writes the five short escapes, other control characters as \u00XX and the rest (UTF-8 too) as
// is; \u escapes take either case of hex digit, and refuse anything else.
TEST(json_escape_and_hex_escapes) {
    CHECK(json_escape(std::string("a\"\\\n\t\r\b\x1f\x00\x7f/\xc3\xa9", 13)) ==
          "\"a\\\"\\\\\\n\\t\\r\\u0008\\u001f\\u0000\x7f/\xc3\xa9\"");
    Json j;
    CHECK(parses("\"\\u00C9\\u00e9\\uAbCd\"", &j) && j.str == "\xc3\x89\xc3\xa9\xea\xaf\x8d");
    CHECK(!parses("\"\\u00g9\"") && !parses("\"\\u 0e9\"") && !parses("\"\\u+0e9\"") && !parses("\"\\u00e\""));
}

// One line of a JSON-lines file (text/json_lines.h): the reader's message without its "line 1: ", for the
// caller to name the file's line instead.
TEST(json_lines_leave_the_line_number_to_the_caller) {
    Json j;
    std::string err;
    CHECK(json_parse_line("{\"a\": 1}", 8, &j, &err) && j.find("a"));
    CHECK(!json_parse_line("{\"a\" 1}", 7, &j, &err) && err == "expected ':'");
    CHECK(std::string(json_type_name(Json::ARRAY)) == "an array");
}

TEST(safetensors_round_trip) {
    std::vector<float> a = {1.5f, -2.0f, 3.25f, 0.0f, 1e-30f, -7.0f};
    std::vector<int32_t> b = {7, -8, 9};
    std::string path = tmp_path("rt.safetensors");
    safetensors_write_file(path, {{"a", "F32", {2, 3}, a.data()}, {"b.c", "I32", {3}, b.data()}}, {{"k", "v \"q\""}});
    SafeTensors st;
    safetensors_load(&st, path);
    os_unlink(path.c_str());
    CHECK(st.tensors.size() == 2);
    CHECK(st.meta("k") == "v \"q\"");
    const StTensor* ta = st.find("a");
    CHECK(ta && ta->shape == std::vector<int64_t>({2, 3}) && ta->dtype == "F32");
    if (ta) CHECK(safetensors_read_f32(st, *ta) == a);
    const StTensor* tb = st.find("b.c");
    if (tb) CHECK(safetensors_read_f32(st, *tb) == std::vector<float>({7, -8, 9}));
    CHECK(ta && ta->begin % 8 == 0);  // the header padded to 8 bytes: the data starts 8-aligned
}

// ./gpt2 reads the dtypes other than F32 (formats/safetensors_file.h, plugged in by test_main as by main):
// F16 and BF16 widened exactly, F64 rounded to the nearest float, I32 as floats.
TEST(safetensors_reads_other_dtypes_as_fp32) {
    const std::vector<uint16_t> f16 = {0x3C00, 0xC000, 0x0001}, b16 = {0x3F80, 0xC0A0};  // 1, -2, 2^-24; 1, -5
    const std::vector<double> f64 = {0.1, -3.0, 1e-50};
    const std::vector<int32_t> i32 = {16777217, -1};
    std::string path = tmp_path("dtypes.safetensors");
    safetensors_write_file(path, {{"h", "F16", {3}, f16.data()}, {"b", "BF16", {2}, b16.data()},
                                  {"d", "F64", {3}, f64.data()}, {"i", "I32", {2}, i32.data()}}, {});
    SafeTensors st;
    safetensors_load(&st, path);
    os_unlink(path.c_str());
    CHECK(safetensors_read_f32(st, *st.find("h")) == std::vector<float>({1.0f, -2.0f, std::ldexp(1.0f, -24)}));
    CHECK(safetensors_read_f32(st, *st.find("b")) == std::vector<float>({1.0f, -5.0f}));
    CHECK(safetensors_read_f32(st, *st.find("d")) == std::vector<float>({0.1f, -3.0f, 0.0f}));
    CHECK(safetensors_read_f32(st, *st.find("i")) == std::vector<float>({16777216.0f, -1.0f}));
}

TEST(safetensors_rejects_corrupt_headers) {
    const std::string good = "{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
    CHECK(st_ok(st_image(good, 8)));
    CHECK(!st_ok(std::vector<uint8_t>(5, 0)));                 // shorter than the length field
    CHECK(!st_ok(st_image(good, 8, 1u << 30)));                // header length past the end
    CHECK(!st_ok(st_image(good, 4)));                          // data truncated
    CHECK(!st_ok(st_image("{\"t\":{\"dtype\":\"F32\",", 8)));  // bad JSON
    CHECK(!st_ok(st_image("[1,2]", 0)));                       // not an object
    CHECK(!st_ok(st_image("{\"t\":{\"dtype\":\"F8\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8)));    // dtype
    CHECK(!st_ok(st_image("{\"t\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 12)));  // size
    CHECK(!st_ok(st_image("{\"t\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 8)));
    CHECK(!st_ok(st_image("{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 8)));
    CHECK(!st_ok(st_image("{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]}}", 8)));
    CHECK(!st_ok(st_image("{\"t\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904,4],\"data_offsets\":[0,8]}}", 8)));
    CHECK(
        !st_ok(st_image("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                        "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
                        12)));                                   // overlap
    CHECK(!st_ok(st_image("{\"__metadata__\":{\"x\":1}}", 0)));  // metadata values are strings
}

TEST(half_and_bfloat_widen_exactly) {
    CHECK(fp16_to_float(0x3C00) == 1.0f);
    CHECK(fp16_to_float(0xC000) == -2.0f);
    CHECK(fp16_to_float(0x0001) == std::ldexp(1.0f, -24));  // smallest subnormal
    CHECK(fp16_to_float(0x03FF) == std::ldexp(1023.0f, -24));
    CHECK(fp16_to_float(0x7BFF) == 65504.0f);
    CHECK(std::isinf(fp16_to_float(0x7C00)) && std::isnan(fp16_to_float(0x7E00)));
    CHECK(bf16_to_float(0x3F80) == 1.0f && bf16_to_float(0xC0A0) == -5.0f);
}

// The next training batch, which a file left unchanged always gives.
static void next_batch(DataLoader* dl) {
    std::string err;
    CHECK(dataloader_try_next(dl, &err) && err.empty());
}

TEST(token_files_and_batches) {
    std::string path = tmp_path("tokens.bin");
    std::vector<int> tokens;
    for (int i = 0; i < 25; i++) tokens.push_back(i * 3 % 50);
    tokenfile_write(path, tokens);
    TokenShard back;
    tokenfile_open(&back, path, 50);
    CHECK(back.num_tokens == 25 && back.tokens[24] == (uint16_t)(24 * 3 % 50));
    DataLoader dl;
    dataloader_init(&dl, path, "--train", 50, 2, 4, true, 7);
    os_unlink(path.c_str());
    CHECK(dataloader_shard_windows(dl, 0) == 6 && evaluate_num_batches(dl) == 3);
    evaluate_load_batch(&dl, 1);  // windows 2 and 3: tokens [8, 13) and [12, 17)
    for (int t = 0; t < 4; t++) {
        CHECK(dl.inputs[t] == tokens[8 + t] && dl.targets[t] == tokens[9 + t]);
        CHECK(dl.inputs[4 + t] == tokens[12 + t] && dl.targets[4 + t] == tokens[13 + t]);
    }
    // one shuffled epoch visits every window once
    std::vector<int> seen(6, 0);
    for (int step = 0; step < 3; step++) {
        next_batch(&dl);
        for (int b = 0; b < 2; b++)
            for (int w = 0; w < 6; w++)
                if (dl.inputs[b * 4] == tokens[w * 4] && dl.inputs[b * 4 + 1] == tokens[w * 4 + 1]) seen[w]++;
    }
    for (int w = 0; w < 6; w++) CHECK(seen[w] == 1);
}

// A file with an id out of range, opened in a child through each opener (both exit with one message).
static std::string g_bad_tokens;
static void read_bad_tokens() { TokenShard s; tokenfile_read(&s, g_bad_tokens, 50); }
static void map_bad_tokens() { TokenShard s; tokenfile_map(&s, g_bad_tokens, 50); }

TEST(core_reads_token_files_as_gpt2_maps_them) {
    const std::string path = tmp_path("core_read.bin");
    std::vector<int> tokens(3001);
    for (size_t i = 0; i < tokens.size(); i++) tokens[i] = (int)(i * 7 % 50);
    tokenfile_write(path, tokens);
    TokenShard read, mapped;
    tokenfile_read(&read, path, 50);
    tokenfile_map(&mapped, path, 50);
    CHECK(read.path == path && read.num_tokens == tokens.size() && mapped.num_tokens == tokens.size());
    bool same = read.num_tokens == mapped.num_tokens;
    for (size_t i = 0; same && i < read.num_tokens; i++) same = read.tokens[i] == mapped.tokens[i];
    CHECK(same);
    CHECK(tokenfile_fingerprint(read) == mapped.fingerprint);  // either image keeps the header before the tokens
    // a loader on the core's opener takes the batches ./gpt2's takes
    DataLoader core, gpt2;
    tokenfile_open = tokenfile_read;
    dataloader_init(&core, path, "--train", 50, 4, 8, true, 3);
    tokenfile_open = tokenfile_map;
    dataloader_init(&gpt2, path, "--train", 50, 4, 8, true, 3);
    for (int step = 0; step < 30; step++) {
        next_batch(&core), next_batch(&gpt2);
        CHECK(core.inputs == gpt2.inputs && core.targets == gpt2.targets);
    }
    // a bad id: the same message from both
    tokens[1234] = 60;
    g_bad_tokens = tmp_path("core_read_bad.bin");
    tokenfile_write(g_bad_tokens, tokens);
    int rc_read = 0, rc_map = 0;
    std::string err_read, err_map;
    if (!test_os_run_child(read_bad_tokens, &rc_read, &err_read) || !test_os_run_child(map_bad_tokens, &rc_map, &err_map))
        SKIP("no child processes here");
    CHECK(rc_read != 0 && rc_map != 0 && err_read == err_map);
    CHECK(err_read.find("token id 60 out of range in " + g_bad_tokens + " at byte offset 3492") != std::string::npos);
    os_unlink(path.c_str());
    os_unlink(g_bad_tokens.c_str());
}

// A shard rewritten in place under the run, with ids outside the vocabulary it was checked against: the next
// batch fails with one message naming the shard and the id (cli_red_team.sh's D15 runs it under train).
TEST(a_shard_rewritten_under_the_run_fails_the_next_batch) {
    const std::string path = tmp_path("rewritten.bin");
    tokenfile_write(path, std::vector<int>(401, 7));
    DataLoader dl;
    dataloader_init(&dl, path, "--train", 50, 2, 4, true, 1);
    next_batch(&dl);
    const std::vector<uint16_t> ids(401, 60);
    const int fd = os_open_lock(path);
    CHECK(fd >= 0 && os_pwrite(fd, ids.data(), ids.size() * 2, kTokenFileHeaderBytes) == (long)ids.size() * 2);
    os_close(fd);
    if (dl.shards[0].tokens[0] != 60) SKIP("this system's private mappings do not show a later write");
    std::string err;
    CHECK(!dataloader_try_next(&dl, &err));
    CHECK(err == "token file changed during the run (" + path + "): it now holds id 60, outside the vocabulary of " +
                     "50 it was checked against; expected token files to stay unchanged while gpt2 reads them");
    os_unlink(path.c_str());
}

// Three shards of 41, 25 and 33 tokens whose ids are their global positions, so a window's first id names
// its shard and window. With T=4: 10, 6 and 8 windows.
std::vector<std::string> write_shards(std::vector<std::vector<int>>* shards) {
    std::vector<std::string> paths;
    int id = 0;
    for (int n : {41, 25, 33}) {
        std::vector<int> tokens;
        for (int i = 0; i < n; i++) tokens.push_back(id++);
        paths.push_back(tmp_path("shard_" + std::to_string(paths.size()) + ".bin"));
        tokenfile_write(paths.back(), tokens);
        shards->push_back(tokens);
    }
    return paths;
}

// The first id of each row of the current batch.
std::vector<int> row_starts(const DataLoader& dl) {
    std::vector<int> out;
    for (int b = 0; b < dl.B; b++) out.push_back(dl.inputs[(size_t)b * dl.T]);
    return out;
}

TEST(shards_shuffle_like_llmc) {
    std::vector<std::vector<int>> tok;
    const std::vector<std::string> paths = write_shards(&tok);
    const std::string spec = paths[0] + "," + tmp_path("shard_[12].bin");  // a list and a glob
    DataLoader a, b, c, seq;
    dataloader_init(&a, spec, "--train", 1000, 2, 4, true, 7);
    dataloader_init(&b, spec, "--train", 1000, 2, 4, true, 7);
    dataloader_init(&c, spec, "--train", 1000, 2, 4, true, 8);
    dataloader_init(&seq, spec, "--train", 1000, 2, 4, false, 7);
    CHECK(a.shards.size() == 3 && token_files_num_tokens(a) == 99);
    CHECK(dataloader_shard_windows(a, 0) == 10 && dataloader_shard_windows(a, 1) == 6 &&
          dataloader_shard_windows(a, 2) == 8);
    // 12 batches of 2 per epoch (every shard's windows divide by B); 3 epochs
    bool differs = false, orders_differ = false;
    std::vector<uint32_t> first_shard_order;
    for (int epoch = 0; epoch < 3; epoch++) {
        std::vector<int> seen(99, 0);
        for (int i = 0; i < 12; i++) {
            next_batch(&a), next_batch(&b), next_batch(&c), next_batch(&seq);
            CHECK(a.inputs == b.inputs && a.targets == b.targets);  // same seed, same batches
            differs = differs || a.inputs != c.inputs;
            const std::vector<int> rows = row_starts(a);
            for (int r : rows) seen[r]++;
            // both rows come from one shard: the shard the loader says it is in
            for (int r : rows)
                CHECK(r >= tok[a.shard_order[a.shard_pos]][0] && r <= tok[a.shard_order[a.shard_pos]].back());
            for (int t = 0; t < 4; t++) CHECK(a.targets[t] == a.inputs[t] + 1);
            // in order: shards 0, 1, 2 and their windows from the first
            const int k = i < 5 ? i : i < 8 ? i - 5 : i - 8, s = i < 5 ? 0 : i < 8 ? 1 : 2;
            CHECK(row_starts(seq) == (std::vector<int>{tok[s][0] + 8 * k, tok[s][0] + 8 * k + 4}));
        }
        if (epoch == 0) first_shard_order = a.shard_order;
        else orders_differ = orders_differ || a.shard_order != first_shard_order;
        CHECK(a.epoch == epoch);
        for (size_t s = 0; s < 3; s++)  // every window once per epoch, nothing else
            for (int i = 0; i < (int)tok[s].size(); i++)
                CHECK(seen[tok[s][i]] == ((i % 4 == 0 && i + 4 < (int)tok[s].size()) ? 1 : 0));
    }
    CHECK(differs);        // the seed matters
    CHECK(orders_differ);  // the shard order is drawn again each epoch
    // evaluation batches go through each shard's consecutive windows in turn
    CHECK(evaluate_num_batches(a) == 12);
    evaluate_load_batch(&a, 6);  // shard 1, its second batch: windows 2 and 3
    CHECK(row_starts(a) == (std::vector<int>{tok[1][8], tok[1][12]}));
    for (const std::string& p : paths) os_unlink(p.c_str());
}

TEST(shards_split_over_ranks_like_one) {
    std::vector<std::vector<int>> tok;
    const std::vector<std::string> paths = write_shards(&tok);
    const std::string spec = paths[0] + "," + tmp_path("shard_[12].bin");
    // Data parallel: 2 ranks of B=2 read exactly what 1 rank of B=4 reads, rank 0 the first half.
    DataLoader one, r0, r1;
    r0.rank = 0, r0.world = 2, r1.rank = 1, r1.world = 2;
    dataloader_init(&one, spec, "--train", 1000, 4, 4, true, 3);
    dataloader_init(&r0, spec, "--train", 1000, 2, 4, true, 3);
    dataloader_init(&r1, spec, "--train", 1000, 2, 4, true, 3);
    for (int i = 0; i < 20; i++) {
        next_batch(&one), next_batch(&r0), next_batch(&r1);
        std::vector<int> both = r0.inputs;
        both.insert(both.end(), r1.inputs.begin(), r1.inputs.end());
        CHECK(both == one.inputs);
    }
    // Any split of one global batch of 4 windows (1 rank of B=4; 2 ranks of B=2; 1 rank of 4 micro-batches
    // of B=1; 2 ranks of 2 micro-batches of B=1) takes the same windows in every step, across shard ends (10
    // and 6 windows leave 2 each) and epochs: a run can go on under another rank count.
    struct Split {
        int world, B, accum;
    };
    const Split splits[] = {{1, 4, 1}, {2, 2, 1}, {1, 1, 4}, {2, 1, 2}};
    std::vector<DataLoader> loaders;  // per split, one per rank
    for (const Split& sp : splits)
        for (int r = 0; r < sp.world; r++) {
            loaders.emplace_back();
            loaders.back().rank = r, loaders.back().world = sp.world, loaders.back().accum = sp.accum;
            dataloader_init(&loaders.back(), spec, "--train", 1000, sp.B, 4, true, 3);
        }
    for (int step = 0; step < 15; step++) {
        std::vector<std::vector<int>> sets;
        size_t l = 0;
        for (const Split& sp : splits) {
            std::vector<int> set;
            for (int m = 0; m < sp.accum; m++)
                for (int r = 0; r < sp.world; r++) {
                    next_batch(&loaders[l + r]);
                    for (int w : row_starts(loaders[l + r])) set.push_back(w);
                }
            l += sp.world;
            std::sort(set.begin(), set.end());
            sets.push_back(set);
        }
        for (const std::vector<int>& set : sets) CHECK(set == sets[0] && set.size() == 4);
    }
    CHECK(loaders[0].epoch >= 2);  // through three epochs
    for (const std::string& p : paths) os_unlink(p.c_str());
}

TEST(shard_fingerprints) {
    std::vector<int> big(3 << 19), small(100);  // 3 MiB of tokens, then 200 bytes
    for (size_t i = 0; i < big.size(); i++) big[i] = (int)(i % 50000);
    for (size_t i = 0; i < small.size(); i++) small[i] = (int)i;
    const std::string pb = tmp_path("fp_big.bin"), ps = tmp_path("fp_small.bin");
    auto fp = [](const std::string& path, const std::vector<int>& tokens) {
        tokenfile_write(path, tokens);
        TokenShard s;
        tokenfile_map(&s, path, 50257);
        inputs_forget();  // the next call rewrites it
        return tokenfile_fingerprint(s);
    };
    const std::string b0 = fp(pb, big), s0 = fp(ps, small);
    CHECK(b0.size() == 16 && b0 != s0 && fp(pb, big) == b0);
    std::vector<int> edit = big;
    edit[5] = 7;  // the first MiB
    CHECK(fp(pb, edit) != b0);
    edit = big, edit.back() = 7;  // the last MiB
    CHECK(fp(pb, edit) != b0);
    edit = big, edit.pop_back();  // shorter
    CHECK(fp(pb, edit) != b0);
    edit = big, edit[big.size() / 2] = 7;  // the middle of a shard over 2 MiB: documented as missed
    CHECK(fp(pb, edit) == b0);
    edit = small, edit[50] = 0;  // a small shard is hashed whole
    CHECK(fp(ps, edit) != s0);
    os_unlink(pb.c_str()), os_unlink(ps.c_str());
}

// The core alone (no hooks: plain fopen) reads back what it writes, Conv1D weights transposed and back,
// bit for bit; and the file is the same ./gpt2's F32 export writes.
TEST(hf_save_load_round_trip_core_alone) {
    GPT2 model;
    gpt2_build(&model, config_make(4, 8, 1, 1, 4));
    for (size_t i = 0; i < model.num_params; i++) model.params[i] = 0.1f * (float)((i * 7) % 13) - 0.6f + 1e-3f * i;
    for (size_t i = (size_t)8 * 4; i < model.param_table[0].numel(); i++) model.params[i] = 0;  // wte's padded rows
    std::string image, config = hf_config_json(model.cfg);
    hf_write_safetensors(model, [&](const void* data, size_t n) { image.append((const char*)data, n); });
    const std::string dir = tmp_path("hf_core"), ours = tmp_path("hf_gpt2");
    CHECK(os_mkdir(dir) && os_mkdir(ours));
    const OutputKind any = {"a test file", [](const std::string&) { return true; }};
    output_write(dir + "/model.safetensors", "test", any, {{image.data(), image.size()}});
    output_write(dir + "/config.json", "test", any, {{config.data(), config.size()}});
    checkpoint_save_hf(model, ours);
    CHECK(file_read(ours + "/model.safetensors") == std::vector<uint8_t>(image.begin(), image.end()));
    CHECK(file_read(ours + "/config.json") == std::vector<uint8_t>(config.begin(), config.end()));
    const auto saved = file_read_hook;
    file_read_hook = nullptr;
    GPT2 back;
    hf_load(&back, dir);
    file_read_hook = saved;
    CHECK(back.cfg.channels == 4 && back.cfg.vocab_size == 8 && back.params == model.params);
    for (const std::string& d : {dir, ours}) {
        for (const char* f : {"/model.safetensors", "/config.json"}) os_unlink((d + f).c_str());
        os_rmdir(d);
    }
}

// Older exports carry the causal-mask buffers h.<l>.attn.bias and .masked_bias: accepted, whatever the layer's
// digits. A name of 100,000 digits overflowed the stack of the std::regex that once matched them.
TEST(hf_accepts_attention_mask_buffers) {
    GPT2 model;
    gpt2_build(&model, config_make(4, 8, 1, 1, 4));
    std::vector<StWriteItem> items = hf_tensors(model);
    const float one = 1.0f;
    for (const std::string& name : std::vector<std::string>{"h.0.attn.bias", "h.12.attn.masked_bias",
                                                            "h." + std::string(100000, '7') + ".attn.bias"})
        items.push_back({name, "F32", {1}, &one});
    std::string image;
    safetensors_write([&](const void* data, size_t n) { image.append((const char*)data, n); }, items, {});
    SafeTensors st;
    std::string err;
    CHECK(safetensors_parse(&st, std::vector<uint8_t>(image.begin(), image.end()), &err));
    CHECK(st.tensors.size() == model.param_table.size() + 3);
    CHECK(hf_check_header(st, "", model.cfg) == "F32");
}

TEST(adamw_matches_the_formula) {
    GPT2 model;
    gpt2_build(&model, config_make(4, 8, 1, 1, 4));
    gpt2_enable_training(&model);
    for (size_t i = 0; i < model.num_params; i++) {
        model.params[i] = 0.1f * (float)((i * 7) % 13) - 0.6f;
        model.grads[i] = 0.01f * (float)((i * 5) % 11) - 0.05f;
    }
    const std::vector<float> w0(model.params.begin(), model.params.end());
    AdamWConfig cfg;
    cfg.lr = 1e-2f;
    cfg.weight_decay = 0.1f;
    AdamW opt;
    adamw_update(&opt, gpt2_param_set(model), cfg, cfg.lr);
    adamw_update(&opt, gpt2_param_set(model), cfg, cfg.lr);  // same gradient twice
    double max_err = 0;
    for (const TensorInfo& t : model.param_table)
        for (size_t i = t.offset; i < t.offset + t.numel(); i++) {
            double w = w0[i], g = model.grads[i], m = 0, v = 0;
            for (int step = 1; step <= 2; step++) {
                if (t.decay) w *= 1 - cfg.lr * cfg.weight_decay;
                m = cfg.beta1 * m + (1 - cfg.beta1) * g;
                v = cfg.beta2 * v + (1 - cfg.beta2) * g * g;
                double mhat = m / (1 - std::pow(cfg.beta1, step)), vhat = v / (1 - std::pow(cfg.beta2, step));
                w -= cfg.lr * mhat / (std::sqrt(vhat) + cfg.eps);
            }
            max_err = max_abs(max_err, w - model.params[i]);
        }
    CHECK(max_err < 1e-6);
    CHECK(opt.step == 2);
}

// Clipping as torch's clip_grad_norm_ does it, the gradients scaled in a pass of their own before the
// update (the trainer folds the factor into AdamW instead). Returns the norm before clipping.
static float clip_grads(GPT2* model, float max_norm) {
    float norm = optimizer_grad_norm(gpt2_param_set(*model));
    float factor = optimizer_clip_factor(norm, max_norm);
    if (factor == 1.0f) return norm;
    for (float& g : model->grads) g *= factor;
    return norm;
}

TEST(grad_clipping_and_lr_schedule) {
    GPT2 model;
    gpt2_build(&model, config_make(4, 8, 1, 1, 4));
    gpt2_enable_training(&model);
    for (float& g : model.grads) g = 1.0f;
    float norm = clip_grads(&model, 2.0f);
    CHECK_NEAR(norm, std::sqrt((double)model.num_params), 1e-3);
    CHECK_NEAR(optimizer_grad_norm(gpt2_param_set(model)), 2.0, 1e-5);
    CHECK_NEAR(lr_schedule(0, 100, 1.0f, 10, 0.1f, true), 0.1, 1e-7);
    CHECK_NEAR(lr_schedule(9, 100, 1.0f, 10, 0.1f, true), 1.0, 1e-7);
    CHECK_NEAR(lr_schedule(10, 100, 1.0f, 10, 0.1f, true), 1.0, 1e-7);
    CHECK_NEAR(lr_schedule(55, 100, 1.0f, 10, 0.1f, true), 0.55, 1e-6);
    CHECK_NEAR(lr_schedule(100, 100, 1.0f, 10, 0.1f, true), 0.1, 1e-6);
    CHECK_NEAR(lr_schedule(50, 100, 1.0f, 0, 0.1f, false), 1.0, 0);
}

TEST(half_and_bfloat_narrow_to_nearest_even) {
    int mismatches = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = fp16_to_float((uint16_t)h);
        if (std::isnan(f)) continue;
        mismatches += fp16_round(f) != h;
    }
    CHECK(mismatches == 0);                                          // every half survives widen + narrow
    CHECK(fp16_round(1.0f + std::ldexp(1.0f, -11)) == 0x3C00);      // tie to even: down
    CHECK(fp16_round(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3C02);  // tie to even: up
    CHECK(fp16_round(65520.0f) == 0x7C00 && fp16_round(65519.0f) == 0x7BFF);
    CHECK(fp16_round(std::ldexp(1.0f, -25)) == 0x0000);  // half the smallest subnormal: to even (0)
    CHECK(fp16_round(std::ldexp(1.5f, -25)) == 0x0001);
    CHECK(bf16_round(1.0f) == 0x3F80 && bf16_round(1.0f + std::ldexp(1.0f, -8)) == 0x3F80);
    CHECK(bf16_round(1.0f + 3 * std::ldexp(1.0f, -8)) == 0x3F82);
    for (uint32_t b = 0; b < 65536; b += 7) {
        float f = bf16_to_float((uint16_t)b);
        if (!std::isnan(f)) CHECK(bf16_round(f) == b);
    }
}

TEST(clipping_folded_into_adamw_equals_clipping_first) {
    GPT2 a, b;
    gpt2_build(&a, config_make(4, 8, 1, 1, 4));
    gpt2_enable_training(&a);
    gpt2_build(&b, config_make(4, 8, 1, 1, 4));
    gpt2_enable_training(&b);
    for (size_t i = 0; i < a.num_params; i++) {
        a.params[i] = b.params[i] = 0.01f * (float)((i * 7) % 13);
        a.grads[i] = b.grads[i] = 0.3f * (float)((i * 5) % 11) - 1.5f;  // norm far above 1
    }
    AdamWConfig cfg;
    AdamW oa, ob;
    float norm = clip_grads(&a, 1.0f);
    adamw_update(&oa, gpt2_param_set(a), cfg, 1e-3f);
    const ParamSet pb = gpt2_param_set(b);
    adamw_update(&ob, pb, cfg, 1e-3f, optimizer_clip_factor(optimizer_grad_norm(pb), 1.0f));
    CHECK(norm > 1.0f);
    CHECK(memcmp(a.params.data(), b.params.data(), a.params.size() * sizeof(float)) == 0);
    CHECK(optimizer_clip_factor(0.5f, 1.0f) == 1.0f && optimizer_clip_factor(5.0f, 0.0f) == 1.0f);
}

// A shard past kDataLoaderStoredOrder windows keeps no order list: the order is computed from a key, is a
// permutation, differs per seed and epoch, and resumes from dataloader_state exactly.
TEST(large_shards_compute_their_order) {
    for (uint64_t n : {1ull, 2ull, 3ull, 17ull, 1000ull, 65537ull, 100003ull}) {
        for (uint64_t key : {0ull, 1ull, 0x9E3779B97F4A7C15ull}) {
            std::vector<bool> seen(n, false);
            bool moved = false;
            for (uint64_t i = 0; i < n; i++) {
                const uint32_t p = dataloader_permute(i, n, key);
                CHECK(p < n && !seen[p]);
                if (p < n) seen[p] = true;
                moved = moved || p != i;
            }
            CHECK(key == 0 ? !moved : (n < 3 || moved));  // key 0 is the identity
        }
    }
    // T=1: a shard of 70,001 tokens holds 70,000 windows, each token 0..999 once per window position
    const size_t n = kDataLoaderStoredOrder + 4464;
    std::vector<int> tokens(n + 1);
    for (size_t i = 0; i <= n; i++) tokens[i] = (int)(i % 1000);
    const std::string path = tmp_path("large.bin");
    tokenfile_write(path, tokens);
    DataLoader a, b, seq;
    dataloader_init(&a, path, "--train", 1000, 16, 1, true, 7);
    dataloader_init(&b, path, "--train", 1000, 16, 1, true, 8);
    dataloader_init(&seq, path, "--train", 1000, 16, 1, false, 7);
    std::vector<int> count(n, 0);  // how often each window (= its first token's position) is read
    std::vector<int> first_epoch;
    bool seeds_differ = false;
    for (size_t step = 0; step < n / 16 - 10; step++) {  // most of an epoch
        next_batch(&a), next_batch(&b), next_batch(&seq);
        CHECK(a.order.empty() && a.order_windows == n);  // nothing stored
        seeds_differ = seeds_differ || a.inputs != b.inputs;
        for (int r = 0; r < 16; r++) CHECK(seq.inputs[r] == (int)((step * 16 + r) % 1000));  // in order
        if (step < 4) first_epoch.insert(first_epoch.end(), a.inputs.begin(), a.inputs.end());
    }
    CHECK(seeds_differ);
    // every window once: count through a fresh loader's order of the same seed
    DataLoader c;
    dataloader_init(&c, path, "--train", 1000, 16, 1, true, 7);
    next_batch(&c);
    for (size_t i = 0; i < n; i++) count[dataloader_permute(i, c.order_windows, c.order_key)]++;
    bool once = true;
    for (int k : count) once = once && k == 1;
    CHECK(once);
    // resume mid-epoch: a loader restored from the state reads what the original reads next
    DataLoaderState s = dataloader_state(a);
    std::string err;
    CHECK(dataloader_state_valid(s, &err));
    DataLoader r;
    dataloader_init(&r, path, "--train", 1000, 16, 1, true, 1);
    dataloader_restore(&r, s);
    for (int i = 0; i < 3; i++) {
        next_batch(&a), next_batch(&r);
        CHECK(a.inputs == r.inputs);
    }
    // the next epoch draws another key
    const uint64_t key = a.order_key;
    while (a.epoch == 0) next_batch(&a);
    CHECK(a.order_key != key && a.order_key != 0);
    os_unlink(path.c_str());
}
