// error.h: errors a user can cause. fatal() prints one line `error: ...` (fatal_hint: plus one `hint:`
// line), runs the open FatalCleanups and exits 1; programmer invariants use assert instead. Also the core's
// one reader of a user's whole file, whose every failure is such an error.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

[[noreturn]] void fatal(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
[[noreturn]] void fatal_hint(const std::string& hint, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

// While one lives, fatal() runs its function before exiting (newest first): a failure leaves no half-written output.
struct FatalCleanup {
    explicit FatalCleanup(std::function<void()> fn);
    ~FatalCleanup();
    FatalCleanup(const FatalCleanup&) = delete;  // registered by the address of fn
    FatalCleanup& operator=(const FatalCleanup&) = delete;
    std::function<void()> fn;
};
// Runs the open FatalCleanups now, newest first (fatal() does; so does a command ended by a signal, signals.h).
void run_fatal_cleanups();
// Reads a whole regular file of at most max_bytes (the core alone: or its first `prefix`); fatal naming it on failure.
// The core alone uses fopen; ./gpt2 sets file_read_hook to platform/util.h's file_read (never blocking either).
inline std::vector<uint8_t> (*file_read_hook)(const std::string& path, size_t max_bytes) = nullptr;
std::vector<uint8_t> read_whole_file(const std::string& path, size_t max_bytes, size_t prefix = SIZE_MAX);
