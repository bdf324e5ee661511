// token_writer.h: writes a stream of tokens as a sequence of llm.c token files (tokenfile.h's format),
// file k holding capacity(k) tokens before the next one starts: llm.c's shards, or tokenize's val/train
// pair. Each file is written to a staged temporary beside it (header count filled in at the end) and
// renamed into place whole, so neither an error (fatal) nor SIGINT/SIGTERM/SIGHUP leaves a half-written
// file; it never replaces a file that is not a token file. It does not read token files (tokenfile.h).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/util.h"

class TokenFileWriter {
public:
    // `flag` names the option that chose the paths in messages ("--output (tokenize)"). With
    // publish_at_end every file stays staged until finish(), so a failure publishes none of them;
    // otherwise a full file is published as soon as a token for the next one arrives.
    TokenFileWriter(std::function<std::string(int)> path_of, std::function<int64_t(int)> capacity, std::string flag,
                    bool publish_at_end);
    ~TokenFileWriter();
    TokenFileWriter(const TokenFileWriter&) = delete;
    TokenFileWriter& operator=(const TokenFileWriter&) = delete;

    // Fatal naming `flag` when path_of(k) exists and is not a token file (checked again on opening it).
    void check_replaceable(int k) const;
    void append(const int* ids, size_t n);
    // Publishes what is staged; returns the number of files written (the last may be partly filled).
    int finish();
    int files() const { return index_ + 1; }  // started so far
    int64_t tokens() const { return total_; }
    int64_t tokens_in_current() const { return count_; }

private:
    void open_file();
    void close_file();  // header, fsync, close; the file stays staged
    void flush();
    void publish_staged();

    std::function<std::string(int)> path_of_;
    std::function<int64_t(int)> capacity_;
    std::string flag_;
    bool publish_at_end_;
    int index_ = -1;
    int fd_ = -1;
    int64_t count_ = 0, total_ = 0;
    std::string path_, staged_path_;
    std::vector<uint16_t> buf_;
    std::vector<std::pair<std::string, std::string>> staged_;  // (temporary, final path), closed
    FatalCleanup cleanup_;
};
