// infer.cpp: see infer.h. Shapes: n new rows, C channels, positions p0..p0+n-1 with p0 = st->len.
#include "infer.h"

#include <cmath>
#include <cstring>
#include <utility>

#include "layers.h"
#include "util.h"

namespace {

typedef float v16 __attribute__((vector_size(64)));

// out (OC) = W (OC, IC) x (IC) + b: one row streams every weight once, so it is a memory-bound dot
// product per output, not a packed gemm.
void linear_row(float* out, const float* x, const float* W, const float* b, int IC, int OC) {
#pragma omp parallel for schedule(static)
    for (int j = 0; j < OC; j++) {
        const float* w = W + (size_t)j * IC;
        v16 acc0 = v16{}, acc1 = v16{};
        int i = 0;
        for (; i + 32 <= IC; i += 32) {
            v16 w0, w1, x0, x1;
            memcpy(&w0, w + i, 64), memcpy(&w1, w + i + 16, 64);
            memcpy(&x0, x + i, 64), memcpy(&x1, x + i + 16, 64);
            acc0 += w0 * x0;
            acc1 += w1 * x1;
        }
        v16 acc = acc0 + acc1;
        float sum = 0;
        for (int l = 0; l < 16; l++) sum += acc[l];
        for (; i < IC; i++) sum += w[i] * x[i];
        out[j] = b ? sum + b[j] : sum;
    }
}

void linear(float* out, const float* x, const float* W, const float* b, int n, int IC, int OC) {
    if (n == 1) linear_row(out, x, W, b, IC, OC);
    else matmul_forward(out, x, W, b, n, IC, OC);
}

// Causal attention of n new queries (rows of qkv) over the cache of layer l, positions 0..p0+i.
void attention_cached(float* out, float* scores, const float* qkv, const float* kc, const float* vc, int n, int p0,
                      int C, int NH, int max_len) {
    const int HS = C / NH;
    const float scale = 1.0f / sqrtf((float)HS);
#pragma omp parallel for collapse(2) schedule(static)
    for (int i = 0; i < n; i++)
        for (int h = 0; h < NH; h++) {
            const float* q = qkv + (size_t)i * 3 * C + h * HS;
            float* s = scores + ((size_t)i * NH + h) * max_len;
            const int len = p0 + i + 1;
            float smax = -INFINITY;
            for (int t = 0; t < len; t++) {
                const float* k = kc + (size_t)t * C + h * HS;
                float d = 0;
                for (int c = 0; c < HS; c++) d += q[c] * k[c];
                s[t] = d * scale;
                smax = s[t] > smax ? s[t] : smax;
            }
            float sum = 0;
            for (int t = 0; t < len; t++) sum += (s[t] = expf(s[t] - smax));
            float inv = 1.0f / sum;
            float* o = out + (size_t)i * C + h * HS;
            for (int c = 0; c < HS; c++) o[c] = 0;
            for (int t = 0; t < len; t++) {
                const float* v = vc + (size_t)t * C + h * HS;
                float p = s[t] * inv;
                for (int c = 0; c < HS; c++) o[c] += p * v[c];
            }
        }
}

}  // namespace

double infer_memory_bytes(const GPT2Config& cfg, int max_len, int max_rows) {
    const double C = cfg.channels;
    // cache; scratch rows (x, x_next, ln, qkv, atty, proj, fch, fch_gelu, lnf: 16 C, mean and rstd); scores
    return 4.0 * (2.0 * cfg.num_layers * max_len * C + max_rows * (16.0 * C + 2) + (double)max_rows * cfg.num_heads * max_len);
}

