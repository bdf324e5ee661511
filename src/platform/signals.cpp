// signals.cpp: see signals.h.
#include "platform/signals.h"

#include <algorithm>
#include <cassert>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "platform/platform.h"
#include "platform/util.h"

namespace {

volatile sig_atomic_t g_catching = 0;  // 0: signals end the process; 1: the command polls; kAbortAtPoint
const int kAbortAtPoint = 2;            // stop_catch_abort: stop_point() ends the command

std::string& abort_what() {
    static std::string what;
    return what;
}
volatile sig_atomic_t g_stop = 0;

const int kSlots = 16;
const size_t kPathMax = 4096;
char g_paths[kSlots][kPathMax];
const sig_atomic_t kFile = 1, kDir = 2;
volatile sig_atomic_t g_used[kSlots];  // 0: free, else what the slot's path is

// Ends the process as the signal would have, after removing the staged files, then the directories made for
// them that are empty once they are gone (innermost first, whatever slots they took): async-signal-safe only.
void end_now(int sig) {
    for (int i = 0; i < kSlots; i++)
        if (g_used[i] == kFile) os_unlink(g_paths[i]);
    for (int pass = 0; pass < kSlots; pass++)
        for (int i = 0; i < kSlots; i++)
            if (g_used[i] == kDir && os_rmdir(g_paths[i])) g_used[i] = 0;
    os_signal_end(sig);
}

volatile sig_atomic_t g_blocked = 0;  // StopWhileBlocked guards alive
const size_t kWhatMax = 1024;
char g_what[kWhatMax];  // stop_blocked_what's, set only while no guard is alive
volatile sig_atomic_t g_what_len = 0;

// `interrupted by SIGINT: <what>` in one write, built on the stack: async-signal-safe.
void say_blocked(int sig) {
    if (!g_what_len) return;
    char line[kWhatMax + 64];
    size_t n = 0;
    const auto add = [&](const char* p, size_t k) {
        memcpy(line + n, p, k);
        n += k;
    };
    const char* name = os_signal_name(sig);
    add("interrupted by ", 15);
    add(name, strlen(name));
    add(": ", 2);
    add(g_what, (size_t)g_what_len);
    add("\n", 1);
    os_write(2, line, n);
}

void on_stop(int sig) {
    if (!g_catching || g_stop) end_now(sig);
    if (g_blocked) {
        say_blocked(sig);
        end_now(sig);
    }
    g_stop = sig;
}

}  // namespace

void stop_install() { os_signals_install(on_stop, end_now); }

void stop_catch(bool on) {
    if (on) g_stop = 0;
    g_catching = on;
}

void stop_blocked_what(const std::string& what) {
    assert(!g_blocked);
    g_what_len = 0;  // a signal meanwhile says nothing rather than half a line
    const size_t n = std::min(what.size(), kWhatMax);
    memcpy(g_what, what.data(), n);
    g_what_len = (sig_atomic_t)n;
}

StopWhileBlocked::StopWhileBlocked(bool on) : on_(on) {
    if (!on_) return;
    g_blocked = g_blocked + 1;  // before the look at g_stop: a signal from here on ends the process itself
    if (const int sig = g_stop) {
        stop_point();  // stop_catch_abort's way: its line, its cleanups
        fflush(stdout);
        say_blocked(sig);
        end_now(sig);
    }
}

StopWhileBlocked::~StopWhileBlocked() {
    if (on_) g_blocked = g_blocked - 1;
}

void stop_catch_abort(const std::string& what) {
    stop_blocked_what(what);
    abort_what() = what;
    g_stop = 0;
    g_catching = kAbortAtPoint;
}

void stop_point() {
    const int sig = g_stop;
    if (g_catching != kAbortAtPoint || !sig) return;
    fflush(stdout);
    fprintf(stderr, "interrupted by %s: %s\n", os_signal_name(sig), abort_what().c_str());
    run_fatal_cleanups();  // the staged files and directories, the locks
    exit(128 + sig);
}

int stop_requested() { return g_stop; }

void stop_set(int sig) {
    if (!g_stop) g_stop = sig;
}

const char* stop_signal_name(int sig) { return os_signal_name(sig); }

int stop_track(const std::string& path, bool dir) {
    if (path.size() >= kPathMax) return -1;
    for (int i = 0; i < kSlots; i++)
        if (!g_used[i]) {
            memcpy(g_paths[i], path.c_str(), path.size() + 1);
            g_used[i] = dir ? kDir : kFile;
            return i;
        }
    return -1;
}

void stop_untrack(int slot) {
    if (slot >= 0 && slot < kSlots) g_used[slot] = 0;
}

bool stop_guard_bus(void (*fn)(void*), void* arg) { return os_guard_fault(fn, arg); }
