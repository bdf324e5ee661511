// train_state.cpp: see train_state.h.
#include "formats/train_state.h"


#include <cassert>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "platform/platform.h"
#include "precision/half.h"
#include "platform/hash.h"
#include "core/json.h"
#include "platform/output_files.h"
#include "platform/util.h"
#include "formats/checkpoint.h"
#include "formats/loss_mask.h"
#include "formats/token_files.h"
#include "formats/safetensors_file.h"
#include "precision/adamw_8bit.h"

static bool is_permutation(const std::vector<uint32_t>& order) {
    std::vector<bool> seen(order.size(), false);
    for (uint32_t w : order) {
        if (w >= seen.size() || seen[w]) return false;
        seen[w] = true;
    }
    return true;
}

bool dataloader_state_valid(const DataLoaderState& s, std::string* err) {
    if (!is_permutation(s.order)) return *err = "loader.order is not a permutation of the windows", false;
    if (!is_permutation(s.shard_order)) return *err = "loader.shard_order is not a permutation of the shards", false;
    if (s.order_windows &&
        (!s.order.empty() || s.order_windows <= kDataLoaderStoredOrder || s.order_windows > UINT32_MAX))
        return *err = "loader.order_windows with a stored loader.order, or out of range", false;
    if (!s.order_windows && s.order_key) return *err = "loader.order_key without loader.order_windows", false;
    const size_t windows = s.order_windows ? s.order_windows : s.order.size();
    if (s.pos > windows) return *err = "loader.pos past the end of loader.order", false;
    if ((windows == 0) != (s.epoch < 0) || s.shard_order.empty() != (s.epoch < 0) || (windows == 0 && s.pos != 0) ||
        (s.shard_order.empty() ? s.shard_pos != 0 : s.shard_pos >= s.shard_order.size()))
        return *err = "loader.epoch, loader.pos, loader.shard_pos and the orders disagree", false;
    if (s.rng.state == 0) return *err = "loader.rng is 0, expected a non-zero state", false;
    return true;
}

DataLoaderState dataloader_state(const DataLoader& dl) {
    assert(dl.micro == 0 && "taken between steps");
    return {dl.shard_order, dl.shard_pos, dl.order, dl.order_key, dl.order_windows, dl.epoch, dl.pos, dl.rng};
}

void dataloader_restore(DataLoader* dl, const DataLoaderState& s) {
    dl->shard_order = s.shard_order, dl->shard_pos = s.shard_pos;
    dl->order = s.order, dl->order_key = s.order_key, dl->order_windows = s.order_windows;
    dl->epoch = s.epoch, dl->pos = s.pos, dl->rng = s.rng;
    dl->micro = 0;  // states are taken between steps
}

// fatal (naming `where`, the train state) when the loader state s does not fit dl's shards.
static void check_loader_fits(const DataLoader& dl, const DataLoaderState& s, const std::string& where) {
    if (s.shard_order.empty()) return;
    if (s.shard_order.size() != dl.shards.size())
        fatal("training data changed (%s): the train state orders %zu shards, %s holds %zu", where.c_str(),
              s.shard_order.size(), dl.spec.c_str(), dl.shards.size());
    const size_t shard = s.shard_order[s.shard_pos], windows = dataloader_shard_windows(dl, shard);
    const size_t ordered = s.order_windows ? s.order_windows : s.order.size();
    if (ordered != windows)
        fatal("training data changed (%s): the train state orders %zu windows of %s, it holds %zu", where.c_str(),
              ordered, dl.shards[shard].path.c_str(), windows);
}

namespace {

const char* const kFormat = "gpt2.cpp train state 3";
const char* const kFormatV2 = "gpt2.cpp train state 2";  // one data file, hashed whole; no shard order
const char* const kFormatV1 = "gpt2.cpp train state 1";  // before the data hash and the geometry
const char* const kStateFile = "train_state.safetensors";
const int kMaxSteps = 1 << 30;

std::string geometry_of(const GPT2Config& c) {
    return "layers " + std::to_string(c.num_layers) + ", heads " + std::to_string(c.num_heads) + ", channels " +
           std::to_string(c.channels) + ", context " + std::to_string(c.max_seq_len) + ", vocab " +
           std::to_string(c.vocab_size);
}

std::vector<float> history_flat(const std::vector<std::pair<int, float>>& h) {
    std::vector<float> out;
    for (const auto& p : h) out.push_back((float)p.first), out.push_back(p.second);
    return out;
}

bool fail(std::string* err, const std::string& msg) {
    *err = msg;
    return false;
}

// Strict decimal integer metadata within [lo, hi].
bool meta_int(const SafeTensors& st, const char* key, long long lo, long long hi, long long* out, std::string* err) {
    std::string v = st.meta(key);
    char* end = nullptr;
    errno = 0;
    long long x = strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end || errno || x < lo || x > hi)
        return fail(err, std::string("metadata \"") + key + "\" is '" + v.substr(0, 40) + "', expected an integer in " +
                             std::to_string(lo) + ".." + std::to_string(hi));
    *out = x;
    return true;
}

