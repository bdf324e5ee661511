// util.cpp: see util.h.
#include "base/util.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

static std::vector<std::function<void()>*>& fatal_cleanups() {
    static std::vector<std::function<void()>*> fns;
    return fns;
}

FatalCleanup::FatalCleanup(std::function<void()> fn) : fn_(std::move(fn)) { fatal_cleanups().push_back(&fn_); }

FatalCleanup::~FatalCleanup() {
    auto& fns = fatal_cleanups();
    fns.erase(std::remove(fns.begin(), fns.end(), &fn_), fns.end());
}

// Runs the open cleanups newest first; each is taken off the list before it runs, so a fatal() inside
// one cannot run it again.
static void run_fatal_cleanups() {
    auto& fns = fatal_cleanups();
    while (!fns.empty()) {
        std::function<void()>* fn = fns.back();
        fns.pop_back();
        (*fn)();
    }
}

static void vprint_error(const char* fmt, va_list ap) {
    fflush(stdout);
    fputs("error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

void fatal(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vprint_error(fmt, ap);
    va_end(ap);
    run_fatal_cleanups();
    exit(1);
}

void fatal_hint(const std::string& hint, const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vprint_error(fmt, ap);
    va_end(ap);
    fprintf(stderr, "hint: %s\n", hint.c_str());
    run_fatal_cleanups();
    exit(1);
}

std::vector<uint8_t> file_read(const std::string& path) {
    int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK);  // non-blocking: opening a FIFO must not hang
    if (fd < 0) fatal("cannot open %s: %s", path.c_str(), strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        fatal("not a regular file (%s): expected a file whose size is known before reading", path.c_str());
    }
    const size_t size = (size_t)st.st_size;
    memory_check((double)size, "reading " + path, "");
    std::vector<uint8_t> buf(size);
    size_t got = 0;
    while (got < size) {
        ssize_t n = read(fd, buf.data() + got, size - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            int err = errno;
            close(fd);
            fatal("cannot read %s: %s", path.c_str(), n == 0 ? "the file shrank while being read" : strerror(err));
        }
        got += (size_t)n;
    }
    close(fd);
    return buf;
}

std::string text_read(const std::string& path, size_t max_bytes) {
    FILE* f = path == "-" ? stdin : fopen(path.c_str(), "rb");
    const char* name = path == "-" ? "stdin" : path.c_str();
    if (!f) fatal("cannot open %s: %s", name, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) fatal("is a directory (%s): expected a text file", name);
    std::string text;
    char chunk[1 << 16];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        if (text.size() + n > max_bytes) fatal("input too large (%s): expected at most %zu bytes", name, max_bytes);
        text.append(chunk, n);
    }
    bool failed = ferror(f);
    if (f != stdin) fclose(f);
    if (failed) fatal("cannot read %s: %s", name, strerror(errno));
    return text;
}

size_t memory_available() {
    FILE* f = fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[256];
    size_t kb = 0;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "MemAvailable: %zu kB", &kb) == 1) break;
    fclose(f);
    return kb * 1024;
}

void memory_check(double bytes, const std::string& what, const std::string& hint) {
    const double mib = 1024.0 * 1024.0;
    const size_t avail = memory_available();
    if (avail == 0 || bytes <= (double)avail) return;
    const char* fmt = "not enough memory (%s): expected %.0f MiB, the machine has %.0f MiB available";
    if (hint.empty()) fatal(fmt, what.c_str(), bytes / mib, avail / mib);
    fatal_hint(hint, fmt, what.c_str(), bytes / mib, avail / mib);
}

bool file_exists(const std::string& path) {
    struct stat st;
    return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool dir_exists(const std::string& path) {
    struct stat st;
    return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

void dir_create(const std::string& path, std::vector<std::string>* created) {
    if (path.empty() || dir_exists(path)) return;
    size_t slash = path.find_last_of('/');
    if (slash != std::string::npos && slash > 0) dir_create(path.substr(0, slash), created);
    if (mkdir(path.c_str(), 0755) == 0) {
        if (created) created->push_back(path);
    } else if (errno != EEXIST) {
        fatal("cannot create directory %s: %s", path.c_str(), strerror(errno));
    }
}

std::string file_write_staged(const std::string& path, const std::vector<std::pair<const void*, size_t>>& parts) {
    std::string tmp = path + ".tmp." + std::to_string(getpid());
    int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) fatal("cannot create %s: %s", tmp.c_str(), strerror(errno));
    for (const auto& part : parts) {
        const char* p = static_cast<const char*>(part.first);
        size_t left = part.second;
        while (left > 0) {
            ssize_t w = write(fd, p, left);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) {
                int err = w == 0 ? ENOSPC : errno;
                close(fd);
                unlink(tmp.c_str());
                fatal("cannot write %s: %s", tmp.c_str(), strerror(err));
            }
            p += w;
            left -= (size_t)w;
        }
    }
    if (fsync(fd) != 0 || close(fd) != 0) {
        int err = errno;
        unlink(tmp.c_str());
        fatal("cannot flush %s: %s", tmp.c_str(), strerror(err));
    }
    return tmp;
}

