// output_files.cpp: see output_files.h. The only file in src/ that opens files for writing.
#include "platform/output_files.h"

#include <cassert>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "platform/platform.h"
#include "platform/signals.h"

namespace {

const char kMarkerText[] = "gpt2.cpp staging directory\n";

std::vector<FileInfo>& input_ids() {
    static std::vector<FileInfo> ids;
    return ids;
}

bool path_exists_no_follow(const std::string& path) {
    FileInfo st;
    return os_lstat(path, &st);
}

// The pid in `<prefix><pid>` when `name` has that form, else 0.
long suffix_pid(const std::string& name, const std::string& prefix) {
    if (name.compare(0, prefix.size(), prefix) != 0 || name.size() == prefix.size()) return 0;
    if (name.find_first_not_of("0123456789", prefix.size()) != std::string::npos) return 0;
    return atol(name.c_str() + prefix.size());
}

// While dir_publish fills a staging directory: the directory it replaces, and the bytes of the files of its
// own there (0: none yet). A full disk then names the output and says why a save needs room for a copy.
struct Publishing {
    std::string dir;
    uint64_t old_bytes = 0;
};
const Publishing* g_publishing = nullptr;

// fatal for a write to `path` that failed with errno `err`.
[[noreturn]] void write_failed(const std::string& path, int err) {
    const Publishing* p = g_publishing;
    if (err != ENOSPC || !p) fatal("cannot write %s: %s", path.c_str(), strerror(err));
    if (!p->old_bytes) fatal("cannot save %s: no space left on the device (writing %s)", p->dir.c_str(), path.c_str());
    fatal_hint("a save writes a complete new copy beside the old one before swapping them, so it needs free space "
               "for one more checkpoint (about " + std::to_string(p->old_bytes) + " bytes, the size of the one there)",
               "cannot save %s: no space left on the device (writing %s)", p->dir.c_str(), path.c_str());
}

void write_all(int fd, const void* data, size_t n, const std::string& path) {
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
        long w = os_write(fd, p, n);
        if (w <= 0) write_failed(path, w == 0 ? ENOSPC : errno);
        p += w;
        n -= (size_t)w;
    }
}

// An unmarked staged temporary `tmp` that a dead writer may have left: an empty regular file (no link).
// Anything more is a user's: every staged file of a kind gpt2 recognises has a mark (below), and one of
// another kind killed mid-write is not told apart from a user's file.
bool leftover_is_ours(const std::string& tmp) {
    FileInfo st;
    return os_lstat(tmp, &st) && st.kind == FileKind::regular && st.size == 0;
}

// The mark beside a staged file `NAME.tmp.<pid>`: `NAME.tmp.<pid>.gpt2-staging`, holding kStagedText, created
// before the staged file and removed after it, locked by its writer all the while. It says the staged file
// is gpt2's whatever its bytes (a file killed mid-write is no whole file of its kind), and its lock, not the
// pid (which another process may hold by now, or which another pid namespace may not see), says whether
// its writer is alive.
const char kStagedText[] = "gpt2.cpp staged file\n";

std::string mark_of(const std::string& staged) { return staged + kStagingMarker; }

// How much of kStagedText the regular file `mark` holds: -1 when it is no mark of ours (a link, another
// kind of file, other bytes), else the bytes of a prefix (a writer killed while filling it leaves less).
long mark_text_bytes(const std::string& mark) {
    FileInfo st;
    if (!os_lstat(mark, &st) || st.kind != FileKind::regular || st.size >= sizeof(kStagedText)) return -1;
    const std::vector<uint8_t> head = file_head_bytes(mark, sizeof(kStagedText));
    if (head.size() != st.size || memcmp(head.data(), kStagedText, head.size()) != 0) return -1;
    return (long)head.size();
}

// True when `mark` is a mark of ours that no live writer holds: its lock taken (released at once), and the
// name still the file locked (a writer unlinks its mark before letting go of the lock). Marks still being
// filled count only when their pid is gone too: a writer fills its mark after locking it.
bool mark_abandoned(const std::string& mark, long pid) {
    const long text = mark_text_bytes(mark);
    if (text < 0 || (text < (long)sizeof(kStagedText) - 1 && pid != os_getpid() && os_pid_alive(pid))) return false;
    const int fd = os_open_read_nofollow(mark);
    if (fd < 0) return false;
    FileInfo held, now;
    const bool free = os_lock_try(fd) && os_fstat(fd, &held) && os_lstat(mark, &now) && same_file(held, now);
    os_close(fd);
    return free;
}

