// loss_mask.cpp: see loss_mask.h.
#include "formats/loss_mask.h"

#include <cstdlib>
#include <cstring>

#include "core/dataloader.h"
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
    int32_t h[5] = {0};
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

void pack_examples(const std::vector<PackedExample>& examples, int T, int eot, std::vector<int>* tokens,
                   std::vector<uint8_t>* mask, PackStats* stats) {
    *stats = PackStats();
    const size_t room = (size_t)T - 1;  // a slot's tokens after its leading <|endoftext|>
    auto put = [&](const PackedExample& e) {
        tokens->insert(tokens->end(), e.tokens.begin(), e.tokens.end());
        mask->insert(mask->end(), e.scored.begin(), e.scored.end());
        stats->examples++;
        stats->example_tokens += e.tokens.size();
        for (uint8_t m : e.scored) stats->scored += m;
    };
    auto pad_to_slot = [&] {  // not scored: padding, or the next slot's leading <|endoftext|>
        while (tokens->size() % (size_t)T != 0) tokens->push_back(eot), mask->push_back(0);
    };
    std::vector<size_t> pending, long_ones;  // indices, in input order
    size_t next = 0;
    for (;;) {
        while (pending.size() < kPackLookahead && next < examples.size()) {
            if (examples[next].tokens.size() <= room) pending.push_back(next);
            else long_ones.push_back(next);
            next++;
        }
        if (pending.empty()) break;
        tokens->push_back(eot), mask->push_back(0);  // a new slot
        size_t space = room;
        for (;;) {  // best fit: the longest pending example that fits, the first of equals
            size_t best = SIZE_MAX;
            for (size_t k = 0; k < pending.size(); k++) {
                const size_t n = examples[pending[k]].tokens.size();
                if (n <= space && (best == SIZE_MAX || n > examples[pending[best]].tokens.size())) best = k;
            }
            if (best == SIZE_MAX) break;
            put(examples[pending[best]]);
            space -= examples[pending[best]].tokens.size();
            pending.erase(pending.begin() + (long)best);
        }
        pad_to_slot();
    }
    for (size_t i : long_ones) {
        tokens->push_back(eot), mask->push_back(0);
        put(examples[i]);
        stats->split++;
        pad_to_slot();
    }
    stats->windows = tokens->size() / (size_t)T;
    tokens->push_back(eot), mask->push_back(0);
    stats->written = tokens->size();
}
