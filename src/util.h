// util.h: errors the user can cause, whole-file I/O and atomic writes.
// Errors print one line `error: ...` (plus at most one `hint:` line) and exit 1; programmer invariants
// use assert instead. Writes go to a temporary name in the same directory, are fsync'ed, then renamed.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

[[noreturn]] void fatal(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
// fatal() with a second `hint:` line.
[[noreturn]] void fatal_hint(const std::string& hint, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));

// Reads a whole file; a missing or unreadable file is fatal and names `path`.
std::vector<uint8_t> file_read(const std::string& path);
bool file_exists(const std::string& path);
bool dir_exists(const std::string& path);
void dir_create(const std::string& path);  // mkdir -p; fatal on failure

// Writes `n` bytes to `path` atomically: `path.tmp.<pid>`, fsync, rename. Never leaves a half file.
void file_write_atomic(const std::string& path, const void* data, size_t n);
// Same, gathering several buffers in order.
void file_write_atomic(const std::string& path, const std::vector<std::pair<const void*, size_t>>& parts);

// Replaces directory `dir` with the fully written directory `staging` in one step (renameat2 with
// RENAME_EXCHANGE, then the old contents are removed), so a reader or a crash sees either the old or the
// new directory, never a mix. Falls back to two renames where the file system cannot exchange.
void dir_replace_atomic(const std::string& staging, const std::string& dir);
// Removes a directory and the regular files directly in it (checkpoint directories are flat).
void dir_remove_flat(const std::string& dir);
void dir_fsync(const std::string& dir);

std::string path_join(const std::string& a, const std::string& b);
double time_now_s();  // monotonic seconds