// Removes what dead writers of `path` left beside it: staged files with an abandoned mark (and the mark),
// marks alone (a writer killed just before or after its staged file existed), and unmarked `path.tmp.<pid>`
// files of dead processes that leftover_is_ours accepts (empty).
void clear_dead_temps(const std::string& path) {
    const std::string parent = path_parent(path), prefix = path_base(path) + ".tmp.";
    if (!dir_exists(parent)) return;
    const size_t mark_len = strlen(kStagingMarker);
    for (const std::string& name : dir_entries(parent)) {
        const bool is_mark = name.size() > mark_len && name.compare(name.size() - mark_len, mark_len, kStagingMarker) == 0;
        const std::string staged_name = is_mark ? name.substr(0, name.size() - mark_len) : name;
        const long pid = suffix_pid(staged_name, prefix);
        const std::string tmp = path_join(parent, staged_name), mark = mark_of(tmp);
        if (pid <= 0 || (is_mark && path_exists_no_follow(tmp))) continue;  // a mark with its file: done with it
        bool removed = false;
        if (mark_abandoned(mark, pid)) {
            // A writer fills its mark before it stages: beside a mark not filled, the file is not its.
            const bool filled = mark_text_bytes(mark) == (long)sizeof(kStagedText) - 1;
            removed = filled && path_exists_no_follow(tmp) && os_unlink(tmp.c_str());
            os_unlink(mark.c_str());
        } else if (!is_mark && pid != os_getpid() && !os_pid_alive(pid) && leftover_is_ours(tmp)) {
            removed = os_unlink(tmp.c_str());
        }
        if (removed) fprintf(stderr, "note: removed %s, left by a gpt2 process that was killed\n", tmp.c_str());
    }
}

// Creates an empty file exclusively; false when the name exists (any other failure is fatal).
bool create_exclusive(const std::string& path, int* fd_out, bool append = false) {
    int fd = os_create_exclusive(path, append);
    if (fd < 0 && errno == EEXIST) return false;
    if (fd < 0 && errno == ENOSPC && g_publishing) write_failed(path, ENOSPC);  // no inode left: a full disk's error
    if (fd < 0) fatal("cannot create %s: %s", path.c_str(), strerror(errno));
    *fd_out = fd;
    return true;
}

}  // namespace

const OutputKind kNewFile = {"a new file", nullptr};

void input_note_fd(int fd) {
    FileInfo st;
    if (os_fstat(fd, &st) && st.kind == FileKind::regular) input_ids().push_back(st);
}

void input_note_path(const std::string& path) {
    FileInfo st;
    if (os_stat(path, &st) && st.kind == FileKind::regular) input_ids().push_back(st);
}

void inputs_forget() { input_ids().clear(); }

bool path_is_input(const std::string& path) {
    FileInfo st;
    if (!os_stat(path, &st)) return false;
    for (const FileInfo& id : input_ids())
        if (same_file(id, st)) return true;
    return false;
}

std::string dir_input_entry(const std::string& dir) {
    if (!dir_exists(dir)) return "";
    for (const std::string& e : dir_entries(dir))
        if (path_is_input(path_join(dir, e))) return e;
    return "";
}

