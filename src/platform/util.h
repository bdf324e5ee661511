// util.h: errors the user can cause, whole-file reads, memory checks and paths. Errors print one line
// `error: ...` (plus at most one `hint:` line) and exit 1; programmer invariants use assert instead. What a
// failed command had staged is removed by the FatalCleanup guards that fatal() runs. Writing files is
// output_files.h's job alone.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

[[noreturn]] void fatal(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
// fatal() with a second `hint:` line.
[[noreturn]] void fatal_hint(const std::string& hint, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

// While one of these lives, fatal() runs its function before exiting (newest first): it removes what the
// failing command had staged, so a failure leaves no half-written output behind.
class FatalCleanup {
public:
    explicit FatalCleanup(std::function<void()> fn);
    ~FatalCleanup();
    FatalCleanup(const FatalCleanup&) = delete;
    FatalCleanup& operator=(const FatalCleanup&) = delete;

private:
    std::function<void()> fn_;
};
// Runs the open FatalCleanups now, newest first (fatal() does; so does a command ended by a signal, signals.h).
void run_fatal_cleanups();

// Reads a whole regular file whose size is known before reading (and checked against available memory);
// a missing, unreadable or non-regular file (a directory, a pipe, /dev/zero), or one over max_bytes (what
// a file of its kind can sensibly hold: a text read whole must not take the machine's memory), is fatal
// and names `path`.
std::vector<uint8_t> file_read(const std::string& path, size_t max_bytes = SIZE_MAX);
// Reads text from a file, a pipe, or stdin when path is "-", to the end; more than max_bytes is fatal.
std::string text_read(const std::string& path, size_t max_bytes);

// Bytes of MemAvailable in /proc/meminfo, or 0 when unknown.
size_t memory_available();
// fatal with `hint` when `bytes` exceed the available memory; call it before allocating what input sizes.
void memory_check(double bytes, const std::string& what, const std::string& hint);
bool path_exists(const std::string& path);  // anything at path, a link followed
bool file_exists(const std::string& path);
bool dir_exists(const std::string& path);
// mkdir -p; fatal on failure. The directories it made are appended to *created when given.
void dir_create(const std::string& path, std::vector<std::string>* created = nullptr);

// Entry names of a directory (no . or ..), sorted; fatal naming it if unreadable.
std::vector<std::string> dir_entries(const std::string& dir);
void dir_fsync(const std::string& dir);
bool path_is_symlink(const std::string& path);
// Up to n leading bytes of a regular file; empty when it is not one or cannot be read (for recognising a
// file's kind before replacing it).
std::vector<uint8_t> file_head_bytes(const std::string& path, size_t n);

std::string path_join(const std::string& a, const std::string& b);
// `a/b/` -> `a/b` (trailing slashes dropped; "/" stays "/").
std::string path_strip_slashes(const std::string& path);
// The directory holding `path`: "a/b" -> "a", "b" -> ".", "/b" -> "/".
std::string path_parent(const std::string& path);
// The last component: "a/b" -> "b", "b/" -> "b".
std::string path_base(const std::string& path);
double time_now_s();  // monotonic seconds
// "12m05s", or "3h07m" from an hour on: an ETA for progress lines.
std::string format_duration(double seconds);

// The part of [data, data + bytes) made of whole 2 MiB pages, asked for huge pages and faulted in on all
// threads (buffer_assign_zero's first half).
void buffer_prefault_huge(const void* data, size_t bytes);
// Makes *v n zeros, the way a large buffer is best set up: the old storage freed first, then the new one
// asked for huge pages (2 MiB, where the kernel offers them) and faulted in on all threads before it is
// zeroed. Faulting 4 KiB pages one at a time was most of a first training step (8.1 s against 0.9 s at
// 124M on a 2-core VM); this is what keeps it near a steady one. Same result as v->assign(n, T()).
template <typename T>
void buffer_assign_zero(std::vector<T>* v, size_t n) {
    std::vector<T>().swap(*v);
    v->reserve(n);  // allocated, not yet touched
    buffer_prefault_huge(v->data(), n * sizeof(T));
    v->assign(n, T());
}
