// token_writer.cpp: see token_writer.h.
#include "io/token_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cassert>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstring>

#include "io/tokenfile.h"

namespace {

// Staged temporaries the signal handler removes: fixed storage, because a handler may not allocate.
const int kSignalSlots = 8;
char g_signal_paths[kSignalSlots][PATH_MAX];
volatile sig_atomic_t g_signal_used[kSignalSlots];
struct sigaction g_old_actions[3];
const int kSignals[3] = {SIGINT, SIGTERM, SIGHUP};

void on_signal(int sig) {
    for (int i = 0; i < kSignalSlots; i++)
        if (g_signal_used[i]) unlink(g_signal_paths[i]);
    signal(sig, SIG_DFL);
    raise(sig);
}

void signal_track(const std::string& path) {
    if (path.size() >= PATH_MAX) return;
    for (int i = 0; i < kSignalSlots; i++)
        if (!g_signal_used[i]) {
            memcpy(g_signal_paths[i], path.c_str(), path.size() + 1);
            g_signal_used[i] = 1;
            return;
        }
}

void signal_untrack(const std::string& path) {
    for (int i = 0; i < kSignalSlots; i++)
        if (g_signal_used[i] && path == g_signal_paths[i]) g_signal_used[i] = 0;
}

void write_all(int fd, const void* data, size_t n, const std::string& path) {
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) fatal("cannot write %s: %s", path.c_str(), strerror(w == 0 ? ENOSPC : errno));
        p += w;
        n -= (size_t)w;
    }
}

const size_t kBufferTokens = 1 << 19;

}  // namespace

TokenFileWriter::TokenFileWriter(std::function<std::string(int)> path_of, std::function<int64_t(int)> capacity,
                                 std::string flag, bool publish_at_end)
    : path_of_(std::move(path_of)),
      capacity_(std::move(capacity)),
      flag_(std::move(flag)),
      publish_at_end_(publish_at_end),
      cleanup_([this] {
          if (fd_ >= 0) close(fd_);
          fd_ = -1;
          if (!staged_path_.empty()) unlink(staged_path_.c_str());
          for (const auto& s : staged_) unlink(s.first.c_str());
          staged_.clear();
          staged_path_.clear();
      }) {
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 3; i++) sigaction(kSignals[i], &sa, &g_old_actions[i]);
    buf_.reserve(kBufferTokens);
}

TokenFileWriter::~TokenFileWriter() {
    if (fd_ >= 0) close(fd_);
    if (!staged_path_.empty()) unlink(staged_path_.c_str());
    for (const auto& s : staged_) unlink(s.first.c_str());
    for (int i = 0; i < kSignalSlots; i++) g_signal_used[i] = 0;
    for (int i = 0; i < 3; i++) sigaction(kSignals[i], &g_old_actions[i], nullptr);
}

void TokenFileWriter::check_replaceable(int k) const {
    std::string path = path_of_(k);
    if (access(path.c_str(), F_OK) == 0 && !tokenfile_is_token_file(path))
        fatal_hint("choose another -o PREFIX; gpt2 replaces only token files",
                   "bad value for %s: %s exists and is not a token file", flag_.c_str(), path.c_str());
}

void TokenFileWriter::open_file() {
    index_++;
    const int64_t cap = capacity_(index_);
    assert(cap >= 0 && cap <= INT32_MAX);
    path_ = path_of_(index_);
    check_replaceable(index_);
    staged_path_ = path_ + ".tmp." + std::to_string(getpid());
    fd_ = open(staged_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd_ < 0) {
        std::string tmp = staged_path_;
        staged_path_.clear();
        fatal("cannot create %s: %s", tmp.c_str(), strerror(errno));
    }
    signal_track(staged_path_);
    count_ = 0;
    int32_t header[kTokenFileHeaderInts] = {0};  // the count goes in when the file is closed
    write_all(fd_, header, sizeof(header), staged_path_);
}

void TokenFileWriter::flush() {
    if (!buf_.empty()) write_all(fd_, buf_.data(), buf_.size() * sizeof(uint16_t), staged_path_);
    buf_.clear();
}

void TokenFileWriter::close_file() {
    flush();
    int32_t header[3] = {kTokenFileMagic, kTokenFileVersion, (int32_t)count_};
    if (pwrite(fd_, header, sizeof(header), 0) != (ssize_t)sizeof(header))
        fatal("cannot write %s: %s", staged_path_.c_str(), strerror(errno));
    if (fsync(fd_) != 0 || close(fd_) != 0) {
        fd_ = -1;
        fatal("cannot flush %s: %s", staged_path_.c_str(), strerror(errno));
    }
    fd_ = -1;
    staged_.push_back({staged_path_, path_});
    staged_path_.clear();
}

void TokenFileWriter::publish_staged() {
    for (const auto& s : staged_) {
        if (access(s.second.c_str(), F_OK) == 0 && !tokenfile_is_token_file(s.second))
            fatal_hint("choose another -o PREFIX; gpt2 replaces only token files",
                       "bad value for %s: %s exists and is not a token file", flag_.c_str(), s.second.c_str());
        file_publish(s.first, s.second);
        signal_untrack(s.first);
    }
    staged_.clear();
}

void TokenFileWriter::append(const int* ids, size_t n) {
    while (n > 0) {
        if (index_ < 0 || count_ == capacity_(index_)) {
            if (index_ >= 0) {
                close_file();
                if (!publish_at_end_) publish_staged();
            }
            open_file();
            continue;
        }
        size_t k = (size_t)std::min<int64_t>((int64_t)n, capacity_(index_) - count_);
        for (size_t i = 0; i < k; i++) {
            if (ids[i] < 0 || ids[i] > 65535) fatal("token %d does not fit uint16 (%s)", ids[i], path_.c_str());
            buf_.push_back((uint16_t)ids[i]);
            if (buf_.size() == kBufferTokens) flush();
        }
        count_ += (int64_t)k;
        total_ += (int64_t)k;
        ids += k;
        n -= k;
    }
}

int TokenFileWriter::finish() {
    if (index_ < 0) open_file();
    close_file();
    publish_staged();
    return index_ + 1;
}
