// platform.h: the operating system, behind plain functions named os_<verb>. platform_posix.cpp implements
// them with POSIX (Linux: /proc, renameat2), platform_win.cpp with Win32 (mingw-w64); nothing else in src/
// includes a system header or tests _WIN32 (tests/cli_rules.sh fails when something does). It is a thin
// layer, not a policy: which files may be written, and how, stays in output_files.cpp; signals in signals.cpp.
// Paths are UTF-8; calls that fail return false or -1 with errno set, the caller words the error.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

// Once, first thing in main: on Windows standard streams become binary (no "\r\n" in what gpt2 prints).
void os_init();

// ---- files by name
enum class FileKind { missing, regular, directory, symlink, other };  // other: a device, FIFO or socket
struct FileInfo {
    FileKind kind = FileKind::missing;
    uint64_t size = 0;
    uint64_t dev = 0, ino = 0;  // identity: device and inode (Windows: volume serial and file index)
    int64_t mtime = 0;          // its content's last change: ns (Windows: 100 ns steps), compared for equality
};
bool os_stat(const std::string& path, FileInfo* info);   // follows a symbolic link
bool os_lstat(const std::string& path, FileInfo* info);  // describes the link itself
bool os_fstat(int fd, FileInfo* info);
bool same_file(const FileInfo& a, const FileInfo& b);  // same dev and inode
// async-signal-safe on POSIX: signals.cpp calls them in a signal handler
bool os_unlink(const char* path);
bool os_rmdir(const char* path);  // only an empty directory
inline bool os_rmdir(const std::string& path) { return os_rmdir(path.c_str()); }
bool os_mkdir(const std::string& path);  // mode 0755
// Renames `from` to `to`, replacing `to` when it is a file (atomically where the system can).
bool os_rename(const std::string& from, const std::string& to);
// Swaps two directories in one step (Linux renameat2 RENAME_EXCHANGE); false where that is not possible.
bool os_exchange(const std::string& a, const std::string& b);
// Entry names of a directory (no . or ..), unsorted.
bool os_dir_list(const std::string& dir, std::vector<std::string>* names);
void os_dir_fsync(const std::string& dir);  // makes renames inside it durable; nothing where not possible
// The paths matching a shell pattern (* ? [...]), sorted; false when it cannot be expanded (Windows: a
// pattern in a directory part). No match is true and empty.
bool os_glob(const std::string& pattern, std::vector<std::string>* paths);
FILE* os_fopen_read(const std::string& path);  // fopen(path, "rb")
// fopen(path, "rb") for a file that must be regular (the caller checks it with os_fstat), opened without waiting:
// a FIFO's open waits for a writer, where the caller's check would refuse it at once.
FILE* os_fopen_read_file(const std::string& path);
const char* os_null_device();                  // "/dev/null", "NUL"
// The absolute form of an existing path, links and "." / ".." resolved (realpath, GetFullPathNameW).
bool os_full_path(const std::string& path, std::string* full);

// ---- file descriptors. Only output_files.cpp opens files for writing (tests/cli_rules.sh).
int os_open_read(const std::string& path);                      // non-blocking: opening a FIFO does not hang
int os_open_read_nofollow(const std::string& path);             // os_open_read, failing on a symbolic link
int os_create_exclusive(const std::string& path, bool append);  // never follows or truncates a name
int os_open_append(const std::string& path);                    // an existing file, never through a link
int os_open_lock(const std::string& path);                      // read-write, created when missing, never a link
// Reads or writes part (a return short of n) or -1; EINTR is retried inside.
long os_read(int fd, void* buf, size_t n);
long os_write(int fd, const void* buf, size_t n);
long os_pread(int fd, void* buf, size_t n, uint64_t offset);
long os_pwrite(int fd, const void* buf, size_t n, uint64_t offset);
bool os_truncate(int fd, uint64_t size);
bool os_fsync(int fd);
bool os_close(int fd);
// An exclusive advisory lock held until the descriptor closes; false at once when another holds it. The
// file's first bytes stay readable by other processes (they hold the holder's pid).
bool os_lock_try(int fd);

// ---- memory
// Maps `bytes` (> 0) of an open file read-only; the mapping outlives the descriptor. nullptr on failure.
void* os_map_read(int fd, size_t bytes);
void os_unmap(void* map, size_t bytes);
// Hints for a mapping read once front to back (sequential), then dropped from this process (release).
void os_map_sequential(void* map, size_t bytes);
void os_map_release(void* map, size_t bytes);
// Asks for huge pages for [p, p+bytes) (2 MiB aligned) and faults them in on all threads; false where
// not offered (the caller's zeroing then faults the pages in).
bool os_prefault_huge(void* p, size_t bytes);
// Gives the memory of [p, p+bytes) (whole pages of an allocation of ours) back to the system: its contents are
// gone (reading them gives zeros; anything on Windows). Returns the bytes given back: the whole pages inside.
size_t os_memory_discard(void* p, size_t bytes);
// Asks for the AMX tile registers' state (Linux 5.16 and later grant its 8 KiB per thread only to a process
// that asks: arch_prctl ARCH_REQ_XCOMP_PERM); true when granted. False elsewhere and off x86-64 Linux.
bool os_request_amx();
size_t os_memory_available();                        // bytes the system could give now, 0 when unknown
size_t os_peak_rss();                                // this process's peak resident memory in bytes, 0 when unknown
void* os_aligned_alloc(size_t align, size_t bytes);  // aligned_alloc; free with os_aligned_free
void os_aligned_free(void* p);

