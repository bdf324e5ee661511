// llmc.cpp: see llmc.h. Reference: llm.c's train_gpt2.py (write_model) and train_gpt2.c
// (gpt2_build_from_checkpoint) for the header fields and tensor order.
#include "formats/llmc.h"


#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "platform/platform.h"
#include "core/safetensors.h"
#include "precision/half.h"
#include "platform/util.h"

namespace {

const size_t kHeaderInts = 256;

// Calls f(our_offset, count) for every tensor, in the file's order: wte, wpe, each block tensor for all
// layers in turn (all ln1w, then all ln1b, ...), lnfw, lnfb.
template <typename F>
void for_each_run(const std::vector<TensorInfo>& table, F f) {
    std::vector<size_t> order;
    for (size_t i = 0; i < table.size(); i++)  // wte, wpe
        if (table[i].layer < 0 && (table[i].name == "wte" || table[i].name == "wpe")) order.push_back(i);
    for (int k = 0; k < 12; k++)
        for (size_t i = 0; i < table.size(); i++)
            if (table[i].slot == k) order.push_back(i);
    for (size_t i = 0; i < table.size(); i++)  // lnfw, lnfb
        if (table[i].layer < 0 && table[i].name != "wte" && table[i].name != "wpe") order.push_back(i);
    assert(order.size() == table.size());
    for (size_t i : order) f(table[i].offset, table[i].numel());
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
                dst[i] = bf16_to_float(b);
            }
        }
        src += count * esize;
    });
    *cfg = c;
    return true;
}

void llmc_read_params(const std::string& path, const GPT2Config& cfg, int version, uint64_t file_ino, float* params) {
    FILE* f = os_fopen_read_file(path);
    if (!f || fseek(f, kHeaderInts * 4, SEEK_SET) != 0) fatal("cannot open %s: %s", path.c_str(), strerror(errno));
    input_note_fd(fileno(f));
    FileInfo now;  // a file replaced since its header was read must not give a model made of two files
    const size_t want = kHeaderInts * 4 + layout_params_size(layout_params(cfg)) * (version == 3 ? 4 : 2);
    if (!os_fstat(fileno(f), &now) || now.ino != file_ino || (size_t)now.size != want) {
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
            for (size_t i = 0; ok && i < n; i++) dst[done + i] = bf16_to_float(chunk[i]);
        }
    });
    fclose(f);
    if (!ok) fatal("cannot read %s: the file is shorter than its header says", path.c_str());
}

bool llmc_is_checkpoint_file(const std::string& path) {
    const std::vector<uint8_t> head = file_head_bytes(path, 4);
    return llmc_detect(head.data(), head.size());
}

const OutputKind kLlmcKind = {"an llm.c checkpoint", llmc_is_checkpoint_file};

void llmc_save(const GPT2& model, const std::string& path, int version, const char* flag) {
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
                uint16_t b = bf16_round(src[i]);
                if (!std::isfinite(bf16_to_float(b)))
                    fatal("value out of BF16 range (%s): parameter %zu is %g", path.c_str(), offset + i, src[i]);
                memcpy(dst + 2 * i, &b, 2);
            }
        }
        dst += count * esize;
    });
    output_write(path, flag, kLlmcKind, {{header, sizeof(header)}, {body.data(), body.size()}});
}

bool llmc_state_detect(const uint8_t* data, size_t n) {
    int32_t magic;
    if (n < 4) return false;
    memcpy(&magic, data, 4);
    return magic == kLlmcStateMagic;
}

