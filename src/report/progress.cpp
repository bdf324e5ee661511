// progress.cpp: see progress.h.
#include "report/progress.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "platform/platform.h"
#include "platform/util.h"

ProgressLine::ProgressLine(FILE* stream, bool in_place, bool plain_tenths)
    : stream_(stream), in_place_(in_place), plain_tenths_(plain_tenths) {}

void ProgressLine::check() {
    errno = 0;
    if ((fflush(stream_) != 0 || ferror(stream_)) && !error_) error_ = errno ? errno : EIO;
}

void ProgressLine::update(const std::string& text, double fraction) {
    if (in_place_) {
        fprintf(stream_, "\r%s\033[K", text.c_str());
        open_ = true;
    } else {
        const int tenths = (int)(fraction * 10 + 1e-9);
        if (plain_tenths_ && tenths <= tenths_shown_) return;
        tenths_shown_ = tenths;
        fprintf(stream_, "%s\n", text.c_str());
    }
    check();
}

void ProgressLine::close() {
    if (open_) fputc('\n', stream_);
    open_ = false;
    check();
}

bool progress_in_place(FILE* stream, bool several_ranks) {
    const char* term = getenv("TERM");
    return !several_ranks && os_isatty(stream) && !(term && !strcmp(term, "dumb"));
}

std::string progress_eta(double left, double seconds_per_unit) {
    return "ETA " + format_duration(left * seconds_per_unit);
}