// A 1-D (or, with cols > 0, (n, cols)) tensor of `dtype`.
const StTensor* tensor_of(const SafeTensors& st, const char* name, const char* dtype, int64_t cols, std::string* err) {
    const StTensor* t = st.find(name);
    bool ok = t && t->dtype == dtype && (cols > 0 ? t->shape.size() == 2 && t->shape[1] == cols : t->shape.size() == 1);
    if (!ok) fail(err, std::string("expected tensor ") + name + " as " + dtype + (cols > 0 ? " (n, 2)" : " (n,)"));
    return ok ? t : nullptr;
}

bool parse_history(const SafeTensors& st, const char* name, int step, std::vector<std::pair<int, float>>* out,
                   std::string* err) {
    const StTensor* t = tensor_of(st, name, "F32", 2, err);
    if (!t) return false;
    std::vector<float> flat = safetensors_read_f32(st, *t);
    for (size_t i = 0; i + 1 < flat.size(); i += 2) {
        float s = flat[i], loss = flat[i + 1];
        if (!(s >= 1 && s <= step && s == std::floor(s)) || !std::isfinite(loss))
            return fail(err, std::string(name) + " entry " + std::to_string(i / 2) +
                                 ": expected a step in 1..step and a finite loss");
        out->push_back({(int)s, loss});
    }
    return true;
}

// The flags the run was started with, stored as a JSON array of [name, value] pairs.
bool parse_flags(const SafeTensors& st, std::vector<std::pair<std::string, std::string>>* out, std::string* err) {
    Json flags;
    std::string jerr, text = st.meta("flags");
    if (!json_parse(text.data(), text.size(), &flags, &jerr) || flags.type != Json::ARRAY)
        return fail(err, "flags are not a JSON array");
    for (const Json& f : flags.items) {
        if (f.type != Json::ARRAY || f.items.size() != 2 || f.items[0].type != Json::STRING ||
            f.items[1].type != Json::STRING)
            return fail(err, "expected [name, value] pairs in flags");
        out->push_back({f.items[0].str, f.items[1].str});
    }
    return true;
}

// Where the run stands: its step (the optimizer's must agree), the loader's epoch and position, and the
// state of its random generator.
bool parse_counters(const SafeTensors& st, TrainState* ts, std::string* err) {
    long long step, adamw_step, epoch, pos;
    if (!meta_int(st, "step", 0, kMaxSteps, &step, err) ||
        !meta_int(st, "adamw.step", 0, kMaxSteps, &adamw_step, err) ||
        !meta_int(st, "loader.epoch", -1, kMaxSteps, &epoch, err) ||
        !meta_int(st, "loader.pos", 0, 1ll << 32, &pos, err))
        return false;
    if (adamw_step > step) return fail(err, "adamw.step is more than step");  // less: steps that scored nothing
    ts->step = (int)step, ts->adamw_step = (int)adamw_step, ts->loader.epoch = (int)epoch, ts->loader.pos = (size_t)pos;

    std::string rng = st.meta("loader.rng");
    char* end = nullptr;
    errno = 0;
    unsigned long long r = strtoull(rng.c_str(), &end, 10);
    if (rng.empty() || rng[0] < '0' || rng[0] > '9' || *end || errno || r == 0)
        return fail(err, "metadata \"loader.rng\" is '" + rng.substr(0, 40) + "', expected a non-zero 64-bit integer");
    ts->loader.rng.state = r;
    return true;
}

