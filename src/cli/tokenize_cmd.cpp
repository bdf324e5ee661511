// tokenize_cmd.cpp: `gpt2 tokenize`: encode text with the GPT-2 tokenizer and print the ids, write a val/train
// pair of llm.c token files, or write llm.c shards (`NAME_val_000000.bin`, `NAME_train_000001.bin`, ... as
// llm.c's dev/data/fineweb.py names them). Input is streamed in parts (text_stream.h) that OpenMP threads
// encode in parallel and the writer emits in input order, so memory stays bounded whatever the input size
// and the output does not depend on the thread count. It does not shuffle.
//
// A document is a whole file, a section ending at a blank line (--split-on-blank-lines) or one JSON line's string
// field (--jsonl-field NAME), and <|endoftext|> precedes each, as llm.c's fineweb.py does; a single text file without
// --split-on-blank-lines or --shard-tokens is encoded raw. A directory means its regular files not starting with '.',
// sorted by name. One text file with -o gives a val/train pair, val the text's last 10% by bytes (as nanoGPT holds it
// out; each part encoded on its own) or its first --val-tokens N tokens; --shard-tokens N (default 100M), a
// directory, several inputs or --jsonl-field give shards of exactly N tokens (the last fewer), the first val
// (--val-tokens N makes it N tokens; a note: says when the default, one shard, is over a tenth of the tokens). A
// .jsonl input without --jsonl-field is encoded as plain text, with a note:. Each shard is published whole when the
// next begins; shards a longer earlier run left after the last one are removed (with a note:). A long document is cut
// into parts of about 256 KB only where an ASCII whitespace byte follows a non-whitespace character, where no GPT-2
// pre-tokenizer piece can span the cut, so the ids equal those of the whole text; text with no such place for 64 MB
// (--max-unsplit-bytes), or a longer JSON line, is refused. On a terminal, stderr shows MB, MB/s, tokens and (for
// files) the ETA. scripts/bench_tokenize.sh measures throughput and memory (tests/bench_results.md).

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "platform/platform.h"
#include "platform/output_files.h"
#include "platform/signals.h"
#include "platform/util.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "formats/loss_mask.h"
#include "formats/token_files.h"
#include "formats/token_writer.h"
#include "core/dataloader.h"
#include "text/instructions.h"
#include "text/json_lines.h"
#include "text/text_stream.h"
#include "text/tokenizer.h"

