// platform_posix.cpp: platform.h on POSIX systems (Linux first: /proc/stat, /proc/meminfo, renameat2 and
// madvise's huge pages are used where they exist), its TCP sockets over IPv4 with poll(2). The whole file is
// skipped on Windows.
#ifndef _WIN32
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <cerrno>
#include <climits>
#include <csetjmp>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <glob.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>

#include "platform/platform.h"

void os_init() {}

// ---- files by name

static void fill(const struct stat& st, FileInfo* info) {
    info->kind = S_ISREG(st.st_mode)   ? FileKind::regular
                 : S_ISDIR(st.st_mode) ? FileKind::directory
                 : S_ISLNK(st.st_mode) ? FileKind::symlink
                                       : FileKind::other;
    info->size = (uint64_t)st.st_size;
    info->dev = (uint64_t)st.st_dev, info->ino = (uint64_t)st.st_ino;
    info->mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
}

bool os_stat(const std::string& path, FileInfo* info) {
    struct stat st;
    *info = FileInfo();
    if (stat(path.c_str(), &st) != 0) return false;
    fill(st, info);
    return true;
}

bool os_lstat(const std::string& path, FileInfo* info) {
    struct stat st;
    *info = FileInfo();
    if (lstat(path.c_str(), &st) != 0) return false;
    fill(st, info);
    return true;
}

bool os_fstat(int fd, FileInfo* info) {
    struct stat st;
    *info = FileInfo();
    if (fstat(fd, &st) != 0) return false;
    fill(st, info);
    return true;
}

bool same_file(const FileInfo& a, const FileInfo& b) { return a.dev == b.dev && a.ino == b.ino; }
bool os_unlink(const char* path) { return unlink(path) == 0; }
bool os_mkdir(const std::string& path) { return mkdir(path.c_str(), 0755) == 0; }
bool os_rmdir(const char* path) { return rmdir(path) == 0; }
bool os_rename(const std::string& from, const std::string& to) { return rename(from.c_str(), to.c_str()) == 0; }

bool os_exchange(const std::string& a, const std::string& b) {
#ifdef RENAME_EXCHANGE
    return renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE) == 0;
#else
    errno = ENOSYS;
    return false;
#endif
}

bool os_dir_list(const std::string& dir, std::vector<std::string>* names) {
    DIR* d = opendir(dir.c_str());
    if (!d) return false;
    names->clear();
    while (struct dirent* e = readdir(d)) {
        std::string name = e->d_name;
        if (name != "." && name != "..") names->push_back(name);
    }
    closedir(d);
    return true;
}

void os_dir_fsync(const std::string& dir) {
    int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY);
    if (fd < 0) return;
    fsync(fd);
    close(fd);
}

bool os_glob(const std::string& pattern, std::vector<std::string>* paths) {
    glob_t g;
    const int rc = glob(pattern.c_str(), 0, nullptr, &g);  // sorted by name
    paths->clear();
    if (rc == GLOB_NOMATCH) return true;
    if (rc != 0) return false;
    for (size_t i = 0; i < g.gl_pathc; i++) paths->push_back(g.gl_pathv[i]);
    globfree(&g);
    return true;
}

FILE* os_fopen_read(const std::string& path) { return fopen(path.c_str(), "rb"); }
FILE* os_fopen_read_file(const std::string& path) {
    const int fd = os_open_read(path);  // non-blocking; a regular file's reads ignore it
    FILE* f = fd < 0 ? nullptr : fdopen(fd, "rb");
    if (fd >= 0 && !f) close(fd);
    return f;
}
const char* os_null_device() { return "/dev/null"; }

bool os_full_path(const std::string& path, std::string* full) {
    char* p = realpath(path.c_str(), nullptr);
    if (!p) return false;
    *full = p;
    free(p);
    return true;
}

// ---- file descriptors

int os_open_read(const std::string& path) { return open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC); }

int os_open_read_nofollow(const std::string& path) {
    return open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
}

int os_create_exclusive(const std::string& path, bool append) {
    return open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | (append ? O_APPEND : 0), 0644);
}

