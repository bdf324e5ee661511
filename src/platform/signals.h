// signals.h: the one owner of signals. main() calls stop_install() once; no other file installs a handler
// (tests/cli_rules.sh fails when one does).
//   - SIGINT, SIGTERM, SIGHUP: while a command catches them (stop_catch), the first one only sets a flag
//     that its loop polls: it finishes the unit of work at hand (a step, a batch), saves or cleans up, says
//     what happened and how to go on, and exits 128 + the signal. A second signal, one arriving while
//     nothing catches it, or one while the command waits for input that may never come (StopWhileBlocked: a
//     FIFO, a pipe, a terminal), ends the process at once, after removing the staged files listed here.
//   - SIGPIPE and SIGXFSZ are ignored: the failed write reports itself in one error line.
//   - SIGBUS (a mapped file shrank under the run) inside stop_guard_bus returns to the caller as a failure.
// What each command does on the first SIGINT, SIGTERM or SIGHUP: train finishes the step (or the sample being
// printed), saves to --out (a resumed run where it resumed from, unless --out says otherwise), prints how to resume
// and exits 128 + the signal (130, 143, 129); tokenize finishes the batch at hand, removes the file it was writing
// and says how many it published; generate stops the sample at hand; eval (HellaSwag too) and export stop at the next
// batch or write, remove what they staged and say `interrupted by SIGINT: ...`; serve stops listening, tells every
// request under way (serve/server.h) and exits 128 + the signal.
#pragma once
#include <string>

void stop_install();
// On: stop signals set the flag (and clear an earlier one); off: they end the process.
void stop_catch(bool on);
// For a command with nothing to save on the way out (eval, export): stop signals set the flag, and the next
// stop_point() -- every staged write polls one (output_files.h), long loops too -- removes what the command
// staged (fatal()'s cleanups), prints `interrupted by SIGINT: <what>` and exits 128 + the signal.
void stop_catch_abort(const std::string& what);
// Ends the command there when stop_catch_abort is on and a stop signal came; else does nothing.
void stop_point();
// While one is alive the command waits for input that may never come (opening a FIFO or a device, reading one,
// or stdin from a pipe or a terminal) in a call that a flag cannot cut short: a stop signal then ends the process
// at once, as a second one would (the staged files below removed), after one line `interrupted by SIGINT: <what>`
// with the what stop_catch_abort or stop_blocked_what last gave (none when neither did). A stop that came before
// it ends the command there. Off (false): nothing changes, as for a regular file, whose reads always return.
class StopWhileBlocked {
public:
    explicit StopWhileBlocked(bool on);
    ~StopWhileBlocked();
    StopWhileBlocked(const StopWhileBlocked&) = delete;
    StopWhileBlocked& operator=(const StopWhileBlocked&) = delete;

private:
    bool on_;
};
// The what of that line for a command that polls (stop_catch); stop_catch_abort sets its own.
void stop_blocked_what(const std::string& what);
// The signal that asked the command to stop, or 0.
int stop_requested();
// Records a stop that reached another process of the run (MPI ranks share their flags).
void stop_set(int sig);
const char* stop_signal_name(int sig);  // "SIGINT", ...

// A path removed if a signal ends the process at once (staged temporaries; dir: a directory made for them,
// removed if empty). Fixed slots: the handler may not allocate; a path that finds none is left to the next run
// (OutputFile clears dead leftovers).
int stop_track(const std::string& path, bool dir = false);
void stop_untrack(int slot);

// Calls fn(arg); true when it returned, false when it raised SIGBUS (reading a page of a mapped file that
// no longer exists). fn must not leave anything half-done that matters: it is abandoned where it stood.
bool stop_guard_bus(void (*fn)(void*), void* arg);