void file_publish(const std::string& staged, const std::string& path) {
    if (rename(staged.c_str(), path.c_str()) != 0) {
        int err = errno;
        unlink(staged.c_str());
        fatal("cannot rename %s to %s: %s", staged.c_str(), path.c_str(), strerror(err));
    }
}

void file_write_atomic(const std::string& path, const std::vector<std::pair<const void*, size_t>>& parts) {
    file_publish(file_write_staged(path, parts), path);
}

void file_write_atomic(const std::string& path, const void* data, size_t n) { file_write_atomic(path, {{data, n}}); }

void dir_fsync(const std::string& dir) {
    int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY);
    if (fd < 0) fatal("cannot open directory %s: %s", dir.c_str(), strerror(errno));
    fsync(fd);
    close(fd);
}

std::vector<std::string> dir_entries(const std::string& dir) {
    DIR* d = opendir(dir.c_str());
    if (!d) fatal("cannot read directory %s: %s", dir.c_str(), strerror(errno));
    std::vector<std::string> names;
    while (struct dirent* e = readdir(d)) {
        std::string name = e->d_name;
        if (name != "." && name != "..") names.push_back(name);
    }
    closedir(d);
    std::sort(names.begin(), names.end());
    return names;
}

bool path_is_symlink(const std::string& path) {
    struct stat st;
    return lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

bool name_is_ours(const std::string& name, std::initializer_list<const char*> ours) {
    if (name == kStagingMarker) return true;
    for (const char* n : ours)
        if (name == n || (path_is_staged_temp(name) && name.compare(0, strlen(n) + 5, std::string(n) + ".tmp.") == 0))
            return true;
    return false;
}

std::vector<uint8_t> file_head_bytes(const std::string& path, size_t n) {
    std::vector<uint8_t> head;
    if (!file_exists(path)) return head;
    FILE* f = fopen(path.c_str(), "rb");
    if (!f) return head;
    head.resize(n);
    head.resize(fread(head.data(), 1, n, f));
    fclose(f);
    return head;
}

bool path_is_staged_temp(const std::string& name) {
    size_t at = name.rfind(".tmp.");
    if (at == std::string::npos || at == 0 || at + 5 == name.size()) return false;
    return name.find_first_not_of("0123456789", at + 5) == std::string::npos;
}

bool path_exists_no_follow(const std::string& path) {
    struct stat st;
    return lstat(path.c_str(), &st) == 0;
}

void dir_clear_staging(const std::string& staging, const std::string& dir,
                       const std::function<bool(const std::string&)>& ours) {
    if (path_is_symlink(staging) || !dir_exists(staging)) return;
    if (!file_exists(path_join(staging, kStagingMarker))) {
        // A run killed between mkdir and writing the marker leaves an empty directory; removing an empty
        // directory loses nothing, anything else unmarked is not ours.
        if (dir_entries(staging).empty()) rmdir(staging.c_str());
        return;
    }
    std::vector<std::string> kept;
    for (const std::string& name : dir_entries(staging)) {
        const std::string path = path_join(staging, name);
        if (name == kStagingMarker) continue;
        if (ours(name) && !path_is_symlink(path) && file_exists(path)) {
            unlink(path.c_str());
        } else if (dir_exists(dir) && !path_exists_no_follow(path_join(dir, name)) &&
                   rename(path.c_str(), path_join(dir, name).c_str()) == 0) {
            continue;  // the user's file goes back where it was
        } else {
            kept.push_back(name);
        }
    }
    if (!kept.empty()) {
        fprintf(stderr, "note: kept %s: it holds %s, which gpt2 did not write\n", staging.c_str(), kept[0].c_str());
        return;
    }
    unlink(path_join(staging, kStagingMarker).c_str());
    if (rmdir(staging.c_str()) != 0) fatal("cannot remove directory %s: %s", staging.c_str(), strerror(errno));
}

// The pid in `<dir><tag><pid>` when `name` has that form, else 0.
static long suffix_pid(const std::string& name, const std::string& prefix) {
    if (name.compare(0, prefix.size(), prefix) != 0 || name.size() == prefix.size()) return 0;
    if (name.find_first_not_of("0123456789", prefix.size()) != std::string::npos) return 0;
    return atol(name.c_str() + prefix.size());
}

static bool pid_alive(long pid) { return pid > 0 && (kill((pid_t)pid, 0) == 0 || errno != ESRCH); }

void dir_replace_atomic(const std::string& staging, const std::string& dir) {
    dir_fsync(staging);
    const std::string parent = path_parent(dir);
    if (!dir_exists(dir)) {
        if (rename(staging.c_str(), dir.c_str()) != 0)
            fatal("cannot rename %s to %s: %s", staging.c_str(), dir.c_str(), strerror(errno));
    } else if (renameat2(AT_FDCWD, staging.c_str(), AT_FDCWD, dir.c_str(), RENAME_EXCHANGE) != 0) {
        std::string old = dir + ".old." + std::to_string(getpid());
        if (rename(dir.c_str(), old.c_str()) != 0)
            fatal("cannot replace %s with %s: %s", dir.c_str(), staging.c_str(), strerror(errno));
        if (rename(staging.c_str(), dir.c_str()) != 0) {
            int err = errno;
            rename(old.c_str(), dir.c_str());
            fatal("cannot replace %s with %s: %s", dir.c_str(), staging.c_str(), strerror(err));
        }
        if (rename(old.c_str(), staging.c_str()) != 0)  // hand the old contents back under the staging name
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
        if (pid <= 0 || pid_alive(pid) || path_is_symlink(old) || !dir_exists(old) ||
            !file_exists(path_join(old, kStagingMarker)) || !is_ours(old))
            continue;
        if (rename(old.c_str(), dir.c_str()) != 0)
            fatal("cannot restore %s from %s: %s", dir.c_str(), old.c_str(), strerror(errno));
        fprintf(stderr, "note: restored %s from %s, left by a save that was killed\n", dir.c_str(), old.c_str());
        return true;
    }
    return false;
}

PathLock::PathLock(const std::string& target, const char* flag)
    : path_(target + ".lock"), cleanup_([this] { release(); }) {
    dir_create(path_parent(target), &created_);
    struct stat st;
    if (lstat(path_.c_str(), &st) == 0) {  // a lock file left by a killed run holds a pid, or nothing
        char text[32] = {0};
        int fd = S_ISREG(st.st_mode) ? open(path_.c_str(), O_RDONLY | O_NOFOLLOW) : -1;
        ssize_t n = fd >= 0 ? read(fd, text, sizeof(text) - 1) : -1;
        if (fd >= 0) close(fd);
        // empty (a lock being created) or one pid line, as PathLock writes it
        bool pid_file =
            n == 0 || (n > 1 && n < 16 && text[n - 1] == '\n' && strspn(text, "0123456789") == (size_t)n - 1);
        if (!pid_file)
            fatal_hint("move it away or choose another output",
                       "cannot lock %s (%s): %s exists and is not a gpt2 lock file", target.c_str(), flag,
                       path_.c_str());
    }
    for (int attempt = 0; attempt < 100; attempt++) {
        fd_ = open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd_ < 0) fatal("cannot create lock file %s (%s): %s", path_.c_str(), flag, strerror(errno));
        if (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
            char holder[32] = {0};
            ssize_t n = pread(fd_, holder, sizeof(holder) - 1, 0);
            holder[n > 0 ? n : 0] = 0;
            holder[strcspn(holder, "\n")] = 0;
            close(fd_);
            fd_ = -1;
            fatal("output in use (%s %s): another gpt2 process (pid %s) is writing it", flag, target.c_str(),
                  holder[0] ? holder : "unknown");
        }
        // The holder before us unlinks the file as it lets go; a lock taken on an unlinked file guards nothing.
        struct stat held, now;
        if (fstat(fd_, &held) == 0 && stat(path_.c_str(), &now) == 0 && held.st_ino == now.st_ino &&
            held.st_dev == now.st_dev) {
            std::string pid = std::to_string(getpid()) + "\n";
            if (ftruncate(fd_, 0) != 0 || pwrite(fd_, pid.data(), pid.size(), 0) != (ssize_t)pid.size())
                fatal("cannot write lock file %s (%s): %s", path_.c_str(), flag, strerror(errno));
            return;
        }
        close(fd_);
        fd_ = -1;
    }
    fatal("cannot lock %s (%s): the lock file keeps changing", path_.c_str(), flag);
}

