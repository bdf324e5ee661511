// safetensors_file.cpp: see safetensors_file.h.
#include "formats/safetensors_file.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/error.h"
#include "platform/output_files.h"
#include "platform/platform.h"
#include "platform/util.h"
#include "precision/half.h"

void safetensors_load_header(SafeTensors* st, const std::string& path) {
    std::string err;
    st->path = path;
    FILE* f = os_fopen_read_file(path);
    FileInfo info;
    if (!f) fatal("cannot open %s: %s", path.c_str(), strerror(errno));
    input_note_fd(fileno(f));
    if (!os_fstat(fileno(f), &info) || info.kind != FileKind::regular) {
        fclose(f);
        fatal("not a regular file (%s): expected a file whose size is known before reading", path.c_str());
    }
    const size_t file_size = (size_t)info.size;
    std::vector<uint8_t> head(8, 0);
    uint64_t len = 0;
    bool ok = fread(head.data(), 1, 8, f) == std::min<size_t>(8, file_size) &&
              safetensors_header_length(head.data(), file_size, &len, &err);
    if (ok) {
        head.resize(8 + len);
        ok = fread(head.data() + 8, 1, len, f) == len;
        if (!ok) err = "cannot read the header";
    }
    fclose(f);
    if (!ok || !safetensors_parse_header(st, head.data(), head.size(), file_size, &err))
        fatal("corrupt safetensors file (%s): %s", path.c_str(), err.c_str());
    st->read_at = [path, info](const StTensor& t, size_t at, size_t n, void* out) {
        int fd = os_open_read(path);
        if (fd < 0) fatal("cannot open %s: %s", path.c_str(), strerror(errno));
        FileInfo now;  // a checkpoint replaced while loading must not give a model made of two files
        if (!os_fstat(fd, &now) || now.dev != info.dev || now.ino != info.ino || now.size != info.size) {
            os_close(fd);
            fatal("file changed while loading (%s): expected the file its header was read from", path.c_str());
        }
        for (size_t got = 0; got < n;) {
            long r = os_pread(fd, static_cast<uint8_t*>(out) + got, n - got, at + got);
            if (r <= 0) {
                os_close(fd);
                fatal("cannot read tensor %s from %s: %s", t.name.c_str(), path.c_str(),
                      r == 0 ? "the file is shorter than its header says" : strerror(errno));
            }
            got += (size_t)r;
        }
        os_close(fd);
    };
}

void safetensors_write_file(const std::string& path, const std::vector<StWriteItem>& items,
                            const std::vector<std::pair<std::string, std::string>>& metadata) {
    OutputFile f(path, "safetensors", kNewFile);
    safetensors_write([&f](const void* data, size_t n) { f.write(data, n); }, items, metadata);
    f.publish();
}

namespace {

// n values of `dtype` at src as fp32: F16 and BF16 widened exactly, as PyTorch does, F64 rounded.
void convert(const std::string& dtype, const uint8_t* src, size_t n, float* out) {
    const bool f16 = dtype == "F16", bf16 = dtype == "BF16", f64 = dtype == "F64";  // else I32
    for (size_t i = 0; i < n; i++) {
        if (f16 || bf16) {
            uint16_t h;
            memcpy(&h, src + 2 * i, 2);
            out[i] = f16 ? fp16_to_float(h) : bf16_to_float(h);
        } else if (f64) {
            double d;
            memcpy(&d, src + 8 * i, 8);
            out[i] = (float)d;
        } else {
            int32_t v;
            memcpy(&v, src + 4 * i, 4);
            out[i] = (float)v;
        }
    }
}

// A tensor a piece at a time (from the file after a header-only load, so loading a model holds the
// parameters once rather than the file as well), converted into out.
void read_converted(const SafeTensors& st, const StTensor& t, float* out) {
    if (t.dtype != "F16" && t.dtype != "BF16" && t.dtype != "F64" && t.dtype != "I32")
        fatal("unsupported dtype for tensor %s (%s): expected F32, F16, BF16, F64 or I32, got %s", t.name.c_str(),
              st.path.c_str(), t.dtype.c_str());
    const size_t n = t.numel(), esize = safetensors_dtype_size(t.dtype), per_chunk = ((size_t)1 << 20) / esize;
    std::vector<uint8_t> chunk(std::min(n * esize, (size_t)1 << 20));
    for (size_t done = 0; done < n; done += per_chunk) {
        const size_t count = std::min(per_chunk, n - done);
        safetensors_read_bytes(st, t, done * esize, count * esize, chunk.data());
        convert(t.dtype, chunk.data(), count, out + done);
    }
}

}  // namespace

void safetensors_plug_in() {
    file_read_hook = file_read;
    safetensors_convert = read_converted;
}