void output_check(const std::string& path, const char* flag, const OutputKind& kind) {
    if (path.empty()) fatal("empty value for %s: expected a file path", flag);
    if (path.back() == '/') fatal("bad value for %s: %s ends with '/', expected a file path", flag, path.c_str());
    FileInfo st;
    if (!os_lstat(path, &st)) {
        if (errno == ENOENT) return;
        fatal("cannot check %s (%s): %s", path.c_str(), flag, strerror(errno));
    }
    if (st.kind == FileKind::symlink)
        fatal_hint("give a new path, or the path the link points to",
                   "bad value for %s: %s is a symbolic link; gpt2 does not write through links", flag, path.c_str());
    if (st.kind == FileKind::directory)
        fatal("bad value for %s: %s is a directory, expected a file path", flag, path.c_str());
    if (st.kind != FileKind::regular)  // what may be replaced: a new path, or a file of kind's that gpt2 wrote
        fatal("bad value for %s: %s exists and is not a regular file (a device, FIFO or socket); expected a regular "
              "file path (a new path%s%s)",
              flag, path.c_str(), kind.is_ours ? ", or " : "", kind.is_ours ? kind.what : "");
    if (path_is_input(path))
        fatal("bad value for %s: %s is an input of this run; expected a different output path", flag, path.c_str());
    if (!kind.is_ours || !kind.is_ours(path))
        fatal_hint(std::string("choose a new path; gpt2 replaces a file only when it is ") + kind.what,
                   "bad value for %s: %s exists and is not %s", flag, path.c_str(), kind.what);
}

OutputFile::OutputFile(std::string path, const char* flag, const OutputKind& kind)
    : path_(std::move(path)), flag_(flag), kind_(kind), cleanup_([this] { discard(); }) {
    output_check(path_, flag, kind);
    clear_dead_temps(path_);
    const std::string staged = path_ + ".tmp." + std::to_string(os_getpid());
    if (kind.is_ours) {  // marked (a file in a fresh staging directory has the directory's marker)
        if (!create_exclusive(mark_of(staged), &mark_fd_))
            fatal_hint("move it away: gpt2 neither follows nor truncates a file it did not leave",
                       "cannot stage %s (%s): %s exists and gpt2 did not write it", path_.c_str(), flag,
                       mark_of(staged).c_str());
        mark_ = mark_of(staged);
        mark_slot_ = stop_track(mark_);
        if (!os_lock_try(mark_fd_)) fatal("cannot lock %s: %s", mark_.c_str(), strerror(errno));
        write_all(mark_fd_, kStagedText, sizeof(kStagedText) - 1, mark_);
    }
    // A name with our pid was left by a dead process whose pid we now have (we remove our own).
    if (!create_exclusive(staged, &fd_) &&
        !(leftover_is_ours(staged) && os_unlink(staged.c_str()) && create_exclusive(staged, &fd_)))
        fatal_hint("move it away: gpt2 neither follows nor truncates a file it did not leave",
                   "cannot stage %s (%s): %s exists and gpt2 did not write it", path_.c_str(), flag, staged.c_str());
    staged_ = staged;
    stop_slot_ = stop_track(staged_);
}

OutputFile::~OutputFile() { discard(); }

void OutputFile::write(const void* data, size_t n) {
    assert(fd_ >= 0 && "OutputFile::write after close");
    stop_point();  // a command that stops at its next write (signals.h) ends here, this file removed
    write_all(fd_, data, n, staged_);
}

void OutputFile::write_at(const void* data, size_t n, uint64_t offset) {
    assert(fd_ >= 0 && "OutputFile::write_at after close");
    stop_point();
    const long w = os_pwrite(fd_, data, n, offset);
    if (w != (long)n) write_failed(staged_, w >= 0 ? ENOSPC : errno);  // a short write: the disk is full
}

void OutputFile::close() {
    if (fd_ < 0) return;
    const int fd = fd_;
    fd_ = -1;
    if (!os_fsync(fd) || !os_close(fd)) write_failed(staged_, errno);
}

void OutputFile::publish() {
    close();
    stop_point();
    output_check(path_, flag_.c_str(), kind_);  // again: the target may have changed since we started
    if (!os_rename(staged_, path_))
        fatal("cannot rename %s to %s: %s", staged_.c_str(), path_.c_str(), strerror(errno));
    stop_untrack(stop_slot_);
    stop_slot_ = -1;
    staged_.clear();
    unmark();
}

void OutputFile::discard() {
    if (fd_ >= 0) os_close(fd_);
    fd_ = -1;
    if (!staged_.empty()) os_unlink(staged_.c_str());
    staged_.clear();
    stop_untrack(stop_slot_);
    stop_slot_ = -1;
    unmark();
}

