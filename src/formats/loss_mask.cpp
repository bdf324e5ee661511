// loss_mask.cpp: see loss_mask.h.
#include "formats/loss_mask.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "core/dataloader.h"
#include "core/error.h"
#include "formats/token_files.h"
#include "formats/token_writer.h"
#include "platform/output_files.h"
#include "platform/util.h"

namespace {

bool is_mask_file(const std::string& path) {
    const std::vector<uint8_t> head = file_head_bytes(path, 4);
    int32_t magic = 0;
    if (head.size() == 4) memcpy(&magic, head.data(), 4);
    return magic == kLossMaskMagic;
}

uint64_t fingerprint_bits(const std::string& hex) { return strtoull(hex.c_str(), nullptr, 16); }

}  // namespace

const OutputKind kLossMaskKind = {"a loss mask", is_mask_file};

std::string lossmask_path(const std::string& token_path) {
    const size_t n = token_path.size();
    const bool bin = n > 4 && token_path.compare(n - 4, 4, ".bin") == 0;
    return (bin ? token_path.substr(0, n - 4) : token_path) + ".mask";
}

bool lossmask_check(const uint8_t* data, size_t n, size_t tokens, const std::string& fingerprint,
                    const std::string& where, std::string* err) {
    const char* w = where.c_str();
    char msg[512];
    int32_t h[6] = {0};  // magic, version, tokens, the fingerprint's two halves, -T
    if (n >= kTokenFileHeaderBytes) memcpy(h, data, sizeof(h));
    uint64_t tie = 0;
    memcpy(&tie, h + 3, sizeof(tie));
    const uint64_t want = fingerprint_bits(fingerprint);
    if (n < kTokenFileHeaderBytes)
        snprintf(msg, sizeof(msg), "loss mask too short (%s): expected a %zu-byte header, got %zu bytes", w,
                 kTokenFileHeaderBytes, n);
    else if (h[0] != kLossMaskMagic)
        snprintf(msg, sizeof(msg), "bad magic in loss mask (%s) at offset 0: expected %d, got %d", w, kLossMaskMagic,
                 h[0]);
    else if (h[1] != kLossMaskVersion)
        snprintf(msg, sizeof(msg), "unsupported loss mask version (%s) at offset 4: expected %d, got %d", w,
                 kLossMaskVersion, h[1]);
    else if (h[2] < 0 || (size_t)h[2] != tokens || n - kTokenFileHeaderBytes != tokens)
        snprintf(msg, sizeof(msg),
                 "loss mask does not match its token file (%s): expected %zu tokens, the header says %d and the "
                 "file holds %zu",
                 w, tokens, h[2], n - kTokenFileHeaderBytes);
    else if (h[5] != 0 && (h[5] < 2 || h[5] > (1 << 20)))  // tokenize --instructions -T takes 2..1048576
        snprintf(msg, sizeof(msg), "bad -T in loss mask (%s) at offset 20: expected 0 (not packed) or 2..%d, got %d", w,
                 1 << 20, h[5]);
    else if (tie != want)
        snprintf(msg, sizeof(msg),
                 "loss mask does not match its token file (%s): expected the token file's fingerprint %s, got %016llx "
                 "(the token file was written again since)",
                 w, fingerprint.c_str(), (unsigned long long)tie);
    else {
        const uint8_t* body = data + kTokenFileHeaderBytes;
        for (size_t i = 0; i < tokens; i++)
            if (body[i] > 1) {
                snprintf(msg, sizeof(msg), "bad byte in loss mask (%s) at byte offset %zu: expected 0 or 1, got %d", w,
                         kTokenFileHeaderBytes + i, body[i]);
                *err = msg;
                return false;
            }
        return true;
    }
    *err = msg;
    return false;
}

std::unique_ptr<OutputFile> lossmask_write(const std::string& path, const std::vector<uint8_t>& mask,
                                           const std::string& fingerprint, int T, bool publish) {
    int32_t header[kTokenFileHeaderInts] = {kLossMaskMagic, kLossMaskVersion, (int32_t)mask.size()};
    const uint64_t tie = fingerprint_bits(fingerprint);
    memcpy(header + 3, &tie, sizeof(tie));
    header[5] = T;
    return output_write(path, "loss mask", kLossMaskKind, {{header, sizeof(header)}, {mask.data(), mask.size()}},
                        publish);
}

PackWriter::PackWriter(const std::string& token_path, int T, int eot)
    : path_(token_path), T_((size_t)T), eot_((uint16_t)eot) {
    const std::vector<uint8_t> zeros(kTokenFileHeaderBytes, 0);  // the headers, filled in by finish()
    mask_.reset(new OutputFile(lossmask_path(token_path), "loss mask", kLossMaskKind));
    mask_->write(zeros.data(), zeros.size());
    tokens_.reset(new OutputFile(token_path, "token file", kTokenFileKind));
    tokens_->write(zeros.data(), zeros.size());
    window_.reserve(T_);
    window_mask_.reserve(T_);
}