void PathLock::release() {
    if (fd_ >= 0) {
        unlink(path_.c_str());
        close(fd_);
        fd_ = -1;
    }
    for (size_t i = created_.size(); i-- > 0;) rmdir(created_[i].c_str());  // only the ones left empty go
    created_.clear();
}

PathLock::~PathLock() { release(); }

void dir_clear_dead_staging(const std::string& dir, const std::function<bool(const std::string&)>& ours) {
    const std::string parent = path_parent(dir);
    const std::string base = path_base(dir);
    if (!dir_exists(parent)) return;
    for (const std::string& name : dir_entries(parent)) {  // left by killed processes: staging, and the
        long pid = suffix_pid(name, base + ".saving.");    // old contents of a two-rename replacement
        if (pid <= 0 && dir_exists(dir)) pid = suffix_pid(name, base + ".old.");
        if (pid > 0 && pid != getpid() && !pid_alive(pid)) dir_clear_staging(path_join(parent, name), dir, ours);
    }
}

void dir_publish(const std::string& dir, const std::function<bool(const std::string&)>& ours,
                 const std::function<void(const std::string& staging)>& write) {
    dir_create(path_parent(dir));
    dir_clear_dead_staging(dir, ours);
    const std::string staging = dir + ".saving." + std::to_string(getpid());
    dir_clear_staging(staging, dir, ours);
    if (dir_exists(staging) && file_exists(path_join(staging, kStagingMarker))) {
        // an earlier save of this run kept something it could not move back: set it aside, unmarked
        const std::string kept = dir + ".kept." + std::to_string(getpid()) + "." + std::to_string((long)time_now_s());
        unlink(path_join(staging, kStagingMarker).c_str());
        if (rename(staging.c_str(), kept.c_str()) != 0)
            fatal("cannot set aside %s: %s", staging.c_str(), strerror(errno));
        fprintf(stderr, "note: moved %s to %s\n", staging.c_str(), kept.c_str());
    }
    if (path_exists_no_follow(staging))
        fatal("cannot stage %s: %s exists and gpt2 did not make it", dir.c_str(), staging.c_str());
    if (mkdir(staging.c_str(), 0755) != 0) fatal("cannot create directory %s: %s", staging.c_str(), strerror(errno));
    // The marker names a directory as this program's staging, so only such directories are ever cleared. It
    // goes into `dir` too before the swap, so the old contents carry it out.
    const auto mark = [](const std::string& in) {  // an empty file: nothing to write half, so no temporary
        int fd = open(path_join(in, kStagingMarker).c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW, 0644);
        if (fd < 0 || close(fd) != 0) fatal("cannot create %s in %s: %s", kStagingMarker, in.c_str(), strerror(errno));
    };
    mark(staging);
    FatalCleanup cleanup([&] { dir_clear_staging(staging, dir, ours); });
    write(staging);
    if (dir_exists(dir)) mark(dir);
    dir_replace_atomic(staging, dir);
    unlink(path_join(dir, kStagingMarker).c_str());
    dir_clear_staging(staging, dir, ours);  // the old checkpoint goes; files gpt2 did not write move back
}