void infer_init(InferState* st, const GPT2& model, int max_len, int max_rows) {
    const GPT2Config& cfg = model.cfg;
    if (max_len < 1 || max_len > cfg.max_seq_len)
        fatal("bad cache length: expected 1..%d (the model's context), got %d", cfg.max_seq_len, max_len);
    if (max_rows < 1 || max_rows > max_len) fatal("bad batch of positions: expected 1..%d, got %d", max_len, max_rows);
    const size_t C = cfg.channels, rows = (size_t)max_rows;
    memory_check(infer_memory_bytes(cfg, max_len, max_rows), "KV cache of " + std::to_string(max_len) + " positions",
                 "generate fewer tokens");
    st->max_len = max_len;
    st->max_rows = max_rows;
    st->len = 0;
    st->k.assign((size_t)cfg.num_layers * max_len * C, 0.0f);
    st->v.assign((size_t)cfg.num_layers * max_len * C, 0.0f);
    st->x.assign(rows * C, 0.0f);
    st->x_next.assign(rows * C, 0.0f);
    st->ln.assign(rows * C, 0.0f);
    st->qkv.assign(rows * 3 * C, 0.0f);
    st->atty.assign(rows * C, 0.0f);
    st->proj.assign(rows * C, 0.0f);
    st->fch.assign(rows * 4 * C, 0.0f);
    st->fch_gelu.assign(rows * 4 * C, 0.0f);
    st->lnf.assign(rows * C, 0.0f);
    st->mean.assign(rows, 0.0f);
    st->rstd.assign(rows, 0.0f);
    st->scores.assign(rows * cfg.num_heads * max_len, 0.0f);
}

void infer_forward(InferState* st, const GPT2& model, const int* tokens, int n, float* logits, bool all_logits) {
    const GPT2Config& cfg = model.cfg;
    const int C = cfg.channels, NH = cfg.num_heads, p0 = st->len;
    if (n < 1 || p0 + n > st->max_len || n > st->max_rows)
        fatal("context full: %d + %d tokens exceed the cache of %d positions", p0, n, st->max_len);
    const ParamViews& p = model.p;
    // the residual stream ping-pongs between two buffers so that no kernel writes its own input
    float* x = st->x.data();
    float* x_next = st->x_next.data();
    for (int i = 0; i < n; i++) {
        if (tokens[i] < 0 || tokens[i] >= cfg.vocab_size)
            fatal("token %d out of range: expected 0..%d", tokens[i], cfg.vocab_size - 1);
        const float* te = p.wte + (size_t)tokens[i] * C;
        const float* pe = p.wpe + (size_t)(p0 + i) * C;
        for (int c = 0; c < C; c++) x[(size_t)i * C + c] = te[c] + pe[c];
    }
    for (int l = 0; l < cfg.num_layers; l++) {
        const LayerParams& lp = p.layers[l];
        float* kc = st->k.data() + (size_t)l * st->max_len * C;
        float* vc = st->v.data() + (size_t)l * st->max_len * C;
        // x = x + attn(ln_1(x)), with this step's keys and values appended to the cache
        layernorm_forward(st->ln.data(), st->mean.data(), st->rstd.data(), x, lp.ln1w, lp.ln1b, n, C);
        linear(st->qkv.data(), st->ln.data(), lp.qkvw, lp.qkvb, n, C, 3 * C);
        for (int i = 0; i < n; i++) {
            memcpy(kc + (size_t)(p0 + i) * C, st->qkv.data() + (size_t)i * 3 * C + C, C * sizeof(float));
            memcpy(vc + (size_t)(p0 + i) * C, st->qkv.data() + (size_t)i * 3 * C + 2 * C, C * sizeof(float));
        }
        attention_cached(st->atty.data(), st->scores.data(), st->qkv.data(), kc, vc, n, p0, C, NH, st->max_len);
        linear(st->proj.data(), st->atty.data(), lp.attprojw, lp.attprojb, n, C, C);
        residual_forward(x_next, x, st->proj.data(), (size_t)n * C);
        std::swap(x, x_next);
        // x = x + mlp(ln_2(x))
        layernorm_forward(st->ln.data(), st->mean.data(), st->rstd.data(), x, lp.ln2w, lp.ln2b, n, C);
        linear(st->fch.data(), st->ln.data(), lp.fcw, lp.fcb, n, C, 4 * C);
        gelu_forward(st->fch_gelu.data(), st->fch.data(), (size_t)n * 4 * C);
        linear(st->proj.data(), st->fch_gelu.data(), lp.fcprojw, lp.fcprojb, n, 4 * C, C);
        residual_forward(x_next, x, st->proj.data(), (size_t)n * C);
        std::swap(x, x_next);
    }
    const int first = all_logits ? 0 : n - 1, rows = n - first;
    layernorm_forward(st->lnf.data(), st->mean.data(), st->rstd.data(), x + (size_t)first * C, p.lnfw, p.lnfb, rows, C);
    linear(logits, st->lnf.data(), p.wte, nullptr, rows, C, cfg.padded_vocab_size);
    st->len += n;
}
