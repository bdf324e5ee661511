// progress.h: a progress line, the same text wherever it goes. On a terminal it is one line rewritten in
// place; anywhere else (a pipe, a file, a rank under mpirun, whose stdout is a pseudo-terminal that
// mpirun copies to wherever the user sent it) it is plain lines, so a redirected log reads like the screen.
//
// train's line: step, loss, lr, norm, ms, tok/s and the ETA. Setting up more than 256 MiB (a random init, the
// gradients, activations and AdamW state) is said on stderr with its time before the first step, so that step runs as
// fast as the rest (make bench's first_step). eval shows its progress on stderr.
#pragma once
#include <cstdio>
#include <string>

class ProgressLine {
public:
    // `plain_tenths`: off a terminal, print only when the fraction done crosses the next tenth (for long
    // loops with many updates); else every update is a line.
    ProgressLine(FILE* stream, bool in_place, bool plain_tenths);
    // Shows `text`; `fraction` in [0, 1] is how far the work is (for plain_tenths).
    void update(const std::string& text, double fraction = 0);
    // Ends a line being rewritten, before any other output on the stream.
    void close();
    // 0, or the errno of the first write to the stream that failed (a closed pipe, a full disk).
    int error() const { return error_; }

private:
    void check();  // flushes, noting a failed write
    FILE* stream_;
    bool in_place_, plain_tenths_, open_ = false;
    int error_ = 0;
    int tenths_shown_ = -1;
};

// True when `stream` is a terminal a line can be rewritten on: not under mpirun (several ranks), not
// TERM=dumb.
bool progress_in_place(FILE* stream, bool several_ranks);
// "ETA 1m05s" for `left` units of work at `seconds_per_unit`.
std::string progress_eta(double left, double seconds_per_unit);
