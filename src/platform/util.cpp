// util.cpp: see util.h.
#include "platform/util.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "platform/platform.h"
#include "platform/output_files.h"
#include "platform/signals.h"

std::vector<uint8_t> file_read(const std::string& path, size_t max_bytes) {
    int fd = os_open_read(path);  // non-blocking: opening a FIFO must not hang
    if (fd < 0) fatal("cannot open %s: %s", path.c_str(), strerror(errno));
    FileInfo st;
    if (!os_fstat(fd, &st) || st.kind != FileKind::regular) {
        os_close(fd);
        fatal("not a regular file (%s): expected a file whose size is known before reading", path.c_str());
    }
    const size_t size = (size_t)st.size;
    if (size > max_bytes) {
        os_close(fd);
        fatal("file too large (%s): %zu bytes, expected at most %zu for a file of its kind", path.c_str(), size,
              max_bytes);
    }
    memory_check((double)size, "reading " + path, "");
    std::vector<uint8_t> buf(size);
    size_t got = 0;
    while (got < size) {
        long n = os_read(fd, buf.data() + got, size - got);
        if (n <= 0) {
            int err = errno;
            os_close(fd);
            fatal("cannot read %s: %s", path.c_str(), n == 0 ? "the file shrank while being read" : strerror(err));
        }
        got += (size_t)n;
    }
    input_note_fd(fd);
    os_close(fd);
    return buf;
}

// A pipe, a FIFO, a terminal or a device may keep its open or a read waiting for ever: a stop signal ends those at
// once (signals.h's StopWhileBlocked); a regular file's never wait.
std::string text_read(const std::string& path, size_t max_bytes, const char* hint) {
    FileInfo st;
    FILE* f = stdin;
    if (path != "-") {
        StopWhileBlocked blocked(!os_stat(path, &st) || st.kind != FileKind::regular);  // a FIFO waits for a writer
        f = os_fopen_read(path);
    }
    const char* name = path == "-" ? "stdin" : path.c_str();
    if (!f) fatal("cannot open %s: %s", name, strerror(errno));
    if (os_fstat(fileno(f), &st) && st.kind == FileKind::directory)
        fatal("is a directory (%s): expected a text file", name);
    input_note_fd(fileno(f));
    std::string text;
    if (st.kind == FileKind::regular && st.size <= max_bytes) text.reserve(st.size);  // not twice it, as doubling
    const bool waits = st.kind != FileKind::regular;
    char chunk[1 << 16];
    for (;;) {
        size_t n;
        {
            StopWhileBlocked blocked(waits);
            n = fread(chunk, 1, sizeof(chunk), f);
        }
        if (n == 0) break;
        if (text.size() + n > max_bytes) {
            const char* fmt = "input too large (%s): expected at most %zu bytes, got more";
            if (hint) fatal_hint(hint, fmt, name, max_bytes);
            fatal(fmt, name, max_bytes);
        }
        text.append(chunk, n);
    }
    bool failed = ferror(f);
    if (f != stdin) fclose(f);
    if (failed) fatal("cannot read %s: %s", name, strerror(errno));
    return text;
}

size_t memory_available() { return os_memory_available(); }

void memory_check(double bytes, const std::string& what, const std::string& hint) {
    const double mib = 1024.0 * 1024.0;
    const size_t avail = memory_available();
    if (avail == 0 || bytes <= (double)avail) return;
    const char* fmt = "not enough memory (%s): expected %.0f MiB, the machine has %.0f MiB available";
    if (hint.empty()) fatal(fmt, what.c_str(), bytes / mib, avail / mib);
    fatal_hint(hint, fmt, what.c_str(), bytes / mib, avail / mib);
}

bool path_exists(const std::string& path) {
    FileInfo st;
    return os_stat(path, &st);
}

bool file_exists(const std::string& path) {
    FileInfo st;
    return os_stat(path, &st) && st.kind == FileKind::regular;
}

bool dir_exists(const std::string& path) {
    FileInfo st;
    return os_stat(path, &st) && st.kind == FileKind::directory;
}

void dir_create(const std::string& path, std::vector<std::string>* created) {
    if (path.empty() || dir_exists(path)) return;
    size_t slash = path.find_last_of('/');
    if (slash != std::string::npos && slash > 0) dir_create(path.substr(0, slash), created);
    if (os_mkdir(path)) {
        if (created) created->push_back(path);
    } else if (errno != EEXIST) {
        fatal("cannot create directory %s: %s", path.c_str(), strerror(errno));
    }
}

void dir_fsync(const std::string& dir) {
    if (!dir_exists(dir)) fatal("cannot open directory %s: %s", dir.c_str(), strerror(ENOENT));
    os_dir_fsync(dir);
}

std::vector<std::string> dir_entries(const std::string& dir) {
    std::vector<std::string> names;
    if (!os_dir_list(dir, &names)) fatal("cannot read directory %s: %s", dir.c_str(), strerror(errno));
    std::sort(names.begin(), names.end());
    return names;
}

bool path_is_symlink(const std::string& path) {
    FileInfo st;
    return os_lstat(path, &st) && st.kind == FileKind::symlink;
}

std::vector<uint8_t> file_head_bytes(const std::string& path, size_t n) {
    std::vector<uint8_t> head;
    if (!file_exists(path)) return head;
    FILE* f = os_fopen_read_file(path);  // a FIFO gives no bytes here, not a wait for a writer
    if (!f) return head;
    head.resize(n);
    head.resize(fread(head.data(), 1, n, f));
    fclose(f);
    return head;
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

std::string path_absolute(const std::string& path) {
    std::string full;
    return os_full_path(path, &full) ? full : path;
}

std::string path_resolved(const std::string& path) {
    std::string done;
    if (path.empty() || !os_full_path(path[0] == '/' ? "/" : ".", &done)) return path;
    for (size_t start = 0; start <= path.size();) {
        size_t slash = path.find('/', start);
        if (slash == std::string::npos) slash = path.size();
        const std::string name = path.substr(start, slash - start);
        start = slash + 1;
        if (name.empty() || name == ".") continue;
        if (name == "..") {  // `done` holds no link: its last name goes
            done = path_parent(done);
            continue;
        }
        std::string full;
        const std::string next = path_join(done, name);
        done = os_full_path(next, &full) ? full : next;  // missing: a directory a writer makes
    }
    return done;
}

bool path_same_place(const std::string& a, const std::string& b) {
    const std::string ra = path_resolved(a), rb = path_resolved(b);
    FileInfo x, y;
    return ra == rb || (os_stat(ra, &x) && os_stat(rb, &y) && same_file(x, y));
}

namespace {
std::string program = "gpt2";
}

const std::string& program_name() { return program; }

std::string shell_word(const std::string& s) {
    if (!s.empty() && s.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./:@%+=,-") ==
                          std::string::npos)
        return s;
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}
void program_set_name(const std::string& name) {
    if (!name.empty()) program = name;
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

void buffer_prefault_huge(const void* data, size_t bytes) {
    const uintptr_t huge = (uintptr_t)2 << 20;
    const uintptr_t begin = ((uintptr_t)data + huge - 1) & ~(huge - 1);
    const uintptr_t end = ((uintptr_t)data + bytes) & ~(huge - 1);
    if (end > begin) os_prefault_huge((void*)begin, end - begin);  // else the zeroing after it faults them in
}

void print_text(const std::string& text) { fwrite(text.data(), 1, text.size(), stdout); }
