// signals.cpp: see signals.h.
#include "platform/signals.h"

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

void on_stop(int sig) {
    if (!g_catching || g_stop) end_now(sig);
    g_stop = sig;
}

}  // namespace

void stop_install() { os_signals_install(on_stop, end_now); }

void stop_catch(bool on) {
    if (on) g_stop = 0;
    g_catching = on;
}

void stop_catch_abort(const std::string& what) {
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
