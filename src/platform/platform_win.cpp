// platform_win.cpp: platform.h on Windows (mingw-w64; tested under wine, see tests/windows.sh). Paths go to
// the wide (UTF-16) Win32 calls; descriptors are the C runtime's, made from Win32 handles opened with
// FILE_SHARE_DELETE, so a file another descriptor holds can still be renamed over or removed. Not here: a
// directory swap in one step (os_exchange fails, output_files.cpp then renames twice) and faults of a shrunk
// mapping (Windows does not let a mapped file shrink), TCP sockets (each call fails with ENOSYS). The whole file
// is skipped elsewhere.
#ifdef _WIN32
#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <io.h>
#include <windows.h>

#include <psapi.h>  // after windows.h

#include "platform/platform.h"

namespace {

std::wstring wide(const std::string& s) {
    int n = MultiByteToWideChar(CP_UTF8, 0, s.data(), (int)s.size(), nullptr, 0);
    std::wstring w((size_t)n, L'\0');
    if (n > 0) MultiByteToWideChar(CP_UTF8, 0, s.data(), (int)s.size(), &w[0], n);
    return w;
}

std::string narrow(const wchar_t* w) {
    int n = WideCharToMultiByte(CP_UTF8, 0, w, -1, nullptr, 0, nullptr, nullptr);
    std::string s(n > 0 ? (size_t)n - 1 : 0, '\0');
    if (n > 1) WideCharToMultiByte(CP_UTF8, 0, w, -1, &s[0], n, nullptr, nullptr);
    return s;
}

// errno for the last Win32 error, so callers print strerror as on POSIX; returns false for one-line use.
bool fail_errno() {
    switch (GetLastError()) {
        case ERROR_FILE_NOT_FOUND:
        case ERROR_PATH_NOT_FOUND:
        case ERROR_INVALID_NAME: errno = ENOENT; break;
        case ERROR_FILE_EXISTS:
        case ERROR_ALREADY_EXISTS: errno = EEXIST; break;
        case ERROR_ACCESS_DENIED: errno = EACCES; break;
        case ERROR_SHARING_VIOLATION:
        case ERROR_LOCK_VIOLATION: errno = EBUSY; break;
        case ERROR_DIR_NOT_EMPTY: errno = ENOTEMPTY; break;
        case ERROR_DISK_FULL:
        case ERROR_HANDLE_DISK_FULL: errno = ENOSPC; break;
        case ERROR_DIRECTORY: errno = ENOTDIR; break;
        default: errno = EIO;
    }
    return false;
}

const DWORD kShareAll = FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE;

HANDLE open_handle(const std::string& path, DWORD access, DWORD disposition, DWORD flags) {
    return CreateFileW(wide(path).c_str(), access, kShareAll, nullptr, disposition,
                       flags | FILE_ATTRIBUTE_NORMAL | FILE_FLAG_BACKUP_SEMANTICS, nullptr);
}

bool handle_info(HANDLE h, FileInfo* info) {
    *info = FileInfo();
    if (GetFileType(h) != FILE_TYPE_DISK) {  // a console, pipe or NUL: no size or identity
        info->kind = FileKind::other;
        return true;
    }
    BY_HANDLE_FILE_INFORMATION bi;
    if (!GetFileInformationByHandle(h, &bi)) return fail_errno();
    info->kind = bi.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT ? FileKind::symlink
                 : bi.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY   ? FileKind::directory
                                                                    : FileKind::regular;
    info->size = ((uint64_t)bi.nFileSizeHigh << 32) | bi.nFileSizeLow;
    info->dev = bi.dwVolumeSerialNumber;
    info->ino = ((uint64_t)bi.nFileIndexHigh << 32) | bi.nFileIndexLow;
    info->mtime = (int64_t)(((uint64_t)bi.ftLastWriteTime.dwHighDateTime << 32) | bi.ftLastWriteTime.dwLowDateTime);
    return true;
}

bool path_info(const std::string& path, FileInfo* info, DWORD flags) {
    *info = FileInfo();
    HANDLE h = open_handle(path, FILE_READ_ATTRIBUTES, OPEN_EXISTING, flags);
    if (h == INVALID_HANDLE_VALUE) return fail_errno();
    const bool ok = handle_info(h, info);
    CloseHandle(h);
    return ok;
}

// A C runtime descriptor for `h`, or -1 (closing h). never_link: a symbolic link opened itself fails.
int to_fd(HANDLE h, int flags, bool never_link) {
    if (h == INVALID_HANDLE_VALUE) return fail_errno(), -1;
    FileInfo info;
    if (never_link && handle_info(h, &info) && info.kind == FileKind::symlink) {
        CloseHandle(h);
        errno = ELOOP;
        return -1;
    }
    int fd = _open_osfhandle((intptr_t)h, flags);
    if (fd < 0) CloseHandle(h);
    return fd;
}

HANDLE fd_handle(int fd) { return (HANDLE)_get_osfhandle(fd); }

// Whether `name` matches the shell pattern `p` (* ? and [...] with ranges and a leading ! or ^).
bool name_matches(const char* p, const char* name) {
    if (!*p) return !*name;
    if (*p == '*') return name_matches(p + 1, name) || (*name && name_matches(p, name + 1));
    if (!*name) return false;
    if (*p == '?') return name_matches(p + 1, name + 1);
    if (*p != '[' || !strchr(p + 1, ']')) return *p == *name && name_matches(p + 1, name + 1);
    const char* q = p + 1;
    const bool negate = *q == '!' || *q == '^';
    bool in = false;
    if (negate) q++;
    do {  // a ']' first is a member
        if (q[1] == '-' && q[2] && q[2] != ']') in |= *q <= *name && *name <= q[2], q += 3;
        else in |= *q++ == *name;
    } while (*q && *q != ']');
    return *q && in != negate && name_matches(q + 1, name + 1);
}

}  // namespace

