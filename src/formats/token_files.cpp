// token_files.cpp: see token_files.h.
#include "formats/token_files.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "formats/loss_mask.h"
#include "platform/hash.h"
#include "platform/output_files.h"
#include "platform/platform.h"
#include "platform/signals.h"
#include "platform/util.h"

bool token_files_masks = true;

namespace {

// What a mapped shard's image owns, as the image's deleter (std::get_deleter finds it again, so the core's
// TokenShard needs no field of its own): the token file's mapping and, when the shard has one, its loss mask's.
struct ShardMaps {
    explicit ShardMaps(size_t bytes) : bytes(bytes) {}
    size_t bytes;
    std::shared_ptr<const void> mask_map;
    const uint8_t* mask = nullptr;  // (num_tokens,): 1 = scored as a target
    int32_t mask_T = 0;             // the -T the mask was packed for (0: unknown)
    uint64_t tokens_hash = 0;       // hash_words of every token
    uint64_t content = 0;           // then of every mask flag too: a resume's check
    FileInfo token_file;            // the token file as opened (or as last found unchanged): its size and mtime
    FileInfo mask_file;             // the mask as opened: its size, checked at each read (a shrink in the
                                    // mapping's last page reads zeros, not a SIGBUS)
    void operator()(const void* p) const {
        if (p) os_unmap(const_cast<void*>(p), bytes);
    }
};

// Maps `path` (`what` for messages) read-only into *map, its size into *n; a file shorter than `least`
// bytes is not mapped (an empty one cannot be) and *map stays null for its check to name. *info: the file's.
void map_input(const std::string& path, const char* what, size_t least, void** map, size_t* n,
               FileInfo* info = nullptr) {
    const char* w = path.c_str();
    int fd = os_open_read(path);  // non-blocking: opening a FIFO must not hang
    if (fd < 0) fatal("cannot open %s: %s", w, strerror(errno));
    input_note_fd(fd);
    FileInfo st;
    if (!os_fstat(fd, &st) || st.kind != FileKind::regular) {
        os_close(fd);
        fatal("not a regular file (%s): expected %s", w, what);
    }
    *n = (size_t)st.size;
    if (info) *info = st;
    *map = *n >= least ? os_map_read(fd, *n) : nullptr;
    os_close(fd);  // the mapping keeps the file
    if (*n >= least && !*map) fatal("cannot map %s: %s", w, strerror(errno));
    if (*map) os_map_sequential(*map, *n);
}

// FNV-1a over n bytes, or over the first and last `edge` of them when there are more than twice as many.
uint64_t fnv1a_edges(const void* data, size_t n, size_t edge, uint64_t h) {
    const uint8_t* p = static_cast<const uint8_t*>(data);
    if (n <= 2 * edge) return fnv1a(p, n, h);
    return fnv1a(p + n - edge, edge, fnv1a(p, edge, h));
}

// Opens the loss mask beside s (formats/loss_mask.h), when there is one, into its image, and extends its
// fingerprint with the mask's, so a resume on changed masks is refused as one on a changed shard.
void open_mask(TokenShard* s) {
    const std::string path = lossmask_path(s->path);
    // anything there is the mask, to open or refuse: a link to nowhere or a directory must not mean "every token"
    if (!token_files_masks || (!path_exists(path) && !path_is_symlink(path))) return;
    void* map = nullptr;
    size_t n = 0;
    FileInfo file;
    map_input(path, "a loss mask", kTokenFileHeaderBytes, &map, &n, &file);
    ShardMaps* maps = std::get_deleter<ShardMaps>(s->image);
    maps->mask_file = file;
    maps->mask_map = std::shared_ptr<const void>(map, ShardMaps(n));
    std::string err;
    if (!lossmask_check(static_cast<const uint8_t*>(map), n, s->num_tokens, s->fingerprint, path, &err))
        fatal_hint("remake it with " + program_name() + " tokenize --instructions, or give --loss-on all to ignore it",
                   "%s", err.c_str());
    maps->mask = static_cast<const uint8_t*>(map) + kTokenFileHeaderBytes;
    memcpy(&maps->mask_T, static_cast<const int32_t*>(map) + 5, sizeof(maps->mask_T));
    const uint64_t h = fnv1a_edges(maps->mask, n - kTokenFileHeaderBytes, (size_t)1 << 20, fnv1a(map, kTokenFileHeaderBytes));
    s->fingerprint += "+mask" + hash_hex(h);
    maps->content = hash_words(maps->mask, n - kTokenFileHeaderBytes, maps->tokens_hash);
    os_map_release(map, n);
}

}  // namespace

