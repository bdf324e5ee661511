// stop.cpp: see stop.h.
#include "base/stop.h"

#include <climits>
#include <csetjmp>
#include <csignal>
#include <cstring>
#include <unistd.h>

namespace {

const int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP};
volatile sig_atomic_t g_catching = 0;
volatile sig_atomic_t g_stop = 0;

const int kSlots = 16;
char g_paths[kSlots][PATH_MAX];
volatile sig_atomic_t g_used[kSlots];

thread_local sigjmp_buf* g_bus_guard = nullptr;

// Ends the process as the signal would have, after removing the staged files: async-signal-safe only.
void end_now(int sig) {
    for (int i = 0; i < kSlots; i++)
        if (g_used[i]) unlink(g_paths[i]);
    signal(sig, SIG_DFL);
    raise(sig);
}

void on_stop(int sig) {
    if (!g_catching || g_stop) end_now(sig);
    g_stop = sig;
}

void on_bus(int sig) {
    if (g_bus_guard) siglongjmp(*g_bus_guard, 1);
    end_now(sig);
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

void stop_install() {
    for (int sig : kStopSignals) set_handler(sig, on_stop);
    set_handler(SIGBUS, on_bus);
    set_handler(SIGPIPE, SIG_IGN);
    set_handler(SIGXFSZ, SIG_IGN);
}

void stop_catch(bool on) {
    if (on) g_stop = 0;
    g_catching = on;
}

int stop_requested() { return g_stop; }

void stop_set(int sig) {
    if (!g_stop) g_stop = sig;
}

const char* stop_signal_name(int sig) {
    return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : sig == SIGHUP ? "SIGHUP" : "a signal";
}

int stop_track(const std::string& path) {
    if (path.size() >= PATH_MAX) return -1;
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

bool stop_guard_bus(void (*fn)(void*), void* arg) {
    sigjmp_buf env;
    sigjmp_buf* outer = g_bus_guard;
    if (sigsetjmp(env, 1) != 0) {
        g_bus_guard = outer;
        return false;
    }
    g_bus_guard = &env;
    fn(arg);
    g_bus_guard = outer;
    return true;
}
