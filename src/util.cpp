// util.cpp: see util.h.
#include "util.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

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
    exit(1);
}

void fatal_hint(const std::string& hint, const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vprint_error(fmt, ap);
    va_end(ap);
    fprintf(stderr, "hint: %s\n", hint.c_str());
    exit(1);
}

std::vector<uint8_t> file_read(const std::string& path) {
    FILE* f = fopen(path.c_str(), "rb");
    if (!f) fatal("cannot open %s: %s", path.c_str(), strerror(errno));
    std::vector<uint8_t> buf;
    uint8_t chunk[1 << 16];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) buf.insert(buf.end(), chunk, chunk + n);
    bool failed = ferror(f);
    fclose(f);
    if (failed) fatal("cannot read %s: %s", path.c_str(), strerror(errno));
    return buf;
}

bool file_exists(const std::string& path) {
    struct stat st;
    return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool dir_exists(const std::string& path) {
    struct stat st;
    return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

void dir_create(const std::string& path) {
    if (path.empty() || dir_exists(path)) return;
    size_t slash = path.find_last_of('/');
    if (slash != std::string::npos && slash > 0) dir_create(path.substr(0, slash));
    if (mkdir(path.c_str(), 0755) != 0 && errno != EEXIST)
        fatal("cannot create directory %s: %s", path.c_str(), strerror(errno));
}

void file_write_atomic(const std::string& path, const std::vector<std::pair<const void*, size_t>>& parts) {
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
                int err = errno;
                close(fd);
                unlink(tmp.c_str());
                fatal("cannot write %s: %s", tmp.c_str(), strerror(err));
            }
            p += w;
            left -= (size_t)w;
        }
    }
    if (fsync(fd) != 0 || close(fd) != 0) {
        unlink(tmp.c_str());
        fatal("cannot flush %s: %s", tmp.c_str(), strerror(errno));
    }
    if (rename(tmp.c_str(), path.c_str()) != 0) {
        int err = errno;
        unlink(tmp.c_str());
        fatal("cannot rename %s to %s: %s", tmp.c_str(), path.c_str(), strerror(err));
    }
}

void file_write_atomic(const std::string& path, const void* data, size_t n) {
    file_write_atomic(path, {{data, n}});
}

void dir_fsync(const std::string& dir) {
    int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY);
    if (fd < 0) fatal("cannot open directory %s: %s", dir.c_str(), strerror(errno));
    fsync(fd);
    close(fd);
}

void dir_remove_flat(const std::string& dir) {
    DIR* d = opendir(dir.c_str());
    if (!d) return;
    while (struct dirent* e = readdir(d)) {
        std::string name = e->d_name;
        if (name != "." && name != "..") unlink(path_join(dir, name).c_str());
    }
    closedir(d);
    if (rmdir(dir.c_str()) != 0) fatal("cannot remove directory %s: %s", dir.c_str(), strerror(errno));
}

void dir_replace_atomic(const std::string& staging, const std::string& dir) {
    dir_fsync(staging);
    std::string parent = dir.find('/') == std::string::npos ? "." : dir.substr(0, dir.find_last_of('/'));
    if (parent.empty()) parent = "/";
    if (!dir_exists(dir)) {
        if (rename(staging.c_str(), dir.c_str()) != 0)
            fatal("cannot rename %s to %s: %s", staging.c_str(), dir.c_str(), strerror(errno));
    } else if (renameat2(AT_FDCWD, staging.c_str(), AT_FDCWD, dir.c_str(), RENAME_EXCHANGE) == 0) {
        dir_remove_flat(staging);  // now holds the previous contents
    } else {
        std::string old = dir + ".old." + std::to_string(getpid());
        if (rename(dir.c_str(), old.c_str()) != 0 || rename(staging.c_str(), dir.c_str()) != 0)
            fatal("cannot replace %s with %s: %s", dir.c_str(), staging.c_str(), strerror(errno));
        dir_remove_flat(old);
    }
    dir_fsync(parent);
}

std::string path_join(const std::string& a, const std::string& b) {
    if (a.empty()) return b;
    if (a.back() == '/') return a + b;
    return a + "/" + b;
}

double time_now_s() {
    using namespace std::chrono;
    return duration<double>(steady_clock::now().time_since_epoch()).count();
}
