// output_files.h: the one door through which gpt2 writes files. Nothing else in src/ opens a file for writing
// (tests/cli_rules.sh fails when something does). Every output is
//   - staged under `NAME.tmp.<pid>`, created with O_CREAT|O_EXCL|O_NOFOLLOW: an existing name is never
//     followed or truncated, fsync'ed, then renamed over NAME. Beside it `NAME.tmp.<pid>.gpt2-staging`
//     marks it as gpt2's and is locked by its writer: the next writer of NAME removes a staged file whose
//     mark no live process holds (a writer killed by SIGKILL), whatever it holds; anything else of that
//     name is an error naming it;
//   - allowed to replace only a missing path or a regular file of its own kind (OutputKind) that is not an
//     input of this run: never a symlink, a device, a FIFO, a directory or a file of another kind;
//   - written by one process at a time: a writer holds PathLock on `NAME.lock` while it runs.
// Checkpoint directories are published whole (dir_publish). What a failed command staged is removed by
// fatal()'s cleanups; a process ended by a signal removes its staged files through signals.h.
//
// What that promises each command (README.md's short list; tests/cli_trust.sh and cli_red_team.sh check it):
//
// - train --out DIR takes a missing or empty directory, or with --overwrite a checkpoint gpt2 train wrote (it holds
// our train_state.safetensors; without --overwrite another run's checkpoint is refused, naming --resume DIR);
// anything else, a symbolic link or a file is refused before the first step. Files a user puts inside a checkpoint
// directory stay there across saves, kill -9 included (one named .gpt2-staging too: gpt2's marker holds a text of its
// own). Should one fail to move back after a save, its staging directory is set aside as DIR.kept.PID.T, with a
// note:.
//
// - A single output file is replaced only when it is a regular file of its own kind that the run does not read:
// tokenize -o a token file, export --format llmc an llm.c checkpoint, --format gguf a model GGUF gpt2 wrote
// (gpt2cpp.writer in its metadata; with --lora-from an adapter one), --format hf only an export of its own (writer:
// gpt2.cpp in the safetensors metadata, never a training checkpoint), --plot and plot --out a PNG (--plot never one
// inside --out; neither --plot nor --log a file a save writes, nor one of --lora-from's or --resume's run, compared
// where the path lands: path_resolved), eval --hellaswag-scores a scores file (a PNG or token file of the user's at
// that path counts as that kind); --log appends only to a log of its own (every line a JSON object starting with
// {"step":).
//
// - Locks: train --out DIR (and --plot, --log), export --out, tokenize -o PREFIX (PREFIX.lock; DIR.lock for -o DIR/),
// plot --out and eval --hellaswag-scores each hold OUTPUT.lock (it holds the pid); a second process on the same
// output fails at once naming the first one's pid. train --resume DIR takes DIR's lock before it reads the train
// state, so it never reads a save in progress. A lock file left by a killed run is taken over.
//
// - tokenize -o stages both files of a val/train pair before publishing either, and each shard until it is full. A
// failed command removes what it staged and the directories it created; after kill -9 the previous checkpoint is
// whole, and the next save clears the dead run's staging directory, moving any file of the user's back.
//
// - Every write is checked, standard output included: a full disk, /dev/full, a file-size limit or a closed pipe ends
// in one error: line and exit 1 (train saves first; a closed standard output, as in train | head -1, stops the run
// after the step it is in).
#pragma once
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "platform/util.h"

// What an output is, for messages, and which existing files it may replace: is_ours(path) is asked only
// of a regular file that is no symlink; nullptr replaces nothing (a file inside a fresh staging directory).
struct OutputKind {
    const char* what;  // "token file", "PNG", ...: "<path> exists and is not a <what>"
    bool (*is_ours)(const std::string& path);
};
// A file of a fresh staging directory: it replaces nothing.
extern const OutputKind kNewFile;

// The files this run reads (by device and inode): an output may never replace one of them. The readers in
// platform/ note what they open; input_note_path is for readers elsewhere (mapped shards, streamed text).
void input_note_fd(int fd);
void input_note_path(const std::string& path);
bool path_is_input(const std::string& path);
// The first entry of directory `dir` that is an input of this run, or "" (an output directory that holds
// one must not be replaced: the run would lose what it reads).
std::string dir_input_entry(const std::string& dir);
// Forgets the inputs noted so far: the unit tests run many "runs" in one process.
void inputs_forget();

// Checks before any work that `path` may be written as `kind`: fatal naming `flag` unless it is missing
// or a regular file that kind.is_ours accepts and this run does not read.
void output_check(const std::string& path, const char* flag, const OutputKind& kind);

// One staged output file. The constructor checks the target (output_check) and creates `path.tmp.<pid>`
// exclusively; write/write_at append or patch it; publish() fsyncs, checks the target again and renames
// over it. Destroyed unpublished (or on fatal, or on a fatal signal) the staged file is removed.
class OutputFile {
public:
    OutputFile(std::string path, const char* flag, const OutputKind& kind);
    ~OutputFile();
    OutputFile(const OutputFile&) = delete;
    OutputFile& operator=(const OutputFile&) = delete;

