// error.cpp: see error.h.
#include "core/error.h"

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

static std::vector<std::function<void()>*> cleanups;  // the open FatalCleanups' functions, oldest first

FatalCleanup::FatalCleanup(std::function<void()> fn) : fn(std::move(fn)) { cleanups.push_back(&this->fn); }

FatalCleanup::~FatalCleanup() { cleanups.erase(std::remove(cleanups.begin(), cleanups.end(), &fn), cleanups.end()); }

// Each is taken off the list before it runs, so a fatal() inside one cannot run it again.
void run_fatal_cleanups() {
    while (!cleanups.empty()) {
        std::function<void()>* fn = cleanups.back();
        cleanups.pop_back();
        (*fn)();
    }
}

// Prints `error: ...` in one write (so MPI ranks sharing stderr do not interleave) and any hint; runs cleanups, exits.
[[noreturn]] static void fail_with(const char* hint, const char* fmt, va_list ap) {
    fflush(stdout);
    char line[4096];
    int n = snprintf(line, sizeof(line), "error: ");
    n += vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
    n = std::min(n, (int)sizeof(line) - 2);
    line[n] = '\n';
    fwrite(line, 1, (size_t)n + 1, stderr);
    if (hint) fprintf(stderr, "hint: %s\n", hint);
    run_fatal_cleanups();
    exit(1);
}

void fatal(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fail_with(nullptr, fmt, ap);
}

void fatal_hint(const std::string& hint, const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fail_with(hint.c_str(), fmt, ap);
}

std::vector<uint8_t> read_whole_file(const std::string& path, size_t max_bytes, size_t prefix) {
    if (file_read_hook) return file_read_hook(path, max_bytes);
    if (std::error_code ec; std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec))
        fatal("not a regular file (%s): expected a file whose size is known before reading", path.c_str());  // a FIFO
    FILE* f = fopen(path.c_str(), "rb");
    if (!f) fatal("cannot open %s: %s", path.c_str(), strerror(errno));
    std::vector<uint8_t> bytes;
    uint8_t piece[1 << 16];
    for (size_t n; (n = fread(piece, 1, std::min(sizeof(piece), prefix - bytes.size()), f)) > 0;) {
        bytes.insert(bytes.end(), piece, piece + n);
        if (bytes.size() > max_bytes) fatal("file too large (%s): expected at most %zu bytes", path.c_str(), max_bytes);
    }
    const bool failed = ferror(f);
    fclose(f);
    if (failed) fatal("cannot read %s: %s", path.c_str(), strerror(errno));
    return bytes;
}
