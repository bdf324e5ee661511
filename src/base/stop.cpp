// stop.cpp: see stop.h.
#include "base/stop.h"

#include <csignal>
#include <cstring>

#include "base/platform.h"

namespace {

volatile sig_atomic_t g_catching = 0;
volatile sig_atomic_t g_stop = 0;

const int kSlots = 16;
const size_t kPathMax = 4096;
char g_paths[kSlots][kPathMax];
volatile sig_atomic_t g_used[kSlots];

// Ends the process as the signal would have, after removing the staged files: async-signal-safe only.
void end_now(int sig) {
    for (int i = 0; i < kSlots; i++)
        if (g_used[i]) os_unlink(g_paths[i]);
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

int stop_requested() { return g_stop; }

void stop_set(int sig) {
    if (!g_stop) g_stop = sig;
}

const char* stop_signal_name(int sig) { return os_signal_name(sig); }

int stop_track(const std::string& path) {
    if (path.size() >= kPathMax) return -1;
    for (int i = 0; i < kSlots; i++)
        if (!g_used[i]) {
            memcpy(g_paths[i], path.c_str(), path.size() + 1);
            g_used[i] = 1;
            return i;
        }
    return -1;
}

void stop_untrack(int slot) {
    if (slot >= 0 && slot < kSlots) g_used[slot] = 0;
}

bool stop_guard_bus(void (*fn)(void*), void* arg) { return os_guard_fault(fn, arg); }
