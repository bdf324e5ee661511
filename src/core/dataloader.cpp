// dataloader.cpp: see dataloader.h.
#include "core/dataloader.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <utility>

#include "core/error.h"

// Formats like printf into *err and returns false, so each check below is one line.
__attribute__((format(printf, 2, 3))) static bool tokenfile_fail(std::string* err, const char* fmt, ...) {
    char message[4096];  // as long as fatal's whole line
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof(message), fmt, ap);
    va_end(ap);
    *err = message;
    return false;
}

bool tokenfile_check(const uint8_t* data, size_t n, int vocab_size, const std::string& where, size_t* count,
                     std::string* err, bool header_only) {
    const char* w = where.c_str();
    if (n < kTokenFileHeaderBytes)
        return tokenfile_fail(err, "token file too short (%s): expected a %zu-byte header, got %zu bytes", w,
                              kTokenFileHeaderBytes, n);
    int32_t header[3];
    memcpy(header, data, sizeof(header));
    if (header[0] != kTokenFileMagic)
        return tokenfile_fail(err, "bad magic in token file (%s) at offset 0: expected %d, got %d", w, kTokenFileMagic,
                              header[0]);
    if (header[1] != kTokenFileVersion)
        return tokenfile_fail(err, "unsupported token file version (%s) at offset 4: expected %d, got %d", w,
                              kTokenFileVersion, header[1]);
    size_t payload = n - kTokenFileHeaderBytes;
    if (payload % 2 != 0)
        return tokenfile_fail(
            err, "odd byte count in token file (%s): %zu bytes after the header, expected uint16 tokens", w, payload);
    if (header[2] < 0 || (size_t)header[2] != payload / 2)
        return tokenfile_fail(err,
                              "token count mismatch in token file (%s) at offset 8: header says %d, file holds %zu", w,
                              header[2], payload / 2);
    const size_t n_tokens = *count = payload / 2;
    if (header_only) return true;
    const uint16_t* tokens = reinterpret_cast<const uint16_t*>(data + kTokenFileHeaderBytes);
    uint16_t max = 0;  // one branch-free pass; the position is looked up only on failure
    for (size_t i = 0; i < n_tokens; i++) max = tokens[i] > max ? tokens[i] : max;
    if ((int)max < vocab_size) return true;
    for (size_t i = 0; i < n_tokens; i++)
        if ((int)tokens[i] >= vocab_size)
            return tokenfile_fail(err, "token id %d out of range in %s at byte offset %zu: expected < %d", tokens[i], w,
                                  kTokenFileHeaderBytes + 2 * i, vocab_size);
    return true;
}

void tokenfile_read(TokenShard* shard, const std::string& path, int vocab_size) {
    std::string err;
    size_t count = 0;
    std::error_code ec;  // the header first, against the file's size: a file that is no token file is left unread
    const std::vector<uint8_t> head = read_whole_file(path, SIZE_MAX, kTokenFileHeaderBytes);
    const size_t size = head.size() < kTokenFileHeaderBytes ? head.size() : std::filesystem::file_size(path, ec);
    if (!tokenfile_check(head.data(), size, vocab_size, path, &count, &err, true)) fatal("%s", err.c_str());
    auto bytes = std::make_shared<std::vector<uint8_t>>(read_whole_file(path, SIZE_MAX));
    if (!tokenfile_check(bytes->data(), bytes->size(), vocab_size, path, &count, &err)) fatal("%s", err.c_str());
    shard->path = path, shard->num_tokens = count;
    shard->tokens = reinterpret_cast<const uint16_t*>(bytes->data() + kTokenFileHeaderBytes);
    shard->image = std::move(bytes);
}

void (*tokenfile_open)(TokenShard* shard, const std::string& path, int vocab_size) = tokenfile_read;

static std::vector<std::string> one_path(const std::string& spec, const char*) { return {spec}; }
std::vector<std::string> (*dataloader_expand)(const std::string& spec, const char* flag) = one_path;

// The core's one file is every epoch's whole shard order: each time its windows run out, an epoch begins.
static void one_file(DataLoader* dl) {
    dl->epoch++;
    dl->shard_order = {0}, dl->shard_pos = 0;
}
void (*dataloader_next_shard)(DataLoader* dl) = one_file;

bool (*dataloader_read)(DataLoader* dl, const TokenShard& shard, const uint32_t* windows, std::string* err) =
    dataloader_copy;

