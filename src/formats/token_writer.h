// token_writer.h: writes a stream of tokens as a sequence of llm.c token files (core/dataloader.h's format),
// file k holding capacity(k) tokens before the next one starts: llm.c's shards, or tokenize's val/train
// pair. Each file is a output_files.h OutputFile (staged beside its path, the header's count filled in at the
// end, renamed into place whole), so neither an error nor a signal leaves a half-written file, and it
// replaces only token files. It does not read token files (core/dataloader.h, token_files.h).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "platform/output_files.h"

// Writes one token file atomically, replacing only a token file; ids must be < 65536 (fatal otherwise,
// naming the path). publish false: the file is left staged, returned for the caller to publish.
std::unique_ptr<OutputFile> tokenfile_write(const std::string& path, const std::vector<int>& tokens,
                                            bool publish = true);
// True when `path` is a regular file starting with the token file magic (tokenize may replace it).
bool tokenfile_is_token_file(const std::string& path);
extern const OutputKind kTokenFileKind;  // what token file outputs may replace

class TokenFileWriter {
public:
    // `flag` names the option that chose the paths in messages ("--output (tokenize)"). With
    // publish_at_end every file stays staged until finish(), so a failure publishes none of them;
    // otherwise a full file is published as soon as a token for the next one arrives.
    TokenFileWriter(std::function<std::string(int)> path_of, std::function<int64_t(int)> capacity, std::string flag,
                    bool publish_at_end);

    // Fatal naming `flag` when path_of(k) may not be replaced (output_files.h's output_check).
    void check_replaceable(int k) const;
    void append(const int* ids, size_t n);
    // Publishes what is staged; returns the number of files written (the last may be partly filled).
    int finish();
    int files() const { return index_ + 1; }  // started so far
    int published() const { return published_; }
    int64_t tokens() const { return total_; }
    int64_t tokens_in_current() const { return count_; }

private:
    void open_file();
    void close_file();  // header count, fsync; the file stays staged
    void flush();
    void publish_staged();

    std::function<std::string(int)> path_of_;
    std::function<int64_t(int)> capacity_;
    std::string flag_;
    bool publish_at_end_;
    int index_ = -1, published_ = 0;
    int64_t count_ = 0, total_ = 0;
    std::unique_ptr<OutputFile> file_;                  // being written
    std::vector<std::unique_ptr<OutputFile>> staged_;  // closed, not yet published
    std::vector<uint16_t> buf_;
};