void tokenfile_map(TokenShard* shard, const std::string& path, int vocab_size) {
    if (kLossMaskKind.is_ours(path))
        fatal("%s is a loss mask, not a token file: expected its token file (X.bin beside X.mask), which reads the "
              "mask with it", path.c_str());
    void* map = nullptr;
    size_t n = 0;
    FileInfo file;
    map_input(path, "a token file", kTokenFileHeaderBytes, &map, &n, &file);
    TokenShard s;
    s.path = path;
    s.image = std::shared_ptr<const void>(map, ShardMaps(n));
    std::get_deleter<ShardMaps>(s.image)->token_file = file;
    std::string err;
    if (!tokenfile_check(static_cast<const uint8_t*>(map), n, vocab_size, path, &s.num_tokens, &err))
        fatal("%s", err.c_str());
    s.tokens = reinterpret_cast<const uint16_t*>(static_cast<const uint8_t*>(map) + kTokenFileHeaderBytes);
    s.fingerprint = tokenfile_fingerprint(s);
    ShardMaps* maps = std::get_deleter<ShardMaps>(s.image);
    maps->content = maps->tokens_hash = hash_words(s.tokens, s.num_tokens * 2);
    // The passes above faulted every page in; drop them from this process (they stay in the page cache) and
    // let batches fault in just the windows they read.
    os_map_release(map, n);
    open_mask(&s);
    *shard = std::move(s);
}

const uint8_t* token_files_mask(const TokenShard& shard) {
    const ShardMaps* maps = std::get_deleter<ShardMaps>(shard.image);
    return maps ? maps->mask : nullptr;
}

int token_files_mask_T(const TokenShard& shard) {
    const ShardMaps* maps = std::get_deleter<ShardMaps>(shard.image);
    return maps ? maps->mask_T : 0;
}

std::string token_files_content(const TokenShard& shard) {
    const ShardMaps* maps = std::get_deleter<ShardMaps>(shard.image);
    if (!maps) return "";
    return hash_hex(maps->tokens_hash) + (maps->mask ? "+" + hash_hex(maps->content) : "");
}

std::string tokenfile_fingerprint(const TokenShard& shard) {
    const uint8_t* bytes = reinterpret_cast<const uint8_t*>(shard.tokens);
    const size_t n = shard.num_tokens * 2;
    return tokenfile_fingerprint_edges(shard.num_tokens, bytes - kTokenFileHeaderBytes, bytes,
                                       n > 2 * kTokenFileFingerprintEdge ? bytes + n - kTokenFileFingerprintEdge : nullptr);
}

std::string tokenfile_fingerprint_edges(size_t num_tokens, const void* header, const void* first, const void* last) {
    const uint64_t count = num_tokens;
    uint64_t h = fnv1a(&count, sizeof(count));
    h = fnv1a(header, kTokenFileHeaderBytes, h);
    const size_t n = num_tokens * 2, edge = kTokenFileFingerprintEdge;  // 1 MiB at each end
    if (n <= 2 * edge) return hash_hex(fnv1a(first, n, h));
    return hash_hex(fnv1a(last, edge, fnv1a(first, edge, h)));
}

