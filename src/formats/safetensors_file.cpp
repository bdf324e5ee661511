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
    st->bytes.clear();
    FILE* f = os_fopen_read(path);
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
    static const OutputKind kNewFile = {"a new file", nullptr};  // written into fresh staging directories
    OutputFile f(path, "safetensors", kNewFile);
    safetensors_write([&f](const void* data, size_t n) { f.write(data, n); }, items, metadata);
    f.publish();
}

void safetensors_plug_in() {
    file_read_hook = file_read;
    safetensors_widen16 = [](const std::string& dtype, const uint16_t* src, size_t n, float* out) {
        for (size_t i = 0; i < n; i++) out[i] = dtype == "F16" ? fp16_to_float(src[i]) : bf16_to_float(src[i]);
    };
}