void llmc_state_load(const std::string& path, const GPT2Config& cfg, LlmcState* st) {
    const char* p = path.c_str();
    FILE* f = os_fopen_read_file(p);
    FileInfo sb;
    if (!f || !os_fstat(fileno(f), &sb) || sb.kind != FileKind::regular) {
        if (f) fclose(f);
        fatal("cannot read llm.c debug state %s: %s", p, f ? "expected a regular file" : strerror(errno));
    }
    struct Closer {
        FILE* f;
        ~Closer() { fclose(f); }
    } closer{f};
    const size_t file_size = (size_t)sb.size;
    int32_t h[kHeaderInts];
    if (fread(h, 4, kHeaderInts, f) != kHeaderInts)
        fatal("bad llm.c debug state %s: shorter than the 1024-byte header", p);
    if (h[0] != kLlmcStateMagic) fatal("bad llm.c debug state %s: magic %d, expected %d", p, h[0], kLlmcStateMagic);
    if (h[1] != 2)
        fatal("bad llm.c debug state %s: version %d, expected 2 (re-run llm.c's train_gpt2.py to write it)", p, h[1]);
    const int B = h[2], T = h[3];
    if (B < 1 || B > (1 << 16) || T < 1 || T > cfg.max_seq_len)
        fatal("bad llm.c debug state %s: B %d, T %d; expected B >= 1 and 1 <= T <= %d (the model's context)", p, B, T,
              cfg.max_seq_len);
    const size_t BT = (size_t)B * T, V = cfg.vocab_size, C = cfg.channels, Vp = cfg.padded_vocab_size;
    const std::vector<TensorInfo> table = layout_params(cfg);
    const size_t nparams = layout_params_size(table), fixed = kHeaderInts * 4 + 2 * BT * 4 + BT * V * 4 + 4;
    const size_t want = fixed + nparams * 4;
    if (file_size != want) {
        // Name the likely cause: a wte gradient padded to another Vp, or a file cut short.
        const size_t others = (nparams - Vp * C) * 4;
        const size_t rest = file_size > fixed + others ? file_size - fixed - others : 0;
        if (rest && rest % (4 * C) == 0 && rest / (4 * C) >= V)
            fatal_hint("give --model the checkpoint the state was written with",
                       "the llm.c debug state %s does not fit the model: wte's gradient is padded to %zu rows, "
                       "expected the model's Vp %zu", p, rest / (4 * C), Vp);
        fatal_hint("give --model the checkpoint the state was written with, and a whole file",
                   "the llm.c debug state %s does not fit the model: %zu bytes, expected %zu for B=%d, T=%d and this "
                   "model (V=%zu, Vp=%zu)%s", p, file_size, want, B, T, V, Vp, file_size < want ? " (truncated?)" : "");
    }
    memory_check((double)BT * V * 4 + (double)nparams * 4, "the llm.c debug state " + path,
                 "a dump of a smaller batch (B, T)");
    st->B = B, st->T = T;
    st->x.resize(BT), st->y.resize(BT), st->logits.resize(BT * V), st->grads.resize(nparams);
    bool ok = fread(st->x.data(), 4, BT, f) == BT && fread(st->y.data(), 4, BT, f) == BT &&
              fread(st->logits.data(), 4, BT * V, f) == BT * V && fread(&st->loss, 4, 1, f) == 1;
    for_each_run(
        table, [&](size_t offset, size_t count) { ok = ok && fread(st->grads.data() + offset, 4, count, f) == count; });
    if (!ok) fatal("cannot read llm.c debug state %s: the file changed or is shorter than its size said", p);
    for (size_t i = 0; i < BT; i++)
        if (st->x[i] < 0 || (size_t)st->x[i] >= V || st->y[i] < 0 || (size_t)st->y[i] >= V)
            fatal("bad llm.c debug state %s: token %d / target %d at position %zu, expected 0..%zu", p, st->x[i],
                  st->y[i], i, V - 1);
    for (size_t i = 0; i <= st->logits.size(); i++) {
        const float v = i < st->logits.size() ? st->logits[i] : st->loss;
        if (!std::isfinite(v)) fatal("bad llm.c debug state %s: non-finite logit or loss (%g)", p, v);
    }
    for (const TensorInfo& t : table)
        for (size_t j = 0; j < t.numel(); j++)
            if (!std::isfinite(st->grads[t.offset + j]))
                fatal("bad llm.c debug state %s: non-finite gradient of %s (%g)", p, t.hf_name.c_str(),
                      st->grads[t.offset + j]);
}