// AdamW's moments, F32, BF16 (both alike) or U8 with each block's steps, and the same size; their values
// stay in the file until train_state_restore reads them (read_moments).
bool parse_moments(const SafeTensors& st, TrainState* ts, std::string* err) {
    const StTensor* found = st.find("adamw.m");
    const std::string dtype = found && (found->dtype == "BF16" || found->dtype == "U8") ? found->dtype : "F32";
    const StTensor* m = tensor_of(st, "adamw.m", dtype.c_str(), 0, err);
    const StTensor* v = m ? tensor_of(st, "adamw.v", dtype.c_str(), 0, err) : nullptr;
    if (!v) return false;
    if (m->numel() != v->numel()) return fail(err, "adamw.m and adamw.v differ in size");
    ts->m = *m, ts->v = *v;
    if (dtype != "U8") return true;
    const StTensor* ms = tensor_of(st, "adamw.m_step", "F32", 0, err);
    const StTensor* vs = ms ? tensor_of(st, "adamw.v_step", "F32", 0, err) : nullptr;
    if (!vs) return false;
    if (m->numel() % AdamW8bit::kBlock || ms->numel() != m->numel() / AdamW8bit::kBlock || vs->numel() != ms->numel())
        return fail(err, "expected adamw.m_step and adamw.v_step of one value per 64 moments");
    ts->m_step = *ms, ts->v_step = *vs;
    return true;
}

// A U32 tensor's values.
std::vector<uint32_t> read_u32(const SafeTensors& st, const StTensor& t) {
    std::vector<uint32_t> out(t.numel());
    safetensors_read_bytes(st, t, 0, out.size() * 4, out.data());
    return out;
}

// Format 3's shard order and position, the number of shards, and the computed window order when there is one.
bool parse_shard_order(const SafeTensors& st, TrainState* ts, std::string* err) {
    DataLoaderState& dl = ts->loader;
    const StTensor* shard_order = tensor_of(st, "loader.shard_order", "U32", 0, err);
    long long shard_pos, shards;
    if (!shard_order || !meta_int(st, "loader.shard_pos", 0, 1ll << 32, &shard_pos, err) ||
        !meta_int(st, "data.shards", 1, 1ll << 32, &shards, err))
        return false;
    dl.shard_pos = (size_t)shard_pos;
    ts->data_shards = (size_t)shards;
    // a computed window order (a shard past kDataLoaderStoredOrder windows); absent before it existed
    if (!st.meta("loader.order_windows").empty()) {
        long long windows;
        if (!meta_int(st, "loader.order_windows", 0, 1ll << 32, &windows, err)) return false;
        dl.order_windows = (size_t)windows;
        const std::string key = st.meta("loader.order_key");
        char* end = nullptr;
        errno = 0;
        const unsigned long long k = strtoull(key.c_str(), &end, 10);
        if (key.empty() || key[0] < '0' || key[0] > '9' || *end || errno)
            return fail(err, "metadata \"loader.order_key\" is '" + key.substr(0, 40) + "', expected a 64-bit integer");
        dl.order_key = k;
    }
    dl.shard_order = read_u32(st, *shard_order);
    if (!dl.shard_order.empty() && dl.shard_order.size() != ts->data_shards)
        return fail(err, "loader.shard_order and data.shards differ in the number of shards");
    return true;
}

// The data loader's window order and, per format, its shard order; then the whole of it checked together.
bool parse_loader(const SafeTensors& st, bool one_file, TrainState* ts, std::string* err) {
    const StTensor* order = tensor_of(st, "loader.order", "U32", 0, err);
    if (!order) return false;
    DataLoaderState& dl = ts->loader;
    dl.order = read_u32(st, *order);
    if (one_file) {  // one file: a list of one shard
        if (!dl.order.empty()) dl.shard_order = {0};
    } else if (!parse_shard_order(st, ts, err)) {
        return false;
    }
    return dataloader_state_valid(dl, err);
}

}  // namespace

bool train_dir_is_ours(const std::string& name) {
    return name_is_ours(name, {"config.json", "model.safetensors", kStateFile, "loss.png", "adapter_config.json",
                               "adapter_model.safetensors"});
}

int train_dir_step(const std::string& dir) {
    const std::string path = path_join(dir, kStateFile);
    FileInfo info;
    if (path_is_symlink(path) || !os_stat(path, &info)) return -1;
    // the format key comes first in the header we write
    const std::vector<uint8_t> head = file_head_bytes(path, 1 << 16);
    SafeTensors st;
    std::string err;
    if (!safetensors_parse_header(&st, head.data(), head.size(), (size_t)info.size, &err)) return -1;
    if (st.meta("format") != kFormat && st.meta("format") != kFormatV2 && st.meta("format") != kFormatV1) return -1;
    const std::string step = st.meta("step");
    return step.empty() || step.size() > 9 || step.find_first_not_of("0123456789") != std::string::npos
               ? 0
               : atoi(step.c_str());
}