int os_open_append(const std::string& path) {
    return open(path.c_str(), O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
}

int os_open_lock(const std::string& path) {
    return open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
}

long os_read(int fd, void* buf, size_t n) {
    ssize_t r;
    while ((r = read(fd, buf, n)) < 0 && errno == EINTR) {
    }
    return (long)r;
}

long os_write(int fd, const void* buf, size_t n) {
    ssize_t w;
    while ((w = write(fd, buf, n)) < 0 && errno == EINTR) {
    }
    return (long)w;
}

long os_pread(int fd, void* buf, size_t n, uint64_t offset) {
    ssize_t r;
    while ((r = pread(fd, buf, n, (off_t)offset)) < 0 && errno == EINTR) {
    }
    return (long)r;
}

long os_pwrite(int fd, const void* buf, size_t n, uint64_t offset) {
    ssize_t w;
    while ((w = pwrite(fd, buf, n, (off_t)offset)) < 0 && errno == EINTR) {
    }
    return (long)w;
}

bool os_truncate(int fd, uint64_t size) { return ftruncate(fd, (off_t)size) == 0; }
bool os_fsync(int fd) { return fsync(fd) == 0; }
bool os_close(int fd) { return close(fd) == 0; }
bool os_lock_try(int fd) { return flock(fd, LOCK_EX | LOCK_NB) == 0; }

// ---- memory

void* os_map_read(int fd, size_t bytes) {
    void* map = mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
    return map == MAP_FAILED ? nullptr : map;
}

void os_unmap(void* map, size_t bytes) { munmap(map, bytes); }
void os_map_sequential(void* map, size_t bytes) { madvise(map, bytes, MADV_SEQUENTIAL); }

void os_map_release(void* map, size_t bytes) {
    madvise(map, bytes, MADV_DONTNEED);  // the pages stay in the page cache
    madvise(map, bytes, MADV_NORMAL);
}

size_t os_memory_discard(void* p, size_t bytes) {
    const long page = sysconf(_SC_PAGESIZE);
    const uintptr_t begin = ((uintptr_t)p + page - 1) & ~(uintptr_t)(page - 1);
    const uintptr_t end = ((uintptr_t)p + bytes) & ~(uintptr_t)(page - 1);
    if (page <= 0 || end <= begin) return 0;
#ifdef MADV_NOHUGEPAGE  // else khugepaged may fold the range back into a whole (refilled) huge page
    madvise((void*)begin, end - begin, MADV_NOHUGEPAGE);
#endif
    return madvise((void*)begin, end - begin, MADV_DONTNEED) == 0 ? end - begin : 0;
}

bool os_prefault_huge(void* p, size_t bytes) {
#ifdef MADV_HUGEPAGE
    if (madvise(p, bytes, MADV_HUGEPAGE) != 0) return false;
#ifdef MADV_POPULATE_WRITE  // Linux 5.14; elsewhere the caller's zeroing faults the pages in
    const uintptr_t begin = (uintptr_t)p, huge = (uintptr_t)2 << 20;
    const long pages = (long)(bytes / huge);
#pragma omp parallel for schedule(static)
    for (long i = 0; i < pages; i++) madvise((void*)(begin + (uintptr_t)i * huge), huge, MADV_POPULATE_WRITE);
#endif
    return true;
#else
    return false;
#endif
}

bool os_request_amx() {
#if defined(__linux__) && defined(__x86_64__) && defined(SYS_arch_prctl)
    const long kReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;  // asm/prctl.h, the kernel's xfeature number
    return syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureXtiledata) == 0;
#else
    return false;
#endif
}

size_t os_memory_available() {
    FILE* f = fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[256];
    size_t kb = 0;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "MemAvailable: %zu kB", &kb) == 1) break;
    fclose(f);
    return kb * 1024;
}

size_t os_peak_rss() {
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
#ifdef __APPLE__
    return (size_t)ru.ru_maxrss;  // bytes there, KiB on Linux
#else
    return (size_t)ru.ru_maxrss * 1024;
#endif
}

void* os_aligned_alloc(size_t align, size_t bytes) { return aligned_alloc(align, (bytes + align - 1) / align * align); }
void os_aligned_free(void* p) { free(p); }

// ---- processes and terminals

long os_getpid() { return (long)getpid(); }
bool os_pid_alive(long pid) { return pid > 0 && (kill((pid_t)pid, 0) == 0 || errno != ESRCH); }
bool os_isatty(FILE* stream) { return isatty(fileno(stream)) == 1; }