namespace {

// Prints ids space-separated on one line as they come.
struct IdsPrinter {
    std::string line;
    bool first = true;
    void add(const std::vector<int>& ids) {
        char buf[16];
        for (int id : ids) {
            int n = snprintf(buf, sizeof(buf), first ? "%d" : " %d", id);
            line.append(buf, (size_t)n);
            first = false;
        }
        if (line.size() > (1 << 20)) flush();
    }
    void flush() {
        fwrite(line.data(), 1, line.size(), stdout);
        line.clear();
    }
    void finish() {
        line.push_back('\n');
        flush();
        fflush(stdout);
    }
};

// A progress line on stderr when it is a terminal: bytes, MB/s, tokens, and the ETA when the total is known.
struct TokenizeProgress {
    bool tty = os_isatty(stderr), shown = false;
    double t0 = time_now_s(), last = 0;
    void update(uint64_t bytes, int64_t total, int64_t tokens, bool force = false) {
        double now = time_now_s();
        if (!tty || (!force && now - last < 0.5)) return;
        last = now;
        double secs = now - t0, mb = (double)bytes / 1e6, rate = secs > 0 ? mb / secs : 0;
        char eta[64] = "";
        if (total > 0 && rate > 0) {
            double left = ((double)total / 1e6 - mb) / rate;
            if (left < 0) left = 0;
            snprintf(eta, sizeof(eta), ", %.0f%%, ETA %dm%02ds", 100.0 * (double)bytes / (double)total,
                     (int)(left / 60), (int)left % 60);
        }
        fprintf(stderr, "\rtokenize: %.1f MB, %.1f MB/s, %.2fM tokens%s   ", mb, rate, (double)tokens / 1e6, eta);
        fflush(stderr);
        shown = true;
    }
    void close() {
        if (shown) fputc('\n', stderr);
        shown = false;
    }
};

bool is_directory(const std::string& path) {
    return path != "-" && dir_exists(path);
}

std::string shard_name(const std::string& prefix, int k) {
    char suffix[32];
    snprintf(suffix, sizeof(suffix), "%s_%06d.bin", k == 0 ? "val" : "train", k);
    return prefix.back() == '/' ? prefix + suffix : prefix + "_" + suffix;
}

// What a run's lock guards: with -o DIR/ the directory (DIR.lock, as train --out DIR's), with -o P the files
// named P_... (P_.lock beside them). -o P and -o P/ write different files (P_val.bin, P/val.bin), so they take
// different locks; every run on one prefix (plain, sharded, --instructions) takes the same one.
std::string output_lock_target(const std::string& prefix) {
    return prefix.back() == '/' ? path_strip_slashes(prefix) : prefix + "_";
}

// The flags of `gpt2 tokenize`, parsed; --help and a malformed flag end the process here.
CliArgs tokenize_args(int argc, char** argv) {
    const std::vector<CliFlag> flags = {
        {"ids", "", "", "print the ids on one line, space-separated", true},
        {"output", "o", nullptr,
         "a single text file: write PREFIX_val.bin and PREFIX_train.bin (PREFIX ending in /: PREFIX/val.bin "
         "and PREFIX/train.bin); sharded: PREFIX_val_000000.bin, PREFIX_train_000001.bin, ... (PREFIX/val_000000.bin, "
         "... when it ends in /)"},
        {"val-tokens", "", "",
         "leading tokens written to the val file (-o; default: the last 10% of the text is val, as nanoGPT holds it "
         "out); sharded: the val shard's size (default there: one shard, as llm.c's fineweb.py)"},
        {"shard-tokens", "", "100000000",
         "write shards of N tokens, the first one val (llm.c's fineweb.py layout); implied by a directory, several "
         "inputs or --jsonl-field"},
        {"split-on-blank-lines", "", "",
         "split the text after every \"\\n\\n\" and put <|endoftext|> before each section (llm.c layout)", true},
        {"jsonl-field", "", "", "the inputs are JSON lines; each line's string field NAME is one document"},
        {"instructions", "", "",
         "the inputs are instruction data, JSON lines of {prompt, completion}, Alpaca's {instruction, input, output} "
         "or chat {messages}: writes token files with loss masks (X.mask) scoring the answers, examples packed "
         "whole into -T windows by best fit over the next 256; at most 1 GiB of input in all (memory: the examples "
         "at 3 bytes a token, the input file being read, and per part one -T window plus the 256 looked ahead)",
         true},
        {"tokens", "T", "1024", "--instructions: the window the examples are packed into (train's -T)"},
        {"val-examples", "", "",
         "--instructions: N examples are val, spread evenly over the examples in input order (every (examples / "
         "N)-th, the last included: an input with fewer examples than that may have none in val; default: 10%, at "
         "least 1)"},
        {"tokenizer", "", "",
         "directory with encoder.json + vocab.bpe or vocab.json + merges.txt (default: $GPT2_DATA_DIR/gpt2 or "
         "data/gpt2)"},
        {"chunk-bytes", "", "262144", "read and cut the text in parts of about N bytes (memory grows with N)"},
        {"max-unsplit-bytes", "", "67108864",
         "refuse text with no whitespace to cut at for longer than N bytes, and JSON lines longer than N"},
    };
    const char* usage =
        "gpt2 tokenize [--tokenizer DIR] (--ids | -o PREFIX [--val-tokens N | --shard-tokens N]) "
        "[--split-on-blank-lines] [--jsonl-field NAME] INPUT...\n"
        "       gpt2 tokenize --instructions [-T N] [--val-examples N] -o PREFIX FILE.jsonl...";
    const char* about =
        "Encodes each INPUT (a text file, a directory of them, or - for stdin) with the GPT-2 tokenizer, streaming "
        "with bounded memory on all OpenMP threads. Documents are whole files, the sections between blank lines "
        "(--split-on-blank-lines) or JSON lines (--jsonl-field), each preceded by <|endoftext|>; a single text "
        "file without --split-on-blank-lines or --shard-tokens is encoded raw, with no <|endoftext|>. A directory "
        "means its regular files not starting with '.', sorted by name; blank JSON lines are skipped. The text "
        "<|endoftext|> in the input is ordinary text.";
    return cli_parse(argc, argv, "tokenize", usage, about, flags, true);
}

// What one run reads and writes, decided from the flags before any input is read or output touched.
struct TokenizeOptions {
    bool to_ids = false;   // print the ids; else write token files under prefix
    bool sharded = false;  // llm.c shards of shard_tokens each; else one val/train pair
    long long val_tokens = 0, shard_tokens = 0;
    bool val_last_tenth = false;  // one val/train pair without --val-tokens: the text's last 10% is val
    std::string prefix;      // --output
    std::string input_name;  // the inputs, for messages
    TextStreamOptions stream_opt;
};

// The flags checked against each other, in the order a user meets them: a bad combination fails before the
// inputs are expanded.
TokenizeOptions tokenize_options(const CliArgs& args) {
    if (args.positional.empty()) fatal("missing input file (tokenize): expected FILE, DIR or - for stdin");
    bool to_ids = args.on("ids"), to_files = args.has("output");
    if (to_ids == to_files)
        fatal("%s (tokenize): expected exactly one of --ids or -o PREFIX",
              to_ids ? "conflicting flags --ids and --output" : "missing output");
    if (to_ids && args.has("val-tokens")) fatal("flag --val-tokens needs -o PREFIX (tokenize): got --ids");
    if (to_ids && args.has("shard-tokens")) fatal("flag --shard-tokens needs -o PREFIX (tokenize): got --ids");
    if (args.has("jsonl-field") && args.str("jsonl-field").empty())
        fatal("empty value for --jsonl-field (tokenize): expected the name of a string field");
    TokenizeOptions o;
    o.to_ids = to_ids;
    const bool jsonl = args.has("jsonl-field");
    const bool many_docs = args.positional.size() > 1 || is_directory(args.positional[0]);
    o.sharded = to_files && (args.has("shard-tokens") || jsonl || many_docs);
    o.shard_tokens = args.integer_in("shard-tokens", 1, INT32_MAX);
    o.val_last_tenth = to_files && !o.sharded && !args.has("val-tokens");
    o.val_tokens = o.sharded && !args.has("val-tokens") ? o.shard_tokens
                   : o.sharded              ? args.integer_in("val-tokens", 1, INT32_MAX)
                   : to_ids || o.val_last_tenth ? 0
                                            : args.integer_in("val-tokens", 0, 1ll << 40);
    for (const std::string& in : args.positional)  // JSON lines read as plain text are rarely what was meant
        if (!jsonl && in.size() > 6 && in.compare(in.size() - 6, 6, ".jsonl") == 0)
            fprintf(stderr, "note: %s is encoded as plain text, JSON syntax included; --jsonl-field text encodes "
                    "each line's \"text\" field as a document (--instructions: instruction data)\n", in.c_str());
    o.prefix = to_files ? args.str("output") : "";
    if (to_files && o.prefix.empty()) fatal("empty value for --output (tokenize): expected a path prefix");

    TextStreamOptions& opt = o.stream_opt;
    opt.split_on_blank_lines = args.on("split-on-blank-lines");
    opt.jsonl_field = jsonl ? args.str("jsonl-field") : "";
    opt.eot = opt.split_on_blank_lines || jsonl || many_docs || o.sharded;
    opt.chunk_bytes = (size_t)args.integer_in("chunk-bytes", 1, 1 << 30);
    opt.max_unsplit_bytes = (size_t)args.integer_in("max-unsplit-bytes", 1, 1 << 30);
    o.input_name = args.positional.size() > 1  ? std::to_string(args.positional.size()) + " inputs"
                   : args.positional[0] == "-" ? "stdin"
                                               : args.positional[0];
    return o;
}

// The text files behind the command line's inputs. A directory's files that are token files or staged
// temporaries are outputs (of this command run before on the same directory, say), not text.
std::vector<TextInput> expand_inputs(const std::vector<std::string>& positional) {
    int skipped = 0;
    std::vector<TextInput> inputs = text_inputs_expand(positional, [&](const std::string& path) {
        const bool output = tokenfile_is_token_file(path) || path_is_staged_temp(path_base(path));
        skipped += output;
        return output;
    });
    if (skipped)
        fprintf(stderr, "note: skipped %d token file%s and staged outputs in the input director%s (not text)\n",
                skipped, skipped == 1 ? "" : "s", positional.size() == 1 ? "y" : "ies");
    return inputs;
}

// The token files of a run and what guards them. The members are destroyed in the reverse of this order: the
// directories made, then the lock, then the writer (whose unpublished files go with it).
struct TokenizeOutputs {
    std::string val_path, train_path;  // the val/train pair; empty when sharded
    int64_t train_tokens = -1;         // val_last_tenth: the train file's tokens, once the text's last 10% starts
    std::unique_ptr<TokenFileWriter> writer;
    std::unique_ptr<PathLock> lock;
    std::unique_ptr<MadeDirs> made;
};

// Takes the prefix for this run and checks the first two paths before any work, so that a run that cannot
// write fails at once; each file is checked again as it is opened. `o` must outlive *out.
void open_outputs(const TokenizeOptions& o, TokenizeOutputs* out) {
    const std::string& prefix = o.prefix;
    // one tokenize per prefix at a time
    out->lock.reset(new PathLock(output_lock_target(prefix), "--output (tokenize)"));
    const std::string dir = prefix.back() == '/' ? path_strip_slashes(prefix) : path_parent(prefix);
    out->made.reset(new MadeDirs(dir));  // removed again if the command fails before writing into it
    if (o.sharded) {
        out->writer.reset(new TokenFileWriter([&o](int k) { return shard_name(o.prefix, k); },
                                              [&o](int k) { return (int64_t)(k == 0 ? o.val_tokens : o.shard_tokens); }, "--output (tokenize)",
                                              false));
    } else if (o.val_last_tenth) {  // train first, then val; the switch comes with the text's last tenth
        out->val_path = prefix.back() == '/' ? prefix + "val.bin" : prefix + "_val.bin";
        out->train_path = prefix.back() == '/' ? prefix + "train.bin" : prefix + "_train.bin";
        out->writer.reset(new TokenFileWriter(
            [out](int k) { return k == 0 ? out->train_path : out->val_path; },
            [&o, out](int k) {  // asked as file k opens
                if (k > 1 || (k == 1 && out->train_tokens < 0))
                    fatal("too many tokens for one train file (%s): expected at most %d; use --shard-tokens",
                          o.input_name.c_str(), INT32_MAX);
                return k == 0 && out->train_tokens >= 0 ? out->train_tokens : (int64_t)INT32_MAX;
            },
            "--output (tokenize)", true));
    } else {
        out->val_path = prefix.back() == '/' ? prefix + "val.bin" : prefix + "_val.bin";
        out->train_path = prefix.back() == '/' ? prefix + "train.bin" : prefix + "_train.bin";
        out->writer.reset(new TokenFileWriter(
            [&o, out](int k) {
                if (k > 1)
                    fatal("too many tokens for one train file (%s): expected at most %d; use --shard-tokens",
                          o.input_name.c_str(), INT32_MAX);
                return k == 0 ? out->val_path : out->train_path;
            },
            [&o](int k) { return k == 0 ? (int64_t)o.val_tokens : (int64_t)INT32_MAX; }, "--output (tokenize)", true));
        if (o.val_tokens > INT32_MAX)
            fatal("bad value for --val-tokens (tokenize): expected at most %d for one token file", INT32_MAX);
    }
    out->writer->check_replaceable(0);
    out->writer->check_replaceable(1);
}

// Encodes one batch of parts, each on the tokenizer of the thread that takes it: ids[i] are part i's, after
// an <|endoftext|> when the part starts a document.
void encode_batch(const std::vector<TextPart>& batch, std::vector<Tokenizer>* toks,
                  std::vector<std::vector<int>>* ids) {
    ids->resize(batch.size());
#pragma omp parallel for schedule(dynamic, 1)
    for (long i = 0; i < (long)batch.size(); i++) {
        int t = 0;
#ifdef _OPENMP
        t = omp_get_thread_num();
#endif
        std::vector<int>& out = (*ids)[(size_t)i];
        out.clear();
        if (batch[(size_t)i].starts_doc) out.push_back(kTokenizerEot);
        std::vector<int> enc = tokenizer_encode(&(*toks)[(size_t)t], batch[(size_t)i].text);
        out.insert(out.end(), enc.begin(), enc.end());
    }
}

// Encodes the whole input in batches on `threads` threads and hands the ids, in input order, to the printer
// or the writer, counting them in *tokens. Returns 0 at the end of the input; a stop signal ends it after the
// batch at hand with 128 + the signal, the file being written removed.
int encode_inputs(TextStream* stream, const Tokenizer& tok, const TokenizeOptions& o, int threads, TokenizeOutputs* out,
                  IdsPrinter* printer, int64_t* tokens) {
    std::vector<Tokenizer> toks(threads, tok);
    const size_t batch_bytes = 16 * (size_t)threads * o.stream_opt.chunk_bytes;
    const size_t batch_parts = 4096 * (size_t)threads;
    std::vector<TextPart> batch;
    std::vector<std::vector<int>> ids;
    TokenizeProgress progress;
    bool checked_empty = false;
    // val_last_tenth: the byte where the text's last tenth starts; parts from val_from on are val
    const int64_t cut = o.val_last_tenth ? stream->total_bytes() - stream->total_bytes() / 10 : -1;
    size_t val_from = 0;
    stop_catch(true);  // a signal ends the loop after the batch at hand
    for (;;) {
        const int published = o.to_ids ? 0 : out->writer->published();
        const std::string what = std::to_string(published) + (published == 1 ? " file" : " files") +
                                 " published, the one being written removed; run the same command again to start over";
        if (const int sig = stop_requested()) {
            progress.close();
            out->writer.reset();  // removes the staged file(s)
            fprintf(stderr, "interrupted by %s: %s\n", stop_signal_name(sig), what.c_str());
            return 128 + sig;
        }
        stop_blocked_what(what);  // said by a signal that ends a wait for input (a pipe's) at once
        batch.clear();
        size_t bytes = 0;
        TextPart part;
        bool more = true;
        val_from = out->train_tokens >= 0 ? 0 : SIZE_MAX;
        while (batch.size() < batch_parts && bytes < batch_bytes && (more = stream->next(&part))) {
            bytes += part.text.size();
            if (val_from == SIZE_MAX && cut >= 0 && (int64_t)stream->bytes_read() > cut) {
                // the part that crosses the cut: its bytes before it (to a whole UTF-8 character) stay train
                const int64_t start = (int64_t)stream->bytes_read() - (int64_t)part.text.size();
                size_t at = (size_t)std::min<int64_t>(std::max<int64_t>(cut - start, 0), (int64_t)part.text.size());
                while (at < part.text.size() && ((unsigned char)part.text[at] & 0xC0) == 0x80) at++;
                if (at > 0) {
                    batch.push_back(TextPart{part.text.substr(0, at), part.starts_doc});
                    part.text.erase(0, at);
                    part.starts_doc = false;
                }
                val_from = batch.size();
            }
            batch.push_back(std::move(part));
        }
        if (!checked_empty && !more && stream->bytes_read() == 0)
            fatal("empty input (%s): expected at least one byte of text", o.input_name.c_str());
        checked_empty = true;
        if (batch.empty()) break;
        encode_batch(batch, &toks, &ids);
        for (size_t i = 0; i < ids.size(); i++) {
            const std::vector<int>& v = ids[i];
            if (i == val_from && out->train_tokens < 0) out->train_tokens = out->writer->tokens();  // val from here
            if (o.to_ids) printer->add(v);
            else out->writer->append(v.data(), v.size());
            *tokens += (int64_t)v.size();
        }
        ids.clear();
        progress.update(stream->bytes_read(), stream->total_bytes(), *tokens);
    }
    progress.update(stream->bytes_read(), stream->total_bytes(), *tokens, true);
    progress.close();
    return 0;
}

// Shards of an earlier, longer run after this run's last one would otherwise mix into a glob of this one's.
void remove_stale_shards(const std::string& prefix, int files) {
    int stale = 0;
    for (int k = files;; k++) {
        std::string path = shard_name(prefix, k);
        if (path_is_symlink(path) || !tokenfile_is_token_file(path)) break;  // a link is not ours to remove
        if (os_unlink(path.c_str())) stale++;
    }
    if (stale)
        fprintf(stderr, "note: removed %d shard%s of an earlier run after %s\n", stale, stale == 1 ? "" : "s",
                shard_name(prefix, files - 1).c_str());
}

// The loss masks an earlier tokenize --instructions wrote beside the val/train pair this run has just replaced:
// tied to the files replaced (by their fingerprint), they would stop a train on the new ones, so they go with
// them, as stale shards do. Only a regular file holding a loss mask is removed: never a link or a user's file.
// They go after the new files are published: a failure before leaves the old pair whole with its masks.
void remove_replaced_masks(const TokenizeOutputs& out) {
    std::string removed;
    int count = 0;
    for (const std::string& token_path : {out.val_path, out.train_path}) {
        const std::string mask = lossmask_path(token_path);
        if (path_is_symlink(mask) || !file_exists(mask) || !kLossMaskKind.is_ours(mask)) continue;
        if (!os_unlink(mask.c_str())) continue;
        removed += (count++ ? " and " : "") + mask;
    }
    if (count)
        fprintf(stderr, "note: removed %s, the loss mask%s of the token files replaced (plain tokenize writes none; "
                "tokenize --instructions does)\n", removed.c_str(), count == 1 ? "" : "s");
}

// Publishes the token files and says what went where; fatal, publishing nothing, when the tokens do not
// reach a train file.
int finish_outputs(const TokenizeOptions& o, TokenizeOutputs* out, const TextStream& stream, int64_t tokens,
                   int threads) {
    const std::string& prefix = o.prefix;
    if (out->writer->files() < 2) {
        if (o.val_last_tenth)
            fatal_hint("give --val-tokens N, or a longer text",
                       "too little text to hold out its last 10%% as val (%s): expected tokens after byte %lld of "
                       "%lld, got none",
                       o.input_name.c_str(), (long long)(stream.total_bytes() - stream.total_bytes() / 10),
                       (long long)stream.total_bytes());
        if (o.sharded)
            fatal(
                "too few tokens for a val shard of %lld (%s): expected more than %lld so that a train shard "
                "follows the val shard, got %lld; a smaller --val-tokens or --shard-tokens leaves some",
                o.val_tokens, o.input_name.c_str(), o.val_tokens, (long long)tokens);
        fatal("too few tokens for --val-tokens %lld (%s): expected more than %lld, got %lld", o.val_tokens,
              o.input_name.c_str(), o.val_tokens, (long long)tokens);
    }
    const int64_t last_count = out->writer->tokens_in_current();
    const int files = out->writer->finish();
    if (!o.sharded) remove_replaced_masks(*out);
    const unsigned long long in_bytes = (unsigned long long)stream.bytes_read();
    if (o.val_last_tenth) {
        size_t sections = o.stream_opt.eot ? (size_t)stream.documents() : 1;
        const long long val = (long long)(tokens - out->train_tokens);
        printf("tokenized %s (%llu bytes, %zu section%s): %lld train token%s -> %s, %lld val token%s (the last 10%% "
               "of the text; --val-tokens N sets the val size) -> %s\n",
               o.input_name.c_str(), in_bytes, sections, sections == 1 ? "" : "s", (long long)out->train_tokens,
               out->train_tokens == 1 ? "" : "s", out->train_path.c_str(), val, val == 1 ? "" : "s",
               out->val_path.c_str());
        return 0;
    }
    if (!o.sharded) {
        size_t sections = o.stream_opt.eot ? (size_t)stream.documents() : 1;
        const long long train = (long long)(tokens - o.val_tokens);
        printf("tokenized %s (%llu bytes, %zu section%s): %lld val token%s -> %s, %lld train token%s -> %s\n",
               o.input_name.c_str(), in_bytes, sections, sections == 1 ? "" : "s", o.val_tokens,
               o.val_tokens == 1 ? "" : "s", out->val_path.c_str(), train, train == 1 ? "" : "s",
               out->train_path.c_str());
        return 0;
    }
    remove_stale_shards(prefix, files);
    printf(
        "tokenized %s (%llu bytes, %llu documents, %d thread%s): %lld val tokens -> %s, %lld train tokens in "
        "%d shard%s -> %s .. %s (last %lld)\n",
        o.input_name.c_str(), in_bytes, (unsigned long long)stream.documents(), threads, threads == 1 ? "" : "s",
        (long long)std::min<int64_t>(tokens, o.val_tokens), shard_name(prefix, 0).c_str(),
        (long long)(tokens - o.val_tokens), files - 1, files == 2 ? "" : "s", shard_name(prefix, 1).c_str(),
        shard_name(prefix, files - 1).c_str(), (long long)last_count);
    if (o.val_tokens * 10 > tokens)
        fprintf(stderr, "note: the val shard holds %.0f%% of the tokens; --val-tokens N makes it smaller\n",
                100.0 * (double)o.val_tokens / (double)tokens);
    return 0;
}

// tokenize --instructions: each JSONL line an example (text/instructions.h), its segments encoded one by one
// and closed by a scored <|endoftext|>; every (n / val)-th example val, counted over all the inputs in order (an
// input shorter than that stride may have none in val); each part packed into -T windows as it goes
// (formats/loss_mask.h's PackWriter) and staged as a token file with its loss mask beside it, the four files
// published together once all are written. Memory: the examples, held until the split (3 bytes a token), and the
// input file being read; each part's packing adds one window and its look-ahead, however many windows it fills.
const size_t kMaxInstructionBytes = (size_t)1 << 30;  // the inputs of tokenize --instructions together

// Every example of the inputs, compactly: their tokens and scored flags end to end.
struct InstructionExamples {
    std::vector<uint16_t> tokens;
    std::vector<uint8_t> scored;
    std::vector<size_t> ends;  // example i is [ends[i - 1], ends[i])
    size_t shapes[3] = {0, 0, 0};
    PackedExample example(size_t i) const {
        const size_t a = i ? ends[i - 1] : 0, b = ends[i];
        return {{tokens.begin() + (long)a, tokens.begin() + (long)b}, {scored.begin() + (long)a, scored.begin() + (long)b}};
    }
};

// The offset of the first byte of s that does not start well-formed UTF-8 (an overlong form, a surrogate or a
// code point past U+10FFFF included), or npos.
size_t utf8_invalid_at(const std::string& s) {
    for (size_t i = 0; i < s.size();) {
        const unsigned char c = (unsigned char)s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        const size_t more = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : 0;
        if (more == 0 || c > 0xF4 || s.size() - i <= more) return i;
        uint32_t cp = c & (0x3F >> more);
        for (size_t k = 1; k <= more; k++) {
            const unsigned char d = (unsigned char)s[i + k];
            if ((d & 0xC0) != 0x80) return i;
            cp = cp << 6 | (d & 0x3F);
        }
        const uint32_t least[] = {0, 0x80, 0x800, 0x10000};
        if (cp < least[more] || cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000)) return i;
        i += more + 1;
    }
    return std::string::npos;
}