void os_init() {
    for (int fd = 0; fd < 3; fd++) _setmode(fd, _O_BINARY);  // "\n" stays "\n"
    SetConsoleOutputCP(CP_UTF8);                             // generated text is UTF-8
}

// ---- files by name

bool os_stat(const std::string& path, FileInfo* info) { return path_info(path, info, 0); }
bool os_lstat(const std::string& path, FileInfo* info) { return path_info(path, info, FILE_FLAG_OPEN_REPARSE_POINT); }
bool os_fstat(int fd, FileInfo* info) {
    HANDLE h = fd_handle(fd);
    if (h == INVALID_HANDLE_VALUE) return errno = EBADF, false;
    return handle_info(h, info);
}

bool same_file(const FileInfo& a, const FileInfo& b) { return a.dev == b.dev && a.ino == b.ino; }
bool os_unlink(const char* path) { return DeleteFileW(wide(path).c_str()) || fail_errno(); }
bool os_mkdir(const std::string& path) { return CreateDirectoryW(wide(path).c_str(), nullptr) || fail_errno(); }
bool os_rmdir(const char* path) { return RemoveDirectoryW(wide(path).c_str()) || fail_errno(); }

bool os_rename(const std::string& from, const std::string& to) {
    const DWORD flags = MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH;
    return MoveFileExW(wide(from).c_str(), wide(to).c_str(), flags) || fail_errno();
}

bool os_exchange(const std::string&, const std::string&) {
    errno = ENOSYS;
    return false;
}

bool os_dir_list(const std::string& dir, std::vector<std::string>* names) {
    WIN32_FIND_DATAW e;
    HANDLE h = FindFirstFileW(wide(dir + "/*").c_str(), &e);
    if (h == INVALID_HANDLE_VALUE) return fail_errno();
    names->clear();
    do {
        std::string name = narrow(e.cFileName);
        if (name != "." && name != "..") names->push_back(name);
    } while (FindNextFileW(h, &e));
    FindClose(h);
    return true;
}

bool os_glob(const std::string& pattern, std::vector<std::string>* paths) {
    const size_t slash = pattern.find_last_of("/\\");
    const std::string dir = slash == std::string::npos ? "" : pattern.substr(0, slash + 1);
    const std::string base = pattern.substr(dir.size());
    paths->clear();
    if (dir.find_first_of("*?[") != std::string::npos) return errno = ENOSYS, false;
    std::vector<std::string> names;
    if (!os_dir_list(dir.empty() ? "." : dir, &names)) return errno == ENOENT || errno == ENOTDIR;
    for (const std::string& name : names)  // as POSIX glob: a leading dot is matched only by a dot
        if ((name[0] != '.' || base[0] == '.') && name_matches(base.c_str(), name.c_str()))
            paths->push_back(dir + name);
    std::sort(paths->begin(), paths->end());
    return true;
}

void os_dir_fsync(const std::string&) {}  // NTFS journals its directories; there is no call for it
FILE* os_fopen_read(const std::string& path) { return _wfopen(wide(path).c_str(), L"rb"); }
FILE* os_fopen_read_file(const std::string& path) { return os_fopen_read(path); }  // no FIFO opens here
const char* os_null_device() { return "NUL"; }

bool os_full_path(const std::string& path, std::string* full) {
    std::vector<wchar_t> buf(32768);  // the longest path Windows has
    const DWORD n = GetFullPathNameW(wide(path).c_str(), (DWORD)buf.size(), buf.data(), nullptr);
    if (n == 0 || n >= buf.size()) return fail_errno();
    *full = narrow(buf.data());
    for (char& c : *full) c = c == '\\' ? '/' : c;  // the separator the rest of gpt2 writes
    return true;
}

