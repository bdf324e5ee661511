// text_stream.h: reads the inputs of `gpt2 tokenize` (text files, directories, stdin, JSONL) as a stream of
// documents and hands them out as parts of bounded size, each of which can be encoded on its own: a part
// either starts a document (an <|endoftext|> goes before it) or continues one at a point no pre-tokenizer
// piece spans (tokenizer_cut_before), so the concatenated ids equal those of the whole document. It does
// not tokenize; memory stays near `chunk_bytes` plus one JSONL line. Documents as llm.c's
// dev/data/fineweb.py and tinyshakespeare.py lay them out.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <string>
#include <vector>

struct TextPart {
    std::string text;
    bool starts_doc = false;  // an <|endoftext|> goes before it
};

struct TextStreamOptions {
    bool eot = true;                      // documents start parts with starts_doc; false: one raw text, no EOT
    bool split_on_blank_lines = false;    // a document ends after every "\n\n" too (llm.c's tiny shakespeare)
    std::string jsonl_field;              // non-empty: every line is a JSON object, the document its string field
    size_t chunk_bytes = 256 << 10;       // parts are cut near this size
    size_t max_unsplit_bytes = 64 << 20;  // a stretch with no cut point (and a JSONL line) may be this long
};

// One input: a file, or stdin when path is "-".
struct TextInput {
    std::string path;
    int64_t size = -1;  // bytes, -1 when unknown (a pipe)
};

// Expands the command line's inputs: "-" is stdin, a directory stands for the regular files directly inside
// it whose names do not start with '.' and that skip(path) does not reject (the command's own outputs),
// sorted by name. A missing input, or a directory without such files, is fatal naming it. Every input file
// is noted as one (output_files.h), so no output of the run can replace it.
std::vector<TextInput> text_inputs_expand(const std::vector<std::string>& args,
                                          const std::function<bool(const std::string&)>& skip = nullptr);

class TextStream {
public:
    TextStream(std::vector<TextInput> inputs, const TextStreamOptions& opt);
    ~TextStream();
    TextStream(const TextStream&) = delete;
    TextStream& operator=(const TextStream&) = delete;

    // The next part in input order; false at the end of the last input.
    bool next(TextPart* part);
    uint64_t bytes_read() const { return bytes_read_; }
    int64_t total_bytes() const { return total_bytes_; }  // -1 when some input's size is unknown
    uint64_t documents() const { return documents_; }

private:
    bool open_next_input();
    bool read_more();  // feeds the splitter from the current input; false at its end
    void handle_line(const char* p, size_t n);
    void feed(const char* p, size_t n);
    void split_ready();
    void emit(size_t begin, size_t end);
    void end_document();

    std::vector<TextInput> inputs_;
    TextStreamOptions opt_;
    size_t input_index_ = 0;
    FILE* file_ = nullptr;
    const char* name_ = "";  // the current input, for messages
    bool waits_ = false;     // it is no regular file: a stop signal ends a read of it at once (signals.h)
    std::string line_buf_;   // JSONL: bytes read but not yet split into lines
    size_t line_head_ = 0;
    uint64_t line_number_ = 0;
    std::string doc_;  // the current document's bytes not yet handed out, from doc_head_
    size_t doc_head_ = 0, scan_from_ = 0, no_cut_to_ = 0;
    uint64_t doc_offset_ = 0;  // byte offset of doc_head_ within the current document
    bool doc_open_ = false;    // a document has started and not ended
    bool section_start_ = true;
    std::deque<TextPart> ready_;
    uint64_t bytes_read_ = 0, documents_ = 0;
    int64_t total_bytes_ = 0;
};