    void write(const void* data, size_t n);
    void write_at(const void* data, size_t n, uint64_t offset);
    void close();    // fsync and close; the file stays staged until publish()
    void publish();  // close() if open, then rename over the target
    const std::string& path() const { return path_; }

private:
    void discard();
    void unmark();
    std::string path_, staged_, flag_, mark_;
    OutputKind kind_;
    int fd_ = -1, mark_fd_ = -1;             // mark_: `staged.gpt2-staging`, locked while staged_ exists
    int stop_slot_ = -1, mark_slot_ = -1;  // signals.h's list of paths removed when a signal ends the process
    FatalCleanup cleanup_;
};

// Writes `parts` in order to `path` as one OutputFile, published at once; publish false returns it staged
// (closed), for the caller to publish with others.
std::unique_ptr<OutputFile> output_write(const std::string& path, const char* flag, const OutputKind& kind,
                                         const std::vector<std::pair<const void*, size_t>>& parts,
                                         bool publish = true);

// A file that grows by whole lines (train --log): opened for appending with O_APPEND|O_NOFOLLOW, created
// exclusively when missing; an existing file must be a regular file kind.is_ours accepts. Every line is
// flushed and checked: a failed write is fatal naming `flag`.
class AppendFile {
public:
    void open(const std::string& path, const char* flag, const OutputKind& kind);
    void line(const char* fmt, ...) __attribute__((format(printf, 2, 3)));
    void close();
    bool is_open() const { return fd_ >= 0; }
    ~AppendFile();

private:
    int fd_ = -1;
    std::string path_, flag_;
    std::unique_ptr<FatalCleanup> cleanup_;  // set when open() created the file
};

// Standard output to /dev/null (ranks other than 0 print nothing).
void output_silence_stdout();

// An exclusive lock on `target` (a file or directory about to be written), held through `target.lock`
// beside it until the object is destroyed or the process exits. The directories it creates for it are
// removed again if they are still empty then (a failed run leaves none behind). fatal naming `flag` and
// the holder's pid when another process holds it, or when `target.lock` is not a lock file.
class PathLock {
public:
    // reader: the target is only read (train --resume DIR --out NEW), so where the lock cannot be made
    // because the directory is read-only, it is read unlocked (read_unlocked in output_files.cpp). hint: a
    // `hint:` line for when the lock file cannot be made.
    PathLock(const std::string& target, const char* flag, bool reader = false, const char* hint = nullptr);
    ~PathLock();
    PathLock(const PathLock&) = delete;
    PathLock& operator=(const PathLock&) = delete;

private:
    void release();
    std::string path_;
    int fd_ = -1;
    int stop_slot_ = -1;  // signals.h: a signal that ends the process removes the lock file
    std::vector<std::string> created_;
    std::vector<int> created_slots_;  // ... and then these directories, if empty
    FatalCleanup cleanup_;  // a failing run removes its lock file and the directories it made
};

// mkdir -p that leaves nothing behind: the directories it made are removed again, those still empty, when
// it is destroyed or fatal() runs (a failed command leaves no directories of its own).
class MadeDirs {
public:
    explicit MadeDirs(const std::string& path);
    ~MadeDirs();
    MadeDirs(const MadeDirs&) = delete;
    MadeDirs& operator=(const MadeDirs&) = delete;

private:
    void remove_empty();
    std::vector<std::string> made_;
    FatalCleanup cleanup_;
};

// The file that marks dir_publish's staging directories. It holds kStagingMarkerText, so a file of the
// user's that shares its name is not mistaken for it.
const char* const kStagingMarker = ".gpt2-staging";
// True when dir/kStagingMarker is a regular file holding the marker text, or a prefix of it (a marker whose
// writer was killed before it was filled, possibly empty).
bool dir_has_marker(const std::string& dir);
// True for a name OutputFile leaves only when killed mid-write: `<base>.tmp.<digits>`, or its mark
// `<base>.tmp.<digits>.gpt2-staging`.
bool path_is_staged_temp(const std::string& name);
// True when `name` is one of `ours` or a staged temporary of one of them: the entries an output directory
// may hold that its writer may replace or remove.
bool name_is_ours(const std::string& name, std::initializer_list<const char*> ours);

// Replaces directory `dir` with the fully written directory `staging` in one step (renameat2 with
// RENAME_EXCHANGE), so a reader or a crash sees either the old or the new directory, never a mix. Where
// the file system cannot exchange it falls back to two renames through `dir.old.<pid>`, which
// dir_recover_interrupted undoes after a crash between them.
void dir_replace_atomic(const std::string& staging, const std::string& dir);
// When `dir` is missing but a dead process's `dir.old.<pid>` exists (a replacement killed between its
// two renames) that carries the staging marker and satisfies is_ours(path), renames it back; true if so.
bool dir_recover_interrupted(const std::string& dir, const std::function<bool(const std::string&)>& is_ours);
// Clears what killed processes left beside `dir`: their staging directories, and the old contents a
// two-rename replacement had set aside (when `dir` itself exists), moving files gpt2 did not write back in.
void dir_clear_dead_staging(const std::string& dir, const std::function<bool(const std::string&)>& ours);
// Publishes directory `dir` as a whole: `write` fills a staging directory `dir.saving.<pid>` beside it
// (its files written with OutputFile), the two are swapped (dir_replace_atomic), and the old contents are
// removed, entries ours() rejects moving back into `dir`, so files the user put there stay. Staging
// directories of dead processes are cleared first the same way; a fatal() inside `write` clears this one.
void dir_publish(const std::string& dir, const std::function<bool(const std::string&)>& ours,
                 const std::function<void(const std::string& staging)>& write);