// One JSON line (`name` line `line`) parsed, encoded and appended to *ex.
void add_instruction(const std::string& row, const std::string& name, int line, Tokenizer* tok,
                     InstructionExamples* ex) {
    Json obj;
    std::string err;
    std::vector<InstructionSegment> segments;
    InstructionShape shape;
    // JSON text is UTF-8 (outside strings only ASCII parses): a raw byte in a string would be encoded as a byte
    const size_t bad = utf8_invalid_at(row);
    if (bad != std::string::npos)
        fatal("invalid UTF-8 (%s line %d) at byte %zu of the line: 0x%02x; expected UTF-8 text (save the file as "
              "UTF-8)", name.c_str(), line, bad + 1, (unsigned char)row[bad]);
    if (!json_parse_line(row.data(), row.size(), &obj, &err)) {
        const size_t cr = row.find('\r');  // JSON's whitespace, so only a line that does not parse is asked about it
        if (cr != std::string::npos && row.find_first_not_of(" \t\r", cr) != std::string::npos)
            fatal_hint("convert the line ends, e.g. tr '\\r' '\\n' < IN > OUT",
                       "CR line endings (%s line %d): expected JSON lines ending in LF (\\n) or CR LF, got lines "
                       "ended by CR (\\r) alone (old Mac text), read as one line", name.c_str(), line);
        fatal("malformed JSON (%s line %d): %s", name.c_str(), line, err.c_str());
    }
    if (!instruction_segments(obj, &segments, &shape, &err))
        fatal("bad instruction example (%s line %d): %s", name.c_str(), line, err.c_str());
    ex->shapes[(int)shape]++;
    for (const InstructionSegment& seg : segments) {
        for (int id : tokenizer_encode(tok, seg.text)) {
            if (id < 0 || id > 65535)
                fatal("token %d does not fit a token file's uint16 (%s line %d): expected a vocabulary of at most "
                      "65536", id, name.c_str(), line);
            ex->tokens.push_back((uint16_t)id);
            ex->scored.push_back(seg.scored ? 1 : 0);
        }
    }
    ex->tokens.push_back(kTokenizerEot);  // the end of the answer: scored, so the model learns to stop
    ex->scored.push_back(1);
    ex->ends.push_back(ex->tokens.size());
}

