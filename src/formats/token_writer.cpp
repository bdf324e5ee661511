// token_writer.cpp: see token_writer.h.
#include "formats/token_writer.h"

#include <cassert>
#include <climits>
#include <cstring>

#include "core/dataloader.h"
#include "platform/util.h"

const OutputKind kTokenFileKind = {"a token file", tokenfile_is_token_file};

std::unique_ptr<OutputFile> tokenfile_write(const std::string& path, const std::vector<int>& tokens, bool publish) {
    int32_t header[kTokenFileHeaderInts] = {0};
    header[0] = kTokenFileMagic;
    header[1] = kTokenFileVersion;
    header[2] = (int32_t)tokens.size();
    std::vector<uint16_t> data(tokens.size());
    for (size_t i = 0; i < tokens.size(); i++) {
        if (tokens[i] < 0 || tokens[i] > 65535)
            fatal("token %d at index %zu does not fit uint16 (%s)", tokens[i], i, path.c_str());
        data[i] = (uint16_t)tokens[i];
    }
    return output_write(path, "token file", kTokenFileKind,
                        {{header, sizeof(header)}, {data.data(), data.size() * sizeof(uint16_t)}}, publish);
}

bool tokenfile_is_token_file(const std::string& path) {
    const std::vector<uint8_t> head = file_head_bytes(path, 4);
    int32_t magic = 0;
    if (head.size() == 4) memcpy(&magic, head.data(), 4);
    return magic == kTokenFileMagic;
}

namespace {

const size_t kBufferTokens = 1 << 19;

// The header as written at the start (count 0: the magic marks the staged file as a token file, so a run
// killed mid-write leaves a temporary the next run can recognise and remove) and patched at the end.
void write_header(OutputFile* f, int64_t count, bool patch) {
    int32_t header[kTokenFileHeaderInts] = {kTokenFileMagic, kTokenFileVersion, (int32_t)count};
    if (patch) f->write_at(header, 3 * sizeof(int32_t), 0);
    else f->write(header, sizeof(header));
}

}  // namespace

TokenFileWriter::TokenFileWriter(std::function<std::string(int)> path_of, std::function<int64_t(int)> capacity,
                                 std::string flag, bool publish_at_end)
    : path_of_(std::move(path_of)),
      capacity_(std::move(capacity)),
      flag_(std::move(flag)),
      publish_at_end_(publish_at_end) {
    buf_.reserve(kBufferTokens);
}

void TokenFileWriter::check_replaceable(int k) const { output_check(path_of_(k), flag_.c_str(), kTokenFileKind); }

void TokenFileWriter::open_file() {
    index_++;
    const int64_t cap = capacity_(index_);
    assert(cap >= 0 && cap <= INT32_MAX);
    file_.reset(new OutputFile(path_of_(index_), flag_.c_str(), kTokenFileKind));
    count_ = 0;
    write_header(file_.get(), 0, false);
}

void TokenFileWriter::flush() {
    if (!buf_.empty()) file_->write(buf_.data(), buf_.size() * sizeof(uint16_t));
    buf_.clear();
}

void TokenFileWriter::close_file() {
    flush();
    write_header(file_.get(), count_, true);
    file_->close();
    staged_.push_back(std::move(file_));
}

void TokenFileWriter::publish_staged() {
    for (auto& f : staged_) {
        f->publish();
        published_++;
    }
    staged_.clear();
}

void TokenFileWriter::append(const int* ids, size_t n) {
    while (n > 0) {
        if (index_ < 0 || count_ == capacity_(index_)) {
            if (index_ >= 0) {
                close_file();
                if (!publish_at_end_) publish_staged();
            }
            open_file();
            continue;
        }
        size_t k = (size_t)std::min<int64_t>((int64_t)n, capacity_(index_) - count_);
        for (size_t i = 0; i < k; i++) {
            if (ids[i] < 0 || ids[i] > 65535)
                fatal("token %d does not fit uint16 (%s)", ids[i], file_->path().c_str());
            buf_.push_back((uint16_t)ids[i]);
            if (buf_.size() == kBufferTokens) flush();
        }
        count_ += (int64_t)k;
        total_ += (int64_t)k;
        ids += k;
        n -= k;
    }
}

int TokenFileWriter::finish() {
    if (index_ < 0) open_file();
    close_file();
    publish_staged();
    return index_ + 1;
}