std::vector<std::string> token_files_expand(const std::string& spec, const char* flag) {
    std::vector<std::string> paths;
    size_t start = 0;
    while (start <= spec.size()) {
        size_t end = spec.find(',', start);
        if (end == std::string::npos) end = spec.size();
        const std::string item = spec.substr(start, end - start);
        start = end + 1;
        if (item.empty())
            fatal("empty path in %s '%s': expected comma-separated token files or globs", flag, spec.c_str());
        if (item.find_first_of("*?[") == std::string::npos) {
            paths.push_back(item);  // a plain path: opening it reports what is wrong
            continue;
        }
        std::vector<std::string> found;
        if (!os_glob(item, &found)) fatal("cannot expand %s '%s': glob failed", flag, item.c_str());
        if (found.empty()) fatal("no file matches %s '%s': expected at least one token file", flag, item.c_str());
        for (const std::string& path : found)  // X.mask beside X.bin: 'sft/*' matches both
            if (kLossMaskKind.is_ours(path))
                fatal_hint("match token files only, e.g. '" + (item.back() == '*' ? item + ".bin" : std::string("sft/*.bin")) + "'",
                           "%s is a loss mask, not a token file (%s '%s' matches it): the masks are read beside their "
                           "token files", path.c_str(), flag, item.c_str());
        paths.insert(paths.end(), found.begin(), found.end());
    }
    if (paths.size() > UINT32_MAX) fatal("too many shards in %s '%s'", flag, spec.c_str());  // orders are uint32
    return paths;
}

size_t token_files_scored(const std::vector<int>& targets) {
    return (size_t)std::count_if(targets.begin(), targets.end(), [](int t) { return t >= 0; });
}

size_t token_files_scored_targets(const TokenShard& shard, size_t n) {
    const uint8_t* mask = token_files_mask(shard);
    return mask ? (size_t)std::count(mask + 1, mask + 1 + n, 1) : n;
}

size_t token_files_num_tokens(const DataLoader& dl) {
    size_t n = 0;
    for (const TokenShard& s : dl.shards) n += s.num_tokens;
    return n;
}

void token_files_next_shard(DataLoader* dl) {
    if (dl->epoch < 0 || dl->shard_pos + 1 >= dl->shard_order.size()) {
        dl->epoch++;
        dataloader_order(&dl->shard_order, dl->shards.size(), dl->shuffle, &dl->rng);
        dl->shard_pos = 0;
    } else {
        dl->shard_pos++;
    }
}