// ---- file descriptors

int os_open_read(const std::string& path) {
    return to_fd(open_handle(path, GENERIC_READ, OPEN_EXISTING, 0), _O_RDONLY, false);
}
int os_open_read_nofollow(const std::string& path) {
    return to_fd(open_handle(path, GENERIC_READ, OPEN_EXISTING, FILE_FLAG_OPEN_REPARSE_POINT), _O_RDONLY, true);
}
int os_create_exclusive(const std::string& path, bool append) {  // CREATE_NEW fails on any existing name
    HANDLE h = open_handle(path, GENERIC_WRITE, CREATE_NEW, FILE_FLAG_OPEN_REPARSE_POINT);
    return to_fd(h, _O_WRONLY | (append ? _O_APPEND : 0), false);
}
int os_open_append(const std::string& path) {
    HANDLE h = open_handle(path, GENERIC_WRITE, OPEN_EXISTING, FILE_FLAG_OPEN_REPARSE_POINT);
    return to_fd(h, _O_WRONLY | _O_APPEND, true);
}
int os_open_lock(const std::string& path) {
    HANDLE h = open_handle(path, GENERIC_READ | GENERIC_WRITE, OPEN_ALWAYS, FILE_FLAG_OPEN_REPARSE_POINT);
    return to_fd(h, _O_RDWR, true);
}

long os_read(int fd, void* buf, size_t n) { return _read(fd, buf, (unsigned)(n < (1u << 30) ? n : 1u << 30)); }
long os_write(int fd, const void* buf, size_t n) { return _write(fd, buf, (unsigned)(n < (1u << 30) ? n : 1u << 30)); }

long os_pread(int fd, void* buf, size_t n, uint64_t offset) {
    OVERLAPPED ov = {};
    ov.Offset = (DWORD)offset, ov.OffsetHigh = (DWORD)(offset >> 32);
    DWORD got = 0;
    if (ReadFile(fd_handle(fd), buf, (DWORD)(n < (1u << 30) ? n : 1u << 30), &got, &ov)) return (long)got;
    return GetLastError() == ERROR_HANDLE_EOF ? 0 : (fail_errno(), -1);
}

long os_pwrite(int fd, const void* buf, size_t n, uint64_t offset) {
    OVERLAPPED ov = {};
    ov.Offset = (DWORD)offset, ov.OffsetHigh = (DWORD)(offset >> 32);
    DWORD put = 0;
    if (WriteFile(fd_handle(fd), buf, (DWORD)(n < (1u << 30) ? n : 1u << 30), &put, &ov)) return (long)put;
    return fail_errno(), -1;
}

bool os_truncate(int fd, uint64_t size) { return _chsize_s(fd, (long long)size) == 0; }
bool os_fsync(int fd) { return FlushFileBuffers(fd_handle(fd)) || fail_errno(); }
bool os_close(int fd) { return _close(fd) == 0; }

// Locks one byte far past anything a lock file holds: Windows locks are mandatory, and the pid at the
// start of the file must stay readable by the process that is refused.
bool os_lock_try(int fd) {
    OVERLAPPED ov = {};
    ov.OffsetHigh = 1;  // byte 4 GiB
    const DWORD flags = LOCKFILE_EXCLUSIVE_LOCK | LOCKFILE_FAIL_IMMEDIATELY;
    return LockFileEx(fd_handle(fd), flags, 0, 1, 0, &ov) || fail_errno();
}

// ---- memory

void* os_map_read(int fd, size_t bytes) {
    HANDLE m = CreateFileMappingW(fd_handle(fd), nullptr, PAGE_READONLY, 0, 0, nullptr);
    if (!m) return fail_errno(), nullptr;
    void* map = MapViewOfFile(m, FILE_MAP_READ, 0, 0, bytes);
    if (!map) fail_errno();
    CloseHandle(m);  // the view keeps the mapping
    return map;
}

void os_unmap(void* map, size_t) { UnmapViewOfFile(map); }
void os_map_sequential(void*, size_t) {}
void os_map_release(void* map, size_t bytes) { VirtualUnlock(map, bytes); }  // trims it from the working set
size_t os_memory_discard(void* p, size_t bytes) {
    SYSTEM_INFO si;
    GetSystemInfo(&si);
    const uintptr_t page = si.dwPageSize;
    const uintptr_t begin = ((uintptr_t)p + page - 1) & ~(page - 1), end = ((uintptr_t)p + bytes) & ~(page - 1);
    if (end <= begin || !VirtualAlloc((void*)begin, end - begin, MEM_RESET, PAGE_READWRITE)) return 0;
    VirtualUnlock((void*)begin, end - begin);  // MEM_RESET's pages leave the working set
    return end - begin;
}
bool os_prefault_huge(void*, size_t) { return false; }                       // large pages need a privilege users lack

