// test_os.cpp: see test_os.h. POSIX first, then the Windows stand-ins.
#include "test_os.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#ifndef _WIN32
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <csignal>

bool test_os_run_child(void (*fn)(), int* exit_code, std::string* err) {
    int fds[2];
    if (pipe(fds) != 0) return false;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        fn();
        _exit(0);
    }
    close(fds[1]);
    char buf[512];
    ssize_t got;
    while ((got = read(fds[0], buf, sizeof(buf))) > 0) err->append(buf, (size_t)got);
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return true;
}

long test_os_spin_child(int niceness) {
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        alarm(60);  // a child its test left behind (killed or crashed) ends by itself
        errno = 0;
        if (niceness && (setsid() < 0 || (nice(niceness) == -1 && errno))) _exit(1);
        for (volatile unsigned long n = 0;; n = n + 1) {
        }
    }
    return (long)child;
}

void test_os_kill(long pid) {
    if (pid <= 0) return;  // never kill(-1): every process we may signal
    kill((pid_t)pid, SIGKILL);
    waitpid((pid_t)pid, nullptr, 0);
}

bool test_os_symlink(const std::string& target, const std::string& link) {
    return symlink(target.c_str(), link.c_str()) == 0;
}

std::string test_os_temp_dir(const char* prefix) {
    std::string tmpl = std::string("/tmp/") + prefix + ".XXXXXX";
    return mkdtemp(&tmpl[0]) ? tmpl : "";
}

std::string test_os_abs_path(const std::string& path) {
    char abs[PATH_MAX];
    return realpath(path.c_str(), abs) ? abs : "";
}

void test_os_setenv(const char* name, const char* value) {
    if (value) setenv(name, value, 1);
    else unsetenv(name);
}

bool test_os_small_receive_buffer(int fd, int bytes) {
    return setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes)) == 0;
}

#else  // Windows
#include <windows.h>

#include "platform/platform.h"

bool test_os_run_child(void (*)(), int*, std::string*) { return false; }
long test_os_spin_child(int) { return -1; }
void test_os_kill(long) {}
bool test_os_symlink(const std::string&, const std::string&) { return false; }

std::string test_os_temp_dir(const char* prefix) {
    char dir[MAX_PATH];
    if (!GetTempPathA(sizeof(dir), dir)) return "";
    for (int i = 0; i < 100; i++) {
        std::string path = std::string(dir) + prefix + "." + std::to_string(os_getpid()) + "." + std::to_string(i);
        if (os_mkdir(path)) return path;
    }
    return "";
}

std::string test_os_abs_path(const std::string& path) {
    char abs[MAX_PATH];
    DWORD n = GetFullPathNameA(path.c_str(), sizeof(abs), abs, nullptr);
    return n > 0 && n < sizeof(abs) ? abs : "";
}

void test_os_setenv(const char* name, const char* value) { _putenv_s(name, value ? value : ""); }
bool test_os_small_receive_buffer(int, int) { return false; }
#endif