// A token file or a loss mask given as an input (a glob that takes in an earlier run's outputs) is named as one,
// not read as a line of invalid UTF-8.
void refuse_binary_input(const std::string& text, const std::string& name) {
    int32_t magic = 0;
    if (text.size() < sizeof(magic)) return;
    memcpy(&magic, text.data(), sizeof(magic));
    const char* hint = "give tokenize --instructions the JSON lines; train takes the token files it wrote";
    if (magic == kTokenFileMagic)
        fatal_hint(hint, "a token file, not JSON lines (%s): expected instruction JSON lines, got a file starting with "
                   "the token-file magic %d", name.c_str(), kTokenFileMagic);
    if (magic == kLossMaskMagic)
        fatal_hint(hint, "a loss mask, not JSON lines (%s): expected instruction JSON lines, got a file starting with "
                   "the loss-mask magic %d", name.c_str(), kLossMaskMagic);
}

// Reads every input's JSON lines into *ex. The inputs are capped together (the examples are held until the split
// into val and train): files by their size before any is read, pipes as they are read.
void read_instructions(const CliArgs& args, Tokenizer* tok, InstructionExamples* ex) {
    const size_t max_line = (size_t)args.integer_in("max-unsplit-bytes", 1, 1 << 30);
    const char* too_large = "tokenize --instructions reads at most 1 GiB of examples in all: tokenize them in "
                            "several runs (-o PREFIX each) and train on the shards together";
    uint64_t total = 0;
    for (const std::string& path : args.positional) {  // each one there, before any is encoded
        FileInfo st;
        if (path == "-") continue;
        if (!os_stat(path, &st)) fatal("cannot open %s: %s", path.c_str(), strerror(errno));
        if (st.kind == FileKind::directory) fatal("is a directory (%s): expected a text file", path.c_str());
        if (st.kind == FileKind::regular && (total += st.size) > kMaxInstructionBytes)
            fatal_hint(too_large, "input too large (%s): expected at most %zu bytes of examples in all, got %llu "
                       "with it", path.c_str(), kMaxInstructionBytes, (unsigned long long)total);
    }
    size_t input_left = kMaxInstructionBytes;
    for (const std::string& path : args.positional) {
        const std::string text = text_read(path, input_left, too_large);
        input_left -= text.size();
        const std::string name = path == "-" ? "stdin" : path;
        refuse_binary_input(text, name);
        size_t start = 0;
        for (int line = 1; start < text.size(); line++) {
            size_t end = text.find('\n', start);
            if (end == std::string::npos) end = text.size();
            stop_point();  // a signal ends the command here (or at the next staged write), nothing left behind
            if (end - start > max_line)  // encoding one takes about 30 times its size in memory; refused uncopied
                fatal_hint("raise --max-unsplit-bytes for longer examples", "line too long (%s) at line %d: expected "
                           "JSON lines of at most %zu bytes, got %zu", name.c_str(), line, max_line, end - start);
            const std::string row = text.substr(start, end - start);
            start = end + 1;
            if (row.find_first_not_of(" \t\r") == std::string::npos) continue;  // blank lines are skipped
            add_instruction(row, name, line, tok, ex);
        }
    }
}