void dataloader_init(DataLoader* dl, const std::string& spec, const char* flag, int vocab_size, int B, int T,
                     bool shuffle, uint64_t seed) {
    const int rank = dl->rank, world = dl->world, accum = dl->accum;  // the caller's, set first
    *dl = DataLoader();
    dl->rank = rank, dl->world = world, dl->accum = accum;
    dl->spec = spec, dl->B = B, dl->T = T;
    dl->vocab_size = vocab_size, dl->shuffle = shuffle;
    dl->rng = Rng(seed);
    const size_t need = (size_t)dl->accum * dl->world * B * T + 1;
    for (const std::string& path : dataloader_expand(spec, flag)) {
        TokenShard shard;
        tokenfile_open(&shard, path, vocab_size);
        if (shard.num_tokens < need)
            fatal("too few tokens in %s: expected at least %s%sB*T+1 = %zu, got %zu", path.c_str(),
                  dl->accum > 1 ? "grad-accum*" : "", dl->world > 1 ? "world*" : "", need, shard.num_tokens);
        dl->shards.push_back(std::move(shard));
    }
    dl->inputs.assign((size_t)B * T, 0);
    dl->targets.assign((size_t)B * T, 0);
}

size_t dataloader_shard_windows(const DataLoader& dl, size_t s) { return (dl.shards[s].num_tokens - 1) / dl.T; }

bool dataloader_copy(DataLoader* dl, const TokenShard& shard, const uint32_t* windows, std::string*) {
    const int B = dl->B, T = dl->T;
    for (int b = 0; b < B; b++) {
        const uint16_t* src = shard.tokens + (size_t)windows[b] * T;
        std::copy(src, src + T, dl->inputs.begin() + (size_t)b * T);
        std::copy(src + 1, src + T + 1, dl->targets.begin() + (size_t)b * T);
    }
    return true;
}

void dataloader_order(std::vector<uint32_t>* order, size_t n, bool shuffle, Rng* rng) {
    order->resize(n);
    std::iota(order->begin(), order->end(), 0u);
    if (shuffle)
        for (size_t i = n - 1; i > 0; i--) std::swap((*order)[i], (*order)[rng->below((uint32_t)i + 1)]);
}

uint32_t dataloader_permute(uint64_t i, uint64_t n, uint64_t key) {
    if (key == 0) return (uint32_t)i;
    int h = 1;
    while ((1ull << (2 * h)) < n) h++;
    const uint64_t mask = (1ull << h) - 1;
    uint64_t x = i;
    do {  // at most 4 passes on average: n > 2^(2h) / 4
        uint64_t l = x >> h, r = x & mask;
        for (uint64_t round = 0; round < 4; round++) {
            const uint64_t z = splitmix64_mix(r + key + round * 0x9E3779B97F4A7C15ull);  // the round function
            l = std::exchange(r, l ^ (z & mask));
        }
        x = (l << h) | r;
    } while (x >= n);
    return (uint32_t)x;
}

// The current shard's window order: its length, and entry i.
static size_t order_size(const DataLoader& dl) { return dl.order_windows ? dl.order_windows : dl.order.size(); }
static uint32_t order_at(const DataLoader& dl, size_t i) {
    return dl.order_windows ? dataloader_permute(i, dl.order_windows, dl.order_key) : dl.order[i];
}

bool dataloader_try_next(DataLoader* dl, std::string* err) {
    const size_t step = (size_t)dl->accum * dl->world * dl->B;
    if (dl->micro == 0 && (dl->epoch < 0 || dl->pos + step > order_size(*dl))) {
        // every shard holds >= step windows (dataloader_init), so one move always lands on a usable shard
        dataloader_next_shard(dl);
        const size_t n = dataloader_shard_windows(*dl, dl->shard_order[dl->shard_pos]);
        if (n <= kDataLoaderStoredOrder) {
            dataloader_order(&dl->order, n, dl->shuffle, &dl->rng);
            dl->order_key = 0, dl->order_windows = 0;
        } else {  // computed: two draws make the key (never 0 when shuffling)
            std::vector<uint32_t>().swap(dl->order);
            dl->order_key = dl->shuffle ? ((uint64_t)dl->rng.next_u32() << 32 | dl->rng.next_u32()) | 1 : 0;
            dl->order_windows = n;
        }
        dl->pos = 0;
    }
    std::vector<uint32_t> windows(dl->B);
    const size_t group = (size_t)dl->micro * dl->world + dl->rank;
    for (int b = 0; b < dl->B; b++) windows[b] = order_at(*dl, dl->pos + group * dl->B + b);
    if (!dataloader_read(dl, dl->shards[dl->shard_order[dl->shard_pos]], windows.data(), err)) return false;
    if (++dl->micro == dl->accum) dl->pos += step, dl->micro = 0;
    return true;
}