// The mark goes after the staged file and before its lock (clear_dead_temps relies on that order).
void OutputFile::unmark() {
    if (!mark_.empty()) os_unlink(mark_.c_str());
    mark_.clear();
    stop_untrack(mark_slot_);
    mark_slot_ = -1;
    if (mark_fd_ >= 0) os_close(mark_fd_);
    mark_fd_ = -1;
}

std::unique_ptr<OutputFile> output_write(const std::string& path, const char* flag, const OutputKind& kind,
                                         const std::vector<std::pair<const void*, size_t>>& parts, bool publish) {
    std::unique_ptr<OutputFile> f(new OutputFile(path, flag, kind));
    for (const auto& part : parts) f->write(part.first, part.second);
    if (!publish) {
        f->close();
        return f;
    }
    f->publish();
    return nullptr;
}

void AppendFile::open(const std::string& path, const char* flag, const OutputKind& kind) {
    path_ = path, flag_ = flag;
    output_check(path, flag, kind);
    if (create_exclusive(path, &fd_, true)) {
        // a run that fails before its first line leaves no empty file of its own behind
        cleanup_.reset(new FatalCleanup([this] {
            FileInfo st;
            if (fd_ >= 0 && os_fstat(fd_, &st) && st.size == 0) os_unlink(path_.c_str());
        }));
        return;
    }
    fd_ = os_open_append(path);
    FileInfo st;
    if (fd_ < 0 || !os_fstat(fd_, &st) || st.kind != FileKind::regular)
        fatal("cannot open %s (%s): %s", path.c_str(), flag, fd_ < 0 ? strerror(errno) : "not a regular file");
    output_check(path, flag, kind);  // what we opened is what we checked, or it changed in between
}