// ---- CPU time

// Busy is everything but idle and iowait; steal is busy (a hypervisor's neighbour).
bool os_cpu_ticks(long long* busy, long long* total, int* cpus) {
    cpu_set_t mask;
    if (sched_getaffinity(0, sizeof(mask), &mask) != 0) return false;
    FILE* f = fopen("/proc/stat", "r");
    if (!f) return false;
    char line[512];
    *busy = *total = 0;
    *cpus = 0;
    while (fgets(line, sizeof(line), f)) {
        int cpu = -1, used = 0;
        long long v[8] = {0};
        if (strncmp(line, "cpu", 3) != 0 || line[3] < '0' || line[3] > '9') continue;  // the per-CPU lines
        if (sscanf(line, "cpu%d %n", &cpu, &used) != 1 || cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &mask))
            continue;
        if (sscanf(line + used, "%lld %lld %lld %lld %lld %lld %lld %lld", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                   &v[6], &v[7]) < 5)
            continue;
        long long sum = 0;
        for (long long x : v) sum += x;
        *total += sum;
        *busy += sum - v[3] - v[4];
        (*cpus)++;
    }
    fclose(f);
    return *cpus > 0;
}

double os_ticks_per_s() { return (double)sysconf(_SC_CLK_TCK); }

double os_self_cpu_s() {
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
    return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + 1e-6 * (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

// ---- TCP sockets

namespace {

bool address_of(const std::string& host, int port, sockaddr_in* a) {
    memset(a, 0, sizeof(*a));
    a->sin_family = AF_INET;
    a->sin_port = htons((uint16_t)port);
    errno = EINVAL;
    if (port < 0 || port > 65535 || host.find('\0') != std::string::npos) return false;
    if (host == "localhost") {
        a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        return true;
    }
    return inet_pton(AF_INET, host.c_str(), &a->sin_addr) == 1;  // four decimal parts, nothing else
}

int close_keeping_errno(int fd) {
    const int e = errno;
    close(fd);
    errno = e;
    return -1;
}

// Non-blocking, close-on-exec, and (where the system has it) no SIGPIPE from a send to a closed peer.
bool socket_setup(int fd) {
    const int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) return false;
#ifdef SO_NOSIGPIPE
    const int one = 1;
    if (setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, sizeof(one)) != 0) return false;
#endif
    return true;
}

void no_delay(int fd) {
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));  // a socket without it is slower, not wrong
}

}  // namespace

int os_tcp_listen(const std::string& host, int port, int backlog) {
    sockaddr_in a;
    if (!address_of(host, port, &a)) return -1;
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    const int one = 1;
    if (!socket_setup(fd) || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
        bind(fd, (const sockaddr*)&a, sizeof(a)) != 0 || listen(fd, backlog) != 0)
        return close_keeping_errno(fd);
    return fd;
}

int os_tcp_port(int fd) {
    sockaddr_in a;
    socklen_t len = sizeof(a);
    if (getsockname(fd, (sockaddr*)&a, &len) != 0) return -1;
    return ntohs(a.sin_port);
}

int os_tcp_accept(int listen_fd) {
    int fd;
    while ((fd = accept(listen_fd, nullptr, nullptr)) < 0 && errno == EINTR) {
    }
    if (fd < 0) {
        if (errno == EWOULDBLOCK) errno = EAGAIN;
        return -1;
    }
    if (!socket_setup(fd)) return close_keeping_errno(fd);
    no_delay(fd);
    return fd;
}

int os_tcp_connect(const std::string& host, int port, int timeout_ms) {
    sockaddr_in a;
    if (!address_of(host, port, &a)) return -1;
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    if (!socket_setup(fd)) return close_keeping_errno(fd);
    if (connect(fd, (const sockaddr*)&a, sizeof(a)) != 0) {
        if (errno != EINPROGRESS) return close_keeping_errno(fd);
        pollfd p = {fd, POLLOUT, 0};
        const int ready = poll(&p, 1, timeout_ms);
        int err = 0;
        socklen_t len = sizeof(err);
        if (ready == 0) errno = ETIMEDOUT;
        if (ready > 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0) {
            no_delay(fd);
            return fd;
        }
        if (err != 0) errno = err;
        return close_keeping_errno(fd);
    }
    no_delay(fd);
    return fd;
}

