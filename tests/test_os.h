// test_os.h: what the unit tests need of the system beyond src/platform/platform.h: a child process, a
// symbolic link, a temporary directory, environment variables. test_os.cpp is the one test file that may
// ask which system it is built for (tests/cli_rules.sh): on Windows there is no fork and links need a
// privilege, so the calls that need them return false there and their tests skip, counted as skips.
#pragma once
#include <string>

// Runs fn in a child process (fork); its exit code and what it wrote to stderr. False where not offered.
bool test_os_run_child(void (*fn)(), int* exit_code, std::string* err);
// A child that spins on one CPU until test_os_kill; its pid, or -1 where not offered. niceness > 0: niced, in a
// session of its own (a job started from another terminal).
long test_os_spin_child(int niceness = 0);
void test_os_kill(long pid);
// A symbolic link `link` to `target`; false where not offered.
bool test_os_symlink(const std::string& target, const std::string& link);
// A new empty directory under the system's temporary directory, or "" on failure.
std::string test_os_temp_dir(const char* prefix);
std::string test_os_abs_path(const std::string& path);     // "" on failure
void test_os_setenv(const char* name, const char* value);  // nullptr unsets it
// Shrinks a socket's receive buffer to about `bytes` (SO_RCVBUF), so a client that reads slowly is slow on the
// wire too; false where not offered.
bool test_os_small_receive_buffer(int fd, int bytes);