bool train_dir_is_checkpoint(const std::string& dir) { return train_dir_step(dir) >= 0; }

std::string train_resume_command(const std::string& dir, int ranks) {
#ifdef GPT2_MPI
    const std::string mpi_binary = shell_word(program_name());  // this binary, the MPI build
#else
    const std::string mpi_binary = "./gpt2-mpi";  // the MPI build (make MPI=1)
#endif
    const std::string binary =
        ranks > 1 ? "mpirun -np " + std::to_string(ranks) + " " + mpi_binary : shell_word(program_name());
    return binary + " train --resume " + shell_word(dir);
}

void train_dir_check(const std::string& dir, const char* flag) {
    if (dir.empty()) fatal("empty value for %s (train): expected a directory path", flag);
    if (path_is_symlink(dir))
        fatal_hint("give the directory it points to",
                   "bad value for %s (train): %s is a symbolic link, expected a directory", flag, dir.c_str());
    dir_recover_interrupted(dir, train_dir_is_checkpoint);
    if (!dir_exists(dir)) {
        if (path_exists(dir))
            fatal("bad value for %s (train): %s exists and is not a directory", flag, dir.c_str());
        return;
    }
    std::vector<std::string> entries = dir_entries(dir);
    if (!entries.empty() && !train_dir_is_checkpoint(dir))
        fatal_hint("choose a new or empty directory; gpt2 replaces only checkpoints it wrote",
                   "bad value for %s (train): %s holds %s and is not a checkpoint written by `gpt2 train`", flag,
                   dir.c_str(), entries[0].c_str());
}

std::string train_state_params_hash(const GPT2& model) {
    return hash_hex(fnv1a(model.params.data(), model.params.size() * sizeof(float)));
}

std::string train_state_data_hash(const DataLoader& dl) {
    uint64_t h = kFnv1aInit;
    for (const TokenShard& s : dl.shards) h = fnv1a(s.tokens, s.num_tokens * sizeof(uint16_t), h);
    return hash_hex(h);
}

// Format 3 ties a run to its shards by their fingerprints (tokenfile_fingerprint) in order, hashed into
// one value: any shard added, removed, reordered, resized or changed at either end. "data.content" (below)
// then holds each shard's every token and mask flag, for an edit inside a shard.
std::string train_state_shards_hash(const DataLoader& dl) {
    uint64_t h = kFnv1aInit;
    for (const TokenShard& s : dl.shards) {
        h = fnv1a(s.fingerprint.data(), s.fingerprint.size(), h);
    }
    return hash_hex(h);
}

// Each shard's token_files_content, comma-separated in order; empty when one has none (not opened by ./gpt2).
static std::string shard_contents(const DataLoader& dl) {
    std::string all;
    for (const TokenShard& s : dl.shards) {
        const std::string c = token_files_content(s);
        if (c.empty()) return "";
        all += (all.empty() ? "" : ",") + c;
    }
    return all;
}

// Each shard checked whole against the run's "data.content" (absent from a train state saved before it): fatal
// naming the first whose tokens, or whose loss mask, changed, appeared or went.
static void check_contents(const TrainState& ts, const DataLoader& dl) {
    const std::string all = ts.file.meta("data.content");
    std::vector<std::string> was(1);
    for (char c : all)
        if (c == ',') was.emplace_back();
        else was.back().push_back(c);
    if (all.empty() || was.size() != dl.shards.size()) return;
    for (size_t i = 0; i < dl.shards.size(); i++) {
        const std::string now = token_files_content(dl.shards[i]), path = dl.shards[i].path;
        if (now == was[i] || now.empty()) continue;
        if (now.compare(0, 16, was[i], 0, 16) != 0)
            fatal("training data changed (%s): %s holds other tokens than the run trained on", ts.path.c_str(),
                  path.c_str());
        const char* how = now.size() > was[i].size() ? "appeared beside it since the run, which trained on every token"
                          : now.size() < was[i].size() ? "is not read now (--loss-on all); the run was trained with it"
                                                       : "holds other flags than the run trained with";
        fatal("training data changed (%s): the loss mask of %s (%s) %s", ts.path.c_str(), path.c_str(),
              lossmask_path(path).c_str(), how);
    }
}