long os_recv(int fd, void* buf, size_t n) {
    ssize_t r;
    while ((r = recv(fd, buf, n, 0)) < 0 && errno == EINTR) {
    }
    if (r < 0 && errno == EWOULDBLOCK) errno = EAGAIN;
    return (long)r;
}

long os_send(int fd, const void* buf, size_t n) {
#ifdef MSG_NOSIGNAL
    const int flags = MSG_NOSIGNAL;
#else
    const int flags = 0;  // SO_NOSIGPIPE, set by socket_setup, does it there
#endif
    ssize_t w;
    while ((w = send(fd, buf, n, flags)) < 0 && errno == EINTR) {
    }
    if (w < 0 && errno == EWOULDBLOCK) errno = EAGAIN;
    return (long)w;
}

bool os_tcp_shutdown_write(int fd) { return shutdown(fd, SHUT_WR) == 0; }
bool os_socket_close(int fd) { return close(fd) == 0; }

bool os_socket_abort(int fd) {
    const linger reset = {1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));  // failing, it is a plain close
    return close(fd) == 0;
}

#ifdef POLLRDHUP
const short kRdHup = POLLRDHUP;
#else
const short kRdHup = 0;
#endif

int os_poll(OsPollFd* fds, size_t n, int timeout_ms) {
    thread_local std::vector<pollfd> p;
    p.resize(n);
    for (size_t i = 0; i < n; i++) {
        const short e = fds[i].events;
        p[i].fd = fds[i].fd;
        p[i].events =
            (short)((e & kOsPollIn ? POLLIN : 0) | (e & kOsPollOut ? POLLOUT : 0) | (e & kOsPollHup ? kRdHup : 0));
        p[i].revents = 0;
    }
    const int ready = poll(p.data(), (nfds_t)n, timeout_ms);
    for (size_t i = 0; i < n; i++) {
        const short r = p[i].revents;
        fds[i].revents = (short)((r & POLLIN ? kOsPollIn : 0) | (r & POLLOUT ? kOsPollOut : 0) |
                                 (r & (POLLERR | POLLHUP | POLLNVAL) ? kOsPollErr : 0) | (r & kRdHup ? kOsPollHup : 0));
    }
    if (ready < 0 && errno == EINTR) return 0;
    return ready;
}

// ---- signals

const int kOsStopSignals[3] = {SIGINT, SIGTERM, SIGHUP};

namespace {

void (*g_on_fault)(int) = nullptr;
thread_local sigjmp_buf* g_fault_guard = nullptr;

void on_bus(int sig) {
    if (g_fault_guard) siglongjmp(*g_fault_guard, 1);
    g_on_fault(sig);
}

void set_handler(int sig, void (*fn)(int)) {
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = fn;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(sig, &sa, nullptr);
}

}  // namespace

void os_signals_install(void (*on_stop)(int), void (*on_fault)(int)) {
    for (int sig : kOsStopSignals) {
        struct sigaction was;  // nohup's SIGHUP, ignored when the process starts, stays ignored: the run goes on
        if (sig == SIGHUP && sigaction(sig, nullptr, &was) == 0 && was.sa_handler == SIG_IGN) continue;
        set_handler(sig, on_stop);
    }
    g_on_fault = on_fault;
    set_handler(SIGBUS, on_bus);
    set_handler(SIGPIPE, SIG_IGN);
    set_handler(SIGXFSZ, SIG_IGN);
}

void os_signal_end(int sig) {
    signal(sig, SIG_DFL);
    raise(sig);
    _exit(128 + sig);  // a signal whose default is to be ignored
}

const char* os_signal_name(int sig) {
    return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : sig == SIGHUP ? "SIGHUP" : "a signal";
}

bool os_guard_fault(void (*fn)(void*), void* arg) {
    sigjmp_buf env;
    sigjmp_buf* outer = g_fault_guard;
    if (sigsetjmp(env, 1) != 0) {
        g_fault_guard = outer;
        return false;
    }
    g_fault_guard = &env;
    fn(arg);
    g_fault_guard = outer;
    return true;
}
#endif  // _WIN32
