// train_state.cpp: see train_state.h.
#include "train_state.h"

#include <dirent.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "checkpoint.h"
#include "json.h"
#include "plot.h"
#include "util.h"

namespace {

uint64_t params_hash(const GPT2& model) {  // FNV-1a over the parameter bytes
    uint64_t h = 1469598103934665603ull;
    const uint8_t* p = reinterpret_cast<const uint8_t*>(model.params.data());
    for (size_t i = 0; i < model.params.size() * sizeof(float); i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

// Removes `dir.saving.<pid>` directories left by processes that were killed mid-save.
void remove_stale_staging(const std::string& dir) {
    size_t slash = dir.find_last_of('/');
    std::string parent = slash == std::string::npos ? "." : dir.substr(0, slash + 1);
    std::string prefix = (slash == std::string::npos ? dir : dir.substr(slash + 1)) + ".saving.";
    DIR* d = opendir(parent.c_str());
    if (!d) return;
    std::vector<std::string> stale;
    while (struct dirent* e = readdir(d)) {
        std::string name = e->d_name;
        if (name.compare(0, prefix.size(), prefix) != 0) continue;
        long pid = atol(name.c_str() + prefix.size());
        if (pid > 0 && pid != getpid() && kill((pid_t)pid, 0) != 0 && errno == ESRCH) stale.push_back(name);
    }
    closedir(d);
    for (const std::string& name : stale) dir_remove_flat(path_join(parent, name));
}

std::vector<float> history_flat(const std::vector<std::pair<int, float>>& h) {
    std::vector<float> out;
    for (const auto& p : h) out.push_back((float)p.first), out.push_back(p.second);
    return out;
}

long long meta_int(const SafeTensors& st, const char* key) {
    std::string v = st.meta(key);
    char* end = nullptr;
    long long x = strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end) fatal("bad train state (%s): metadata \"%s\" is '%s', expected an integer", st.path.c_str(), key, v.c_str());
    return x;
}

}  // namespace

void train_state_save(const std::string& dir, const GPT2& model, const AdamW& opt, const DataLoader& dl, int step,
                      const std::vector<std::pair<std::string, std::string>>& run_flags, const LossHistory& history,
                      const std::string& plot_name) {
    remove_stale_staging(dir);
    std::string staging = dir + ".saving." + std::to_string(getpid());
    if (dir_exists(staging)) dir_remove_flat(staging);
    dir_create(staging);
    checkpoint_save_hf(model, staging);
    std::vector<float> zeros;
    if (opt.m.empty()) zeros.assign(model.num_params, 0.0f);
    const float* m = opt.m.empty() ? zeros.data() : opt.m.data();
    const float* v = opt.v.empty() ? zeros.data() : opt.v.data();
    std::string flags = "[";
    for (const auto& kv : run_flags)
        flags += (flags.size() > 1 ? "," : "") + std::string("[") + json_escape(kv.first) + "," + json_escape(kv.second) + "]";
    flags += "]";
    char hash[32];
    snprintf(hash, sizeof(hash), "%016llx", (unsigned long long)params_hash(model));
    std::vector<float> train_hist = history_flat(history.train), val_hist = history_flat(history.val);
    safetensors_write(path_join(staging, "train_state.safetensors"),
                      {{"adamw.m", "F32", {(int64_t)model.num_params}, m},
                       {"adamw.v", "F32", {(int64_t)model.num_params}, v},
                       {"loader.order", "U32", {(int64_t)dl.order.size()}, dl.order.data()},
                       {"history.train", "F32", {(int64_t)history.train.size(), 2}, train_hist.data()},
                       {"history.val", "F32", {(int64_t)history.val.size(), 2}, val_hist.data()}},
                      {{"format", "gpt2.cpp train state 1"},
                       {"step", std::to_string(step)},
                       {"adamw.step", std::to_string(opt.step)},
                       {"loader.epoch", std::to_string(dl.epoch)},
                       {"loader.pos", std::to_string(dl.pos)},
                       {"loader.rng", std::to_string(dl.rng.state)},
                       {"params.fnv1a", hash},
                       {"flags", flags}});
    if (!plot_name.empty()) plot_losses(path_join(staging, plot_name), history.train, history.val);
    dir_replace_atomic(staging, dir);
}

void train_state_read(TrainState* rs, const std::string& dir) {
    std::string path = path_join(dir, "train_state.safetensors");
    if (!file_exists(path)) fatal("missing %s: expected a checkpoint directory written by `gpt2 train --out`", path.c_str());
    safetensors_load(&rs->st, path);
    if (rs->st.meta("format") != "gpt2.cpp train state 1")
        fatal("bad train state (%s): expected format \"gpt2.cpp train state 1\"", path.c_str());
    Json flags;
    std::string err, text = rs->st.meta("flags");
    if (!json_parse(text.data(), text.size(), &flags, &err) || flags.type != Json::ARRAY)
        fatal("bad train state (%s): flags are not a JSON array", path.c_str());
    for (const Json& f : flags.items) {
        if (f.type != Json::ARRAY || f.items.size() != 2 || f.items[0].type != Json::STRING || f.items[1].type != Json::STRING)
            fatal("bad train state (%s): expected [name, value] pairs in flags", path.c_str());
        rs->flags.push_back({f.items[0].str, f.items[1].str});
    }
    rs->step = (int)meta_int(rs->st, "step");
}

void train_state_restore(const TrainState& rs, const GPT2& model, AdamW* opt, DataLoader* dl, LossHistory* history) {
    const SafeTensors& st = rs.st;
    char hash[32];
    snprintf(hash, sizeof(hash), "%016llx", (unsigned long long)params_hash(model));
    if (st.meta("params.fnv1a") != hash)
        fatal("train state does not belong to this model (%s): parameter hash %s, expected %s", st.path.c_str(), hash,
              st.meta("params.fnv1a").c_str());
    for (const char* name : {"adamw.m", "adamw.v"}) {
        const StTensor* t = st.find(name);
        if (!t || t->dtype != "F32" || t->numel() != model.num_params)
            fatal("bad train state (%s): expected %s of %zu F32 values", st.path.c_str(), name, model.num_params);
    }
    opt->m = safetensors_read_f32(st, *st.find("adamw.m"));
    opt->v = safetensors_read_f32(st, *st.find("adamw.v"));
    opt->step = (int)meta_int(st, "adamw.step");
    const StTensor* order = st.find("loader.order");
    if (!order || order->dtype != "U32" || (order->numel() != 0 && order->numel() != dl->num_windows))
        fatal("bad train state (%s): loader.order does not match %s (%zu windows)", st.path.c_str(), dl->path.c_str(),
              dl->num_windows);
    dl->order.resize(order->numel());
    if (!dl->order.empty()) memcpy(dl->order.data(), st.bytes.data() + order->begin, order->numel() * 4);
    dl->epoch = (int)meta_int(st, "loader.epoch");
    dl->pos = (size_t)meta_int(st, "loader.pos");
    dl->rng.state = std::stoull(st.meta("loader.rng"));
    if (dl->pos > dl->order.size()) fatal("bad train state (%s): loader.pos past the epoch", st.path.c_str());
    for (auto& [name, series] : {std::pair<const char*, std::vector<std::pair<int, float>>*>{"history.train", &history->train},
                                 {"history.val", &history->val}}) {
        const StTensor* t = st.find(name);
        if (!t || t->dtype != "F32" || t->shape.size() != 2 || t->shape[1] != 2)
            fatal("bad train state (%s): expected %s as F32 (n, 2)", st.path.c_str(), name);
        std::vector<float> flat = safetensors_read_f32(st, *t);
        for (size_t i = 0; i + 1 < flat.size(); i += 2) series->push_back({(int)flat[i], flat[i + 1]});
    }
}
