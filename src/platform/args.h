// args.h: command-line flags. Each command declares its flags once (name, optional short name, default, one line
// of help); the same table drives parsing, `--help` and the "did you mean" hint. Accepts `--name value`,
// `--name=value` and `-x value`. Does not know any command's meaning.
#pragma once
#include <string>
#include <utility>
#include <vector>

struct CliFlag {
    const char* name;           // long name without dashes, e.g. "seq-len"
    const char* short_name;     // one letter without dash, or "" for none
    const char* default_value;  // used when not given; nullptr or "": none, and str() of it is "missing flag"
    const char* help;
    bool is_switch = false;  // takes no value
};

struct CliArgs {
    std::string command;
    std::vector<CliFlag> flags;
    std::vector<std::string> names;   // flags given on the command line, by long name
    std::vector<std::string> values;  // their values, parallel to names
    std::vector<std::string> positional;

    bool has(const char* name) const;  // given on the command line
    // Value given, else the default; fatal if neither (names the flag).
    std::string str(const char* name) const;
    // The value as an integer (or number) within [lo, hi], the one path every numeric flag takes; fatal on a
    // malformed value ("malformed value for --name (command)") or one out of range ("bad value for --name
    // (command): expected lo..hi").
    long long integer_in(const char* name, long long lo, long long hi) const;
    double number_in(const char* name, double lo, double hi) const;
    bool on(const char* name) const;  // switch given
};

// Flags a resumed run takes from its checkpoint: `stored` first, then the ones given now (later values
// win). A stored name the command does not declare is fatal naming `where` (the train state file).
CliArgs cli_merge_stored(const CliArgs& given, const std::vector<std::pair<std::string, std::string>>& stored,
                         const std::string& where);

// Parses argv[0..argc) (argv[0] is the first argument after the command name). Prints usage and exits 0
// on --help/-h; exits 1 with a one-line error on unknown flags or missing values. `usage` is the
// synopsis line, `about` one sentence.
CliArgs cli_parse(int argc, char** argv, const char* command, const char* usage, const char* about,
                  const std::vector<CliFlag>& flags, bool allow_positional);
void cli_print_help(const char* command, const char* usage, const char* about, const std::vector<CliFlag>& flags);
// Levenshtein distance, for suggestions.
int cli_edit_distance(const std::string& a, const std::string& b);