bool os_request_amx() { return false; }  // not tried: no Windows machine with AMX to run it on

size_t os_memory_available() {
    MEMORYSTATUSEX ms;
    ms.dwLength = sizeof(ms);
    return GlobalMemoryStatusEx(&ms) ? (size_t)ms.ullAvailPhys : 0;
}

size_t os_peak_rss() {
    PROCESS_MEMORY_COUNTERS pmc;
    return K32GetProcessMemoryInfo(GetCurrentProcess(), &pmc, sizeof(pmc)) ? (size_t)pmc.PeakWorkingSetSize : 0;
}

void* os_aligned_alloc(size_t align, size_t bytes) { return _aligned_malloc(bytes, align); }
void os_aligned_free(void* p) { _aligned_free(p); }

// ---- processes and terminals

long os_getpid() { return (long)GetCurrentProcessId(); }

bool os_pid_alive(long pid) {
    if (pid <= 0) return false;
    HANDLE h = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, FALSE, (DWORD)pid);
    if (!h) return GetLastError() == ERROR_ACCESS_DENIED;  // exists, but not ours to look at
    DWORD code = 0;
    const bool alive = GetExitCodeProcess(h, &code) && code == STILL_ACTIVE;
    CloseHandle(h);
    return alive;
}

bool os_isatty(FILE* stream) {  // a console; _isatty is also true of NUL
    DWORD mode;
    return GetConsoleMode(fd_handle(_fileno(stream)), &mode) != 0;
}

// ---- CPU time: GetSystemTimes sums all CPUs in 100 ns ticks (its kernel time includes idle)

static long long ticks(const FILETIME& t) { return (long long)(((uint64_t)t.dwHighDateTime << 32) | t.dwLowDateTime); }

bool os_cpu_ticks(long long* busy, long long* total, int* cpus) {
    FILETIME idle, kernel, user;
    if (!GetSystemTimes(&idle, &kernel, &user)) return false;
    *total = ticks(kernel) + ticks(user);
    *busy = *total - ticks(idle);
    *cpus = (int)GetActiveProcessorCount(ALL_PROCESSOR_GROUPS);
    return *cpus > 0 && *total > 0;
}

double os_ticks_per_s() { return 1e7; }

double os_self_cpu_s() {
    FILETIME created, exited, kernel, user;
    if (!GetProcessTimes(GetCurrentProcess(), &created, &exited, &kernel, &user)) return 0;
    return (double)(ticks(kernel) + ticks(user)) * 1e-7;
}

// ---- TCP sockets: none. Winsock's sockets are not C runtime descriptors and its poll differs in what it
// reports; gpt2 serve is for POSIX systems, and here every call says ENOSYS, which serve reports in one line.

int os_tcp_listen(const std::string&, int, int) { return errno = ENOSYS, -1; }
int os_tcp_port(int) { return errno = ENOSYS, -1; }
int os_tcp_accept(int) { return errno = ENOSYS, -1; }
int os_tcp_connect(const std::string&, int, int) { return errno = ENOSYS, -1; }
long os_recv(int, void*, size_t) { return errno = ENOSYS, -1; }
long os_send(int, const void*, size_t) { return errno = ENOSYS, -1; }
bool os_tcp_shutdown_write(int) { return errno = ENOSYS, false; }
bool os_socket_close(int) { return errno = ENOSYS, false; }
bool os_socket_abort(int) { return errno = ENOSYS, false; }
int os_poll(OsPollFd*, size_t, int) { return errno = ENOSYS, -1; }

// ---- signals: the C runtime's, which Ctrl-C and Ctrl-Break raise (on a thread of their own)

const int kOsStopSignals[3] = {SIGINT, SIGTERM, SIGBREAK};

namespace {
void (*g_on_stop)(int) = nullptr;

void on_stop_again(int sig) {
    signal(sig, on_stop_again);  // the runtime resets a handler to the default before calling it
    g_on_stop(sig);
}
}  // namespace

void os_signals_install(void (*on_stop)(int), void (*)(int)) {
    g_on_stop = on_stop;
    for (int sig : kOsStopSignals) signal(sig, on_stop_again);
}

void os_signal_end(int sig) {
    signal(sig, SIG_DFL);
    raise(sig);
    _exit(128 + sig);
}

const char* os_signal_name(int sig) {
    return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : sig == SIGBREAK ? "SIGBREAK" : "a signal";
}

bool os_guard_fault(void (*fn)(void*), void* arg) {
    fn(arg);
    return true;
}
#endif  // _WIN32
