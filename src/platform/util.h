// util.h: whole-file reads, memory checks, paths and huge pages; fatal() and its cleanups are
// core/error.h's. Writing files is output_files.h's job alone.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/layout.h"
#include "core/error.h"

// Reads a whole regular file whose size is known before reading (and checked against available memory);
// a missing, unreadable or non-regular file (a directory, a pipe, /dev/zero), or one over max_bytes (what
// a file of its kind can sensibly hold: a text read whole must not take the machine's memory), is fatal
// and names `path`.
std::vector<uint8_t> file_read(const std::string& path, size_t max_bytes = SIZE_MAX);
// Reads text from a file, a pipe, or stdin when path is "-", to the end; more than max_bytes is fatal (with
// `hint`, when given).
std::string text_read(const std::string& path, size_t max_bytes, const char* hint = nullptr);

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
// An existing path made absolute (os_full_path), for a record that outlives the working directory; the path as
// given when it cannot be.
std::string path_absolute(const std::string& path);
// Where `path` lands once the directories it names are made (mkdir -p, as a writer does): its longest
// existing prefix resolved (links, `..`), the rest taken as text, a `..` there undoing the name before it.
// "a/nox/../b" with no a/nox is a/b. Two outputs or an output and an input are compared this way.
std::string path_resolved(const std::string& path);
// a and b land in one place: their path_resolved are equal, or name one existing file or directory (also
// through a bind mount).
bool path_same_place(const std::string& a, const std::string& b);
// The program as the user typed it (argv[0]: "./gpt2", "gpt2", "build/gpt2"), for the commands hints print;
// "gpt2" until main sets it.
const std::string& program_name();
// s as one shell word, for a command a hint prints: as it is when plain, else in single quotes.
std::string shell_word(const std::string& s);
void program_set_name(const std::string& name);
double time_now_s();  // monotonic seconds
// Decoded text to standard output, every byte of it (a NUL included, where fputs would stop).
void print_text(const std::string& text);
// "12m05s", or "3h07m" from an hour on: an ETA for progress lines.
std::string format_duration(double seconds);

// The part of [data, data + bytes) made of whole 2 MiB pages, asked for huge pages and faulted in on all
// threads: what main() sets core/layout.h's buffer_prefault to.
void buffer_prefault_huge(const void* data, size_t bytes);
