// tokenize_cmd.cpp: `gpt2 tokenize`: encode a text file (or stdin) with the GPT-2 tokenizer and either
// print the ids or write llm.c token files (first N tokens to val, the rest to train). With
// --split-on-blank-lines it lays documents out as llm.c's dev/data/tinyshakespeare.py does. It does not
// shuffle, shard or stream: the whole text and its ids are held in memory.
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "base/util.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "io/tokenfile.h"
#include "text/tokenizer.h"

// Text from a file, a pipe or stdin. Encoding holds the text and about as many bytes again in ids, so
// more than a quarter of the available memory is refused rather than read until the machine runs out.
static std::string read_input(const std::string& path) {
    if (path != "-" && access(path.c_str(), F_OK) != 0)
        fatal("input file not found (%s): expected a readable text file", path.c_str());
    size_t avail = memory_available();
    return text_read(path, avail ? avail / 4 : (size_t)1 << 34);
}

// <|endoftext|> before the text and after every "\n\n" (non-overlapping, left to right; a final empty
// section still gets its EOT), which is what llm.c's `"<|endoftext|>" + text` followed by
// `replace("\n\n", "\n\n<|endoftext|>")` produces. Unlike there, a literal `<|endoftext|>` already in the
// text stays ordinary text. Returns the number of sections.
static size_t encode_documents(Tokenizer* tok, const std::string& text, std::vector<int>* out) {
    size_t start = 0, sections = 0;
    for (;;) {
        size_t sep = text.find("\n\n", start);
        size_t end = sep == std::string::npos ? text.size() : sep + 2;
        out->push_back(kTokenizerEot);
        std::vector<int> ids = tokenizer_encode(tok, text.substr(start, end - start));
        out->insert(out->end(), ids.begin(), ids.end());
        sections++;
        if (sep == std::string::npos) return sections;
        start = end;
    }
}

static void print_ids(const std::vector<int>& ids) {
    std::string line;
    line.reserve(ids.size() * 6 + 1);
    char buf[16];
    for (size_t i = 0; i < ids.size(); i++) {
        int n = snprintf(buf, sizeof(buf), i ? " %d" : "%d", ids[i]);
        line.append(buf, (size_t)n);
    }
    line.push_back('\n');
    fwrite(line.data(), 1, line.size(), stdout);
    fflush(stdout);
}

int cmd_tokenize(int argc, char** argv) {
    static const std::string default_dir = tokenizer_default_dir();
    const std::vector<CliFlag> flags = {
        {"ids", "", "", "print the ids on one line, space-separated", true},
        {"output", "o", nullptr,
         "write PREFIX_train.bin and PREFIX_val.bin; a PREFIX ending in / writes PREFIX/train.bin and "
         "PREFIX/val.bin"},
        {"val-tokens", "", "32768", "number of leading tokens written to the val file (with -o)"},
        {"split-on-blank-lines", "", "",
         "split the text after every \"\\n\\n\" and put <|endoftext|> before each section (llm.c layout)", true},
        {"tokenizer", "", default_dir.c_str(), "directory with encoder.json + vocab.bpe (or vocab.json + merges.txt)"},
    };
    const char* usage =
        "gpt2 tokenize [--tokenizer DIR] (--ids | -o PREFIX [--val-tokens N]) "
        "[--split-on-blank-lines] FILE";
    const char* about =
        "Encodes FILE (- for stdin) with the GPT-2 tokenizer; the text <|endoftext|> in FILE is "
        "ordinary text.";
    CliArgs args = cli_parse(argc, argv, "tokenize", usage, about, flags, true);

    if (args.positional.empty()) fatal("missing input file (tokenize): expected FILE, or - for stdin");
    if (args.positional.size() > 1)
        fatal("too many input files (tokenize): expected one FILE, got %zu", args.positional.size());
    bool to_ids = args.on("ids"), to_files = args.has("output");
    if (to_ids == to_files)
        fatal("%s (tokenize): expected exactly one of --ids or -o PREFIX",
              to_ids ? "conflicting flags --ids and --output" : "missing output");
    if (to_ids && args.has("val-tokens")) fatal("flag --val-tokens needs -o PREFIX (tokenize): got --ids");
    long long val_tokens = args.integer_in("val-tokens", 0, 1ll << 40);
    std::string prefix = to_files ? args.str("output") : "";
    if (to_files && prefix.empty()) fatal("empty value for --output (tokenize): expected a path prefix");

    const std::string& input = args.positional[0];
    const char* input_name = input == "-" ? "stdin" : input.c_str();
    std::string text = read_input(input);
    if (text.empty()) fatal("empty input (%s): expected at least one byte of text", input_name);

    Tokenizer tok;
    tokenizer_load(&tok, args.str("tokenizer"));
    std::vector<int> ids;
    size_t sections = 1;
    if (args.on("split-on-blank-lines")) sections = encode_documents(&tok, text, &ids);
    else ids = tokenizer_encode(&tok, text);

    if (to_ids) {
        print_ids(ids);
        return 0;
    }
    if ((long long)ids.size() <= val_tokens)
        fatal("too few tokens for --val-tokens %lld (%s): expected more than %lld, got %zu", val_tokens, input_name,
              val_tokens, ids.size());
    std::string train_path, val_path;
    if (prefix.back() == '/') {
        dir_create(prefix.substr(0, prefix.size() - 1));
        train_path = prefix + "train.bin";
        val_path = prefix + "val.bin";
    } else {
        size_t slash = prefix.find_last_of('/');
        if (slash != std::string::npos && slash > 0) dir_create(prefix.substr(0, slash));
        train_path = prefix + "_train.bin";
        val_path = prefix + "_val.bin";
    }
    for (const std::string& path : {val_path, train_path})
        if (access(path.c_str(), F_OK) == 0 && !tokenfile_is_token_file(path))
            fatal_hint("choose another -o PREFIX; gpt2 replaces only token files",
                       "bad value for --output "
                       "(tokenize): %s exists and is not a token file",
                       path.c_str());
    // both files are staged before either is published, so a failure leaves the old pair as it was
    std::vector<int> val(ids.begin(), ids.begin() + val_tokens), train(ids.begin() + val_tokens, ids.end());
    std::string val_staged = tokenfile_stage(val_path, val);
    FatalCleanup cleanup([&] { unlink(val_staged.c_str()); });
    std::string train_staged = tokenfile_stage(train_path, train);
    file_publish(val_staged, val_path);
    file_publish(train_staged, train_path);
    printf("tokenized %s (%zu bytes, %zu section%s): %zu val tokens -> %s, %zu train tokens -> %s\n", input_name,
           text.size(), sections, sections == 1 ? "" : "s", val.size(), val_path.c_str(), train.size(),
           train_path.c_str());
    return 0;
}
