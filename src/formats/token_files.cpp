// token_files.cpp: see token_files.h.
#include "formats/token_files.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "platform/hash.h"
#include "platform/output_files.h"
#include "platform/platform.h"
#include "platform/signals.h"
#include "platform/util.h"

void tokenfile_map(TokenShard* shard, const std::string& path, int vocab_size) {
    const char* w = path.c_str();
    int fd = os_open_read(path);  // non-blocking: opening a FIFO must not hang
    if (fd < 0) fatal("cannot open %s: %s", w, strerror(errno));
    input_note_fd(fd);
    FileInfo st;
    if (!os_fstat(fd, &st) || st.kind != FileKind::regular) {
        os_close(fd);
        fatal("not a regular file (%s): expected a token file", w);
    }
    const size_t n = (size_t)st.size;
    // a file shorter than the header is not mapped (an empty one cannot be); the check below names it
    void* map = n >= kTokenFileHeaderBytes ? os_map_read(fd, n) : nullptr;
    os_close(fd);  // the mapping keeps the file
    if (n >= kTokenFileHeaderBytes && !map) fatal("cannot map %s: %s", w, strerror(errno));
    TokenShard s;
    s.path = path;
    if (map) s.image = std::shared_ptr<const void>(map, [n](const void* p) { os_unmap(const_cast<void*>(p), n); });
    if (map) os_map_sequential(map, n);
    std::string err;
    if (!tokenfile_check(static_cast<const uint8_t*>(map), n, vocab_size, path, &s.num_tokens, &err))
        fatal("%s", err.c_str());
    s.tokens = reinterpret_cast<const uint16_t*>(static_cast<const uint8_t*>(map) + kTokenFileHeaderBytes);
    s.fingerprint = tokenfile_fingerprint(s);
    // The pass above faulted every page in; drop them from this process (they stay in the page cache) and
    // let batches fault in just the windows they read.
    os_map_release(map, n);
    *shard = std::move(s);
}

std::string tokenfile_fingerprint(const TokenShard& shard) {
    const size_t edge = (size_t)1 << 19;  // tokens in 1 MiB
    const uint64_t count = shard.num_tokens;
    uint64_t h = fnv1a(&count, sizeof(count));
    h = fnv1a(reinterpret_cast<const uint8_t*>(shard.tokens) - kTokenFileHeaderBytes, kTokenFileHeaderBytes, h);
    if (shard.num_tokens <= 2 * edge) {
        h = fnv1a(shard.tokens, shard.num_tokens * 2, h);
    } else {
        h = fnv1a(shard.tokens, edge * 2, h);
        h = fnv1a(shard.tokens + shard.num_tokens - edge, edge * 2, h);
    }
    return hash_hex(h);
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
        paths.insert(paths.end(), found.begin(), found.end());
    }
    if (paths.size() > UINT32_MAX) fatal("too many shards in %s '%s'", flag, spec.c_str());  // orders are uint32
    return paths;
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

}  // namespace

// A mapped shard another process truncated faults in the copy (caught by stop_guard_bus), and one rewritten
// in place may hold ids it did not hold at open.
bool token_files_read(DataLoader* dl, const TokenShard& shard, const uint32_t* windows, std::string* err) {
    WindowCopy w{dl, &shard, windows};
    const char* hint = "expected token files to stay unchanged while gpt2 reads them";
    if (!stop_guard_bus(copy_windows, &w)) {
        *err = "token file changed during the run (" + shard.path + "): it is shorter than when it was opened; " + hint;
        return false;
    }
    int bad_id = -1;  // the last one read
    for (size_t i = 0; i < dl->inputs.size(); i++)
        if (dl->inputs[i] >= dl->vocab_size || dl->targets[i] >= dl->vocab_size)
            bad_id = std::max(dl->inputs[i], dl->targets[i]);
    if (bad_id < 0) return true;
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