// The prefix's val or train token file (k = 0, 1).
std::string instruction_path(const std::string& prefix, int k) {
    return prefix + (prefix.back() == '/' ? "" : "_") + (k == 0 ? "val" : "train") + ".bin";
}

void print_packed(const char* part, const PackStats& st, int T) {
    const size_t window_tokens = st.windows * (size_t)T;
    fprintf(stderr,
            "packed %s: %zu examples into %zu window%s of -T %d: %zu of %zu tokens used (%.1f%%), %zu scored "
            "(%.1f%%)%s\n",
            part, st.examples, st.windows, st.windows == 1 ? "" : "s", T, st.example_tokens, window_tokens,
            100.0 * (double)st.example_tokens / (double)window_tokens, st.scored,
            100.0 * (double)st.scored / (double)window_tokens,
            st.split ? ("; " + std::to_string(st.split) + " longer than " + std::to_string(T) +
                        " tokens split across windows").c_str()
                     : "");
}

// The val examples of n (--val-examples, else a tenth, at least 1), refused when no train would be left.
long long instruction_val_count(const CliArgs& args, size_t n) {
    std::string names;
    for (const std::string& path : args.positional)
        names += (names.empty() ? "" : ", ") + (path == "-" ? "stdin" : path);
    if (n == 0)
        fatal("no examples in %s: expected JSON lines of instruction examples, got none (blank lines only)",
              names.c_str());
    if (!args.has("val-examples")) {
        const long long val = (long long)std::max<size_t>(1, n / 10);
        if ((long long)n <= val)
            fatal("too few examples (%s): expected at least 2 (1 val, the rest train), got %zu", names.c_str(), n);
        return val;
    }
    const long long val = args.integer_in("val-examples", 1, INT32_MAX);
    if ((long long)n <= val)
        fatal("too few examples for --val-examples %lld (%s): expected more than %lld so that some train, got %zu",
              val, names.c_str(), val, n);
    return val;
}