// ---- processes and terminals
long os_getpid();
bool os_pid_alive(long pid);  // true also when it exists but we may not signal it
bool os_isatty(FILE* stream);

// ---- CPU time, for the thread tuner (platform/threads.cpp)
// Ticks the CPUs this process may run on spent busy and in all since boot, and how many CPUs that is;
// false where the system does not tell (the tuner then keeps every thread).
bool os_cpu_ticks(long long* busy, long long* total, int* cpus);
double os_ticks_per_s();
double os_self_cpu_s();  // CPU seconds of this process, all threads, user and system

// ---- TCP sockets (gpt2 serve: serve/http_server.h). Every socket here is non-blocking and close-on-exec, and
// a send to a peer that has gone never raises SIGPIPE (MSG_NOSIGNAL, SO_NOSIGPIPE): it fails with EPIPE or
// ECONNRESET. Windows has none of them: each fails with errno ENOSYS (serve says so in one line).
// A listening socket on host ("localhost" or an IPv4 dotted quad: "127.0.0.1", "0.0.0.0") and port (0: any free
// port; os_tcp_port tells which), SO_REUSEADDR set; -1 with errno (EINVAL: a host of another form).
int os_tcp_listen(const std::string& host, int port, int backlog);
int os_tcp_port(int fd);  // the local port a socket is bound to; -1 with errno
// One connection waiting on a listening socket, or -1 (errno EAGAIN: none waiting). TCP_NODELAY is set: the
// small writes of a stream go out at once.
int os_tcp_accept(int listen_fd);
// A connection to host:port, made within timeout_ms; -1 with errno (ETIMEDOUT). For the tests' clients.
int os_tcp_connect(const std::string& host, int port, int timeout_ms);
// Bytes received (> 0), 0 when the peer has closed its side, or -1 with errno (EAGAIN: nothing yet).
long os_recv(int fd, void* buf, size_t n);
// Bytes sent (> 0, maybe short of n), or -1 with errno (EAGAIN: the socket's buffer is full; EPIPE,
// ECONNRESET: the peer has gone). EINTR is retried inside both.
long os_send(int fd, const void* buf, size_t n);
bool os_tcp_shutdown_write(int fd);  // sends FIN; reading goes on (a close that lets the last bytes arrive)
bool os_socket_close(int fd);
// Closes with a reset (SO_LINGER 0): what the system still holds to send is dropped, not sent on to a client
// that is gone or too slow.
bool os_socket_abort(int fd);
// poll(2) over n sockets: events is what to wait for (kOsPollIn, kOsPollOut, kOsPollHup: the peer has shut its
// side, told without reading what it sent before; Linux's POLLRDHUP, never reported elsewhere); revents what
// happened, with kOsPollErr for an error or hang-up. Returns how many have revents, 0 at the timeout or when a
// signal interrupted (so a loop checks stop_requested()), -1 with errno. timeout_ms -1 waits without end.
enum : short { kOsPollIn = 1, kOsPollOut = 2, kOsPollErr = 4, kOsPollHup = 8 };
struct OsPollFd {
    int fd;
    short events, revents;
};
int os_poll(OsPollFd* fds, size_t n, int timeout_ms);

// ---- signals (only signals.cpp calls these)
// The signals that ask a command to stop: SIGINT, SIGTERM, SIGHUP (Windows: SIGINT, SIGTERM, SIGBREAK).
extern const int kOsStopSignals[3];
// Installs on_stop for each stop signal, restarting interrupted calls; SIGPIPE and SIGXFSZ are ignored
// where they exist. A fault (SIGBUS: a read of a mapped page the file no longer has) goes to on_fault,
// unless os_guard_fault is running, which it then returns to instead.
void os_signals_install(void (*on_stop)(int), void (*on_fault)(int));
// Ends the process as `sig` would have (its default action).
[[noreturn]] void os_signal_end(int sig);
const char* os_signal_name(int sig);  // "SIGINT", ...
// Calls fn(arg); false when a fault (above) ended it early. Where a mapped file cannot shrink (Windows) it
// only calls fn.
bool os_guard_fault(void (*fn)(void*), void* arg);