std::string path_join(const std::string& a, const std::string& b) {
    if (a.empty()) return b;
    if (a.back() == '/') return a + b;
    return a + "/" + b;
}

std::string path_strip_slashes(const std::string& path) {
    size_t end = path.find_last_not_of('/');
    if (end == std::string::npos) return path.empty() ? path : "/";
    return path.substr(0, end + 1);
}

std::string path_base(const std::string& path) {
    std::string p = path_strip_slashes(path);
    size_t slash = p.find_last_of('/');
    return slash == std::string::npos || p == "/" ? p : p.substr(slash + 1);
}

std::string path_parent(const std::string& path) {
    std::string p = path_strip_slashes(path);
    size_t slash = p.find_last_of('/');
    if (slash == std::string::npos) return ".";
    return slash == 0 ? "/" : p.substr(0, slash);
}

double time_now_s() {
    using namespace std::chrono;
    return duration<double>(steady_clock::now().time_since_epoch()).count();
}

std::string format_duration(double s) {
    char buf[32];
    int t = (int)(s + 0.5);
    if (t >= 3600) snprintf(buf, sizeof(buf), "%dh%02dm", t / 3600, t / 60 % 60);
    else snprintf(buf, sizeof(buf), "%dm%02ds", t / 60, t % 60);
    return buf;
}