// Which shards had a loss mask, '1' or '0' each in order: a resume names a mask that went missing.
static std::string shard_masks(const DataLoader& dl) {
    std::string masks;
    for (const TokenShard& s : dl.shards) masks += token_files_mask(s) ? '1' : '0';
    return masks;
}

// A shard trained with a loss mask whose mask is gone (a resume that ignores masks, --loss-on all, finds it
// there): fatal naming it, rather than as training data changed in general.
static void check_masks_there(const TrainState& ts, const DataLoader& dl) {
    const std::string masks = ts.file.meta("data.masks");
    if (masks.size() != dl.shards.size()) return;  // a checkpoint from before "data.masks", or other shards
    for (size_t i = 0; i < masks.size(); i++) {
        const std::string mask = lossmask_path(dl.shards[i].path);
        if (masks[i] == '1' && !token_files_mask(dl.shards[i]) && !path_exists(mask) && !path_is_symlink(mask))
            fatal_hint("put it back, or write it again: tokenize --instructions on the same inputs with the same -T",
                       "training data changed (%s): the loss mask %s is missing; the run was trained with it on %s",
                       ts.path.c_str(), mask.c_str(), dl.shards[i].path.c_str());
    }
}

void train_state_write(const std::string& path, const AdamW& opt, size_t n, const std::string& params_hash,
                       const GPT2Config& cfg, const DataLoader& dl, int step,
                       const std::vector<std::pair<std::string, std::string>>& run_flags, const LossHistory& history,
                       const std::vector<std::pair<std::string, std::string>>& meta) {
    assert((!opt.prepared() || (opt.begin == 0 && opt.end == n)) && "the moments of every parameter");
    std::vector<MomentsArray> moments = adamw_moments_arrays(opt);
    std::vector<uint8_t> zeros;  // before the first step: every array reads one buffer of zeros, the largest's size
    if (!opt.prepared()) {
        for (const MomentsArray& a : moments) zeros.resize(std::max(zeros.size(), n / a.per * a.elem));
        for (MomentsArray& a : moments) a.data = zeros.data();
    }
    for (const MomentsArray& a : moments)
        for (size_t i = 0; i < n / a.per; i++)
            if (a.elem == 2 ? (((const uint16_t*)a.data)[i] & 0x7F80) == 0x7F80
                            : a.elem == 4 && !std::isfinite(((const float*)a.data)[i]))
                fatal("not saving %s at step %d: %s holds a non-finite value at %zu", path.c_str(), step, a.name, i);
    std::string flags = "[";
    for (const auto& kv : run_flags)
        flags += (flags.size() > 1 ? "," : "") + std::string("[") + json_escape(kv.first) + "," +
                 json_escape(kv.second) + "]";
    flags += "]";
    std::vector<float> train_hist = history_flat(history.train), val_hist = history_flat(history.val);
    const DataLoaderState loader = dataloader_state(dl);
    std::vector<std::pair<std::string, std::string>> all = {
        {"format", kFormat},
        {"step", std::to_string(step)},
        {"adamw.step", std::to_string(opt.step)},
        {"loader.epoch", std::to_string(loader.epoch)},
        {"loader.pos", std::to_string(loader.pos)},
        {"loader.shard_pos", std::to_string(loader.shard_pos)},
        {"loader.order_windows", std::to_string(loader.order_windows)},
        {"loader.order_key", std::to_string(loader.order_key)},
        {"loader.rng", std::to_string(loader.rng.state)},
        {"params.fnv1a", params_hash},
        {"data.shards", std::to_string(dl.shards.size())},
        {"data.fingerprint", train_state_shards_hash(dl)},
        {"data.masks", shard_masks(dl)},
        {"data.content", shard_contents(dl)},
        {"model.geometry", geometry_of(cfg)},
        {"flags", flags}};
    all.insert(all.end(), meta.begin(), meta.end());
    std::vector<StWriteItem> items;
    for (const MomentsArray& a : moments) items.push_back({a.name, a.dtype, {(int64_t)(n / a.per)}, a.data});
    items.insert(items.end(),
                 {{"loader.order", "U32", {(int64_t)loader.order.size()}, loader.order.data()},
                  {"loader.shard_order", "U32", {(int64_t)loader.shard_order.size()}, loader.shard_order.data()},
                  {"history.train", "F32", {(int64_t)history.train.size(), 2}, train_hist.data()},
                  {"history.val", "F32", {(int64_t)history.val.size(), 2}, val_hist.data()}});
    safetensors_write_file(path, items, all);
}

