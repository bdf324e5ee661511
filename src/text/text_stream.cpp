// text_stream.cpp: see text_stream.h.
#include "text/text_stream.h"


#include <algorithm>
#include <cerrno>
#include <cstring>

#include "platform/platform.h"
#include "text/json_lines.h"
#include "platform/output_files.h"
#include "platform/signals.h"
#include "platform/util.h"
#include "text/tokenizer.h"

namespace {

int64_t regular_size(int fd) {
    FileInfo st;
    if (os_fstat(fd, &st) && st.kind == FileKind::regular) return (int64_t)st.size;
    return -1;
}

}  // namespace

std::vector<TextInput> text_inputs_expand(const std::vector<std::string>& args,
                                          const std::function<bool(const std::string&)>& skip) {
    std::vector<TextInput> inputs;
    for (const std::string& arg : args) {
        if (arg == "-") {
            inputs.push_back({arg, regular_size(0)});
            continue;
        }
        FileInfo st;
        if (!os_stat(arg, &st))
            fatal("input file not found (%s): expected a text file, a directory or - for stdin", arg.c_str());
        if (st.kind != FileKind::directory) {
            input_note_path(arg);
            inputs.push_back({arg, st.kind == FileKind::regular ? (int64_t)st.size : -1});
            continue;
        }
        size_t before = inputs.size();
        for (const std::string& name : dir_entries(arg)) {
            if (name[0] == '.') continue;
            std::string path = path_join(arg, name);
            if (!os_stat(path, &st) || st.kind != FileKind::regular || (skip && skip(path))) continue;
            input_note_path(path);
            inputs.push_back({path, (int64_t)st.size});
        }
        if (inputs.size() == before)
            fatal("no input files in directory (%s): expected regular files whose names do not start with '.'",
                  arg.c_str());
    }
    return inputs;
}

TextStream::TextStream(std::vector<TextInput> inputs, const TextStreamOptions& opt)
    : inputs_(std::move(inputs)), opt_(opt) {
    if (opt_.chunk_bytes == 0) opt_.chunk_bytes = 1;
    for (const TextInput& in : inputs_) {
        if (in.size < 0) {
            total_bytes_ = -1;
            break;
        }
        total_bytes_ += in.size;
    }
}

TextStream::~TextStream() {
    if (file_ && file_ != stdin) fclose(file_);
}

bool TextStream::next(TextPart* part) {
    while (ready_.empty())
        if (!read_more() && !open_next_input()) return false;
    *part = std::move(ready_.front());
    ready_.pop_front();
    return true;
}

bool TextStream::open_next_input() {
    if (input_index_ == inputs_.size()) return false;
    const TextInput& in = inputs_[input_index_++];
    waits_ = in.size < 0;  // a pipe, a FIFO, a terminal, a device: its open and reads may wait for ever
    if (in.path == "-") {
        file_ = stdin;
        name_ = "stdin";
    } else {
        StopWhileBlocked blocked(waits_);  // a FIFO's open waits for a writer
        file_ = os_fopen_read(in.path);
        name_ = in.path.c_str();
        if (!file_) fatal("cannot open input (%s): %s", name_, strerror(errno));
        input_note_fd(fileno(file_));
    }
    line_buf_.clear();
    line_head_ = 0;
    line_number_ = 0;
    if (opt_.jsonl_field.empty()) {
        doc_open_ = true;
        section_start_ = true;
    }
    return true;
}

bool TextStream::read_more() {
    if (!file_) return false;
    const bool jsonl = !opt_.jsonl_field.empty();
    if (jsonl) {
        // One whole line per call while there is one; more bytes otherwise.
        size_t nl = line_buf_.find('\n', line_head_);
        size_t pending = (nl == std::string::npos ? line_buf_.size() : nl) - line_head_;
        if (pending > opt_.max_unsplit_bytes)
            fatal("line too long (%s) at line %llu: expected JSON lines of at most %zu bytes", name_,
                  (unsigned long long)line_number_ + 1, opt_.max_unsplit_bytes);
        if (nl != std::string::npos) {
            handle_line(line_buf_.data() + line_head_, nl - line_head_);
            line_head_ = nl + 1;
            if (line_head_ >= line_buf_.size() / 2) {
                line_buf_.erase(0, line_head_);
                line_head_ = 0;
            }
            return true;
        }
    }
    char buf[1 << 16];
    size_t want = jsonl ? sizeof(buf) : std::min(sizeof(buf), opt_.chunk_bytes);
    size_t got;
    {
        StopWhileBlocked blocked(waits_);
        got = fread(buf, 1, want, file_);
    }
    if (got > 0) {
        bytes_read_ += got;
        if (jsonl) line_buf_.append(buf, got);
        else feed(buf, got);
        return true;
    }
    if (ferror(file_)) fatal("cannot read input (%s): %s", name_, strerror(errno));
    if (jsonl) {
        if (line_head_ < line_buf_.size())  // a last line without a newline
            handle_line(line_buf_.data() + line_head_, line_buf_.size() - line_head_);
        line_buf_.clear();
        line_head_ = 0;
    } else {
        end_document();
    }
    if (file_ != stdin) fclose(file_);
    file_ = nullptr;
    return true;
}

