// llmc.cpp: see llmc.h. Reference: llm.c's train_gpt2.py (write_model) and train_gpt2.c
// (gpt2_build_from_checkpoint) for the header fields and tensor order.
#include "io/llmc.h"

#include <sys/stat.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "base/safetensors.h"
#include "base/util.h"

namespace {

const size_t kHeaderInts = 256;

// Calls f(our_offset, count) for every tensor, in the file's order (layout_llmc_order).
template <typename F>
void for_each_run(const std::vector<TensorInfo>& table, F f) {
    for (size_t i : layout_llmc_order(table)) f(table[i].offset, table[i].numel());
}

}  // namespace

bool llmc_detect(const uint8_t* data, size_t n) {
    int32_t magic;
    if (n < 4) return false;
    memcpy(&magic, data, 4);
    return magic == kLlmcMagic;
}

bool llmc_parse_header(const uint8_t* data, size_t n, size_t file_size, GPT2Config* cfg, int* version,
                       std::string* err) {
    if (n < kHeaderInts * 4 || file_size < kHeaderInts * 4) {
        *err = "file shorter than the 1024-byte header";
        return false;
    }
    int32_t h[8];
    memcpy(h, data, sizeof(h));
    if (h[0] != kLlmcMagic) {
        *err = "bad magic " + std::to_string(h[0]) + ", expected " + std::to_string(kLlmcMagic);
        return false;
    }
    if (h[1] != 3 && h[1] != 5) {
        *err = "unsupported version " + std::to_string(h[1]) + ", expected 3 (fp32) or 5 (bf16)";
        return false;
    }
    GPT2Config c;
    c.max_seq_len = h[2], c.vocab_size = h[3], c.num_layers = h[4], c.num_heads = h[5], c.channels = h[6];
    c.padded_vocab_size = h[7];
    if (c.max_seq_len < 1 || c.max_seq_len > (1 << 20) || c.vocab_size < 1 || c.vocab_size > (1 << 24) ||
        c.num_layers < 1 || c.num_layers > 1000 || c.channels < 1 || c.channels > 65536 || c.num_heads < 1 ||
        c.channels % c.num_heads != 0 || c.padded_vocab_size < c.vocab_size || c.padded_vocab_size > (1 << 24)) {
        *err = "bad geometry in header: maxT " + std::to_string(h[2]) + ", V " + std::to_string(h[3]) + ", L " +
               std::to_string(h[4]) + ", NH " + std::to_string(h[5]) + ", C " + std::to_string(h[6]) + ", Vp " +
               std::to_string(h[7]);
        return false;
    }
    std::vector<TensorInfo> table = layout_params(c);
    const size_t nparams = layout_params_size(table), esize = h[1] == 3 ? 4 : 2;
    const size_t want = kHeaderInts * 4 + nparams * esize;
    if (file_size != want) {
        *err = "size " + std::to_string(file_size) + " bytes does not match the header's geometry, which needs " +
               std::to_string(want) + (file_size < want ? " (truncated)" : "");
        return false;
    }
    *cfg = c;
    *version = h[1];
    return true;
}

bool llmc_parse(const std::vector<uint8_t>& bytes, GPT2Config* cfg, std::vector<float>* params, int* version,
                std::string* err) {
    GPT2Config c;
    if (!llmc_parse_header(bytes.data(), bytes.size(), bytes.size(), &c, version, err)) return false;
    std::vector<TensorInfo> table = layout_params(c);
    const size_t n = layout_params_size(table), esize = *version == 3 ? 4 : 2;
    params->assign(n, 0.0f);
    const uint8_t* src = bytes.data() + kHeaderInts * 4;
    for_each_run(table, [&](size_t offset, size_t count) {
        float* dst = params->data() + offset;
        if (esize == 4) {
            memcpy(dst, src, count * 4);
        } else {
            for (size_t i = 0; i < count; i++) {
                uint16_t b;
                memcpy(&b, src + 2 * i, 2);
                dst[i] = bf16_to_f32(b);
            }
        }
        src += count * esize;
    });
    *cfg = c;
    return true;
}

void llmc_read_params(const std::string& path, const GPT2Config& cfg, int version, uint64_t file_ino, float* params) {
    FILE* f = fopen(path.c_str(), "rb");
    if (!f || fseek(f, kHeaderInts * 4, SEEK_SET) != 0) fatal("cannot open %s: %s", path.c_str(), strerror(errno));
    struct stat now;  // a file replaced since its header was read must not give a model made of two files
    const size_t want = kHeaderInts * 4 + layout_params_size(layout_params(cfg)) * (version == 3 ? 4 : 2);
    if (fstat(fileno(f), &now) != 0 || (uint64_t)now.st_ino != file_ino || (size_t)now.st_size != want) {
        fclose(f);
        fatal("file changed while loading (%s): expected the file its header was read from", path.c_str());
    }
    std::vector<uint16_t> chunk(version == 5 ? (size_t)1 << 20 : 0);
    bool ok = true;
    for_each_run(layout_params(cfg), [&](size_t offset, size_t count) {
        float* dst = params + offset;
        if (version == 3) {  // fp32 goes straight into place
            ok = ok && fread(dst, 4, count, f) == count;
            return;
        }
        for (size_t done = 0; ok && done < count; done += chunk.size()) {
            const size_t n = std::min(chunk.size(), count - done);
            ok = fread(chunk.data(), 2, n, f) == n;
            for (size_t i = 0; ok && i < n; i++) dst[done + i] = bf16_to_f32(chunk[i]);
        }
    });
    fclose(f);
    if (!ok) fatal("cannot read %s: the file is shorter than its header says", path.c_str());
}

bool llmc_is_checkpoint_file(const std::string& path) {
    const std::vector<uint8_t> head = file_head_bytes(path, 4);
    return llmc_detect(head.data(), head.size());
}

void llmc_save(const GPT2& model, const std::string& path, int version) {
    assert((version == 3 || version == 5) && "llmc_save version");
    const GPT2Config& c = model.cfg;
    int32_t header[kHeaderInts] = {0};
    header[0] = kLlmcMagic, header[1] = version, header[2] = c.max_seq_len, header[3] = c.vocab_size;
    header[4] = c.num_layers, header[5] = c.num_heads, header[6] = c.channels, header[7] = c.padded_vocab_size;
    const size_t esize = version == 3 ? 4 : 2;
    std::vector<uint8_t> body(model.num_params * esize);
    uint8_t* dst = body.data();
    for_each_run(model.param_table, [&](size_t offset, size_t count) {
        const float* src = model.params.data() + offset;
        for (size_t i = 0; i < count; i++)
            if (!std::isfinite(src[i]))
                fatal("not saving non-finite weights (%s): parameter %zu is %g", path.c_str(), offset + i, src[i]);
        if (esize == 4) {
            memcpy(dst, src, count * 4);
        } else {
            for (size_t i = 0; i < count; i++) {
                uint16_t b = f32_to_bf16(src[i]);
                if (!std::isfinite(bf16_to_f32(b)))
                    fatal("value out of BF16 range (%s): parameter %zu is %g", path.c_str(), offset + i, src[i]);
                memcpy(dst + 2 * i, &b, 2);
            }
        }
        dst += count * esize;
    });
    file_write_atomic(path, {{header, sizeof(header)}, {body.data(), body.size()}});
}
