// util.h: errors the user can cause, whole-file I/O, memory checks, atomic writes and output locks.
// Errors print one line `error: ...` (plus at most one `hint:` line) and exit 1; programmer invariants
// use assert instead. Writes go to a temporary name in the same directory, are fsync'ed, then renamed;
// what a failed command had staged is removed by the FatalCleanup guards that fatal() runs.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
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

// Reads a whole regular file whose size is known before reading (and checked against available memory);
// a missing, unreadable or non-regular file (a directory, a pipe, /dev/zero) is fatal and names `path`.
std::vector<uint8_t> file_read(const std::string& path);
// Reads text from a file, a pipe, or stdin when path is "-", to the end; more than max_bytes is fatal.
std::string text_read(const std::string& path, size_t max_bytes);

// Bytes of MemAvailable in /proc/meminfo, or 0 when unknown.
size_t memory_available();
// fatal with `hint` when `bytes` exceed the available memory; call it before allocating what input sizes.
void memory_check(double bytes, const std::string& what, const std::string& hint);
bool file_exists(const std::string& path);
bool dir_exists(const std::string& path);
// mkdir -p; fatal on failure. The directories it made are appended to *created when given.
void dir_create(const std::string& path, std::vector<std::string>* created = nullptr);

// Writes `n` bytes to `path` atomically: `path.tmp.<pid>`, fsync, rename. Never leaves a half file.
void file_write_atomic(const std::string& path, const void* data, size_t n);
// Same, gathering several buffers in order.
void file_write_atomic(const std::string& path, const std::vector<std::pair<const void*, size_t>>& parts);
// The two halves of file_write_atomic, for outputs published together: file_write_staged writes and
// fsyncs `path.tmp.<pid>` and returns that name (removed if fatal() runs before it is published);
// file_publish renames it over `path`.
std::string file_write_staged(const std::string& path, const std::vector<std::pair<const void*, size_t>>& parts);
void file_publish(const std::string& staged, const std::string& path);

// Replaces directory `dir` with the fully written directory `staging` in one step (renameat2 with
// RENAME_EXCHANGE), so a reader or a crash sees either the old or the new directory, never a mix. The
// previous contents end up in `staging`; the caller removes them. Where the file system cannot exchange
// it falls back to two renames through `dir.old.<pid>`, which dir_recover_interrupted undoes after a
// crash between them.
void dir_replace_atomic(const std::string& staging, const std::string& dir);
// When `dir` is missing but a dead process's `dir.old.<pid>` exists (a replacement killed between its
// two renames) that carries the staging marker and satisfies is_ours(path), renames it back; true if so.
bool dir_recover_interrupted(const std::string& dir, const std::function<bool(const std::string&)>& is_ours);
// Clears a staging directory of dir_publish's (one holding the marker kStagingMarker; any other is left
// alone): entries ours(name) accepts are unlinked, any other moves back into `dir` where that name is
// free, and the directory goes once empty. What cannot move stays (a `note:` line names it): this program
// deletes only what it wrote.
void dir_clear_staging(const std::string& staging, const std::string& dir,
                       const std::function<bool(const std::string&)>& ours);
// Clears what killed processes left beside `dir`: their staging directories, and the old contents a
// two-rename replacement had set aside (when `dir` itself exists), moving files gpt2 did not write back in.
void dir_clear_dead_staging(const std::string& dir, const std::function<bool(const std::string&)>& ours);
// The file that marks dir_publish's staging directories; outputs treat it as one of their own names.
const char* const kStagingMarker = ".gpt2-staging";
// Entry names of a directory (no . or ..); fatal naming it if unreadable.
std::vector<std::string> dir_entries(const std::string& dir);
void dir_fsync(const std::string& dir);
bool path_is_symlink(const std::string& path);
// True for a name file_write_atomic leaves only when killed mid-write: `<base>.tmp.<digits>`.
bool path_is_staged_temp(const std::string& name);
// True when `name` is one of `ours`, a staged temporary of one of them, or kStagingMarker: the entries an
// output directory may hold that its writer may replace or remove.
bool name_is_ours(const std::string& name, std::initializer_list<const char*> ours);
// Up to n leading bytes of a regular file; empty when it is not one or cannot be read (for recognising a
// file's kind before replacing it).
std::vector<uint8_t> file_head_bytes(const std::string& path, size_t n);

// An exclusive lock on `target` (a file or directory about to be written), held through `target.lock`
// beside it until the object is destroyed or the process exits. The directories it creates for it are
// removed again if they are still empty then (a failed run leaves none behind). fatal naming `flag` and
// the holder's pid when another process holds it, or when `target.lock` is not a lock file.
class PathLock {
public:
    PathLock(const std::string& target, const char* flag);
    ~PathLock();
    PathLock(const PathLock&) = delete;
    PathLock& operator=(const PathLock&) = delete;

private:
    void release();
    std::string path_;
    int fd_ = -1;
    std::vector<std::string> created_;
    FatalCleanup cleanup_;  // a failing run removes its lock file and the directories it made
};

// Publishes directory `dir` as a whole: `write` fills a staging directory `dir.saving.<pid>` beside it,
// the two are swapped (dir_replace_atomic), and dir_clear_staging removes the old contents and moves
// entries ours() rejects back into `dir`, so files the user put there stay. Staging directories of dead
// processes are cleared first the same way; a fatal() inside `write` clears this one.
void dir_publish(const std::string& dir, const std::function<bool(const std::string&)>& ours,
                 const std::function<void(const std::string& staging)>& write);

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