void TextStream::handle_line(const char* p, size_t n) {
    line_number_++;
    const unsigned long long line = (unsigned long long)line_number_;
    const char* field = opt_.jsonl_field.c_str();
    size_t k = 0;
    while (k < n && (p[k] == ' ' || p[k] == '\t' || p[k] == '\r')) k++;
    if (k == n) return;  // blank lines between records are allowed
    Json j;
    std::string err;
    if (!json_parse_line(p, n, &j, &err)) fatal("malformed JSON (%s) at line %llu: %s", name_, line, err.c_str());
    if (j.type != Json::OBJECT)
        fatal("bad JSONL record (%s) at line %llu: expected an object with a string field \"%s\", got %s", name_, line,
              field, json_type_name(j.type));
    const Json* f = j.find(opt_.jsonl_field);
    if (!f)
        fatal("missing field \"%s\" (%s) at line %llu: expected an object with a string field \"%s\"", field, name_,
              line, field);
    if (f->type != Json::STRING)
        fatal("field \"%s\" is not a string (%s) at line %llu: expected a string, got %s", field, name_, line,
              json_type_name(f->type));
    doc_open_ = true;
    section_start_ = true;
    feed(f->str.data(), f->str.size());
    end_document();
}

void TextStream::feed(const char* p, size_t n) {
    while (n > 0) {
        size_t k = std::min(n, opt_.chunk_bytes);
        doc_.append(p, k);
        split_ready();
        p += k;
        n -= k;
    }
}

// Hands out every finished section and, while at least chunk_bytes are pending, a part cut at the last
// cut point within the first chunk_bytes (or, failing that, the last one found at all).
void TextStream::split_ready() {
    if (opt_.split_on_blank_lines) {
        for (;;) {
            size_t at = doc_.find("\n\n", std::max(scan_from_, doc_head_));
            if (at == std::string::npos) {
                scan_from_ = std::max(doc_head_, doc_.empty() ? 0 : doc_.size() - 1);
                break;
            }
            emit(doc_head_, at + 2);
            section_start_ = true;
            scan_from_ = doc_head_;
        }
    }
    const size_t chunk = opt_.chunk_bytes;
    while (doc_.size() - doc_head_ >= chunk) {
        size_t cut = tokenizer_cut_before(doc_.data(), doc_.size(), doc_head_, doc_head_ + chunk);
        size_t searched = std::max(no_cut_to_, doc_head_ + chunk);
        if (!cut && searched + 1 < doc_.size())
            cut = tokenizer_cut_before(doc_.data(), doc_.size(), searched, doc_.size() - 1);
        if (!cut) {
            no_cut_to_ = doc_.size() - 1;
            if (doc_.size() - doc_head_ > opt_.max_unsplit_bytes)
                fatal(
                    "no place to split the text (%s) at document byte %llu: expected whitespace after a "
                    "non-space character at least every %zu bytes",
                    name_, (unsigned long long)doc_offset_, opt_.max_unsplit_bytes);
            break;
        }
        emit(doc_head_, cut);
        no_cut_to_ = 0;
    }
    if (doc_head_ > 0 && doc_head_ >= doc_.size() / 2) {
        doc_.erase(0, doc_head_);
        scan_from_ = scan_from_ > doc_head_ ? scan_from_ - doc_head_ : 0;
        no_cut_to_ = no_cut_to_ > doc_head_ ? no_cut_to_ - doc_head_ : 0;
        doc_head_ = 0;
    }
}

void TextStream::emit(size_t begin, size_t end) {
    TextPart part;
    part.text.assign(doc_, begin, end - begin);
    part.starts_doc = opt_.eot && section_start_;
    section_start_ = false;
    doc_offset_ += end - begin;
    doc_head_ = end;
    if (part.text.empty() && !part.starts_doc) return;
    if (part.starts_doc) documents_++;
    ready_.push_back(std::move(part));
}

// The final section gets its <|endoftext|> even when empty, as llm.c's replace("\n\n", ...) gives it one.
void TextStream::end_document() {
    if (!doc_open_) return;
    emit(doc_head_, doc_.size());
    doc_.clear();
    doc_head_ = scan_from_ = no_cut_to_ = 0;
    doc_offset_ = 0;
    doc_open_ = false;
    section_start_ = true;
}