void train_state_save(const std::string& dir, const GPT2& model, const AdamW& opt, const DataLoader& dl, int step,
                      const std::vector<std::pair<std::string, std::string>>& run_flags, const LossHistory& history,
                      const std::function<void(const std::string& staging)>& extra) {
    checkpoint_check_finite(model, dir, ("not saving step " + std::to_string(step) + ": training diverged").c_str());
    dir_publish(dir, train_dir_is_ours, [&](const std::string& staging) {
        checkpoint_save_hf(model, staging);
        train_state_write(path_join(staging, kStateFile), opt, model.num_params, train_state_params_hash(model),
                          model.cfg, dl, step, run_flags, history, {});
        extra(staging);
    });
}

bool train_state_parse(const SafeTensors& st, TrainState* ts, std::string* err) {
    *ts = TrainState();
    ts->path = st.path;
    ts->file = st;
    const std::string format = st.meta("format");
    const bool v1 = format == kFormatV1, v2 = format == kFormatV2;
    if (format != kFormat && !v1 && !v2) return fail(err, std::string("expected format \"") + kFormat + "\"");
    if (!parse_flags(st, &ts->flags, err) || !parse_counters(st, ts, err) || !parse_moments(st, ts, err) ||
        !parse_loader(st, v1 || v2, ts, err))
        return false;

    if (!parse_history(st, "history.train", ts->step, &ts->history.train, err) ||
        !parse_history(st, "history.val", ts->step, &ts->history.val, err))
        return false;
    ts->params_hash = st.meta("params.fnv1a");
    if (ts->params_hash.size() != 16) return fail(err, "metadata \"params.fnv1a\": expected 16 hex digits");
    ts->data_hash = st.meta(v2 ? "data.fnv1a" : "data.fingerprint");
    ts->geometry = st.meta("model.geometry");
    if (!v1 && (ts->data_hash.size() != 16 || ts->geometry.empty()))
        return fail(err, std::string("expected metadata \"") + (v2 ? "data.fnv1a" : "data.fingerprint") +
                             "\" and \"model.geometry\"");
    ts->format = v1 ? 1 : v2 ? 2 : 3;
    return true;
}

void train_state_read(TrainState* ts, const std::string& dir) {
    std::string path = path_join(dir, kStateFile), err;
    if (!file_exists(path))
        fatal("missing %s: expected a checkpoint directory written by `gpt2 train --out`", path.c_str());
    SafeTensors st;
    safetensors_load_header(&st, path);  // the header: the moments are read by train_state_restore, in pieces
    if (!train_state_parse(st, ts, &err)) fatal("bad train state (%s): %s", path.c_str(), err.c_str());
}

namespace {

// Reads the saved moments of opt's range of the parameters into opt's buffers, 1M values at a time: straight
// in when they were saved in opt's form, else through a buffer and stored in it (bf16 and 8 bits rounded to
// nearest). Each value is checked.
void read_moments(const TrainState& ts, AdamW* opt) {
    const size_t per = (size_t)1 << 20, B = AdamW8bit::kBlock;  // per and the range's start: multiples of B
    const bool saved16 = ts.m.dtype == "BF16", saved8 = ts.m.dtype == "U8";
    const size_t esize = saved8 ? 1 : saved16 ? 2 : 4;
    AdamW8bit* const q = adamw_8bit(*opt);
    const bool same = saved8 ? q != nullptr : saved16 ? adamw_bf16(*opt) != nullptr : !opt->moments;
    const std::vector<MomentsArray> to = adamw_moments_arrays(*opt);
    std::vector<uint8_t> piece(same ? 0 : per * esize);
    std::vector<float> steps(saved8 && !same ? per / B : 0), x(per);
    for (int k = 0; k < 2; k++) {  // m, then v
        const StTensor& t = k ? ts.v : ts.m;
        for (size_t first = opt->begin; first < opt->end; first += per) {
            const size_t n = std::min(per, opt->end - first), at = first - opt->begin;
            uint8_t* raw = same ? (uint8_t*)to[k].data + at * esize : piece.data();
            safetensors_read_bytes(ts.file, t, first * esize, n * esize, raw);
            float* step = saved8 ? (same ? (float*)to[2 + k].data + at / B : steps.data()) : nullptr;
            if (saved8)
                safetensors_read_bytes(ts.file, k ? ts.v_step : ts.m_step, first / B * 4, (n + B - 1) / B * 4, step);
            for (size_t i = 0; i < n; i++) {
                x[i] = saved8    ? (k ? v_code_value(raw[i]) : m_code_value(raw[i])) * step[i / B]
                       : saved16 ? bf16_to_float(((const uint16_t*)raw)[i])
                                 : ((const float*)raw)[i];
                if (!std::isfinite(x[i]) || (k == 1 && x[i] < 0) || (saved8 && !(step[i / B] >= 0)))
                    fatal("bad train state (%s): AdamW moments at %zu: expected finite values, v >= 0 and steps >= 0",
                          ts.path.c_str(), first + i);
            }
            if (same) continue;
            if (q) q->store(k, at, x.data(), n);
            else if (opt->moments)
                for (size_t i = 0; i < n; i++) ((uint16_t*)to[k].data)[at + i] = bf16_round(x[i]);
            else memcpy((float*)to[k].data + at, x.data(), n * 4);
        }
    }
}

}  // namespace