namespace {

struct WindowCopy {
    DataLoader* dl;
    const TokenShard* shard;
    const uint32_t* windows;
};

void copy_windows(void* arg) {
    const WindowCopy* w = static_cast<const WindowCopy*>(arg);
    dataloader_copy(w->dl, *w->shard, w->windows, nullptr);
}

// -1 (not scored, core/layers.h) for each target the shard's mask says 0: window i's target t is token i*T + t + 1.
void mask_windows(void* arg) {
    const WindowCopy* w = static_cast<const WindowCopy*>(arg);
    const uint8_t* mask = token_files_mask(*w->shard);
    const size_t T = w->dl->T;
    for (int b = 0; mask && b < w->dl->B; b++)
        for (size_t t = 0; t < T; t++)
            if (!mask[w->windows[b] * T + t + 1]) w->dl->targets[b * T + t] = -1;
}

// The shard's loss mask, when it has one, is the size it was at open (or no longer at its path: the mapping
// keeps the file it opened). A mask cut short within its mapping's last page reads as zeros, not a SIGBUS.
bool mask_unchanged(const TokenShard& shard, std::string* err) {
    const ShardMaps* maps = std::get_deleter<ShardMaps>(shard.image);
    if (!maps || !maps->mask) return true;
    const std::string path = lossmask_path(shard.path);
    FileInfo now;
    if (!os_stat(path, &now) || !same_file(now, maps->mask_file) || now.size == maps->mask_file.size) return true;
    *err = "loss mask changed during the run (" + path + "): it now holds " + std::to_string(now.size) +
           " bytes, not the " + std::to_string(maps->mask_file.size) + " it held when opened; expected loss masks "
           "to stay unchanged too";
    return false;
}

// hash_words over a mapping that may shrink under it (a SIGBUS, caught by stop_guard_bus).
struct GuardedHash {
    const void* data;
    size_t n;
    uint64_t h;
};
void hash_guarded(void* arg) {
    GuardedHash* g = static_cast<GuardedHash*>(arg);
    g->h = hash_words(g->data, g->n, g->h);
}

// Whether `path`, the file *was describes, holds what it held: a file written in place moves its mtime, and
// then the mapping (which shows the file as it is now) is hashed again: the same bytes (a touch, the same data
// copied over) and *was takes the new mtime; other bytes, or another size, are a change. A file replaced by
// another at the path is not this one's change: the mapping keeps the file it opened.
bool same_content(const std::string& path, FileInfo* was, const void* data, size_t n, uint64_t seed, uint64_t hash) {
    FileInfo now;
    if (!os_stat(path, &now) || !same_file(now, *was) || now.mtime == was->mtime) return true;
    GuardedHash g{data, n, seed};
    if (now.size != was->size || !stop_guard_bus(hash_guarded, &g) || g.h != hash) return false;
    was->mtime = now.mtime;
    return true;
}

// A shard or its loss mask written in place during the run (same_content): false naming it.
bool content_unchanged(const TokenShard& shard, std::string* err) {
    ShardMaps* maps = std::get_deleter<ShardMaps>(shard.image);
    if (!maps) return true;
    if (!same_content(shard.path, &maps->token_file, shard.tokens, shard.num_tokens * 2, kFnv1aInit,
                      maps->tokens_hash)) {
        *err = "token file changed during the run (" + shard.path + "): it no longer holds the tokens it held when "
               "opened (written in place); expected token files to stay unchanged while gpt2 reads them";
        return false;
    }
    if (maps->mask && !same_content(lossmask_path(shard.path), &maps->mask_file, maps->mask, shard.num_tokens,
                                    maps->tokens_hash, maps->content)) {
        *err = "loss mask changed during the run (" + lossmask_path(shard.path) + "): it no longer holds the flags it "
               "held when opened (written in place); expected loss masks to stay unchanged too";
        return false;
    }
    return true;
}

}  // namespace

// A mapped shard (or its mask) another process truncated faults in the copy (caught by stop_guard_bus), and one
// rewritten in place may hold ids it did not hold at open.
bool token_files_read(DataLoader* dl, const TokenShard& shard, const uint32_t* windows, std::string* err) {
    WindowCopy w{dl, &shard, windows};
    const char* hint = "expected token files to stay unchanged while gpt2 reads them";
    const bool copied = stop_guard_bus(copy_windows, &w);
    if (!copied || !stop_guard_bus(mask_windows, &w)) {
        *err = copied ? "loss mask changed during the run (" + lossmask_path(shard.path) +
                            "): it is shorter than when it was opened; expected loss masks to stay unchanged too"
                      : "token file changed during the run (" + shard.path + "): it is shorter than when it was "
                            "opened; " + hint;
        return false;
    }
    if (!mask_unchanged(shard, err)) return false;
    int bad_id = -1;  // the last one read
    for (size_t i = 0; i < dl->inputs.size(); i++)
        if (dl->inputs[i] >= dl->vocab_size || dl->targets[i] >= dl->vocab_size)
            bad_id = std::max(dl->inputs[i], dl->targets[i]);
    if (bad_id < 0) return content_unchanged(shard, err);  // a change the ids do not show: the hash does
    *err = "token file changed during the run (" + shard.path + "): it now holds id " + std::to_string(bad_id) +
           ", outside the vocabulary of " + std::to_string(dl->vocab_size) + " it was checked against; " + hint;
    return false;
}

void token_files_plug_in() {
    tokenfile_open = tokenfile_map;
    dataloader_expand = token_files_expand;
    dataloader_next_shard = token_files_next_shard;
    dataloader_read = token_files_read;
}