void AppendFile::line(const char* fmt, ...) {
    if (fd_ < 0) return;
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    const int n = vsnprintf(nullptr, 0, fmt, ap);
    va_end(ap);
    std::string text(n > 0 ? (size_t)n : 0, '\0');
    if (n > 0) vsnprintf(&text[0], (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    write_all(fd_, text.data(), text.size(), path_ + " (" + flag_ + ")");
}

void AppendFile::close() {
    if (fd_ < 0) return;
    const int fd = fd_;
    fd_ = -1;
    if (!os_close(fd)) fatal("cannot write %s (%s): %s", path_.c_str(), flag_.c_str(), strerror(errno));
}

AppendFile::~AppendFile() {
    if (fd_ >= 0) os_close(fd_);
}

void output_silence_stdout() {
    if (!freopen(os_null_device(), "w", stdout))
        fatal("cannot open %s for standard output: %s", os_null_device(), strerror(errno));
}

// A reader's lock that cannot be made (errno EROFS or EACCES: the directory beside the target is read-only
// to this process): no gpt2 can be saving the target without making it either, so the target is read
// unlocked, once a lock file left there (by a writer from when it was writable) is seen to be free.
static bool read_unlocked(const std::string& lock, const std::string& target, const char* flag) {
    if (errno != EROFS && errno != EACCES) return false;
    const int fd = os_open_read_nofollow(lock);
    if (fd < 0) return errno == ENOENT;
    const bool free = os_lock_try(fd);
    os_close(fd);
    if (!free) fatal("checkpoint in use (%s %s): another gpt2 process holds %s", flag, target.c_str(), lock.c_str());
    return true;
}

PathLock::PathLock(const std::string& target, const char* flag, bool reader, const char* hint)
    : path_(path_strip_slashes(target) + ".lock"), cleanup_([this] { release(); }) {
    const std::string base = path_base(target);
    if (base == "." || base == ".." || base == "/")  // no name to stage beside, swap or lock
        fatal_hint("give the directory by its name, e.g. ../" + std::string("run"),
                   "bad value for %s: '%s' names a directory by '.', '..' or '/'; expected a path that ends in "
                   "the output's own name",
                   flag, target.c_str());
    dir_create(path_parent(path_), &created_);
    for (const std::string& dir : created_) created_slots_.push_back(stop_track(dir, true));
    FileInfo st;
    if (os_lstat(path_, &st)) {  // a lock file left by a killed run holds a pid, or nothing
        char text[32] = {0};
        int fd = st.kind == FileKind::regular ? os_open_read_nofollow(path_) : -1;
        long n = fd >= 0 ? os_read(fd, text, sizeof(text) - 1) : -1;
        if (fd >= 0) os_close(fd);
        // empty (a lock being created) or one pid line, as PathLock writes it
        bool pid_file =
            n == 0 || (n > 1 && n < 16 && text[n - 1] == '\n' && strspn(text, "0123456789") == (size_t)n - 1);
        if (!pid_file)
            fatal_hint("move it away or choose another output",
                       "cannot lock %s (%s): %s exists and is not a gpt2 lock file", target.c_str(), flag,
                       path_.c_str());
    }
    for (int attempt = 0; attempt < 100; attempt++) {
        fd_ = os_open_lock(path_);
        if (fd_ < 0 && reader && read_unlocked(path_, target, flag)) return;
        if (fd_ < 0 && hint) fatal_hint(hint, "cannot create lock file %s (%s): %s", path_.c_str(), flag, strerror(errno));
        if (fd_ < 0) fatal("cannot create lock file %s (%s): %s", path_.c_str(), flag, strerror(errno));
        if (!os_lock_try(fd_)) {
            char holder[32] = {0};
            long n = os_pread(fd_, holder, sizeof(holder) - 1, 0);
            holder[n > 0 ? n : 0] = 0;
            holder[strcspn(holder, "\n")] = 0;
            os_close(fd_);
            fd_ = -1;
            if (atol(holder) == os_getpid())
                fatal("bad value for %s: %s is already an output of this run (two flags name the same path)", flag,
                      target.c_str());
            fatal("output in use (%s %s): another gpt2 process (pid %s) is writing it", flag, target.c_str(),
                  holder[0] ? holder : "unknown");
        }
        // The holder before us unlinks the file as it lets go; a lock taken on an unlinked file guards nothing.
        FileInfo held, now;
        if (os_fstat(fd_, &held) && os_lstat(path_, &now) && same_file(held, now) &&
            held.kind == FileKind::regular) {
            // A signal that ends the process removes it too, from before its pid shows: a lock file with a pid
            // in it is always one a signal would clean up.
            stop_slot_ = stop_track(path_);
            std::string pid = std::to_string(os_getpid()) + "\n";
            if (!os_truncate(fd_, 0) || os_pwrite(fd_, pid.data(), pid.size(), 0) != (long)pid.size())
                fatal("cannot write lock file %s (%s): %s", path_.c_str(), flag, strerror(errno));
            return;
        }
        os_close(fd_);
        fd_ = -1;
    }
    fatal("cannot lock %s (%s): the lock file keeps changing", path_.c_str(), flag);
}

void PathLock::release() {
    stop_untrack(stop_slot_);
    stop_slot_ = -1;
    if (fd_ >= 0) {
        os_unlink(path_.c_str());
        os_close(fd_);
        fd_ = -1;
    }
    for (int slot : created_slots_) stop_untrack(slot);
    created_slots_.clear();
    for (size_t i = created_.size(); i-- > 0;) os_rmdir(created_[i]);  // only the ones left empty go
    created_.clear();
}

PathLock::~PathLock() { release(); }

MadeDirs::MadeDirs(const std::string& path) : cleanup_([this] { remove_empty(); }) { dir_create(path, &made_); }

MadeDirs::~MadeDirs() { remove_empty(); }

void MadeDirs::remove_empty() {
    for (size_t i = made_.size(); i-- > 0;) os_rmdir(made_[i]);  // a directory with outputs in it stays
    made_.clear();
}

bool dir_has_marker(const std::string& dir) {
    const std::string path = path_join(dir, kStagingMarker);
    FileInfo st;
    if (!os_lstat(path, &st) || st.kind != FileKind::regular) return false;
    // A prefix of the text, even none, is a marker whose writer was killed between creating and filling it
    // (mark() is not atomic). Refusing it would leave that staging directory, and the user's files in it, for
    // good; a file of the user's of this name that holds at most the start of our text loses nothing.
    const std::vector<uint8_t> head = file_head_bytes(path, sizeof(kMarkerText));
    return st.size < sizeof(kMarkerText) && head.size() == st.size &&
           memcmp(head.data(), kMarkerText, head.size()) == 0;
}

bool path_is_staged_temp(const std::string& name) {
    size_t at = name.rfind(".tmp.");
    if (at == std::string::npos || at == 0 || at + 5 == name.size()) return false;
    const size_t end = name.find_first_not_of("0123456789", at + 5);
    return end == std::string::npos || (end > at + 5 && name.compare(end, std::string::npos, kStagingMarker) == 0);
}

bool name_is_ours(const std::string& name, std::initializer_list<const char*> ours) {
    for (const char* n : ours)
        if (name == n || (path_is_staged_temp(name) && name.compare(0, strlen(n) + 5, std::string(n) + ".tmp.") == 0))
            return true;
    return false;
}

namespace {

// Empties a staging directory this process knows it made (or one holding our marker): entries ours(name)
// accepts are unlinked, any other moves back into `dir` where that name is free, and the directory goes
// once empty. What cannot move stays (a `note:` line names it): this program deletes only what it wrote.
void clear_staging(const std::string& staging, const std::string& dir,
                   const std::function<bool(const std::string&)>& ours) {
    if (path_is_symlink(staging) || !dir_exists(staging)) return;  // renamed into place whole: nothing old
    const bool marked = dir_has_marker(staging);
    std::vector<std::string> kept;
    for (const std::string& name : dir_entries(staging)) {
        const std::string path = path_join(staging, name);
        if (name == kStagingMarker && marked) continue;
        if (name != kStagingMarker && ours(name) && !path_is_symlink(path) && file_exists(path)) {
            os_unlink(path.c_str());
        } else if (dir_exists(dir) && !path_exists_no_follow(path_join(dir, name)) &&
                   os_rename(path, path_join(dir, name))) {
            continue;  // the user's file goes back where it was
        } else {
            kept.push_back(name);
        }
    }
    if (!kept.empty()) {
        fprintf(stderr, "note: kept %s: it holds %s, which gpt2 did not write\n", staging.c_str(), kept[0].c_str());
        return;
    }
    if (marked) os_unlink(path_join(staging, kStagingMarker).c_str());
    if (!os_rmdir(staging)) fatal("cannot remove directory %s: %s", staging.c_str(), strerror(errno));
}

// clear_staging for a directory this process did not just make: only one carrying our marker is ours;
// an unmarked empty one is a run killed between mkdir and the marker (removing it loses nothing).
void clear_marked_staging(const std::string& staging, const std::string& dir,
                          const std::function<bool(const std::string&)>& ours) {
    if (path_is_symlink(staging) || !dir_exists(staging)) return;
    if (dir_has_marker(staging)) clear_staging(staging, dir, ours);
    else if (dir_entries(staging).empty()) os_rmdir(staging);
}

// Puts the marker into `in` (a directory this process is publishing). A file of that name that is not
// our marker (the user's) is left as it is, and `in` stays unmarked.
void mark(const std::string& in) {
    int fd;
    const std::string path = path_join(in, kStagingMarker);
    if (!create_exclusive(path, &fd)) return;
    write_all(fd, kMarkerText, sizeof(kMarkerText) - 1, path);
    if (!os_close(fd)) fatal("cannot create %s: %s", path.c_str(), strerror(errno));
}

}  // namespace

void dir_replace_atomic(const std::string& staging, const std::string& dir) {
    dir_fsync(staging);
    const std::string parent = path_parent(dir);
    if (!dir_exists(dir)) {
        if (!os_rename(staging, dir))
            fatal("cannot rename %s to %s: %s", staging.c_str(), dir.c_str(), strerror(errno));
    } else if (!os_exchange(staging, dir)) {
        std::string old = dir + ".old." + std::to_string(os_getpid());
        if (!os_rename(dir, old))
            fatal("cannot replace %s with %s: %s", dir.c_str(), staging.c_str(), strerror(errno));
        if (!os_rename(staging, dir)) {
            int err = errno;
            os_rename(old, dir);
            fatal("cannot replace %s with %s: %s", dir.c_str(), staging.c_str(), strerror(err));
        }
        if (!os_rename(old, staging))  // hand the old contents back under the staging name
            fatal("cannot rename %s to %s: %s", old.c_str(), staging.c_str(), strerror(errno));
    }
    dir_fsync(parent);
}

bool dir_recover_interrupted(const std::string& dir, const std::function<bool(const std::string&)>& is_ours) {
    if (dir_exists(dir) || path_is_symlink(dir)) return false;
    const std::string parent = path_parent(dir);
    if (!dir_exists(parent)) return false;
    const std::string base = path_base(dir);
    for (const std::string& name : dir_entries(parent)) {
        long pid = suffix_pid(name, base + ".old.");
        std::string old = path_join(parent, name);
        if (pid <= 0 || os_pid_alive(pid) || path_is_symlink(old) || !dir_exists(old) || !dir_has_marker(old) ||
            !is_ours(old))
            continue;
        if (!os_rename(old, dir))
            fatal("cannot restore %s from %s: %s", dir.c_str(), old.c_str(), strerror(errno));
        fprintf(stderr, "note: restored %s from %s, left by a save that was killed\n", dir.c_str(), old.c_str());
        return true;
    }
    return false;
}

void dir_clear_dead_staging(const std::string& dir, const std::function<bool(const std::string&)>& ours) {
    const std::string parent = path_parent(dir);
    const std::string base = path_base(dir);
    if (!dir_exists(parent)) return;
    for (const std::string& name : dir_entries(parent)) {  // left by killed processes: staging, and the
        long pid = suffix_pid(name, base + ".saving.");    // old contents of a two-rename replacement
        if (pid <= 0 && dir_exists(dir)) pid = suffix_pid(name, base + ".old.");
        if (pid > 0 && pid != os_getpid() && !os_pid_alive(pid))
            clear_marked_staging(path_join(parent, name), dir, ours);
    }
}

void dir_publish(const std::string& dir, const std::function<bool(const std::string&)>& ours,
                 const std::function<void(const std::string& staging)>& write) {
    dir_create(path_parent(dir));
    dir_clear_dead_staging(dir, ours);
    const std::string staging = dir + ".saving." + std::to_string(os_getpid());
    clear_marked_staging(staging, dir, ours);
    if (dir_exists(staging) && dir_has_marker(staging)) {
        // an earlier save of this run kept something it could not move back: set it aside, unmarked
        const std::string kept =
            dir + ".kept." + std::to_string(os_getpid()) + "." + std::to_string((long)time_now_s());
        os_unlink(path_join(staging, kStagingMarker).c_str());
        if (!os_rename(staging, kept))
            fatal("cannot set aside %s: %s", staging.c_str(), strerror(errno));
        fprintf(stderr, "note: moved %s to %s\n", staging.c_str(), kept.c_str());
    }
    if (path_exists_no_follow(staging))
        fatal("cannot stage %s: %s exists and gpt2 did not make it", dir.c_str(), staging.c_str());
    Publishing publishing{dir};  // the old copy's size: what a second copy needs, about
    for (const std::string& name : dir_exists(dir) ? dir_entries(dir) : std::vector<std::string>()) {
        FileInfo st;
        if (ours(name) && os_lstat(path_join(dir, name), &st) && st.kind == FileKind::regular)
            publishing.old_bytes += st.size;
    }
    g_publishing = &publishing;  // from here a full disk (no byte or no inode left) says why a save needs room
    if (!os_mkdir(staging)) {
        if (errno == ENOSPC) write_failed(staging, ENOSPC);
        fatal("cannot create directory %s: %s", staging.c_str(), strerror(errno));
    }
    FatalCleanup cleanup([&] { clear_staging(staging, dir, ours); });  // made by this process: marked or not
    // The marker names a directory as this program's staging, so only such directories are ever cleared by
    // a later run. It goes into `dir` too before the swap, so the old contents carry it out.
    mark(staging);
    write(staging);
    g_publishing = nullptr;
    stop_point();  // signals.h: a command ended by a signal here leaves `dir` as it was
    const bool dir_marked = dir_exists(dir) && !path_exists_no_follow(path_join(dir, kStagingMarker));
    if (dir_marked) mark(dir);
    dir_replace_atomic(staging, dir);
    os_unlink(path_join(dir, kStagingMarker).c_str());  // the new contents' marker: made by mark(staging)
    clear_staging(staging, dir, ours);  // the old checkpoint goes; files gpt2 did not write move back
}