void PackWriter::add(PackedExample e) {
    const uint64_t seq = next_seq_++;
    const size_t n = e.tokens.size();
    if (n <= T_ - 1) fitting_.insert({n, ~seq});
    else long_.push_back(seq);
    pending_.emplace(seq, std::move(e));
    while (pending_.size() >= kPackLookahead) place_one();  // the look-ahead refills with the next example
}

// One step of best fit: the longest pending example that fits the open slot's room (a fresh slot's when none is
// open), the first of equals; when none fits, the slot closes, and the first long example waiting takes slots of
// its own. A long example of a multiple of T tokens ending in <|endoftext|> fills its windows' targets exactly: that
// token, the last window's last target, is the next slot's first, and the slot stays open (carried) for the next.
void PackWriter::place_one() {
    const size_t room = slot_open_ ? room_ : T_ - 1;
    auto it = fitting_.upper_bound({room, UINT64_MAX});  // the first longer than room
    if (it != fitting_.begin()) {
        --it;
        const uint64_t seq = ~it->second;
        fitting_.erase(it);
        if (!slot_open_) emit(eot_, 0), slot_open_ = true, room_ = T_ - 1;  // a new slot
        room_ -= pending_.at(seq).tokens.size();
        put(seq);
        return;
    }
    const bool carried = slot_open_ && room_ == T_ - 1;  // the slot holds only its first token, a long one's last
    if (slot_open_ && !(carried && !long_.empty())) pad_to_slot();
    slot_open_ = false;
    if (long_.empty()) return;
    const uint64_t seq = long_.front();
    long_.pop_front();
    if (!carried) emit(eot_, 0);
    const size_t n = pending_.at(seq).tokens.size();
    const bool ends_eot = pending_.at(seq).tokens.back() == eot_;
    put(seq);
    if (n > T_) stats_.split++;  // its targets fall into more than one window
    if (ends_eot && stats_.written % T_ == 1) slot_open_ = true, room_ = T_ - 1;  // carried
    else pad_to_slot();
}

void PackWriter::put(uint64_t seq) {
    auto node = pending_.find(seq);
    const PackedExample& e = node->second;
    for (size_t i = 0; i < e.tokens.size(); i++) emit(e.tokens[i], e.scored[i]);
    stats_.examples++;
    stats_.example_tokens += e.tokens.size();
    for (uint8_t m : e.scored) stats_.scored += m;
    pending_.erase(node);
}

// Not scored: padding to the end of the slot.
void PackWriter::pad_to_slot() {
    while (stats_.written % T_ != 0) emit(eot_, 0);
}

void PackWriter::emit(uint16_t token, uint8_t scored) {
    if (stats_.written == (size_t)INT32_MAX)
        fatal("too many tokens for one token file (%s): expected at most %d", path_.c_str(), INT32_MAX);
    window_.push_back(token);
    window_mask_.push_back(scored);
    stats_.written++;
    if (window_.size() == T_) flush();
}

void PackWriter::flush() {
    const size_t bytes = window_.size() * sizeof(uint16_t), edge = kTokenFileFingerprintEdge;
    const uint8_t* p = reinterpret_cast<const uint8_t*>(window_.data());
    const size_t to_head = std::min(bytes, 2 * edge - std::min(head_.size(), 2 * edge));
    head_.insert(head_.end(), p, p + to_head);
    tail_.insert(tail_.end(), p, p + bytes);
    if (tail_.size() > 2 * edge) tail_.erase(tail_.begin(), tail_.end() - (long)edge);
    tokens_->write(window_.data(), bytes);
    mask_->write(window_mask_.data(), window_mask_.size());
    window_.clear();
    window_mask_.clear();
}

std::vector<std::unique_ptr<OutputFile>> PackWriter::finish() {
    while (!pending_.empty()) place_one();
    if (slot_open_ && room_ == T_ - 1) {  // carried: the last example's <|endoftext|> is the last window's last target
        stats_.windows = (stats_.written - 1) / T_;
    } else {
        if (slot_open_) pad_to_slot();
        stats_.windows = stats_.written / T_;
        emit(eot_, 0);  // the last window's last target
    }
    flush();
    int32_t header[kTokenFileHeaderInts] = {kTokenFileMagic, kTokenFileVersion, (int32_t)stats_.written};
    const size_t n = stats_.written * 2;
    const std::string fingerprint = tokenfile_fingerprint_edges(
        stats_.written, header, head_.data(), n > 2 * kTokenFileFingerprintEdge ? tail_.data() + tail_.size() - kTokenFileFingerprintEdge : nullptr);
    tokens_->write_at(header, sizeof(header), 0);
    int32_t mask_header[kTokenFileHeaderInts] = {kLossMaskMagic, kLossMaskVersion, (int32_t)stats_.written};
    const uint64_t tie = fingerprint_bits(fingerprint);
    memcpy(mask_header + 3, &tie, sizeof(tie));
    mask_header[5] = (int32_t)T_;
    mask_->write_at(mask_header, sizeof(mask_header), 0);
    tokens_->close();
    mask_->close();
    std::vector<std::unique_ptr<OutputFile>> staged;
    staged.push_back(std::move(mask_));
    staged.push_back(std::move(tokens_));
    return staged;
}