int tokenize_instructions(const CliArgs& args) {
    for (const char* flag : {"ids", "jsonl-field", "split-on-blank-lines", "shard-tokens", "val-tokens", "chunk-bytes"})
        if (args.has(flag)) fatal("conflicting flags --instructions and --%s (tokenize): expected one of them", flag);
    if (args.positional.empty()) fatal("missing input file (tokenize): expected instruction JSON lines or - for stdin");
    if (!args.has("output")) fatal("missing output (tokenize): --instructions writes token files, expected -o PREFIX");
    const std::string prefix = args.str("output");
    if (prefix.empty()) fatal("empty value for --output (tokenize): expected a path prefix");
    const int T = (int)args.integer_in("tokens", 2, 1 << 20);
    // from here a Ctrl-C is said and ends the run at its next stop_point (the first is before anything is written)
    stop_catch_abort("tokenize --instructions: nothing written; run the same command again");
    Tokenizer tok;
    tokenizer_load(&tok, args.has("tokenizer") ? args.str("tokenizer") : tokenizer_default_dir());
    PathLock lock(output_lock_target(prefix), "--output (tokenize)");
    for (int k = 0; k < 2; k++) {  // before any work: none of the four outputs may replace a user's file
        output_check(instruction_path(prefix, k), "--output (tokenize)", kTokenFileKind);
        output_check(lossmask_path(instruction_path(prefix, k)), "--output (tokenize)", kLossMaskKind);
    }
    InstructionExamples ex;
    read_instructions(args, &tok, &ex);
    const size_t n = ex.ends.size();
    const long long val = instruction_val_count(args, n);
    const std::string dir = prefix.back() == '/' ? path_strip_slashes(prefix) : path_parent(prefix);
    MadeDirs made(dir);
    PackWriter parts[2] = {{instruction_path(prefix, 0), T, kTokenizerEot}, {instruction_path(prefix, 1), T, kTokenizerEot}};
    for (size_t i = 0; i < n; i++) {  // val: `val` examples spread evenly, every (n / val)-th, the last included
        if (i % 4096 == 0) stop_point();
        parts[(i + 1) * val / n > i * val / n ? 0 : 1].add(ex.example(i));
    }
    std::vector<uint16_t>().swap(ex.tokens);  // no longer needed while the parts finish
    std::vector<uint8_t>().swap(ex.scored);
    std::vector<std::unique_ptr<OutputFile>> staged;  // published together: never a token file without its mask
    size_t used = 0, window_tokens = 0;
    for (int k = 0; k < 2; k++) {
        for (auto& file : parts[k].finish()) staged.push_back(std::move(file));
        print_packed(k == 0 ? "val" : "train", parts[k].stats(), T);
        used += parts[k].stats().example_tokens, window_tokens += parts[k].stats().windows * (size_t)T;
    }
    stop_point();
    stop_catch(true);  // while the four are published a signal waits: they are published whole or not at all
    for (const auto& file : staged) file->publish();
    stop_catch(false);
    printf("tokenized %zu examples (%zu prompt/completion, %zu Alpaca, %zu chat): %lld val -> %s, %lld train -> %s, "
           "each with its loss mask (.mask)\n",
           n, ex.shapes[0], ex.shapes[1], ex.shapes[2], val, parts[0].path().c_str(), (long long)(n - val),
           parts[1].path().c_str());
    printf("utilisation: %zu of %zu window tokens hold examples (%.1f%%), the rest padding and window starts\n", used,
           window_tokens, 100.0 * (double)used / (double)window_tokens);
    return 0;
}

}  // namespace