void train_state_restore(TrainState* state, const GPT2& model, AdamW* opt, DataLoader* dl, LossHistory* history) {
    adamw_prepare(opt, model.params.size());  // opt's range, all or a ZeRO-1 slice, in zeros
    train_state_restore_params(state, model.num_params, train_state_params_hash(model), model.cfg, opt, dl, history);
}

void train_state_restore_params(TrainState* state, size_t n, const std::string& params_hash, const GPT2Config& cfg,
                                AdamW* opt, DataLoader* dl, LossHistory* history) {
    TrainState& ts = *state;
    const char* path = ts.path.c_str();
    const size_t moments = ts.m.numel();
    if (moments != n)
        fatal("train state does not belong to this model (%s): expected AdamW moments of %zu values, got %zu", path, n,
              moments);
    if (ts.params_hash != params_hash)
        fatal("train state does not belong to this model (%s): parameter hash %s, expected %s", path,
              params_hash.c_str(), ts.params_hash.c_str());
    if (!ts.geometry.empty() && ts.geometry != geometry_of(cfg))
        fatal("model changed since the checkpoint (%s): the train state has %s, config.json says %s", path,
              ts.geometry.c_str(), geometry_of(cfg).c_str());
    const char* spec = dl->spec.c_str();
    if (ts.format < 3) {  // one file, hashed whole (format 2) or not at all (format 1)
        if (dl->shards.size() != 1)
            fatal("training data changed (%s): the run was trained on one file, %s names %zu", path, spec,
                  dl->shards.size());
        if (token_files_mask(dl->shards[0]))  // these formats predate loss masks: the run scored every token
            fatal_hint("--loss-on all trains on as the run did", "training data changed (%s): the loss mask %s "
                       "appeared beside %s since the run, which trained on every token", path,
                       lossmask_path(dl->shards[0].path).c_str(), spec);
        if (!ts.loader.order.empty() && ts.loader.order.size() != dataloader_shard_windows(*dl, 0))
            fatal("training data changed (%s): the train state orders %zu windows, %s holds %zu", path,
                  ts.loader.order.size(), spec, dataloader_shard_windows(*dl, 0));
        if (!ts.data_hash.empty() && ts.data_hash != train_state_data_hash(*dl))
            fatal("training data changed (%s): %s hashes to %s, the run was trained on %s", path, spec,
                  train_state_data_hash(*dl).c_str(), ts.data_hash.c_str());
    } else if (ts.data_shards != dl->shards.size()) {
        fatal("training data changed (%s): the run was trained on %zu shards, %s names %zu", path, ts.data_shards, spec,
              dl->shards.size());
    } else {
        check_masks_there(ts, *dl);  // a mask gone, then a shard or mask changed: each named
        check_contents(ts, *dl);
        if (ts.data_hash != train_state_shards_hash(*dl))  // a header edited, or a train state without data.content
            fatal("training data changed (%s): the shards of %s fingerprint to %s, the run was trained on %s", path,
                  spec, train_state_shards_hash(*dl).c_str(), ts.data_hash.c_str());
    }
    read_moments(ts, opt);
    opt->step = ts.adamw_step;
    check_loader_fits(*dl, ts.loader, ts.path);
    dataloader_restore(dl, ts.loader);
    *history = ts.history;
}
