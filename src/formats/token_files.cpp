// token_files.cpp: see token_files.h.
#include "formats/token_files.h"

#include <cerrno>
#include <cstring>

#include "core/dataloader.h"
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
    return paths;
}

void token_files_plug_in() {
    tokenfile_open = tokenfile_map;
    dataloader_expand = token_files_expand;
    dataloader_guard = stop_guard_bus;
}