int cmd_tokenize(int argc, char** argv) {
    const CliArgs args = tokenize_args(argc, argv);
    for (const char* flag : {"tokens", "val-examples"})
        if (args.has(flag) && !args.on("instructions"))
            fatal("flag --%s needs --instructions (tokenize): expected --instructions with it (it packs instruction "
                  "examples), got --%s alone", flag, flag);
    if (args.on("instructions")) return tokenize_instructions(args);
    const TokenizeOptions o = tokenize_options(args);
    std::vector<TextInput> inputs = expand_inputs(args.positional);
    TextStream stream(inputs, o.stream_opt);

    Tokenizer tok;
    tokenizer_load(&tok, args.has("tokenizer") ? args.str("tokenizer") : tokenizer_default_dir());

    // Outputs: the paths are checked before any work, and again as each file is opened.
    if (o.val_last_tenth && stream.total_bytes() < 0)
        fatal_hint("give --val-tokens N (the first N tokens are val), or a file",
                   "unknown input size (%s): holding out the text's last 10%% as val needs it before reading",
                   o.input_name.c_str());
    TokenizeOutputs out;
    if (!o.to_ids) open_outputs(o, &out);

    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    IdsPrinter printer;
    int64_t tokens = 0;
    if (const int rc = encode_inputs(&stream, tok, o, threads, &out, &printer, &tokens)) return rc;
    if (o.to_ids) {
        printer.finish();
        return 0;
    }
    return finish_outputs(o, &out, stream, tokens, threads);
}
